// Range: start, limit and delta read on the host (the output's length
// depends on them), the values made by one kernel (kernels/elementwise.h
// RangeKernel) as the reference makes them (core/range_plan.h); float,
// double, float16, bfloat16 (in float32 under opset 27's stash_type 1, else
// in double, stored through float32), int16, int32 and int64.
#include <stdexcept>

#include "core/range_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_range(const Graph& g, const Node& n) {
  if (n.inputs.size() != 3) return std::string("Range takes start, limit and delta");
  return require_types(g, n, {DataType::Float, DataType::Double, DataType::Float16, DataType::BFloat16, DataType::Int16,
                              DataType::Int32, DataType::Int64});
}

bool range_reads_on_host(const Node&, size_t) { return true; }

void run_range(OpContext& c) {
  const Tensor* start = c.host(0);
  const Tensor* limit = c.host(1);
  const Tensor* delta = c.host(2);
  if (!start || !limit || !delta) c.fail("start, limit and delta must be given");
  const DataType t = start->dtype();
  if (limit->dtype() != t || delta->dtype() != t) c.fail("start, limit and delta must have the same element type");
  if (start->element_count() != 1 || limit->element_count() != 1 || delta->element_count() != 1)
    c.fail("start, limit and delta must be scalars");
  const bool integer = dtype_info(t).is_integer;
  range::Plan p;
  try {
    p = integer ? range::integer_plan(start->element_as_int64(0), limit->element_as_int64(0), delta->element_as_int64(0))
                : range::real_plan(start->element_as_double(0), limit->element_as_double(0), delta->element_as_double(0));
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
  c.output(0) = c.allocate(t, {p.count});
  RangeKernel k{};
  k.type = static_cast<ElemType>(t);
  k.integer = integer;
  k.start = p.start;
  k.delta = p.delta;
  k.first = p.first;
  k.second = p.second;
  k.step = p.step;
  k.narrow = t == DataType::Float16 || t == DataType::BFloat16;
  if (k.narrow && c.opset() >= 27) {
    const int64_t stash = c.attr_int("stash_type", 1);
    if (stash != 1 && stash != 11) c.fail("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
    k.in_float = stash == 1;
  }
  if (k.in_float) {  // the first two values and the step in float32, as the reference's
    const float f0 = static_cast<float>(p.first), f1 = static_cast<float>(static_cast<double>(f0) + p.real_delta);
    k.first = f0;
    k.second = f1;
    k.step = static_cast<double>(f1 - f0);
  }
  k.y = c.output(0).data;
  launch(c.rt(), k, p.count);
}

}  // namespace

void add_range_ops(std::vector<OpDef>& t) { t.push_back({"Range", refuse_range, run_range, OpBackend::Kernel, range_reads_on_host}); }

}  // namespace onnxscope::cuda
