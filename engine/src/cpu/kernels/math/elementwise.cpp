// Elementwise kernels of the CPU engine: float32 math vectorised with Eigen
// array expressions, comparisons and logic in plain loops the compiler
// vectorises, all split across the thread pool. Binary ops take the fast path
// when one operand is the whole output shape and the other repeats along the
// leading dimensions (same shape, scalar, bias over the last dims), and
// broadcast rows (broadcast.h) for any other numpy broadcast. The unary ops
// oneDNN computes exactly are in eltwise_onednn.cpp, registered first.
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#include <cmath>
#include <limits>
#include <optional>

#include "core/target_clones.h"
#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/kernels/broadcast.h"
#include "cpu/kernels/math/arith_rows.h"
#include "cpu/kernels/math/vector_exp.h"
#include "cpu/kernels/output.h"

#include "cpu/kernels/kernels.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using Map = Eigen::Map<Arr>;
using CMap = Eigen::Map<const Arr>;

constexpr int64_t kGrain = 16384;  // elements per chunk below which threads cost more than they save

bool all_float(const KernelContext& ctx) {
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || !v->is_tensor() || v->tensor().dtype() != DataType::Float) return false;
  }
  return ctx.input_count() > 0;
}

// --- unary ---------------------------------------------------------------

template <typename F>
void unary(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(static_cast<int64_t>(x.element_count()), kGrain, [&](int64_t b, int64_t e) {
    CMap a(in + b, e - b);
    Map o(out + b, e - b);
    o = f(a);
  });
}

void Relu(KernelContext& c) { unary(c, [](const CMap& a) { return (a <= 0.0f).select(0.0f, a); }); }  // NaN kept
void Exp(KernelContext& c) { unary(c, [](const CMap& a) { return a.exp(); }); }
void Sqrt(KernelContext& c) { unary(c, [](const CMap& a) { return a.sqrt(); }); }
void Abs(KernelContext& c) { unary(c, [](const CMap& a) { return a.abs(); }); }
void Erf(KernelContext& c) { unary(c, [](const CMap& a) { return a.erf(); }); }
// Gelu (opset 20, and the CPU engine's own onnxscope.cpu::Gelu from fuse-gelu).
void Gelu(KernelContext& c) {
  if (c.attr_string("approximate", "none") == "tanh") {
    // sqrt(2 / pi) = 0.7978845608...
    unary(c, [](const CMap& a) { return 0.5f * a * (1.0f + (0.7978845608028654f * (a + 0.044715f * a.cube())).tanh()); });
  } else {
    unary(c, [](const CMap& a) { return 0.5f * a * (1.0f + (a * 0.7071067811865476f).erf()); });
  }
}
bool gelu_accepts(const KernelContext& c) {
  const std::string approx = c.attr_string("approximate", "none");
  return all_float(c) && (approx == "none" || approx == "tanh");
}
void IsNaN(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = uninitialized_output(c, 0, DataType::Bool, x.shape());
  const float* in = x.data<float>();
  auto* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  parallel_for(static_cast<int64_t>(x.element_count()), kGrain, [&](int64_t b, int64_t e) {
    const float* src = in;  // local: bytes written through dst could alias a captured pointer
    uint8_t* dst = out;
    for (int64_t i = b; i < e; ++i) dst[i] = std::isnan(src[i]) ? 1 : 0;
  });
}
void Sigmoid(KernelContext& c) {
  unary(c, [](const CMap& a) { return (a >= 0).select((1 + (-a).exp()).inverse(), a.exp() / (1 + a.exp())); });
}

