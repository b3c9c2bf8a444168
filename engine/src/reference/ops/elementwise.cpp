// Elementwise operators: unary math and activations, binary arithmetic with
// numpy broadcasting, comparisons, logic, bitwise ops, variadic Max/Min/Sum/Mean,
// Where. Narrow floats are computed in float and rounded on store (numpy does
// the same for float16); float32 math is done in float, like numpy.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {
namespace {

// --- unary -----------------------------------------------------------------

// Element i of a tensor's bytes as S / stored from S: load<> and store<> on
// a pointer fetched once (a tensor's raw() per element costs more than the
// math of a cheap op). A bool byte other than 0 or 1 reads true, as load<bool>.
template <typename S> inline S load_at(const std::byte* p, uint64_t i) {
  if constexpr (std::is_same_v<S, bool>) {
    return p[i] != std::byte{0};
  } else {
    S v;
    std::memcpy(&v, p + i * sizeof(S), sizeof(S));
    return v;
  }
}
template <typename S> inline void store_at(std::byte* p, uint64_t i, S v) { std::memcpy(p + i * sizeof(S), &v, sizeof(S)); }

// Elementwise work over n outputs split across the thread pool in chunks
// (each output is computed alone, so the split changes no result).
template <typename Fn>
void for_chunks(uint64_t n, Fn fn) {
  cpu::parallel_for(static_cast<int64_t>(n), 32768, [&](int64_t lo, int64_t hi) {
    poll_deadline();
    fn(static_cast<uint64_t>(lo), static_cast<uint64_t>(hi));
  });
}

// y = f(x) over one tensor, same type and shape. `f` is generic over the compute type.
template <unsigned Types, typename F>
void unary(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<Types>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* px = x.raw();
    std::byte* py = y.mutable_raw();
    for_chunks(x.element_count(), [&](uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo; i < hi; ++i)
        store_at<S>(py, i, from_compute<S>(static_cast<compute_t<S>>(f(to_compute(load_at<S>(px, i))))));
    });
  });
}

// y = pred(x) as bool.
template <unsigned Types, typename F>
void unary_predicate(KernelContext& ctx, F pred) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
  dispatch<Types>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) store<bool>(y, i, pred(get<S>(x, i)));
  });
}

template <typename T> T sigmoid(T x) {
  // Split by sign so exp never overflows.
  return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}

// numpy.round: half to even.
template <typename T> T round_half_even(T x) { return std::nearbyint(x); }

// The most negative integer has no positive counterpart: it stays itself
// (numpy and ONNX Runtime wrap); computed in uint64_t to avoid the overflow.
template <typename T>
T negate(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(v));
  else return -v;
}
void Abs(KernelContext& c) {
  unary<kNumeric>(c, [](auto v) {
    if constexpr (std::is_unsigned_v<decltype(v)>) return v;
    else return v < 0 ? negate(v) : v;
  });
}
void Neg(KernelContext& c) {
  unary<kFloats | kSignedInts>(c, [](auto v) { return negate(v); });
}
void Sign(KernelContext& c) {
  unary<kNumeric>(c, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return v;
    }
    return T(v > T(0) ? 1 : (v < T(0) ? -1 : 0));
  });
}
void Reciprocal(KernelContext& c) { unary<kFloats>(c, [](auto v) { return decltype(v)(1) / v; }); }
void Floor(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::floor(v); }); }
void Ceil(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::ceil(v); }); }
void Round(KernelContext& c) { unary<kFloats>(c, [](auto v) { return round_half_even(v); }); }
void Sqrt(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::sqrt(v); }); }
void Exp(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::exp(v); }); }
void Log(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::log(v); }); }
void Sin(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::sin(v); }); }
void Cos(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::cos(v); }); }
void Tan(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::tan(v); }); }
void Asin(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::asin(v); }); }
void Acos(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::acos(v); }); }
void Atan(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::atan(v); }); }
void Sinh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::sinh(v); }); }
void Cosh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::cosh(v); }); }
void Asinh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::asinh(v); }); }
void Acosh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::acosh(v); }); }
void Atanh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::atanh(v); }); }
void Tanh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::tanh(v); }); }
void Erf(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::erf(v); }); }
void Sigmoid(KernelContext& c) { unary<kFloats>(c, [](auto v) { return sigmoid(v); }); }
void Relu(KernelContext& c) {
  unary<kFloats | kSignedInts>(c, [](auto v) { return v > decltype(v)(0) ? v : decltype(v)(0); });
}
void Softsign(KernelContext& c) { unary<kFloats>(c, [](auto v) { return v / (decltype(v)(1) + std::abs(v)); }); }
void Softplus(KernelContext& c) {
  // log(1 + exp(x)), written to stay finite for large x.
  unary<kFloats>(c, [](auto v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); });
}
void Mish(KernelContext& c) {
  unary<kFloats>(c, [](auto v) {
    auto sp = v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    return v * std::tanh(sp);
  });
}
void Not(KernelContext& c) { unary<kBool>(c, [](auto v) { return !v; }); }
void BitwiseNot(KernelContext& c) { unary<kInts>(c, [](auto v) { return decltype(v)(~v); }); }
void IsNaN(KernelContext& c) {
  unary_predicate<kFloats | kFloat8>(c, [](auto v) { return std::isnan(v); });
}
void IsInf(KernelContext& c) {
  const bool neg = c.attr_int("detect_negative", 1) != 0, pos = c.attr_int("detect_positive", 1) != 0;
  unary_predicate<kFloats | kFloat8>(c, [&](auto v) { return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)); });
}

void LeakyRelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 0.01f);
  unary<kFloats>(c, [&](auto v) { return v >= 0 ? v : decltype(v)(alpha) * v; });
}
void Elu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) { return v >= 0 ? v : decltype(v)(alpha) * std::expm1(v); });
}
void Selu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.67326319217681884765625f);
  const float gamma = c.attr_float("gamma", 1.05070102214813232421875f);
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    return v > 0 ? T(gamma) * v : T(gamma) * (T(alpha) * std::exp(v) - T(alpha));
  });
}
void Celu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    if (std::isnan(v)) return v;  // numpy's maximum / minimum keep NaN; std::max / std::min drop it
    return std::max(T(0), v) + std::min(T(0), T(alpha) * std::expm1(v / T(alpha)));
  });
}
void HardSigmoid(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    if (std::isnan(v)) return v;  // numpy's maximum / minimum keep NaN; std::max / std::min drop it
    return std::max(T(0), std::min(T(1), T(alpha) * v + T(beta)));
  });
}
void HardSwish(KernelContext& c) {
  unary<kFloats>(c, [](auto v) {
    using T = decltype(v);
    return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
  });
}
void ThresholdedRelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) { return v > decltype(v)(alpha) ? v : decltype(v)(0); });
}
void Shrink(KernelContext& c) {
  const float bias = c.attr_float("bias", 0.0f), lambd = c.attr_float("lambd", 0.5f);
  unary<kNumeric>(c, [&](auto v) {
    using T = decltype(v);
    double d = static_cast<double>(v);
    // bias is a float attribute: on integers, d +- bias can leave T's range (saturated, not undefined).
    if constexpr (std::is_integral_v<T>) return d < -lambd ? saturating_cast<T>(d + bias) : (d > lambd ? saturating_cast<T>(d - bias) : T(0));
    else return d < -lambd ? T(d + bias) : (d > lambd ? T(d - bias) : T(0));
  });
}
void Gelu(KernelContext& c) {
  const std::string approx = c.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") c.fail("approximate must be 'none' or 'tanh', got '" + approx + "'");
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    if (approx == "tanh")
      return T(0.5) * v * (T(1) + std::tanh(std::sqrt(T(2) / T(M_PI)) * (v + T(0.044715) * v * v * v)));
    return T(0.5) * v * (T(1) + std::erf(v / std::sqrt(T(2))));
  });
}
void Swish(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) { return v * sigmoid(decltype(v)(alpha) * v); });
}

// --- binary with broadcasting ------------------------------------------------

