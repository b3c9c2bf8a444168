// Quantization and signal processing: QuantizeLinear, DequantizeLinear
// (per-tensor, per-axis, blocked; every quantized type of every version),
// DynamicQuantizeLinear, DFT (17: axis attribute; 20: axis input), STFT,
// HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix. Transforms and
// windows are computed in double and rounded once to the output type.
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
#include "reference/ops/ops.h"
#include "reference/ops/sequence_models_parts.h"

namespace onnxscope::ref {
namespace {

// --- quantization helpers -------------------------------------------------------

bool is_quant_int(DataType t) {
  switch (t) {
    case DataType::Int8: case DataType::Uint8: case DataType::Int16: case DataType::Uint16:
    case DataType::Int4: case DataType::Uint4: case DataType::Int2: case DataType::Uint2: return true;
    default: return false;
  }
}
bool is_quant_float(DataType t) {
  switch (t) {
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::Float4E2M1: case DataType::Float6E2M3:
    case DataType::Float6E3M2: return true;
    default: return false;
  }
}

// Saturation range of the integer quantized types.
void int_range(DataType t, double& lo, double& hi) {
  switch (t) {
    case DataType::Int8: lo = -128; hi = 127; break;
    case DataType::Uint8: lo = 0; hi = 255; break;
    case DataType::Int16: lo = -32768; hi = 32767; break;
    case DataType::Uint16: lo = 0; hi = 65535; break;
    case DataType::Int4: lo = -8; hi = 7; break;
    case DataType::Uint4: lo = 0; hi = 15; break;
    case DataType::Int2: lo = -2; hi = 1; break;
    case DataType::Uint2: lo = 0; hi = 3; break;
    default: lo = hi = 0;
  }
}

// Stores element i of a quantized output: `v` is an in-range integer for the
// integer types, the real value to encode for the float types.
void store_quantized(Tensor& y, uint64_t i, double v, bool saturate) {
  const float f = static_cast<float>(v);
  std::byte* d = y.mutable_raw();
  switch (y.dtype()) {
    case DataType::Int8: store<int8_t>(y, i, int8_t(v)); break;
    case DataType::Uint8: store<uint8_t>(y, i, uint8_t(v)); break;
    case DataType::Int16: store<int16_t>(y, i, int16_t(v)); break;
    case DataType::Uint16: store<uint16_t>(y, i, uint16_t(v)); break;
    case DataType::Int4: case DataType::Int2:
      set_packed_element_bits(y.dtype(), d, i, uint8_t(int8_t(v)));
      break;
    case DataType::Uint4: case DataType::Uint2: set_packed_element_bits(y.dtype(), d, i, uint8_t(v)); break;
    case DataType::Float8E4M3FN: store<uint8_t>(y, i, float_to_float8e4m3fn(f, saturate)); break;
    case DataType::Float8E4M3FNUZ: store<uint8_t>(y, i, float_to_float8e4m3fnuz(f, saturate)); break;
    case DataType::Float8E5M2: store<uint8_t>(y, i, float_to_float8e5m2(f, saturate)); break;
    case DataType::Float8E5M2FNUZ: store<uint8_t>(y, i, float_to_float8e5m2fnuz(f, saturate)); break;
    // FP4/FP6 have no infinity: they always saturate.
    case DataType::Float4E2M1: set_packed_element_bits(y.dtype(), d, i, float_to_float4e2m1(f)); break;
    case DataType::Float6E2M3: set_packed_element_bits(y.dtype(), d, i, float_to_float6e2m3(f)); break;
    case DataType::Float6E3M2: set_packed_element_bits(y.dtype(), d, i, float_to_float6e3m2(f)); break;
    default: break;
  }
}

// Which scale each element reads (per tensor, per axis, blocked): the
// layout the CUDA engine shares (core/quant_plan.h), its errors at the node.
quant::ParamIndex quant_param_index(const KernelContext& ctx, const Shape& x_shape, const Tensor& scale,
                                    const Tensor* zero_point, int64_t axis_attr, int64_t block_size) {
  try {
    return quant::param_index(x_shape, scale.shape(), zero_point ? &zero_point->shape() : nullptr, axis_attr, block_size);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
}

// Rounds to the precision a division in type t would have (int32 divides in double, like numpy).
double round_precision(DataType t, double v) {
  switch (t) {
    case DataType::Float: case DataType::Float8E8M0: return static_cast<float>(v);
    case DataType::Float16: case DataType::BFloat16: return seqm::round_to(t, v);
    default: return v;
  }
}

// y = saturate(round(x / y_scale) + y_zero_point)
void QuantizeLinear(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  switch (x.dtype()) {
    case DataType::Float: case DataType::Float16: case DataType::BFloat16: case DataType::Int32: break;
    default: ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  }
  switch (scale.dtype()) {
    case DataType::Float: case DataType::Float16: case DataType::BFloat16: case DataType::Int32: case DataType::Float8E8M0: break;
    default: ctx.fail("y_scale: does not support element type " + std::string(dtype_name(scale.dtype())));
  }
  if (opset < 21 && scale.rank() > 1) ctx.fail("y_scale must be a scalar or 1-D before opset 21");
  const int64_t output_dtype = ctx.attr_int("output_dtype", 0);
  DataType out_t = DataType::Uint8;
  if (zp) {
    out_t = zp->dtype();
    if (output_dtype != 0 && output_dtype != int64_t(out_t))
      ctx.fail("output_dtype " + std::to_string(output_dtype) + " differs from y_zero_point's type " +
               std::string(dtype_name(out_t)));
  } else if (output_dtype != 0) {
    if (!is_known_dtype(int32_t(output_dtype))) ctx.fail("unknown output_dtype " + std::to_string(output_dtype));
    out_t = DataType(output_dtype);
  }
  if (!is_quant_int(out_t) && !is_quant_float(out_t))
    ctx.fail("cannot quantize to " + std::string(dtype_name(out_t)));
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  const int64_t block_size = ctx.attr_int("block_size", 0);
  const quant::ParamIndex qi = quant_param_index(ctx, x.shape(), scale, zp, ctx.attr_int("axis", 1), block_size);
  // The division runs in the precision attribute's type, else in y_scale's type.
  DataType prec = scale.dtype();
  if (const int64_t p = ctx.attr_int("precision", 0); p != 0) {
    if (p != int64_t(DataType::Float) && p != int64_t(DataType::Float16) && p != int64_t(DataType::BFloat16) &&
        p != int64_t(DataType::Double) && p != int64_t(DataType::Int32))
      ctx.fail("unsupported precision " + std::to_string(p));
    prec = DataType(p);
  }

  const std::vector<double> xs = real_values(x), ss = real_values(scale);
  const std::vector<double> zs = zp ? real_values(*zp) : std::vector<double>(ss.size(), 0.0);
  Tensor& y = ctx.allocate_output(0, out_t, x.shape());
  double lo = 0, hi = 0;
  int_range(out_t, lo, hi);
  for (uint64_t i = 0; i < xs.size(); ++i) {
    const uint64_t s = qi(i);
    const double q = round_precision(prec, round_precision(prec, xs[i]) / round_precision(prec, ss[s]));
    if (is_quant_int(out_t)) {
      // Round half to even; NaN quantizes to the zero point.
      const double r = std::isnan(q) ? 0.0 : std::nearbyint(q);
      store_quantized(y, i, std::clamp(r + zs[s], lo, hi), saturate);
    } else {
      store_quantized(y, i, q + zs[s], saturate);
    }
  }
}

// y = (x - x_zero_point) * x_scale
void DequantizeLinear(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  if (!is_quant_int(x.dtype()) && !is_quant_float(x.dtype()) && x.dtype() != DataType::Int32)
    ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  if (zp && zp->dtype() != x.dtype())
    ctx.fail("x_zero_point type " + std::string(dtype_name(zp->dtype())) + " differs from x's " +
             std::string(dtype_name(x.dtype())));
  switch (scale.dtype()) {
    case DataType::Float: case DataType::Float16: case DataType::BFloat16: case DataType::Float8E8M0: break;
    default: ctx.fail("x_scale: does not support element type " + std::string(dtype_name(scale.dtype())));
  }
  if (opset < 21 && scale.rank() > 1) ctx.fail("x_scale must be a scalar or 1-D before opset 21");
  DataType out_t = scale.dtype();
  if (const int64_t od = ctx.attr_int("output_dtype", 0); od != 0) {
    if (!is_known_dtype(int32_t(od))) ctx.fail("unknown output_dtype " + std::to_string(od));
    out_t = DataType(od);
  }
  if (out_t != DataType::Float && out_t != DataType::Float16 && out_t != DataType::BFloat16)
    ctx.fail("cannot dequantize to " + std::string(dtype_name(out_t)) + " (set output_dtype)");
  const quant::ParamIndex qi =
      quant_param_index(ctx, x.shape(), scale, zp, ctx.attr_int("axis", 1), ctx.attr_int("block_size", 0));
  const std::vector<double> xs = real_values(x), ss = real_values(scale);
  const std::vector<double> zs = zp ? real_values(*zp) : std::vector<double>(ss.size(), 0.0);
  std::vector<double> ys(xs.size());
  for (uint64_t i = 0; i < xs.size(); ++i) {
    const uint64_t s = qi(i);
    ys[i] = (xs[i] - zs[s]) * ss[s];  // exact in double for every quantized type
  }
  seqm::store_doubles(ctx, ctx.allocate_output(0, out_t, x.shape()), ys);
}

// uint8 quantization with a scale and zero point derived from the data range
// (extended to include 0). Computed in float, as the spec's formulas are.
void DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float) ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  const uint64_t n = x.element_count();
  float maxx = 0.0f, minx = 0.0f;
  for (uint64_t i = 0; i < n; ++i) {
    const float v = load<float>(x, i);
    maxx = std::max(maxx, v);
    minx = std::min(minx, v);
  }
  const float qmin = 0.0f, qmax = 255.0f;
  const float scale = (maxx == minx ? 1.0f : (maxx - minx)) / (qmax - qmin);
  const float initial_zp = qmin - minx / scale;
  float zp = std::nearbyint(std::clamp(initial_zp, qmin, qmax));
  if (std::isnan(zp)) zp = 0.0f;  // an infinite range (-inf / inf); numpy's uint8 cast gives 0 too
  Tensor& y = ctx.allocate_output(0, DataType::Uint8, x.shape());
  for (uint64_t i = 0; i < n; ++i) {
    const float q = std::nearbyint(load<float>(x, i) / scale) + zp;
    store<uint8_t>(y, i, uint8_t(std::isnan(q) ? zp : std::clamp(q, qmin, qmax)));
  }
  store<float>(ctx.allocate_output(1, DataType::Float, {}), 0, scale);
  store<uint8_t>(ctx.allocate_output(2, DataType::Uint8, {}), 0, uint8_t(zp));
}

// --- DFT -------------------------------------------------------------------------

using cplx = std::complex<double>;

// exp(sign * 2*pi*i * m / n) for m in [0, n): exact index reduction keeps large k*n accurate.
std::vector<cplx> twiddles(int64_t n, double sign) {
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
void dft_line(const std::vector<cplx>& x, const std::vector<cplx>& w, int64_t n_out, std::vector<cplx>& out) {
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
int64_t scalar_int(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (!dtype_info(t.dtype()).is_integer) ctx.fail(std::string(what) + " must be an integer tensor");
  if (t.element_count() != 1 || t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar, got " + shape_to_string(t.shape()));
  return t.element_as_int64(0);
}
double scalar_real(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.element_count() != 1 || t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar, got " + shape_to_string(t.shape()));
  return t.element_as_double(0);
}

void DFT(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& input = ctx.input(0);
  seqm::require_float(ctx, input, "input");
  const int64_t rank = input.rank();
  if (rank < 2) ctx.fail("input must have rank >= 2, got " + shape_to_string(input.shape()));
  const int64_t comps = input.shape().back();
  if (comps != 1 && comps != 2) ctx.fail("the last dimension must be 1 (real) or 2 (complex), got " + std::to_string(comps));
  int64_t axis = opset >= 20 ? -2 : ctx.attr_int("axis", 1);
  if (opset >= 20) {
    if (const Tensor* a = ctx.optional_input(2)) axis = scalar_int(ctx, *a, "axis");
  }
  axis = normalize_axis(ctx, axis, rank);
  if (axis == rank - 1) ctx.fail("axis must not be the last (real/imaginary) dimension");
  const bool inverse = ctx.attr_int("inverse", 0) != 0;
  const bool onesided = ctx.attr_int("onesided", 0) != 0;
  const int64_t n_in = input.shape()[size_t(axis)];
  int64_t len = inverse && onesided ? 2 * (n_in - 1) : n_in;
  if (const Tensor* l = ctx.optional_input(1)) len = scalar_int(ctx, *l, "dft_length");
  if (len <= 0) ctx.fail("dft_length must be positive, got " + std::to_string(len));

  // Output extent along the axis and number of components.
  const int64_t n_out = (!inverse && onesided) ? len / 2 + 1 : len;
  const int64_t out_comps = (inverse && onesided) ? 1 : 2;
  Shape out_shape = input.shape();
  out_shape[size_t(axis)] = n_out;
  out_shape.back() = out_comps;

  seqm::check_work(ctx, Shape{len}, "dft_length");
  Tensor& out = ctx.allocate_output(0, input.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= input.shape()[size_t(d)];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= input.shape()[size_t(d)];
  const std::vector<double> xs = real_values(input);
  std::vector<double> ys(size_t(outer * n_out * inner * out_comps));
  const std::vector<cplx> w = twiddles(len, inverse ? 1.0 : -1.0);
  std::vector<cplx> sig(static_cast<size_t>(len)), spec;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      // The line of the signal, truncated or zero-padded to len.
      auto at = [&](int64_t m) {
        const size_t base = size_t(((o * n_in + m) * inner + in) * comps);
        return cplx(xs[base], comps == 2 ? xs[base + 1] : 0.0);
      };
      if (inverse && onesided) {
        // IRFFT: rebuild the Hermitian spectrum from its first len/2+1 bins; the
        // imaginary parts of the DC and (even len) Nyquist bins are dropped.
        const int64_t half = len / 2 + 1;
        for (int64_t k = 0; k < len; ++k) {
          cplx v;
          if (k < half) v = k < n_in ? at(k) : cplx(0, 0);
          else v = std::conj(len - k < n_in ? at(len - k) : cplx(0, 0));
          sig[size_t(k)] = v;
        }
        sig[0] = cplx(sig[0].real(), 0);
        if (len % 2 == 0) sig[size_t(len / 2)] = cplx(sig[size_t(len / 2)].real(), 0);
      } else {
        for (int64_t m = 0; m < len; ++m) sig[size_t(m)] = m < n_in ? at(m) : cplx(0, 0);
      }
      dft_line(sig, w, n_out, spec);
      for (int64_t k = 0; k < n_out; ++k) {
        cplx acc = spec[size_t(k)];
        if (inverse) acc /= double(len);
        const size_t base = size_t(((o * n_out + k) * inner + in) * out_comps);
        ys[base] = acc.real();
        if (out_comps == 2) ys[base + 1] = acc.imag();
      }
    }
  }
  seqm::store_doubles(ctx, out, ys);
}

// out[b, f, k] = sum_n window[n] * signal[b, f*step + n] * exp(-2*pi*i*k*n/frame_length)
void STFT(KernelContext& ctx) {
  const Tensor& signal = ctx.input(0);
  seqm::require_float(ctx, signal, "signal");
  if (signal.rank() != 3 || (signal.shape()[2] != 1 && signal.shape()[2] != 2))
    ctx.fail("signal must have shape [batch, length, 1 or 2], got " + shape_to_string(signal.shape()));
  const int64_t batch = signal.shape()[0], length = signal.shape()[1], comps = signal.shape()[2];
  const int64_t step = scalar_int(ctx, ctx.input(1), "frame_step");
  if (step <= 0) ctx.fail("frame_step must be positive, got " + std::to_string(step));
  const Tensor* window = ctx.optional_input(2);
  int64_t frame = length;
  if (window) {
    if (window->rank() != 1) ctx.fail("window must be 1-D, got " + shape_to_string(window->shape()));
    seqm::require_float(ctx, *window, "window");
    frame = window->shape()[0];
  }
  if (const Tensor* fl = ctx.optional_input(3)) {
    const int64_t v = scalar_int(ctx, *fl, "frame_length");
    if (window && v != frame)
      ctx.fail("frame_length " + std::to_string(v) + " differs from the window length " + std::to_string(frame));
    frame = v;
  }
  if (frame <= 0 || frame > length)
    ctx.fail("frame_length " + std::to_string(frame) + " must be in [1, signal_length " + std::to_string(length) + "]");
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  if (onesided && comps == 2) ctx.fail("onesided output is not possible for a complex signal");
  const int64_t frames = (length - frame) / step + 1;
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  // The result buffer before anything is computed: frame_step 1 and a long
  // frame make frames x bins far larger than the signal.
  seqm::check_work(ctx, Shape{batch, frames, bins, 2}, "the STFT's output");
  const std::vector<double> xs = real_values(signal);
  const std::vector<double> win = window ? real_values(*window) : std::vector<double>(size_t(frame), 1.0);
  const std::vector<cplx> w = twiddles(frame, -1.0);
  std::vector<double> ys(size_t(batch * frames * bins * 2));
  std::vector<cplx> seg(static_cast<size_t>(frame)), spec;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t n = 0; n < frame; ++n) {
        const size_t base = size_t((b * length + f * step + n) * comps);
        seg[size_t(n)] = win[size_t(n)] * cplx(xs[base], comps == 2 ? xs[base + 1] : 0.0);
      }
      dft_line(seg, w, bins, spec);
      for (int64_t k = 0; k < bins; ++k) {
        const cplx acc = spec[size_t(k)];
        const size_t base = size_t(((b * frames + f) * bins + k) * 2);
        ys[base] = acc.real();
        ys[base + 1] = acc.imag();
      }
    }
  }
  seqm::store_doubles(ctx, ctx.allocate_output(0, signal.dtype(), {batch, frames, bins, 2}), ys);
}

