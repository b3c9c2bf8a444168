// Float32 elementwise kernels of the CPU engine: vectorised with Eigen array
// expressions and split across the thread pool. Binary ops take the fast path
// when one operand is the whole output shape and the other repeats along the
// leading dimensions (same shape, scalar, bias over the last dims); other
// broadcasts are left to the reference kernel.
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#include <cmath>
#include <optional>

#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/kernels/broadcast.h"
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

void Relu(KernelContext& c) { unary(c, [](const CMap& a) { return a.max(0.0f); }); }
void Exp(KernelContext& c) { unary(c, [](const CMap& a) { return a.exp(); }); }
void Tanh(KernelContext& c) { unary(c, [](const CMap& a) { return a.tanh(); }); }
void Sqrt(KernelContext& c) { unary(c, [](const CMap& a) { return a.sqrt(); }); }
void Neg(KernelContext& c) { unary(c, [](const CMap& a) { return -a; }); }
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
    for (int64_t i = b; i < e; ++i) out[i] = std::isnan(in[i]) ? 1 : 0;
  });
}
void Sigmoid(KernelContext& c) {
  unary(c, [](const CMap& a) { return (a >= 0).select((1 + (-a).exp()).inverse(), a.exp() / (1 + a.exp())); });
}

// --- binary --------------------------------------------------------------

enum class BinOp { Add, Sub, Mul, Div };

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

// x op z for arrays, array and scalar, or scalars.
template <BinOp Op, class X, class Z>
auto combine(const X& x, const Z& z) {
  if constexpr (Op == BinOp::Add) return x + z;
  else if constexpr (Op == BinOp::Sub) return x - z;
  else if constexpr (Op == BinOp::Mul) return x * z;
  else return x / z;
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
    parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
      Map(py + lo, hi - lo) = apply(CMap(pa + lo, hi - lo), s);
    });
    return;
  }
  if (bb.inner == 1) {
    // Rows of `period` elements, each combined with all of b.
    const int64_t period = bb.period, rows = n / period;
    parallel_for(rows, std::max<int64_t>(1, kGrain / period), [&](int64_t r0, int64_t r1) {
      CMap bv(pb, period);
      for (int64_t r = r0; r < r1; ++r) Map(py + r * period, period) = apply(CMap(pa + r * period, period), bv);
    });
    return;
  }
  // Rows of `inner` elements, each combined with one element of b.
  const int64_t inner = bb.inner, rows = n / inner;
  parallel_for(rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      Map(py + r * inner, inner) = apply(CMap(pa + r * inner, inner), pb[r % bb.period]);
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
  parallel_for(br.rows, std::max<int64_t>(1, kGrain / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const auto off = br.row_offsets(r);
      Map o(py + r * n, n);
      if (br.step[0] && br.step[1]) o = apply(CMap(pa + off[0], n), CMap(pb + off[1], n));
      else if (br.step[0]) o = apply(CMap(pa + off[0], n), pb[off[1]]);
      else if (br.step[1]) o = apply(pa[off[0]], CMap(pb + off[1], n));
      else o.setConstant(apply(pa[off[0]], pb[off[1]]));
    }
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
  add_def(r, "Erf", 9, Erf, all_float);
  add_def(r, "IsNaN", 9, IsNaN, all_float);
  add_def(r, "Gelu", 20, Gelu, gelu_accepts);
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "cpu-eigen", Gelu, gelu_accepts});
}

}  // namespace onnxscope::cpu