// z = f(a, b) with numpy broadcasting; output type `out` (the input type if Undefined).
template <unsigned Types, typename F>
void binary(KernelContext& ctx, F f, DataType out = DataType::Undefined) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have different element types: " + std::string(dtype_name(a.dtype())) + " and " +
             std::string(dtype_name(b.dtype())));
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  Shape shape = broadcast_shapes(ctx, shapes);
  Tensor& z = ctx.allocate_output(0, out == DataType::Undefined ? a.dtype() : out, shape);
  dispatch<Types>(ctx, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* pa = a.raw();
    const std::byte* pb = b.raw();
    std::byte* pz = z.mutable_raw();
    auto one = [&](uint64_t i, uint64_t ia, uint64_t ib) {
      auto r = f(to_compute(load_at<S>(pa, ia)), to_compute(load_at<S>(pb, ib)));
      if constexpr (std::is_same_v<decltype(r), bool>) {
        if (out == DataType::Bool) {
          store_at<bool>(pz, i, r);
          return;
        }
      }
      store_at<S>(pz, i, from_compute<S>(static_cast<compute_t<S>>(r)));
    };
    // The common broadcasts without an index per element: an operand whose
    // dims (aligned right) equal the output's over one run of dims and are 1
    // elsewhere (the output's shape, a scalar, a bias row, RMSNorm's [S, 1]
    // scale of [S, D], a rotary table [1, 1, S, D] of [B, H, S, D]); its
    // element for output i is (i / inner) % period. Any other through
    // BroadcastIndex.
    const uint64_t n = z.element_count();
    auto block = [&](const Shape& s) -> std::optional<std::pair<uint64_t, uint64_t>> {
      if (s.size() > shape.size()) return std::nullopt;
      const size_t off = shape.size() - s.size();
      size_t lo = shape.size(), hi = 0;
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] != 1) {
          lo = std::min(lo, off + d);
          hi = off + d + 1;
        }
      uint64_t inner = 1, period = 1;
      for (size_t d = lo; d < hi; ++d) {
        if (s[d - off] != shape[d]) return std::nullopt;
        period *= static_cast<uint64_t>(shape[d]);
      }
      if (lo == shape.size()) return std::make_pair(uint64_t{1}, uint64_t{1});  // every dim 1: a single element
      for (size_t d = hi; d < shape.size(); ++d) inner *= static_cast<uint64_t>(shape[d]);
      return std::make_pair(inner, period);
    };
    const auto ba = block(a.shape()), bb = block(b.shape());
    if (n > 0 && ba && bb) {
      // (i / inner) % period, stepped without a division per element.
      struct Walk {
        uint64_t inner, period, q = 0, r = 0;
        void start(uint64_t i) {
          q = (i / inner) % period;
          r = i % inner;
        }
        void next() {
          if (++r == inner) {
            r = 0;
            if (++q == period) q = 0;
          }
        }
      };
      for_chunks(n, [&](uint64_t lo, uint64_t hi) {
        Walk wa{ba->first, ba->second}, wb{bb->first, bb->second};
        wa.start(lo);
        wb.start(lo);
        for (uint64_t i = lo; i < hi; ++i, wa.next(), wb.next()) one(i, wa.q, wb.q);
      });
      return;
    }
    BroadcastIndex bi(shape, shapes);
    for (uint64_t i = 0; i < n; ++i, bi.next()) {
      if ((i & 65535) == 0) poll_deadline();
      one(i, bi.offsets()[0], bi.offsets()[1]);
    }
  });
}

template <unsigned Types, typename F>
void compare(KernelContext& ctx, F f) {
  binary<Types>(ctx, [&](auto x, auto y) -> bool { return f(x, y); }, DataType::Bool);
}

// Signed integers wrap on overflow, like numpy (and ONNX Runtime); in C++ a
// signed overflow is undefined, so the arithmetic runs on the unsigned type.
// (Through uint64_t: a narrower unsigned type would be promoted to int and
// could overflow again; the result modulo 2^bits is the same.)
template <typename T, typename F>
T wrapping(T x, T y, F op) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(op(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
  } else {
    return static_cast<T>(op(x, y));
  }
}

