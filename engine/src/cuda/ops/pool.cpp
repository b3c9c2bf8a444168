// Pooling: MaxPool, AveragePool and LpPool by a window kernel
// (kernels/rows.h), sums in double and NaN skipped by the max as the
// reference does; GlobalAveragePool and GlobalMaxPool as reductions over the
// spatial dims; GlobalLpPool as LpPool with the whole image as its window.
// float16 / bfloat16 through float32 (run_on_float32), rounded once.
#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_pool(const Graph& g, const Node& n) {
  if (auto r = require_one_real_type(g, n)) return r;
  if (n.op_type == "MaxPool" && n.outputs.size() > 1 && !n.outputs[1].empty())
    return std::string("the CUDA MaxPool does not write Indices");
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
  launch(c.rt(), k, static_cast<int64_t>(elements_of(out)));
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

void run_pool(OpContext& c) { run_on_float32(c, pool_f32); }
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
