// Reference kernels: convolution, pooling, matrix products, resampling: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool, MatMul, MatMulInteger, QLinearMatMul, Gemm, Einsum, Det, Resize, Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression.
//
// This file holds the integer and other matrix products (MatMulInteger,
// QLinearMatMul, Einsum, Det) and registers the other parts: math/matmul.cpp
// and math/gemm.cpp (MatMul, Gemm), nn_conv.cpp (convolutions),
// nn_pool.cpp (pooling), nn_resize.cpp (Resize, Upsample, GridSample,
// AffineGrid, RoiAlign, NonMaxSuppression).
//
// Float inputs (float16, bfloat16, float, double) are widened to double and
// products are accumulated in double, then rounded once on store. Integer
// products are accumulated in 64-bit two's complement arithmetic, so results
// wrap like numpy's fixed-width integer matmul.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/einsum_plan.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn_parts.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {
namespace {

using math::acc_t;
using math::matmul_values;
using math::values_as;

// Subtracts a quantization zero point: a scalar, or one value per row of A
// (`along_rows`) / per column of B.
void subtract_zero_point(const KernelContext& ctx, std::vector<int64_t>& v, const Shape& s, const Tensor* zp,
                         bool along_rows, const char* what) {
  if (!zp || zp->element_count() == 0) return;
  if (zp->element_count() == 1) {
    const int64_t z = zp->element_as_int64(0);
    for (auto& e : v) e -= z;
    return;
  }
  if (s.size() < 2) ctx.fail(std::string(what) + " must be a scalar for a 1-D input");
  const int64_t rows = s[s.size() - 2], cols = s.back();
  const int64_t n = along_rows ? rows : cols;
  if (static_cast<int64_t>(zp->element_count()) != n)
    ctx.fail(std::string(what) + " must be a scalar or have " + std::to_string(n) + " values, got " +
             shape_to_string(zp->shape()));
  for (uint64_t i = 0; i < v.size(); ++i) {
    const int64_t r = static_cast<int64_t>(i / cols) % rows, c = static_cast<int64_t>(i % cols);
    v[i] -= zp->element_as_int64(along_rows ? r : c);
  }
}

bool is_int8(DataType t) { return t == DataType::Int8 || t == DataType::Uint8; }

void MatMulInteger(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!is_int8(a.dtype()) || !is_int8(b.dtype())) ctx.fail("A and B must be int8 or uint8");
  std::vector<int64_t> av = values_as<int64_t>(a), bv = values_as<int64_t>(b);
  subtract_zero_point(ctx, av, a.shape(), ctx.optional_input(2), true, "a_zero_point");
  subtract_zero_point(ctx, bv, b.shape(), ctx.optional_input(3), false, "b_zero_point");
  Shape shape;
  std::vector<int64_t> y = matmul_values<int64_t>(ctx, av, a.shape(), bv, b.shape(), shape);
  Tensor& out = ctx.allocate_output(0, DataType::Int32, shape);
  for (uint64_t i = 0; i < y.size(); ++i) store<int32_t>(out, i, static_cast<int32_t>(y[i]));
}

// QLinearMatMul: y = saturate(round((a - a_zp) @ (b - b_zp) * a_scale * b_scale / y_scale) + y_zp).
// int8/uint8 and (opset 21) the FP8 formats; FP8 values are subtracted and
// multiplied as reals, and the output is saturated on conversion.
void QLinearMatMul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& yzp = ctx.input(7);
  auto scalar = [&](size_t i, const char* what) {
    const Tensor& t = ctx.input(i);
    if (t.element_count() != 1) ctx.fail(std::string(what) + " must be a scalar (per-tensor quantization)");
    return static_cast<float>(t.element_as_double(0));
  };
  const float a_scale = scalar(1, "a_scale"), b_scale = scalar(4, "b_scale"), y_scale = scalar(6, "y_scale");
  if (yzp.element_count() != 1) ctx.fail("y_zero_point must be a scalar");
  if (ctx.input(2).element_count() != 1 || ctx.input(5).element_count() != 1)
    ctx.fail("a_zero_point and b_zero_point must be scalars");
  const double mult = static_cast<float>(a_scale * b_scale / y_scale);  // formed in float, like the scales
  Shape shape;
  std::vector<double> y;
  if (is_int8(a.dtype()) && is_int8(b.dtype())) {
    std::vector<int64_t> av = values_as<int64_t>(a), bv = values_as<int64_t>(b);
    subtract_zero_point(ctx, av, a.shape(), &ctx.input(2), true, "a_zero_point");
    subtract_zero_point(ctx, bv, b.shape(), &ctx.input(5), false, "b_zero_point");
    std::vector<int64_t> acc = matmul_values<int64_t>(ctx, av, a.shape(), bv, b.shape(), shape);
    y.assign(acc.begin(), acc.end());
  } else {
    std::vector<double> av = real_values(a), bv = real_values(b);
    const double az = ctx.input(2).element_as_double(0), bz = ctx.input(5).element_as_double(0);
    for (auto& e : av) e -= az;
    for (auto& e : bv) e -= bz;
    y = matmul_values<double>(ctx, av, a.shape(), bv, b.shape(), shape);
  }
  const DataType out_type = yzp.dtype();
  const double zp = yzp.element_as_double(0);
  Tensor& out = ctx.allocate_output(0, out_type, shape);
  if (is_int8(out_type)) {
    const double lo = out_type == DataType::Int8 ? -128 : 0, hi = out_type == DataType::Int8 ? 127 : 255;
    for (uint64_t i = 0; i < y.size(); ++i) {
      // A NaN product (scales of 0 / 0, NaN or inf) gives the zero point, as QuantizeLinear's NaN does.
      const double r = std::nearbyint(y[i] * mult);
      const double q = std::clamp((std::isnan(r) ? 0.0 : r) + zp, lo, hi);
      if (out_type == DataType::Int8) store<int8_t>(out, i, static_cast<int8_t>(q));
      else store<uint8_t>(out, i, static_cast<uint8_t>(q));
    }
    return;
  }
  dispatch<kFloat8>(ctx, out_type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.size(); ++i) put<S>(out, i, static_cast<float>(y[i] * mult + zp));
  });
}

