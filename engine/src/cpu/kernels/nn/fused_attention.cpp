// onnxscope.cpu FusedAttention (cpu/fused_ops.h): the problem read from the
// node (fused_attention.h), the work items (up to 32 query rows of one
// head, a head's K^T packed once per thread) shared out to the threads, and
// the kernels, one per ISA: `cpu-avx512` and `cpu-avx2` (AVX2 and FMA,
// without AVX-512: the AMD EPYC's transformers spent 5-8% of their time in
// the unfused steps, oneDNN's batched products among them).
#include <algorithm>
#include <climits>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/fused_attention.h"
#include "cpu/kernels/output.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using namespace attention;

int64_t bshd_bits(const KernelContext& ctx) { return ctx.attr_int("bshd_in", 0); }

// Float32 Q, K, V of rank 4 whose dims agree, a float mask of rank <= 4 that
// broadcasts into the scores without enlarging them; anything else is the
// fused-reference kernel's (the unfused steps, or their error).
bool accepts_problem(const KernelContext& ctx) {
  if (ctx.input_count() < 3 || ctx.input_count() > 4) return false;
  const int64_t bits = bshd_bits(ctx), out = ctx.attr_int("bshd_out", 0);
  if (bits < 0 || bits > 7 || out < 0 || out > 1) return false;
  Shape s[3];
  for (size_t i = 0; i < 3; ++i) {
    const Value* x = ctx.input_value(i);
    if (!x || !x->is_tensor() || x->tensor().dtype() != DataType::Float || x->tensor().rank() != 4) return false;
    s[i] = x->tensor().shape();
    if (bits & (int64_t{1} << i)) std::swap(s[i][1], s[i][2]);  // as [B, H, S, D]
  }
  if (s[1][0] != s[0][0] || s[2][0] != s[0][0] || s[1][1] != s[0][1] || s[2][1] != s[0][1] || s[1][3] != s[0][3] ||
      s[2][2] != s[1][2])
    return false;
  if (ctx.input_count() == 4 && ctx.input_value(3)) {
    const Value* m = ctx.input_value(3);
    if (!m->is_tensor() || m->tensor().dtype() != DataType::Float || m->tensor().rank() > 4) return false;
    const Shape& ms = m->tensor().shape();
    const Shape scores = {s[0][0], s[0][1], s[0][2], s[1][2]};
    for (size_t i = 0; i < ms.size(); ++i) {
      const int64_t d = ms[ms.size() - 1 - i];
      if (d != 1 && d != scores[3 - i]) return false;
    }
  }
  return true;
}

void run(KernelContext& ctx, PackKt pack_kt, AttendRows attend_rows) {
  const int64_t bits = bshd_bits(ctx);
  Problem p;
  HeadView* views[3] = {&p.q, &p.k, &p.v};
  for (size_t i = 0; i < 3; ++i) {
    const Tensor& x = ctx.input(i);
    const bool bshd = (bits & (int64_t{1} << i)) != 0;
    const Shape& xs = x.shape();
    *views[i] = HeadView{x.data<float>(), bshd ? xs[2] : xs[1], bshd ? xs[1] : xs[2], xs[3], bshd};
  }
  p.B = ctx.input(0).shape()[0];
  p.H = p.q.H;
  p.Sq = p.q.S;
  p.T = p.k.S;
  p.D = p.q.D;
  p.Dv = p.v.D;
  p.scale_q = ctx.attr_float("scale_q", 1.f);
  p.scale_k = ctx.attr_float("scale_k", 1.f);
  p.scale = ctx.attr_float("scale", 1.f);
  p.nan_to_zero = ctx.attr_int("nan_to_zero", 0) != 0;
  p.bshd_out = ctx.attr_int("bshd_out", 0) != 0;
  if (const Tensor* m = ctx.optional_input(3)) {
    p.has_mask = true;
    p.mask.data = m->data<float>();
    const Shape& ms = m->shape();
    int64_t stride = 1;
    for (size_t i = 0; i < ms.size(); ++i) {
      const size_t at = ms.size() - 1 - i;  // the mask's dim `at` is the scores' dim 3 - i
      p.mask.stride[3 - i] = ms[at] == 1 ? 0 : stride;
      stride *= ms[at];
    }
  }
  const Shape yshape =
      p.bshd_out ? Shape{p.B, p.Sq, p.H, p.Dv} : Shape{p.B, p.H, p.Sq, p.Dv};
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, yshape);
  p.y = y.mutable_data<float>();
  if (y.element_count() == 0) return;
  const int64_t blocks = (p.Sq + kRows - 1) / kRows, items = p.B * p.H * blocks;
  const int64_t ld = ((std::max<int64_t>(p.T, 1) + 15) / 16) * 16;
  // Work per item: two products of its rows by the keys; a few items a
  // thread where the heads are small (a decoder's one query).
  const int64_t per_item = std::min<int64_t>(kRows, p.Sq) * std::max<int64_t>(p.T, 1) * (p.D + p.Dv + 8);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(per_item, 1));
  parallel_for(items, grain, [&](int64_t lo, int64_t hi) {
    std::vector<float> kt(static_cast<size_t>(std::max<int64_t>(p.D, 1) * ld));
    std::vector<float> qs(static_cast<size_t>(8 * std::max<int64_t>(p.D, 1)));
    std::vector<float> s(static_cast<size_t>(8 * std::max<int64_t>(p.T, 1)));
    int64_t packed = -1;  // the head whose K^T is in kt
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t head = item / blocks, blk = item % blocks, b = head / p.H, h = head % p.H;
      if (head != packed) {
        pack_kt(p, b, h, kt.data(), ld);
        packed = head;
      }
      const int64_t i0 = blk * kRows, i1 = std::min(p.Sq, i0 + kRows);
      if (p.T == 0) {  // no keys: every row of Y is an empty sum
        for (int64_t i = i0; i < i1; ++i)
          std::fill_n(p.y_row(b, h, i), p.Dv, 0.0f);
        continue;
      }
      attend_rows(p, b, h, i0, i1, kt.data(), ld, qs, s);
    }
  });
}

bool accepts_avx512(const KernelContext& ctx) {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f");
  return yes && accepts_problem(ctx);
}

bool accepts_avx2(const KernelContext& ctx) {
  static const bool yes = !ONNXSCOPE_CPU_AVX512("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes && accepts_problem(ctx);
}

void FusedAttentionAvx512(KernelContext& ctx) { run(ctx, pack_kt_avx512, attend_rows_avx512); }
void FusedAttentionAvx2(KernelContext& ctx) { run(ctx, pack_kt_avx2, attend_rows_avx2); }

}  // namespace

void register_fused_attention_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kFusedAttention, 1, INT_MAX, "cpu-avx512", FusedAttentionAvx512, accepts_avx512});
  r.add(KernelDef{kCpuDomain, kFusedAttention, 1, INT_MAX, "cpu-avx2", FusedAttentionAvx2, accepts_avx2});
}

}  // namespace onnxscope::cpu
