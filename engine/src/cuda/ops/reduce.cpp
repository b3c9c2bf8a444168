// The Reduce* family over any set of axes (kernels/rows.h: one warp per
// output element), float32 (float16 and bfloat16 through it: run_on_float32;
// ReduceMax and ReduceMin of bool through it too).
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
  if ((n.op_type == "ReduceMax" || n.op_type == "ReduceMin") && declared_type(g, n.inputs[0]) == DataType::Bool)
    return std::nullopt;  // any / all (opset 20)
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
  // No axes with noop_with_empty_axes: nothing is reduced, but the rest of
  // the operation still applies (ReduceSumSquare is a Square, ReduceL1 and
  // ReduceL2 an Abs, ReduceLogSum a Log): only where that is the identity is
  // the output the input itself. (It was X for every operator: a
  // ReduceSumSquare gave x, not x^2.)
  if (axes.empty() && noop &&
      (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd")) {
    c.output(0) = x;
    return;
  }
  std::vector<bool> reduced(rank, axes.empty() && !noop);
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

// ReduceMax / ReduceMin of bool (opset 20: any, all) through float32: the
// values as 0 and 1, the float reduction, then "above 0". An empty max is
// -inf there, so false, and an empty min +inf, so true: the reference's
// identities.
void run_reduce_bool(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  DeviceTensor widened = c.allocate(DataType::Float, x.shape);
  const auto n = static_cast<int64_t>(elements_of(x.shape));
  if (n > 0) launch(c.rt(), CastKernel{ElemType::Bool, ElemType::Float, x.data, widened.data, false}, n);
  std::vector<const DeviceTensor*> in(c.input_count(), nullptr);
  in[0] = &widened;
  for (size_t i = 1; i < in.size(); ++i) in[i] = c.has_input(i) ? &c.input(i) : nullptr;
  std::vector<DeviceTensor> out(1);
  OpContext f = c.over(in, out);
  run_reduce_f32(f);
  const DeviceTensor& r = out[0];
  c.output(0) = c.allocate(DataType::Bool, r.shape);
  const auto m = static_cast<int64_t>(elements_of(r.shape));
  if (m == 0) return;
  Tensor zero = Tensor::zeros(DataType::Float, {});
  const DeviceTensor z = c.upload(zero);
  CompareKernel above{};
  above.op = BinaryOp::Greater;
  above.type = ElemType::Float;
  above.bc.rank = 1;
  above.bc.out[0] = m;
  above.bc.stride[0][0] = 1;  // the zero: stride 0
  above.a = r.data;
  above.b = z.data;
  above.y = static_cast<bool*>(c.output(0).data);
  launch(c.rt(), above, m);
}

// float16 / bfloat16 through float32 (run_on_float32).
void run_reduce(OpContext& c) {
  if (c.input(0).dtype == DataType::Bool) {
    if (c.node().op_type != "ReduceMax" && c.node().op_type != "ReduceMin") c.fail("no kernel for bool");
    run_reduce_bool(c);
    return;
  }
  run_on_float32(c, run_reduce_f32);
}

}  // namespace

void add_reduce_ops(std::vector<OpDef>& t) {
  for (const auto& [name, op] : reduce_ops()) t.push_back({name.c_str(), refuse_reduce, run_reduce, OpBackend::Kernel, reduce_reads_on_host});
}

}  // namespace onnxscope::cuda
