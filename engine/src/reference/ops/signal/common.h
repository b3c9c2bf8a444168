// Helpers shared by the reference's signal kernels: DFT lines, scalars and window outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/mel_weights.h"
#include "core/quant_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

using cplx = std::complex<double>;

// exp(sign * 2*pi*i * m / n) for m in [0, n): exact index reduction keeps large k*n accurate.
inline std::vector<cplx> twiddles(int64_t n, double sign) {
  std::vector<cplx> w(static_cast<size_t>(n));
  for (int64_t m = 0; m < n; ++m) {
    const double a = sign * 2.0 * std::numbers::pi * double(m) / double(n);
    w[size_t(m)] = cplx(std::cos(a), std::sin(a));
  }
  return w;
}

// X[k] = sum_m x[m] * w[(k*m) mod len] for k in [0, n_out), w from twiddles(len, sign).
// Power-of-two lengths use the radix-2 FFT (the same sums in O(len log len)),
// other lengths the direct sum.
inline void dft_line(const std::vector<cplx>& x, const std::vector<cplx>& w, int64_t n_out, std::vector<cplx>& out) {
  const int64_t len = int64_t(x.size());
  if (len >= 64 && (len & (len - 1)) == 0) {
    out = x;
    for (int64_t i = 1, j = 0; i < len; ++i) {  // bit-reversal permutation
      int64_t bit = len >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(out[size_t(i)], out[size_t(j)]);
    }
    for (int64_t size = 2; size <= len; size <<= 1) {
      const int64_t half = size / 2, stride = len / size;
      for (int64_t start = 0; start < len; start += size)
        for (int64_t j = 0; j < half; ++j) {
          const cplx t = out[size_t(start + j + half)] * w[size_t(j * stride)];
          out[size_t(start + j + half)] = out[size_t(start + j)] - t;
          out[size_t(start + j)] += t;
        }
    }
    out.resize(size_t(n_out));
    return;
  }
  out.assign(size_t(n_out), cplx(0, 0));
  for (int64_t k = 0; k < n_out; ++k) {
    cplx acc(0, 0);
    for (int64_t m = 0; m < len; ++m) acc += x[size_t(m)] * w[size_t((k * m) % len)];
    out[size_t(k)] = acc;
  }
}

// Scalar integer input (rank 0 or a single element).
inline int64_t scalar_int(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (!dtype_info(t.dtype()).is_integer) ctx.fail(std::string(what) + " must be an integer tensor");
  if (t.element_count() != 1 || t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar, got " + shape_to_string(t.shape()));
  return t.element_as_int64(0);
}

// --- windows and the mel matrix -------------------------------------------------------

// The output type named by output_datatype (default float): any real numeric type.
inline DataType numeric_output_type(const KernelContext& ctx) {
  const int64_t t = ctx.attr_int("output_datatype", 1);
  if (!is_known_dtype(int32_t(t))) ctx.fail("unknown output_datatype " + std::to_string(t));
  const DataType d = DataType(t);
  switch (d) {
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Float16: case DataType::Float: case DataType::Double: case DataType::BFloat16: return d;
    default: ctx.fail("output_datatype " + std::string(dtype_name(d)) + " is not supported");
  }
}

// Stores doubles into a numeric tensor: floats round, integers truncate (like a cast).
inline void store_numeric(const KernelContext& ctx, Tensor& t, const std::vector<double>& v) {
  dispatch<kNumeric>(ctx, t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < t.element_count(); ++i) put<S>(t, i, from_double<compute_t<S>>(v[i]));
  });
}

}  // namespace onnxscope::ref