void Add(KernelContext& c) {
  binary<kNumeric>(c, [](auto x, auto y) { return wrapping(x, decltype(x)(y), [](auto a, auto b) { return a + b; }); });
}
void Sub(KernelContext& c) {
  binary<kNumeric>(c, [](auto x, auto y) { return wrapping(x, decltype(x)(y), [](auto a, auto b) { return a - b; }); });
}
void Mul(KernelContext& c) {
  binary<kNumeric>(c, [](auto x, auto y) { return wrapping(x, decltype(x)(y), [](auto a, auto b) { return a * b; }); });
}
void Div(KernelContext& c) {
  binary<kNumeric>(c, [&](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) c.fail("integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (x == std::numeric_limits<T>::min() && y == T(-1)) return x;  // wraps, like numpy
      return T(x / y);  // C++ truncates toward zero, as the spec asks for integers
    } else {
      return x / y;
    }
  });
}
// An integer to a power, as numpy computes it: to a non-negative whole
// exponent by repeated multiplication, wrapping on overflow; otherwise through
// double, where a result outside the type (or NaN) becomes the type's lowest
// value, as numpy's astype gives on x86 (never the undefined float-to-int
// conversion).
template <typename I>
I integer_pow(I base, double e) {
  if (e >= 0 && e == std::floor(e) && e < 1.8e19) {
    uint64_t r = 1, b = static_cast<uint64_t>(base);  // modulo 2^64, then the low bits
    for (uint64_t n = static_cast<uint64_t>(e); n; n >>= 1) {
      if (n & 1) r *= b;
      b *= b;
    }
    return static_cast<I>(r);
  }
  const double p = std::pow(static_cast<double>(base), e);
  const double hi = std::ldexp(1.0, std::numeric_limits<I>::digits);
  const double lo = std::is_signed_v<I> ? -hi : 0.0;
  if (!(p >= lo && p < hi)) return std::numeric_limits<I>::lowest();
  return static_cast<I>(p);
}

void Pow(KernelContext& c) {
  // The exponent may have another type than the base (opset 12+).
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  Shape shape = broadcast_shapes(c, shapes);
  Tensor& z = c.allocate_output(0, a.dtype(), shape);
  dispatch<kNumeric>(c, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    BroadcastIndex bi(shape, shapes);
    for (uint64_t i = 0; i < z.element_count(); ++i, bi.next()) {
      const auto base = get<S>(a, bi.offsets()[0]);
      const double e = b.element_as_double(bi.offsets()[1]);
      if constexpr (std::is_integral_v<compute_t<S>>)
        put<S>(z, i, integer_pow<compute_t<S>>(static_cast<compute_t<S>>(base), e));
      else
        put<S>(z, i, static_cast<compute_t<S>>(std::pow(static_cast<compute_t<S>>(base), static_cast<compute_t<S>>(e))));
    }
  });
}
void Mod(KernelContext& c) {
  const bool fmod = c.attr_int("fmod", 0) != 0;
  binary<kNumeric>(c, [&](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) c.fail("integer modulo by zero");
      if constexpr (std::is_signed_v<T>)
        if (y == T(-1)) return T(0);  // avoids INT_MIN % -1 overflow; the result is 0 anyway
      if (fmod) return T(x % y);
      T r = T(x % y);
      if constexpr (std::is_signed_v<T>)
        if (r != 0 && ((r < 0) != (y < 0))) r = T(r + y);  // sign follows the divisor
      return r;
    } else {
      T r = std::fmod(x, y);
      if (fmod) return r;
      // fmod=0 on floats (defined from opset 28): A - floor(A/B)*B, sign of B,
      // computed from fmod as numpy does so the special cases come out right.
      if (r != 0) {
        if ((y < 0) != (r < 0)) r += y;
      } else {
        r = std::copysign(T(0), y);
      }
      return r;
    }
  });
}
void BitShift(KernelContext& c) {
  const std::string dir = c.attr_string("direction");
  if (dir != "LEFT" && dir != "RIGHT") c.fail("direction must be LEFT or RIGHT, got '" + dir + "'");
  const bool right = dir == "RIGHT";
  binary<kInts>(c, [&](auto x, auto y) {
    using T = decltype(x);
    using U = std::make_unsigned_t<T>;
    // Shifts by a negative amount or by the width or more give what sign
    // extension alone produces (opset 28 spells this out; C++ leaves it undefined).
    bool out_of_range = static_cast<uint64_t>(y) >= sizeof(T) * 8;
    if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || y < 0;
    if (right) {
      if (out_of_range) return (std::is_signed_v<T> && x < 0) ? T(-1) : T(0);
      return T(x >> y);  // arithmetic for signed types (C++20)
    }
    if (out_of_range) return T(0);
    return T(static_cast<U>(static_cast<U>(x) << y));
  });
}
void And(KernelContext& c) { compare<kBool>(c, [](auto x, auto y) { return x && y; }); }
void Or(KernelContext& c) { compare<kBool>(c, [](auto x, auto y) { return x || y; }); }
void Xor(KernelContext& c) { compare<kBool>(c, [](auto x, auto y) { return x != y; }); }
void BitwiseAnd(KernelContext& c) { binary<kInts>(c, [](auto x, auto y) { return decltype(x)(x & y); }); }
void BitwiseOr(KernelContext& c) { binary<kInts>(c, [](auto x, auto y) { return decltype(x)(x | y); }); }
void BitwiseXor(KernelContext& c) { binary<kInts>(c, [](auto x, auto y) { return decltype(x)(x ^ y); }); }
void Equal(KernelContext& c) { compare<kNumeric | kBool>(c, [](auto x, auto y) { return x == y; }); }
void Less(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x < y; }); }
void LessOrEqual(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x <= y; }); }
void Greater(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x > y; }); }
void GreaterOrEqual(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x >= y; }); }
void PRelu(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor slope = c.input(1);
  if (x.dtype() != slope.dtype()) c.fail("X and slope must have the same element type");
  // Opsets 1 and 6 define no broadcasting; exporters of that era (PyTorch)
  // write one slope per channel, shape [C], meaning axis 1. Read it so.
  if (c.opset_version() < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.shape()[0] == x.shape()[1] &&
      slope.shape()[0] != 1) {
    Shape per_channel(static_cast<size_t>(x.rank() - 1), 1);
    per_channel[0] = slope.shape()[0];
    slope = Tensor::from_buffer(slope.dtype(), per_channel, slope.buffer());
  }
  const Shape* shapes[] = {&x.shape(), &slope.shape()};
  // Unidirectional: the slope broadcasts to X, never the other way.
  if (broadcast_shapes(c, shapes) != x.shape())
    c.fail("slope of shape " + shape_to_string(slope.shape()) + " does not broadcast to X of shape " +
           shape_to_string(x.shape()));
  Tensor& y = c.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats | kInts>(c, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    BroadcastIndex bi(x.shape(), shapes);
    for (uint64_t i = 0; i < y.element_count(); ++i, bi.next()) {
      const C v = get<S>(x, i);
      put<S>(y, i, v < C(0) ? static_cast<C>(v * get<S>(slope, bi.offsets()[1])) : v);
    }
  });
}

