// Pooling: MaxPool, AveragePool and LpPool by a window kernel
// (kernels/rows.h), sums in double and NaN skipped by the max as the
// reference does; GlobalAveragePool and GlobalMaxPool as reductions over the
// spatial dims; GlobalLpPool as LpPool with the whole image as its window.
// float16 / bfloat16 through float32 (run_on_float32), rounded once;
// MaxPool also on int8 / uint8 (opset 12), widened to float32 and stored
// back (both exact), and with its Indices output.
#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_pool(const Graph& g, const Node& n) {
  const DataType t = n.inputs.empty() ? DataType::Undefined : declared_type(g, n.inputs[0]);
  if (n.op_type != "MaxPool" || (t != DataType::Int8 && t != DataType::Uint8))
    if (auto r = require_one_real_type(g, n)) return r;
  if (const Attribute* s = n.attribute("storage_order"); s && s->i != 0 && s->i != 1)
    return "storage_order " + std::to_string(s->i);
  return refuse_spatial_rank(g, n);
}

// LpPool's p: a float attribute in opset 1, an integer after.
double lp_p(const OpContext& c) {
  const Attribute* a = c.node().attribute("p");
  const double p = !a ? 2.0 : a->type == AttrType::Float ? static_cast<double>(a->f) : static_cast<double>(a->i);
  if (!(p > 0)) c.fail("p must be positive");
  return p;
}

void pool_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const std::string& op = c.node().op_type;
  const Window w = window_of(c, x.shape, {}, c.attr_int("ceil_mode", 0) != 0);
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  c.output(0) = c.allocate(DataType::Float, out);
  PoolKernel k{};
  k.kind = op == "MaxPool" ? 0 : op == "AveragePool" ? 1 : 2;
  k.count_include_pad = k.kind == 1 && c.attr_int("count_include_pad", 0) != 0;
  k.p = k.kind == 2 ? lp_p(c) : 1.0;
  k.rank = w.rank;
  for (int d = 0; d < w.rank; ++d) {
    const auto s = static_cast<size_t>(d);
    k.in[d] = w.in[s];
    k.out[d] = w.out[s];
    k.kernel[d] = w.kernel[s];
    k.stride[d] = w.stride[s];
    k.pad_begin[d] = w.pad_begin[s];
    k.pad_end[d] = w.pad_end[s];
    k.dilation[d] = w.dilation[s];
  }
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  if (k.kind == 0 && c.wants_output(1)) {
    const int64_t order = c.attr_int("storage_order", 0);
    if (order != 0 && order != 1) c.fail("storage_order must be 0 or 1, got " + std::to_string(order));
    c.output(1) = c.allocate(DataType::Int64, out);
    k.indices = static_cast<int64_t*>(c.output(1).data);
    k.column_major = order == 1;
  }
  launch(c.rt(), k, static_cast<int64_t>(elements_of(out)));
}

// int8 / uint8 MaxPool: the codes widened to float32, pooled, the maxima
// (each one of the codes) stored back; Indices as they come.
void max_pool_bytes(OpContext& c) {
  if (c.node().op_type != "MaxPool") c.fail("only MaxPool takes int8 or uint8 on the device");
  const DeviceTensor& x = c.input(0);
  const auto type = static_cast<ElemType>(x.dtype);
  DeviceTensor wide = c.allocate(DataType::Float, x.shape);
  launch(c.rt(), CastKernel{type, ElemType::Float, x.data, wide.data, true}, static_cast<int64_t>(elements_of(x.shape)));
  const DeviceTensor* in[] = {&wide};
  std::vector<DeviceTensor> out(c.node().outputs.size());
  OpContext f = c.over(in, out);
  pool_f32(f);
  c.output(0) = c.allocate(x.dtype, out[0].shape);
  launch(c.rt(), CastKernel{ElemType::Float, type, out[0].data, c.output(0).data, true}, static_cast<int64_t>(elements_of(out[0].shape)));
  for (size_t o = 1; o < out.size(); ++o) c.output(o) = std::move(out[o]);
}

std::optional<std::string> refuse_global(const Graph& g, const Node& n) {
  if (auto r = require_one_real_type(g, n)) return r;
  const TypeInfo* t = g.type_of(n.inputs[0]);
  if (!t || !t->shape || t->shape->size() < 2 || t->shape->size() > static_cast<size_t>(kKernelRank))
    return "the CUDA " + n.op_type + " takes ranks 2 to 8 (or the rank is unknown)";
  return std::nullopt;
}

// One row per (n, c): the spatial block is contiguous.
void global_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("the input " + shape_to_string(x.shape) + " has no channel dim");
  Shape out = {x.shape[0], x.shape[1]};
  int64_t spatial = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) {
    out.push_back(1);
    spatial *= x.shape[d];
  }
  c.output(0) = c.allocate(DataType::Float, out);
  ReduceKernel k{};
  k.op = c.node().op_type == "GlobalMaxPool" ? ReduceOp::Max : ReduceOp::Mean;
  k.kept_rank = 1;
  k.kept[0] = x.shape[0] * x.shape[1];
  k.kept_stride[0] = spatial;
  k.red_rank = 1;
  k.red[0] = spatial;
  k.red_stride[0] = 1;
  k.red_count = spatial;
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, k.kept[0]);
}

std::optional<std::string> refuse_global_lp(const Graph& g, const Node& n) {
  if (auto r = require_one_real_type(g, n)) return r;
  const TypeInfo* t = g.type_of(n.inputs[0]);
  if (!t || !t->shape || t->shape->size() < 3 || t->shape->size() > 5)
    return std::string("the CUDA GlobalLpPool takes 1 to 3 spatial dims (or the rank is unknown)");
  return std::nullopt;
}

// The whole image as one window, summed in the reference's (row-major) order.
void global_lp_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() < 3 || x.shape.size() > 5) c.fail("X must be [N, C, 1 to 3 spatial dims], got " + shape_to_string(x.shape));
  Shape out(x.shape.size(), 1);
  out[0] = x.shape[0];
  out[1] = x.shape[1];
  c.output(0) = c.allocate(DataType::Float, out);
  PoolKernel k{};
  k.kind = 2;
  k.p = lp_p(c);
  k.rank = static_cast<int>(x.shape.size()) - 2;
  for (int d = 0; d < k.rank; ++d) {
    k.in[d] = k.kernel[d] = x.shape[static_cast<size_t>(d) + 2];
    k.out[d] = k.stride[d] = k.dilation[d] = 1;
  }
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(out)));
}

void run_pool(OpContext& c) {
  const DataType t = c.input(0).dtype;
  if (t == DataType::Int8 || t == DataType::Uint8) max_pool_bytes(c);
  else run_on_float32(c, pool_f32);
}
void run_global(OpContext& c) { run_on_float32(c, global_f32); }
void run_global_lp(OpContext& c) { run_on_float32(c, global_lp_f32); }

}  // namespace

void add_pool_ops(std::vector<OpDef>& t) {
  t.push_back({"MaxPool", refuse_pool, run_pool});
  t.push_back({"AveragePool", refuse_pool, run_pool});
  t.push_back({"LpPool", refuse_pool, run_pool});
  t.push_back({"GlobalLpPool", refuse_global_lp, run_global_lp});
  t.push_back({"GlobalAveragePool", refuse_global, run_global});
  t.push_back({"GlobalMaxPool", refuse_global, run_global});
}

}  // namespace onnxscope::cuda