// --- Einsum ----------------------------------------------------------------------

// Labels, sizes and strides from core/einsum_plan.h (shared with the CUDA
// engine); every output element sums the products over the summed labels.
void Einsum(KernelContext& ctx) {
  std::string eq;
  for (char ch : ctx.attr_string("equation")) if (ch != ' ') eq += ch;
  const size_t n_in = ctx.input_count();
  const DataType dt = ctx.input(0).dtype();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n_in; ++i) {
    if (ctx.input(i).dtype() != dt) ctx.fail("all inputs must have the same element type");
    shapes.push_back(ctx.input(i).shape());
  }
  einsum::Plan p;
  try {
    p = einsum::plan(eq, shapes);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  dispatch<kFloats | kInts>(ctx, dt, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = acc_t<S>;
    std::vector<std::vector<T>> vals(n_in);
    for (size_t i = 0; i < n_in; ++i) vals[i] = values_as<T>(ctx.input(i));
    Tensor& out = ctx.allocate_output(0, dt, p.out_shape);
    std::vector<int64_t> base(n_in);
    uint64_t o = 0;
    for (nn::Counter oc(p.out_shape); oc.valid(); oc.next(), ++o) {  // an empty shape iterates once
      if ((o & 255) == 0) poll_deadline();
      for (size_t i = 0; i < n_in; ++i) {
        base[i] = 0;
        for (size_t d = 0; d < p.out_shape.size(); ++d) base[i] += oc.index[d] * p.out_stride[i][d];
      }
      T acc = T(0);
      for (nn::Counter sc(p.sum_shape); sc.valid(); sc.next()) {
        T prod = T(1);
        for (size_t i = 0; i < n_in; ++i) {
          int64_t off = base[i];
          for (size_t d = 0; d < p.sum_shape.size(); ++d) off += sc.index[d] * p.sum_stride[i][d];
          prod *= vals[i][static_cast<size_t>(off)];
        }
        acc += prod;
      }
      put<S>(out, o, static_cast<compute_t<S>>(acc));
    }
  });
}

// --- Det -------------------------------------------------------------------------

// Determinant of each trailing square matrix, by LU decomposition with partial pivoting in double.
void Det(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    ctx.fail("X must have shape [*, M, M], got " + shape_to_string(s));
  const int64_t n = s.back();
  const Shape out_shape(s.begin(), s.end() - 2);
  const uint64_t count = *checked_element_count(out_shape);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x);
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    std::vector<double> m(static_cast<size_t>(n * n));
    for (uint64_t b = 0; b < count; ++b) {
      std::copy(xv.begin() + static_cast<int64_t>(b) * n * n, xv.begin() + static_cast<int64_t>(b + 1) * n * n, m.begin());
      double det = 1;
      for (int64_t col = 0; col < n && det != 0; ++col) {
        int64_t piv = col;
        for (int64_t r = col + 1; r < n; ++r)
          if (std::abs(m[r * n + col]) > std::abs(m[piv * n + col])) piv = r;
        if (m[piv * n + col] == 0) {
          det = 0;
          break;
        }
        if (piv != col) {
          for (int64_t j = 0; j < n; ++j) std::swap(m[piv * n + j], m[col * n + j]);
          det = -det;
        }
        det *= m[col * n + col];
        for (int64_t r = col + 1; r < n; ++r) {
          const double f = m[r * n + col] / m[col * n + col];
          for (int64_t j = col; j < n; ++j) m[r * n + j] -= f * m[col * n + j];
        }
      }
      put<S>(out, b, static_cast<compute_t<S>>(det));
    }
  });
}

}  // namespace

void register_nn_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) { r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr}); };
  add("MatMulInteger", MatMulInteger, 10);
  add("QLinearMatMul", QLinearMatMul, 10);
  add("Einsum", Einsum, 12);
  add("Det", Det, 11);
  math::register_matmul(r);
  math::register_gemm(r);
  register_nn_conv_ops(r);
  register_nn_pool_ops(r);
  register_nn_resize_ops(r);
}

}  // namespace onnxscope::ref