// String equality (Equal accepts strings from opset 19).
void EqualStrings(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  Shape shape = broadcast_shapes(c, shapes);
  Tensor& z = c.allocate_output(0, DataType::Bool, shape);
  BroadcastIndex bi(shape, shapes);
  for (uint64_t i = 0; i < z.element_count(); ++i, bi.next())
    store<bool>(z, i, a.strings()[bi.offsets()[0]] == b.strings()[bi.offsets()[1]]);
}
bool inputs_are_strings(const KernelContext& c) {
  const Tensor* a = c.optional_input(0);
  return a && a->is_string();
}

// --- variadic: Max, Min, Sum, Mean -----------------------------------------

template <unsigned Types, typename F>
void variadic(KernelContext& ctx, F combine, bool mean = false) {
  std::vector<const Shape*> shapes;
  const Tensor& first = ctx.input(0);
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    const Tensor& t = ctx.input(k);
    if (t.dtype() != first.dtype()) ctx.fail("all inputs must have the same element type");
    shapes.push_back(&t.shape());
  }
  Shape shape = broadcast_shapes(ctx, shapes);
  Tensor& out = ctx.allocate_output(0, first.dtype(), shape);
  dispatch<Types>(ctx, first.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    BroadcastIndex bi(shape, shapes);
    for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
      C acc = get<S>(ctx.input(0), bi.offsets()[0]);
      for (size_t k = 1; k < ctx.input_count(); ++k) acc = combine(acc, get<S>(ctx.input(k), bi.offsets()[k]));
      if (mean) acc = static_cast<C>(acc / static_cast<C>(ctx.input_count()));
      put<S>(out, i, acc);
    }
  });
}

template <typename T> T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();  // numpy.maximum propagates NaN
  return a > b ? a : b;
}
template <typename T> T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a < b ? a : b;
}

