// com.microsoft QLinearAdd and QLinearMul (ONNX Runtime's QOperator
// quantizer writes them for residual Adds, Hardswish and squeeze-excitation
// gates: 126 of them in a quantized ConvNeXt-T, two thirds of its time on
// the reference's kernels) on uint8 or int8: the output as broadcast rows
// (broadcast.h) split across the thread pool, each row a tight loop in the
// reference's float arithmetic, so the bytes are the reference's:
//   QLinearAdd: c = (a - za) (sa / sc) + (b - zb) (sb / sc)
//   QLinearMul: c = (a - za) (b - zb) (sa sb / sc)
//   C = saturate(round_half_even(c) + zc)
// Per-tensor parameters only; anything else goes to the reference kernel,
// which names the problem.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // qa * ra + qb * rb rounds twice, as the reference's: no FMA
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "cpu/kernels/broadcast.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

const Tensor* input_at(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return v && v->is_tensor() ? &v->tensor() : nullptr;
}

struct Params {
  float ra = 0, rb = 0, rab = 0;
  float za = 0, zb = 0, zc = 0;
  BroadcastRows rows;
};

std::optional<Params> params_of(const KernelContext& ctx) {
  if (ctx.input_count() < 7 || ctx.input_count() > 8) return std::nullopt;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* b = input_at(ctx, 3);
  if (!a || !b || (a->dtype() != DataType::Uint8 && a->dtype() != DataType::Int8) || b->dtype() != a->dtype())
    return std::nullopt;
  auto scale = [&](size_t i) -> std::optional<float> {
    const Tensor* t = input_at(ctx, i);
    if (!t || t->dtype() != DataType::Float || t->element_count() != 1) return std::nullopt;
    const float v = t->data<float>()[0];
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;  // the reference refuses it, naming the scale
    return v;
  };
  auto zero = [&](size_t i) -> std::optional<float> {
    const Tensor* t = input_at(ctx, i);
    if (!t) return 0.0f;
    if (t->dtype() != a->dtype() || t->element_count() != 1) return std::nullopt;
    return static_cast<float>(t->element_as_int64(0));
  };
  const auto sa = scale(1), sb = scale(4), sc = scale(6);
  const auto za = zero(2), zb = zero(5), zc = zero(7);
  if (!sa || !sb || !sc || !za || !zb || !zc) return std::nullopt;
  auto rows = broadcast_rows({&a->shape(), &b->shape()});
  if (!rows) return std::nullopt;
  Params p;
  p.ra = *sa / *sc, p.rb = *sb / *sc, p.rab = *sa * *sb / *sc;
  p.za = *za, p.zb = *zb, p.zc = *zc;
  p.rows = std::move(*rows);
  return p;
}

bool accepts(const KernelContext& ctx) { return params_of(ctx).has_value(); }

template <typename T, bool Mul>
__attribute__((target_clones("avx512f", "avx2", "default")))
void row(const T* a, int64_t sa, const T* b, int64_t sb, T* c, int64_t n, const Params& p) {
  constexpr float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < n; ++i) {
    const float qa = static_cast<float>(a[i * sa]) - p.za, qb = static_cast<float>(b[i * sb]) - p.zb;
    const float v = Mul ? qa * qb * p.rab : qa * p.ra + qb * p.rb;
    const float q = std::nearbyint(v) + p.zc;
    c[i] = static_cast<T>(q < lo ? lo : q > hi ? hi : q);
  }
}

template <bool Mul>
void QLinearBinary(KernelContext& ctx) {
  const std::optional<Params> p = params_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU QLinearAdd/QLinearMul");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  Tensor& c = uninitialized_output(ctx, 0, a.dtype(), p->rows.out);
  const BroadcastRows& r = p->rows;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.mutable_data<T>();
    parallel_for(r.rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(r.inner, 1)), [&](int64_t r0, int64_t r1) {
      r.for_each_row(r0, r1, [&](int64_t i, const std::array<int64_t, BroadcastRows::kMax>& off) {
        row<T, Mul>(pa + off[0], r.step[0], pb + off[1], r.step[1], pc + i * r.inner, r.inner, *p);
      });
    });
  };
  if (a.dtype() == DataType::Uint8) run(uint8_t{});
  else run(int8_t{});
}

}  // namespace

void register_qlinear_binary_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QLinearAdd", 1, INT_MAX, "cpu-simd", QLinearBinary<false>, accepts});
  r.add(KernelDef{"com.microsoft", "QLinearMul", 1, INT_MAX, "cpu-simd", QLinearBinary<true>, accepts});
}

}  // namespace onnxscope::cpu
