// The Reduce* family over any set of axes (kernels/rows.h: one warp per
// output element), float32 (float16 and bfloat16 through it: run_on_float32).
// Axes come from the attribute, or from input 1
// read on the host (ReduceSum since opset 13, the others since 18).
#include <algorithm>
#include <map>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

const std::map<std::string, ReduceOp>& reduce_ops() {
  static const std::map<std::string, ReduceOp> m{
      {"ReduceSum", ReduceOp::Sum},   {"ReduceMean", ReduceOp::Mean},         {"ReduceMax", ReduceOp::Max},
      {"ReduceMin", ReduceOp::Min},   {"ReduceProd", ReduceOp::Prod},         {"ReduceSumSquare", ReduceOp::SumSquare},
      {"ReduceL1", ReduceOp::L1},     {"ReduceL2", ReduceOp::L2},             {"ReduceLogSum", ReduceOp::LogSum},
      {"ReduceLogSumExp", ReduceOp::LogSumExp}};
  return m;
}

bool axes_are_input(const std::string& op, int64_t opset) { return op == "ReduceSum" ? opset >= 13 : opset >= 18; }

bool reduce_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_reduce(const Graph& g, const Node& n) {
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1);
}

void run_reduce_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const std::string& op = c.node().op_type;
  const size_t rank = x.shape.size();
  if (rank > static_cast<size_t>(kKernelRank)) c.fail("more than 8 dims");
  const bool keepdims = c.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes = axes_are_input(op, c.opset()) ? host_ints(c, 1) : c.attr_ints("axes");
  const bool noop = c.attr_int("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && noop) {  // the input itself
    c.output(0) = x;
    return;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    const auto d = static_cast<size_t>(normalize_axis(c, a, rank));
    if (reduced[d] && !axes.empty()) c.fail("axis " + std::to_string(a) + " appears twice");
    reduced[d] = true;
  }
  const auto stride = contiguous_strides(x.shape);
  ReduceKernel k{};
  k.op = reduce_ops().at(op);
  Shape out;
  int64_t rows = 1;
  k.red_count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      k.red[k.red_rank] = x.shape[d];
      k.red_stride[k.red_rank++] = stride[d];
      k.red_count *= x.shape[d];
      if (keepdims) out.push_back(1);
    } else {
      k.kept[k.kept_rank] = x.shape[d];
      k.kept_stride[k.kept_rank++] = stride[d];
      rows *= x.shape[d];
      out.push_back(x.shape[d]);
    }
  }
  c.output(0) = c.allocate(DataType::Float, out);
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, rows);
}

// float16 / bfloat16 through float32 (run_on_float32).
void run_reduce(OpContext& c) { run_on_float32(c, run_reduce_f32); }

}  // namespace

void add_reduce_ops(std::vector<OpDef>& t) {
  for (const auto& [name, op] : reduce_ops()) t.push_back({name.c_str(), refuse_reduce, run_reduce, OpBackend::Kernel, reduce_reads_on_host});
}

}  // namespace onnxscope::cuda