// NaN stays NaN through the clamps below (Eigen's min/max may drop it).
template <class E>
auto keep_nan(const CMap& a, const E& e) {
  return a.isNaN().select(a, e);
}
void HardSwishEigen(KernelContext& c) {
  unary(c, [](const CMap& a) { return keep_nan(a, a * (a / 6.0f + 0.5f).max(0.0f).min(1.0f)); });
}
// Floor, Ceil, Round (halves to even), Neg, Log and Tanh as plain loops built for
// AVX-512, AVX2 and the baseline (target_clones): one vroundps / vxorps per
// vector there, where this Eigen, compiled for the baseline, runs SSE2.
#define ONNXSCOPE_CLONES ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
#define ONNXSCOPE_UNARY_LOOP(name, expr)                                   \
  ONNXSCOPE_CLONES void name(const float* x, float* y, int64_t n) {         \
    for (int64_t i = 0; i < n; ++i) y[i] = expr;                            \
  }
ONNXSCOPE_UNARY_LOOP(floor_run, std::floor(x[i]))
ONNXSCOPE_UNARY_LOOP(ceil_run, std::ceil(x[i]))
ONNXSCOPE_UNARY_LOOP(round_run, std::nearbyint(x[i]))
ONNXSCOPE_UNARY_LOOP(neg_run, -x[i])
// Eigen's log clamped its argument to FLT_MIN (log(1e-40), -92.10, came out
// as log(FLT_MIN), -87.34) and ran SSE2: vector_exp.h's, which takes
// subnormals and vectorises. (AVX-512 processors run unary_avx512.cpp's log.)
ONNXSCOPE_UNARY_LOOP(log_run, log_poly(x[i]))
// Eigen's tanh ran SSE2 and oneDNN's AVX2 one took 10x onnxruntime's time
// (1.0 ms for [1,96,56,56] on an AVX2 EPYC): the AVX-512 kernel's rational.
ONNXSCOPE_UNARY_LOOP(tanh_run, tanh_poly(x[i]))
#undef ONNXSCOPE_UNARY_LOOP
#undef ONNXSCOPE_CLONES

void unary_run(KernelContext& ctx, void (*run)(const float*, float*, int64_t)) {
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(static_cast<int64_t>(x.element_count()), kGrain, [&](int64_t b, int64_t e) { run(in + b, out + b, e - b); });
}
void Floor(KernelContext& c) { unary_run(c, floor_run); }
void Ceil(KernelContext& c) { unary_run(c, ceil_run); }
void Round(KernelContext& c) { unary_run(c, round_run); }
void Neg(KernelContext& c) { unary_run(c, neg_run); }
void Sin(KernelContext& c) { unary(c, [](const CMap& a) { return a.sin(); }); }
void Cos(KernelContext& c) { unary(c, [](const CMap& a) { return a.cos(); }); }
void Log(KernelContext& c) { unary_run(c, log_run); }
void Tanh(KernelContext& c) { unary_run(c, tanh_run); }
void Reciprocal(KernelContext& c) { unary(c, [](const CMap& a) { return a.inverse(); }); }
void Sign(KernelContext& c) {
  unary(c, [](const CMap& a) { return keep_nan(a, (a > 0).select(Arr::Ones(a.size()), (a < 0).select(-Arr::Ones(a.size()), 0.0f))); });
}
void Softsign(KernelContext& c) { unary(c, [](const CMap& a) { return a / (1.0f + a.abs()); }); }
void LeakyRelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 0.01f);
  unary(c, [=](const CMap& a) { return (a >= 0).select(a, alpha * a); });
}
void Elu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary(c, [=](const CMap& a) { return (a >= 0).select(a, alpha * a.expm1()); });
}
void Selu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.67326319217681884765625f);
  const float gamma = c.attr_float("gamma", 1.05070102214813232421875f);
  unary(c, [=](const CMap& a) { return (a > 0).select(gamma * a, gamma * (alpha * a.exp() - alpha)); });
}
void Celu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary(c, [=](const CMap& a) { return keep_nan(a, a.max(0.0f) + (alpha * (a / alpha).expm1()).min(0.0f)); });
}
void ThresholdedRelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary(c, [=](const CMap& a) { return (a > alpha).select(a, 0.0f); });
}
// log(1 + exp(x)) written to keep its digits far left of zero and stay finite far right.
void Softplus(KernelContext& c) {
  unary(c, [](const CMap& a) { return (a > 0).select(a + (-a).exp().log1p(), a.exp().log1p()); });
}
void Mish(KernelContext& c) {
  unary(c, [](const CMap& a) { return a * (a > 0).select(a + (-a).exp().log1p(), a.exp().log1p()).tanh(); });
}
bool unary_float(const KernelContext& c) { return c.input_count() == 1 && all_float(c); }

