// Range of int32, int64, float and double with typed stores: the count and
// steps from core/range_plan.h as the reference takes them (integers wrap
// modulo 2^64 as it does; reals like numpy.arange, computed in double: start,
// start + delta, then start + i * (second - first), cast once). float16 and
// bfloat16 (stash_type) and bad scalars go to the reference, which names the
// problem.
#include <stdexcept>

#include "core/range_plan.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"

namespace onnxscope::cpu {
namespace {

bool typed_scalar(const Value* v, DataType t) {
  return v && v->is_tensor() && v->tensor().dtype() == t && v->tensor().element_count() == 1;
}

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 3 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const DataType t = ctx.input_value(0)->tensor().dtype();
  if (t != DataType::Int32 && t != DataType::Int64 && t != DataType::Float && t != DataType::Double) return false;
  for (size_t i = 0; i < 3; ++i)
    if (!typed_scalar(ctx.input_value(i), t)) return false;
  try {
    const Tensor& s = ctx.input(0);
    const Tensor& l = ctx.input(1);
    const Tensor& d = ctx.input(2);
    if (t == DataType::Int32 || t == DataType::Int64)
      (void)range::integer_plan(s.element_as_int64(0), l.element_as_int64(0), d.element_as_int64(0));
    else
      (void)range::real_plan(s.element_as_double(0), l.element_as_double(0), d.element_as_double(0));
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

template <class T>
void fill_integers(T* y, const range::Plan& p) {
  const auto start = static_cast<uint64_t>(p.start), delta = static_cast<uint64_t>(p.delta);
  for (int64_t i = 0; i < p.count; ++i) y[i] = static_cast<T>(start + static_cast<uint64_t>(i) * delta);
}

template <class T>
void fill_reals(T* y, const range::Plan& p) {
  const double first = p.first, second = first + p.real_delta, step = second - first;
  for (int64_t i = 0; i < p.count; ++i)
    y[i] = static_cast<T>(i == 0 ? first : i == 1 ? second : first + static_cast<double>(i) * step);
}

void Range(KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  const DataType t = s.dtype();
  const bool integers = t == DataType::Int32 || t == DataType::Int64;
  const range::Plan p =
      integers ? range::integer_plan(s.element_as_int64(0), ctx.input(1).element_as_int64(0), ctx.input(2).element_as_int64(0))
               : range::real_plan(s.element_as_double(0), ctx.input(1).element_as_double(0), ctx.input(2).element_as_double(0));
  Tensor& y = uninitialized_output(ctx, 0, t, {p.count});
  switch (t) {
    case DataType::Int32: return fill_integers(y.mutable_data<int32_t>(), p);
    case DataType::Int64: return fill_integers(y.mutable_data<int64_t>(), p);
    case DataType::Float: return fill_reals(y.mutable_data<float>(), p);
    default: return fill_reals(y.mutable_data<double>(), p);
  }
}

}  // namespace

void register_range_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Range", 11, INT_MAX, "cpu-loop", Range, accepts});
}

}  // namespace onnxscope::cpu
