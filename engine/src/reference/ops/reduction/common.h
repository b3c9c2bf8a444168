// Helpers shared by the reference's reductions and normalizations: results
// stored from double, and the walk over reduced positions.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

namespace rn {

// double -> integer type T: NaN gives 0 and out-of-range values saturate (a
// plain C++ conversion would be undefined there).
template <typename T> T saturate_to(double v) { return saturating_cast<T>(v); }

// Stores a result computed in double into element i of a tensor of storage type
// S: floats round once (to nearest even), integers truncate toward zero and saturate.
template <typename S> void put_real(Tensor& t, uint64_t i, double v) {
  if constexpr (std::is_integral_v<S>) store<S>(t, i, saturate_to<S>(v));
  else put<S>(t, i, static_cast<compute_t<S>>(v));
}

// Writes doubles into a float tensor (any of the float types), rounding once each.
inline void store_reals(const KernelContext& ctx, Tensor& t, const std::vector<double>& v) {
  dispatch<kFloats | kFloat8>(ctx, t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < t.element_count(); ++i) put_real<S>(t, i, v[i]);
  });
}

// Fails unless `t` has one of float, double, float16, bfloat16.
inline void require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  switch (t.dtype()) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16: return;
    default: ctx.fail(std::string(what) + " does not support element type " + std::string(dtype_name(t.dtype())));
  }
}

// Product of dims[from, to).
inline uint64_t dims_product(const Shape& s, size_t from, size_t to) {
  uint64_t p = 1;
  for (size_t d = from; d < to && d < s.size(); ++d) p *= static_cast<uint64_t>(s[d]);
  return p;
}

// Calls f(i, o) for every element i of a tensor of shape `in` (row-major order)
// with o the index of the element of the reduced tensor it folds into (the
// reduced tensor keeps the dims where reduced[d] is false, in order).
template <typename F>
void for_each_reduction(const Shape& in, const std::vector<bool>& reduced, F&& f) {
  struct Dim {
    uint64_t size, out_stride, counter;  // out_stride is 0 on reduced dims
  };
  std::vector<Dim> dims(in.size());
  uint64_t s = 1, n = 1;
  for (size_t d = in.size(); d-- > 0;) {
    dims[d] = {static_cast<uint64_t>(in[d]), reduced[d] ? 0 : s, 0};
    if (!reduced[d]) s *= dims[d].size;
    n *= dims[d].size;
  }
  uint64_t o = 0;
  for (uint64_t i = 0; i < n; ++i) {
    f(i, o);
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {  // odometer step, keeping o in sync
      if (++it->counter < it->size) {
        o += it->out_stride;
        break;
      }
      o -= it->out_stride * (it->size - 1);
      it->counter = 0;
    }
  }
}

}  // namespace rn

}  // namespace onnxscope::ref