// --- binary --------------------------------------------------------------

enum class BinOp { Add, Sub, Mul, Div, Pow, Max, Min };

// How b repeats over a when b's non-unit dims are one contiguous block equal
// to a's dims there: b[(i / inner) % period] pairs with a[i]. Covers the same
// shape, a scalar, a bias over the last dims (inner = 1) and a per-channel
// [C,1,1] operand (inner = H*W). Anything else goes to the reference kernel.
struct BlockBroadcast {
  int64_t period = 1, inner = 1;
};

std::optional<BlockBroadcast> block_broadcast(const Shape& a, const Shape& b) {
  if (b.size() > a.size()) return std::nullopt;
  Shape bb(a.size() - b.size(), 1);
  bb.insert(bb.end(), b.begin(), b.end());
  size_t lo = bb.size(), hi = 0;
  for (size_t d = 0; d < bb.size(); ++d)
    if (bb[d] != 1) {
      lo = std::min(lo, d);
      hi = d + 1;
    }
  BlockBroadcast r;
  if (lo >= hi) return r;  // every dim is 1: a scalar
  for (size_t d = lo; d < hi; ++d)
    if (bb[d] != a[d]) return std::nullopt;
  for (size_t d = lo; d < hi; ++d) r.period *= a[d];
  for (size_t d = hi; d < a.size(); ++d) r.inner *= a[d];
  return r;
}

bool binary_fast_path(const KernelContext& ctx) {
  if (!all_float(ctx) || ctx.input_count() != 2) return false;
  return block_broadcast(ctx.input_value(0)->tensor().shape(), ctx.input_value(1)->tensor().shape()).has_value();
}

// Any other numpy broadcast (a scalar or row vector first, [S,1] with [1,D], ...).
bool binary_broadcast(const KernelContext& ctx) {
  if (!all_float(ctx) || ctx.input_count() != 2) return false;
  return broadcast_rows({&ctx.input_value(0)->tensor().shape(), &ctx.input_value(1)->tensor().shape()}).has_value();
}

// Pow, Max and Min for arrays, an array and a scalar, or scalars; Max and Min
// give NaN when either side is NaN, as numpy.maximum / minimum do.
template <class X, class Z>
auto pow_of(const X& x, const Z& z) {
  if constexpr (std::is_arithmetic_v<X> && std::is_arithmetic_v<Z>) return std::pow(x, z);
  else if constexpr (std::is_arithmetic_v<X>) return Eigen::pow(Arr::Constant(z.size(), x), z);
  else return Eigen::pow(x, z);
}
template <template <class, class, int> class Op, class X, class Z>
auto nan_extreme(const X& x, const Z& z) {
  using F = Op<float, float, Eigen::PropagateNaN>;
  if constexpr (std::is_arithmetic_v<X> && std::is_arithmetic_v<Z>) return F()(x, z);
  else if constexpr (std::is_arithmetic_v<X>) return Arr::Constant(z.size(), x).binaryExpr(z, F());
  else if constexpr (std::is_arithmetic_v<Z>) return x.binaryExpr(Arr::Constant(x.size(), z), F());
  else return x.binaryExpr(z, F());
}
template <class X, class Z>
auto max_of(const X& x, const Z& z) { return nan_extreme<Eigen::internal::scalar_max_op>(x, z); }
template <class X, class Z>
auto min_of(const X& x, const Z& z) { return nan_extreme<Eigen::internal::scalar_min_op>(x, z); }