// --- windows and the mel matrix -------------------------------------------------------

// The output type named by output_datatype (default float): any real numeric type.
DataType numeric_output_type(const KernelContext& ctx) {
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
void store_numeric(const KernelContext& ctx, Tensor& t, const std::vector<double>& v) {
  dispatch<kNumeric>(ctx, t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < t.element_count(); ++i) put<S>(t, i, from_double<compute_t<S>>(v[i]));
  });
}

// w[n] = sum_j a_j * cos(2*pi*j*n / N), N = size (periodic) or size - 1 (symmetric).
void cosine_window(KernelContext& ctx, std::initializer_list<double> coeffs) {
  const int64_t size = scalar_int(ctx, ctx.input(0), "size");
  if (size < 0) ctx.fail("size must be non-negative, got " + std::to_string(size));
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const DataType out_t = numeric_output_type(ctx);
  const double N = double(periodic ? size : size - 1);
  Tensor& out = ctx.allocate_output(0, out_t, {size});
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double acc = 0;
    int j = 0;
    for (double a : coeffs) acc += a * std::cos(2.0 * std::numbers::pi * j++ * double(n) / N);
    // A symmetric window of length 1 has N = 0 (0/0 in the formula): its single point is 1, as in torch.
    v[size_t(n)] = N == 0 ? 1.0 : acc;
  }
  store_numeric(ctx, out, v);
}

