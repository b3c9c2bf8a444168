// NonMaxSuppression (kernels/nms.h): boxes and scores float32; the box
// limit and the two thresholds read on the host. Each (batch, class) line's
// candidates are ranked and selected on the device; the number kept per
// line is read back mid-run, since the output's size is their sum, so a run
// holding NonMaxSuppression is not captured (as NonZero).
#include <algorithm>

#include "cuda/ops/op_table.h"
#include "offload/steady_state.h"

namespace onnxscope::cuda {

namespace {

bool nms_reads_on_host(const Node&, size_t i) { return i >= 2; }

// Each candidate is ranked against its whole line (n * n reads): lines of a
// known length up to this go to the device, longer or unknown ones to the
// CPU engine, which sorts.
constexpr int64_t kNmsBoxes = 4096;

std::optional<std::string> refuse_nms(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("NonMaxSuppression takes boxes and scores");
  if (auto r = require_types(g, n, {DataType::Float}, 0, 2)) return r;
  if (auto r = require_types(g, n, {DataType::Int64}, 2, 1)) return r;
  if (auto r = require_types(g, n, {DataType::Float}, 3, 2)) return r;
  const TypeInfo* t = g.type_of(n.inputs[1]);
  const Initializer* init = g.initializer(n.inputs[1]);
  const bool known = init ? init->value.shape().size() == 3 && init->value.shape()[2] <= kNmsBoxes
                          : t && t->is_tensor() && t->shape && t->shape->size() == 3 && (*t->shape)[2].is_known() &&
                                (*t->shape)[2].value <= kNmsBoxes;
  if (!known) return "NonMaxSuppression on the device takes a known number of boxes up to " + std::to_string(kNmsBoxes);
  return std::nullopt;
}

// An optional scalar input read on the host: absent or empty gives nullopt.
std::optional<double> host_scalar(const OpContext& c, size_t k) {
  const Tensor* t = c.host(k);
  if (!t || t->element_count() == 0) return std::nullopt;
  return t->element_as_double(0);
}

void run_nms(OpContext& c) {
  if (c.rt().capturing())
    throw offload::CaptureUnsupported("NonMaxSuppression's output size is a count the host reads from the device mid-run");
  const DeviceTensor& boxes = c.input(0);
  const DeviceTensor& scores = c.input(1);
  const Shape &bs = boxes.shape, &ss = scores.shape;
  if (bs.size() != 3 || bs[2] != 4) c.fail("boxes must have shape [batches, boxes, 4], got " + shape_to_string(bs));
  if (ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    c.fail("scores must have shape [batches, classes, boxes] matching boxes, got " + shape_to_string(ss));
  const Tensor* limit = c.host(2);
  const int64_t max_out = limit && limit->element_count() > 0 ? limit->element_as_int64(0) : 0;
  const auto iou = static_cast<float>(host_scalar(c, 3).value_or(0.0));
  const std::optional<double> score = host_scalar(c, 4);
  const int64_t center = c.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) c.fail("center_point_box must be 0 or 1");
  if (iou < 0 || iou > 1) c.fail("iou_threshold must be in [0, 1]");
  const int64_t nb = bs[1], classes = ss[1], lines = ss[0] * classes;
  if (nb > kNmsBoxes)  // the declared shape said otherwise
    c.fail(std::to_string(nb) + " boxes: the device ranks up to " + std::to_string(kNmsBoxes) + " per class");
  const int64_t cap = std::clamp<int64_t>(max_out, 0, nb);
  if (lines * nb == 0 || cap == 0) {
    c.output(0) = c.allocate(DataType::Int64, {0, 3});
    return;
  }
  const DeviceTensor order = c.allocate(DataType::Int64, {lines, nb});
  c.rt().zero(order.data, bytes_of(DataType::Int64, order.shape));
  NmsRankKernel rank;
  rank.nb = nb;
  rank.thresholded = score.has_value();
  rank.score_threshold = static_cast<float>(score.value_or(0.0));
  rank.scores = static_cast<const float*>(scores.data);
  rank.order = static_cast<int64_t*>(order.data);
  launch(c.rt(), rank, lines * nb);
  const DeviceTensor kept = c.allocate(DataType::Int64, {lines, cap});
  const DeviceTensor counts = c.allocate(DataType::Int64, {lines});
  NmsSelectKernel select;
  select.nb = nb;
  select.classes = classes;
  select.cap = cap;
  select.center = center == 1;
  select.iou_threshold = iou;
  select.boxes = static_cast<const float*>(boxes.data);
  select.order = static_cast<const int64_t*>(order.data);
  select.kept = static_cast<int64_t*>(kept.data);
  select.counts = static_cast<int64_t*>(counts.data);
  launch(c.rt(), select, lines);
  std::vector<int64_t> kept_per_line(static_cast<size_t>(lines));
  c.rt().copy_out(kept_per_line.data(), counts.data, bytes_of(DataType::Int64, counts.shape));  // waits for the kernels
  int64_t total = 0;
  for (int64_t k : kept_per_line) {
    if (k < 0 || k > cap) c.fail("the device kept " + std::to_string(k) + " boxes of a line, more than " + std::to_string(cap));
    total += k;
  }
  c.output(0) = c.allocate(DataType::Int64, {total, 3});
  if (total == 0) return;
  NmsWriteKernel w;
  w.classes = classes;
  w.cap = cap;
  w.kept = static_cast<const int64_t*>(kept.data);
  w.counts = static_cast<const int64_t*>(counts.data);
  w.y = static_cast<int64_t*>(c.output(0).data);
  launch(c.rt(), w, lines);
}

}  // namespace

void add_nms_ops(std::vector<OpDef>& t) {
  t.push_back({"NonMaxSuppression", refuse_nms, run_nms, OpBackend::Kernel, nms_reads_on_host});
}

}  // namespace onnxscope::cuda