// x op z for arrays, array and scalar, or scalars.
template <BinOp Op, class X, class Z>
auto combine(const X& x, const Z& z) {
  if constexpr (Op == BinOp::Add) return x + z;
  else if constexpr (Op == BinOp::Sub) return x - z;
  else if constexpr (Op == BinOp::Mul) return x * z;
  else if constexpr (Op == BinOp::Div) return x / z;
  else if constexpr (Op == BinOp::Pow) return pow_of(x, z);
  else if constexpr (Op == BinOp::Max) return max_of(x, z);
  else return min_of(x, z);
}

// x ^ s for the exponents exporters write (GPT-2's x^3, norms' x^0.5 and
// x^-0.5), without exp(s * log x); written so that they agree with pow where
// sqrt alone would not: pow(-0, 0.5) is +0, pow(-inf, 0.5) is +inf,
// pow(-0, -0.5) is +inf, pow(-inf, -0.5) is +0. False for other exponents.
bool pow_by_scalar(const float* x, float s, float* y, int64_t n) {
  auto run = [&](auto f) {
    parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) { Map(y + lo, hi - lo) = f(CMap(x + lo, hi - lo)); });
  };
  const float inf = std::numeric_limits<float>::infinity();
  if (s == 3.0f) run([](const CMap& a) { return a * a * a; });
  else if (s == 1.0f) run([](const CMap& a) { return a; });
  else if (s == 0.5f) run([=](const CMap& a) { return (a == -inf).select(inf, a.sqrt() + 0.0f); });
  else if (s == -0.5f) run([=](const CMap& a) { return (a == -inf).select(0.0f, (a.sqrt() + 0.0f).inverse()); });
  else if (s == -1.0f) run([](const CMap& a) { return a.inverse(); });
  else return false;
  return true;
}

// The four arithmetic ops run arith_rows.h's loops (AVX-512 / AVX2 chosen at
// load time); Pow, Max and Min stay Eigen expressions.
template <BinOp Op>
constexpr bool kArith = Op == BinOp::Add || Op == BinOp::Sub || Op == BinOp::Mul || Op == BinOp::Div;
template <BinOp Op>
constexpr Arith arith_of() {
  if constexpr (Op == BinOp::Add) return Arith::Add;
  else if constexpr (Op == BinOp::Sub) return Arith::Sub;
  else if constexpr (Op == BinOp::Mul) return Arith::Mul;
  else return Arith::Div;
}

template <BinOp Op>
void binary(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const BlockBroadcast bb = *block_broadcast(a.shape(), b.shape());
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, a.shape());
  const int64_t n = static_cast<int64_t>(a.element_count());
  if (n == 0) return;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.mutable_data<float>();
  auto apply = [](auto x, auto z) { return combine<Op>(x, z); };
  if (bb.period == 1) {
    const float s = pb[0];
    if constexpr (Op == BinOp::Pow) {
      if (pow_by_scalar(pa, s, py, n)) return;
    }
    parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
      if constexpr (kArith<Op>) arith_row(arith_of<Op>(), pa + lo, 1, &s, 0, py + lo, hi - lo);
      else Map(py + lo, hi - lo) = apply(CMap(pa + lo, hi - lo), s);
    });
    return;
  }
  // Threads split the flat output, not its rows: the same shape is a single
  // row of `period` elements, and would run on one thread.
  if (bb.inner == 1) {
    // Rows of `period` elements, each combined with all of b.
    const int64_t period = bb.period;
    parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi;) {
        const int64_t off = i % period, len = std::min(period - off, hi - i);
        if constexpr (kArith<Op>) arith_row(arith_of<Op>(), pa + i, 1, pb + off, 1, py + i, len);
        else Map(py + i, len) = apply(CMap(pa + i, len), CMap(pb + off, len));
        i += len;
      }
    });
    return;
  }
  // Rows of `inner` elements, each combined with one element of b.
  const int64_t inner = bb.inner;
  parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi;) {
      const int64_t r = i / inner, len = std::min((r + 1) * inner - i, hi - i);
      const float* z = pb + r % bb.period;
      if constexpr (kArith<Op>) arith_row(arith_of<Op>(), pa + i, 1, z, 0, py + i, len);
      else Map(py + i, len) = apply(CMap(pa + i, len), *z);
      i += len;
    }
  });
}