// sin^2(pi n / N) = 0.5 - 0.5 cos(2 pi n / N)
void HannWindow(KernelContext& ctx) { cosine_window(ctx, {0.5, -0.5}); }
// alpha = 25/46, beta = 1 - alpha (the exact Hamming coefficients, as onnx uses)
void HammingWindow(KernelContext& ctx) { cosine_window(ctx, {25.0 / 46.0, -21.0 / 46.0}); }
void BlackmanWindow(KernelContext& ctx) { cosine_window(ctx, {0.42, -0.5, 0.08}); }

// Triangular filters evenly spaced on the mel scale mel(f) = 2595 log10(1 + f/700),
// mapped to DFT bins as floor((dft_length + 1) * f / sample_rate); peaks are 1.
void MelWeightMatrix(KernelContext& ctx) {
  const int64_t mel_bins = scalar_int(ctx, ctx.input(0), "num_mel_bins");
  const int64_t dft_length = scalar_int(ctx, ctx.input(1), "dft_length");
  const int64_t sample_rate = scalar_int(ctx, ctx.input(2), "sample_rate");
  seqm::require_float(ctx, ctx.input(3), "lower_edge_hertz");
  seqm::require_float(ctx, ctx.input(4), "upper_edge_hertz");
  const double lower = scalar_real(ctx, ctx.input(3), "lower_edge_hertz");
  const double upper = scalar_real(ctx, ctx.input(4), "upper_edge_hertz");
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    ctx.fail("num_mel_bins, dft_length and sample_rate must be positive");
  const DataType out_t = numeric_output_type(ctx);
  const int64_t spec_bins = dft_length / 2 + 1;
  Tensor& result = ctx.allocate_output(0, out_t, {spec_bins, mel_bins});
  // num_mel_bins + 2 edge points (core/mel_weights.h, shared with the CUDA kernel).
  const std::vector<int64_t> edges = mel::edges(mel_bins, dft_length, sample_rate, lower, upper);
  std::vector<double> out(size_t(spec_bins * mel_bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= spec_bins)
      ctx.fail("mel filter edge " + std::to_string(j) + " falls outside the " + std::to_string(spec_bins) +
               " spectrogram bins (check the hertz range and sample_rate)");
    out[size_t(j * mel_bins + i)] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = edges[size_t(i)], center = edges[size_t(i + 1)], hi = edges[size_t(i + 2)];
    if (center == lo) set(center, i, 1.0);
    else
      for (int64_t j = lo; j <= center; ++j) set(j, i, double(j - lo) / double(center - lo));
    if (hi > center)
      for (int64_t j = center; j < hi; ++j) set(j, i, double(hi - j) / double(hi - center));
  }
  store_numeric(ctx, result, out);
}

}  // namespace

void register_sequence_models_signal_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{"", op, since, until, "reference", fn, nullptr});
  };
  // One kernel per op: differences between versions (axis, saturate, block_size,
  // output_dtype, precision, DFT's axis input) are read by attribute or opset.
  add("QuantizeLinear", QuantizeLinear, 10);
  add("DequantizeLinear", DequantizeLinear, 10);
  add("DynamicQuantizeLinear", DynamicQuantizeLinear, 11);
  add("DFT", DFT, 17);
  add("STFT", STFT, 17);
  add("HannWindow", HannWindow, 17);
  add("HammingWindow", HammingWindow, 17);
  add("BlackmanWindow", BlackmanWindow, 17);
  add("MelWeightMatrix", MelWeightMatrix, 17);
}

}  // namespace onnxscope::ref