void Max(KernelContext& c) { variadic<kNumeric>(c, [](auto a, auto b) { return nan_max(a, b); }); }
void Min(KernelContext& c) { variadic<kNumeric>(c, [](auto a, auto b) { return nan_min(a, b); }); }
void Sum(KernelContext& c) { variadic<kFloats>(c, [](auto a, auto b) { return a + b; }); }
void Mean(KernelContext& c) { variadic<kFloats>(c, [](auto a, auto b) { return a + b; }, true); }

// --- Where -------------------------------------------------------------------

void Where(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (cond.dtype() != DataType::Bool) ctx.fail("condition must be bool");
  if (x.dtype() != y.dtype()) ctx.fail("X and Y must have the same element type");
  const Shape* shapes[] = {&cond.shape(), &x.shape(), &y.shape()};
  Shape shape = broadcast_shapes(ctx, shapes);
  Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
  BroadcastIndex bi(shape, shapes);
  if (x.is_string()) {
    StringBudget budget(&ctx);
    for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
      const std::string& s = load<bool>(cond, bi.offsets()[0]) ? x.strings()[bi.offsets()[1]] : y.strings()[bi.offsets()[2]];
      budget.add(s);
      out.mutable_strings()[i] = s;
    }
    return;
  }
  // Copy raw elements: works for every fixed-width type without conversion.
  const uint64_t elem = *storage_bytes(x.dtype(), 1);
  if (is_packed_dtype(x.dtype())) ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
    const bool pick_x = load<bool>(cond, bi.offsets()[0]);
    const Tensor& src = pick_x ? x : y;
    std::memcpy(out.mutable_raw() + i * elem, src.raw() + bi.offsets()[pick_x ? 1 : 2] * elem, elem);
  }
}

}  // namespace

void register_elementwise_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since = 1, AcceptsFn accepts = nullptr) {
    r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, accepts});
  };
  for (auto [op, fn] : std::initializer_list<std::pair<const char*, KernelFn>>{
           {"Abs", Abs}, {"Neg", Neg}, {"Sign", Sign}, {"Reciprocal", Reciprocal}, {"Floor", Floor},
           {"Ceil", Ceil}, {"Round", Round}, {"Sqrt", Sqrt}, {"Exp", Exp}, {"Log", Log}, {"Sin", Sin},
           {"Cos", Cos}, {"Tan", Tan}, {"Asin", Asin}, {"Acos", Acos}, {"Atan", Atan}, {"Sinh", Sinh},
           {"Cosh", Cosh}, {"Asinh", Asinh}, {"Acosh", Acosh}, {"Atanh", Atanh}, {"Tanh", Tanh}, {"Erf", Erf},
           {"Sigmoid", Sigmoid}, {"Relu", Relu}, {"Softsign", Softsign}, {"Softplus", Softplus}, {"Mish", Mish},
           {"Not", Not}, {"BitwiseNot", BitwiseNot}, {"IsNaN", IsNaN}, {"IsInf", IsInf},
           {"LeakyRelu", LeakyRelu}, {"Elu", Elu}, {"Selu", Selu}, {"Celu", Celu}, {"HardSigmoid", HardSigmoid},
           {"HardSwish", HardSwish}, {"ThresholdedRelu", ThresholdedRelu}, {"Shrink", Shrink}, {"Gelu", Gelu},
           {"Swish", Swish},
           {"Add", Add}, {"Sub", Sub}, {"Mul", Mul}, {"Div", Div}, {"Pow", Pow}, {"Mod", Mod},
           {"BitShift", BitShift}, {"And", And}, {"Or", Or}, {"Xor", Xor}, {"BitwiseAnd", BitwiseAnd},
           {"BitwiseOr", BitwiseOr}, {"BitwiseXor", BitwiseXor}, {"Less", Less},
           {"LessOrEqual", LessOrEqual}, {"Greater", Greater}, {"GreaterOrEqual", GreaterOrEqual},
           {"PRelu", PRelu}, {"Max", Max}, {"Min", Min}, {"Sum", Sum}, {"Mean", Mean}, {"Where", Where}})
    add(op, fn);
  // Equal: strings take their own kernel, numbers the broadcasting one.
  add("Equal", EqualStrings, 19, inputs_are_strings);
  add("Equal", Equal);
}

}  // namespace onnxscope::ref