template <BinOp Op>
void binary_rows(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const BroadcastRows br = *broadcast_rows({&a.shape(), &b.shape()});
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, br.out);
  if (y.element_count() == 0) return;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.mutable_data<float>();
  auto apply = [](auto x, auto z) { return combine<Op>(x, z); };
  const int64_t n = br.inner;
  if constexpr (kArith<Op>) {
    // Short rows of a, contiguous along the innermost outer axis, against one
    // row of b repeated along it (a per-channel operand on the blocked
    // layout: rows of 16): whole runs of rows at a time, not a call per row.
    const size_t nd = br.outer_dims.size();
    if (n < 64 && nd > 0 && br.step[0] == 1 && br.step[1] == 1 && br.outer_strides[nd - 1][0] == n &&
        br.outer_strides[nd - 1][1] == 0) {
      const int64_t run = br.outer_dims[nd - 1];
      parallel_for(br.rows, std::max<int64_t>(1, kGrain / n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1;) {
          const int64_t len = std::min(run - r % run, r1 - r);
          const auto off = br.row_offsets(r);
          arith_tile(arith_of<Op>(), pa + off[0], pb + off[1], py + r * n, len, n);
          r += len;
        }
      });
      return;
    }
  }
  parallel_for(br.rows, std::max<int64_t>(1, kGrain / n), [&](int64_t r0, int64_t r1) {
    br.for_each_row(r0, r1, [&](int64_t r, const auto& off) {
      if constexpr (kArith<Op>) {
        arith_row(arith_of<Op>(), pa + off[0], static_cast<int>(br.step[0]), pb + off[1], static_cast<int>(br.step[1]),
                  py + r * n, n);
        return;
      }
      Map o(py + r * n, n);
      if (br.step[0] && br.step[1]) o = apply(CMap(pa + off[0], n), CMap(pb + off[1], n));
      else if (br.step[0]) o = apply(CMap(pa + off[0], n), pb[off[1]]);
      else if (br.step[1]) o = apply(pa[off[0]], CMap(pb + off[1], n));
      else o.setConstant(apply(pa[off[0]], pb[off[1]]));
    });
  });
}

// --- comparisons and logic -------------------------------------------------

// Two inputs of one type (float32, int64, int32; bool for the logic ops)
// that broadcast; the output is bool.
template <bool Logic>
bool predicate_accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 2 || !ctx.input_value(0) || !ctx.input_value(1)) return false;
  const Value* a = ctx.input_value(0);
  const Value* b = ctx.input_value(1);
  if (!a->is_tensor() || !b->is_tensor() || a->tensor().dtype() != b->tensor().dtype()) return false;
  const DataType t = a->tensor().dtype();
  const bool typed = Logic ? t == DataType::Bool : (t == DataType::Float || t == DataType::Int64 || t == DataType::Int32);
  return typed && broadcast_rows({&a->tensor().shape(), &b->tensor().shape()}).has_value();
}

// One row of a comparison, one loop per step pattern so each vectorises;
// built for AVX2 too (SSE2, the baseline, has no 64-bit integer compare).
template <class T, class F>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void predicate_row(const T* x, const T* z, bool sx, bool sz, uint8_t* o, int64_t len, F f) {
  const T x0 = x[0], z0 = z[0];
  if (sx && sz) for (int64_t i = 0; i < len; ++i) o[i] = f(x[i], z[i]);
  else if (sx) for (int64_t i = 0; i < len; ++i) o[i] = f(x[i], z0);
  else if (sz) for (int64_t i = 0; i < len; ++i) o[i] = f(x0, z[i]);
  else for (int64_t i = 0; i < len; ++i) o[i] = f(x0, z0);
}

template <class T, class F>
void predicate_rows(KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const BroadcastRows br = *broadcast_rows({&a.shape(), &b.shape()});
  Tensor& y = uninitialized_output(ctx, 0, DataType::Bool, br.out);
  if (y.element_count() == 0) return;
  const T* pa = reinterpret_cast<const T*>(a.raw());
  const T* pb = reinterpret_cast<const T*>(b.raw());
  auto* py = reinterpret_cast<uint8_t*>(y.mutable_raw());
  const int64_t n = br.inner;
  parallel_for(br.rows, std::max<int64_t>(1, kGrain / n), [&](int64_t r0, int64_t r1) {
    br.for_each_row(r0, r1, [&](int64_t r, const auto& off) {
      // Arguments by value: bytes written through o may alias anything, so a bound or
      // value read through a reference would be reloaded every iteration and
      // the loop would not vectorise.
      predicate_row<T>(pa + off[0], pb + off[1], br.step[0] != 0, br.step[1] != 0, py + r * n, n, f);
    });
  });
}

template <class F>
void compare(KernelContext& ctx, F f) {
  switch (ctx.input(0).dtype()) {
    case DataType::Float: return predicate_rows<float>(ctx, f);
    case DataType::Int64: return predicate_rows<int64_t>(ctx, f);
    default: return predicate_rows<int32_t>(ctx, f);
  }
}
void Equal(KernelContext& c) { compare(c, [](auto x, auto z) -> uint8_t { return x == z; }); }
void Less(KernelContext& c) { compare(c, [](auto x, auto z) -> uint8_t { return x < z; }); }
void Greater(KernelContext& c) { compare(c, [](auto x, auto z) -> uint8_t { return x > z; }); }
void LessOrEqual(KernelContext& c) { compare(c, [](auto x, auto z) -> uint8_t { return x <= z; }); }
void GreaterOrEqual(KernelContext& c) { compare(c, [](auto x, auto z) -> uint8_t { return x >= z; }); }
// Any nonzero byte is true: BitCast can make bool bytes other than 0 and 1 inside a run.
void And(KernelContext& c) { predicate_rows<uint8_t>(c, [](uint8_t x, uint8_t z) -> uint8_t { return (x != 0) & (z != 0); }); }
void Or(KernelContext& c) { predicate_rows<uint8_t>(c, [](uint8_t x, uint8_t z) -> uint8_t { return (x | z) != 0; }); }
void Xor(KernelContext& c) { predicate_rows<uint8_t>(c, [](uint8_t x, uint8_t z) -> uint8_t { return (x != 0) ^ (z != 0); }); }

bool not_accepts(const KernelContext& c) {
  const Value* v = c.input_count() == 1 ? c.input_value(0) : nullptr;
  return v && v->is_tensor() && v->tensor().dtype() == DataType::Bool;
}
void Not(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = uninitialized_output(c, 0, DataType::Bool, x.shape());
  const auto* in = reinterpret_cast<const uint8_t*>(x.raw());
  auto* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  parallel_for(static_cast<int64_t>(x.element_count()), kGrain, [&](int64_t b, int64_t e) {
    const uint8_t* src = in;  // local: bytes written through dst could alias a captured pointer
    uint8_t* dst = out;
    for (int64_t i = b; i < e; ++i) dst[i] = src[i] == 0;
  });
}

void add_def(KernelRegistry& r, const char* op, int since, KernelFn fn, AcceptsFn accepts) {
  r.add(KernelDef{"", op, since, INT_MAX, "cpu-eigen", fn, accepts});
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& r) {
  add_def(r, "Relu", 6, Relu, all_float);
  add_def(r, "Exp", 6, Exp, all_float);
  add_def(r, "Tanh", 6, Tanh, all_float);
  add_def(r, "Sqrt", 6, Sqrt, all_float);
  add_def(r, "Neg", 6, Neg, all_float);
  add_def(r, "Abs", 6, Abs, all_float);
  add_def(r, "Sigmoid", 6, Sigmoid, all_float);
  // Opset 7+: numpy broadcasting (earlier versions had a `broadcast` attribute).
  add_def(r, "Add", 7, binary<BinOp::Add>, binary_fast_path);
  add_def(r, "Sub", 7, binary<BinOp::Sub>, binary_fast_path);
  add_def(r, "Mul", 7, binary<BinOp::Mul>, binary_fast_path);
  add_def(r, "Div", 7, binary<BinOp::Div>, binary_fast_path);
  add_def(r, "Add", 7, binary_rows<BinOp::Add>, binary_broadcast);
  add_def(r, "Sub", 7, binary_rows<BinOp::Sub>, binary_broadcast);
  add_def(r, "Mul", 7, binary_rows<BinOp::Mul>, binary_broadcast);
  add_def(r, "Div", 7, binary_rows<BinOp::Div>, binary_broadcast);
  // Pow-7 on: numpy broadcasting; float32 base and exponent here (Pow-12 allows
  // other exponent types: the reference). Max / Min of two inputs (Max-8 on
  // broadcasts); more inputs go to the reference.
  add_def(r, "Pow", 7, binary<BinOp::Pow>, binary_fast_path);
  add_def(r, "Pow", 7, binary_rows<BinOp::Pow>, binary_broadcast);
  add_def(r, "Max", 8, binary<BinOp::Max>, binary_fast_path);
  add_def(r, "Max", 8, binary_rows<BinOp::Max>, binary_broadcast);
  add_def(r, "Min", 8, binary<BinOp::Min>, binary_fast_path);
  add_def(r, "Min", 8, binary_rows<BinOp::Min>, binary_broadcast);
  add_def(r, "HardSwish", 14, HardSwishEigen, unary_float);
  add_def(r, "Floor", 6, Floor, unary_float);
  add_def(r, "Ceil", 6, Ceil, unary_float);
  add_def(r, "Round", 11, Round, unary_float);
  add_def(r, "Sin", 7, Sin, unary_float);
  add_def(r, "Cos", 7, Cos, unary_float);
  add_def(r, "Log", 6, Log, unary_float);
  add_def(r, "Softplus", 1, Softplus, unary_float);
  add_def(r, "Mish", 18, Mish, unary_float);
  add_def(r, "Reciprocal", 6, Reciprocal, unary_float);
  add_def(r, "Sign", 9, Sign, unary_float);
  add_def(r, "Softsign", 1, Softsign, unary_float);
  add_def(r, "LeakyRelu", 6, LeakyRelu, unary_float);
  add_def(r, "Elu", 6, Elu, unary_float);
  add_def(r, "Selu", 6, Selu, unary_float);
  add_def(r, "Celu", 12, Celu, unary_float);
  add_def(r, "ThresholdedRelu", 10, ThresholdedRelu, unary_float);
  // Comparisons: Equal-7 / Less-7 / Greater-7 broadcast; LessOrEqual and GreaterOrEqual from 12.
  add_def(r, "Equal", 7, Equal, predicate_accepts<false>);
  add_def(r, "Less", 7, Less, predicate_accepts<false>);
  add_def(r, "Greater", 7, Greater, predicate_accepts<false>);
  add_def(r, "LessOrEqual", 12, LessOrEqual, predicate_accepts<false>);
  add_def(r, "GreaterOrEqual", 12, GreaterOrEqual, predicate_accepts<false>);
  add_def(r, "And", 7, And, predicate_accepts<true>);
  add_def(r, "Or", 7, Or, predicate_accepts<true>);
  add_def(r, "Xor", 7, Xor, predicate_accepts<true>);
  add_def(r, "Not", 1, Not, not_accepts);
  add_def(r, "Erf", 9, Erf, all_float);
  add_def(r, "IsNaN", 9, IsNaN, all_float);
  add_def(r, "Gelu", 20, Gelu, gelu_accepts);
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "cpu-eigen", Gelu, gelu_accepts});
}

}  // namespace onnxscope::cpu
