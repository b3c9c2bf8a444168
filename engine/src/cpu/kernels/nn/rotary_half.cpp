// onnxscope.cpu::RotaryHalf (fuse-rotary, fused_ops.h) on float32 where Cos
// and Sin broadcast to X with X's last dim: one pass over each row of X,
//   y[i] = x[i] cos[i] - x[i + h] sin[i]        (i < D - h)
//   y[i] = x[i] cos[i] + x[i - D + h] sin[i]    (i >= D - h)
// rounded as the unfused Muls and Add round (each product, then the sum;
// no fused multiply-add), so the results are those of the graph it replaces.
// Rows are split across the thread pool. Other broadcasts go to the
// reference form (kernels/fused_reference.cpp).
// GCC contracts a * b + c into one fused multiply-add by default in C++
// (clang only within one expression, which the statements below never are).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <algorithm>
#include <vector>

#include "core/target_clones.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

// Where each of Cos's and Sin's rows sits for X's row r: strides over X's
// leading dims (0 where the factor broadcasts along one).
struct RowMap {
  Shape lead;                                 // X's dims but the last
  std::vector<int64_t> cos_stride, sin_stride;  // per leading dim, in rows
};

bool fits(const Tensor& f, const Shape& x, std::vector<int64_t>& stride) {
  const size_t r = x.size(), fr = f.shape().size();
  if (f.dtype() != DataType::Float || fr < 1 || fr > r || f.shape().back() != x.back()) return false;
  stride.assign(r - 1, 0);
  int64_t rows = 1;
  for (size_t k = 1; k < r; ++k) {  // X's leading dim r-1-k against f's dim f.rank()-1-k
    const size_t d = r - 1 - k;
    if (k >= fr) break;
    const int64_t fd = f.shape()[fr - 1 - k];
    if (fd != 1 && fd != x[d]) return false;
    if (fd != 1) stride[d] = rows;
    rows *= fd;
  }
  return true;
}

bool row_map(const KernelContext& ctx, RowMap& m) {
  if (ctx.input_count() != 3 || ctx.attr_int("split", 0) <= 0) return false;
  for (size_t i = 0; i < 3; ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || !v->is_tensor() || v->tensor().dtype() != DataType::Float) return false;
  }
  const Tensor& x = ctx.input_value(0)->tensor();
  if (x.rank() < 1 || x.element_count() == 0) return false;
  if (!fits(ctx.input_value(1)->tensor(), x.shape(), m.cos_stride) || !fits(ctx.input_value(2)->tensor(), x.shape(), m.sin_stride))
    return false;
  m.lead.assign(x.shape().begin(), x.shape().end() - 1);
  return true;
}

bool accepts(const KernelContext& ctx) {
  RowMap m;
  return row_map(ctx, m);
}

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void rotate_row(const float* x, const float* c, const float* s, float* y, int64_t D, int64_t h) {
  const int64_t lo = D - h;  // y[0, lo) takes -x[h, D); y[lo, D) takes x[0, h)
  for (int64_t i = 0; i < lo; ++i) {
    const float a = x[i] * c[i];
    const float b = x[i + h] * s[i];
    y[i] = a - b;
  }
  for (int64_t i = lo; i < D; ++i) {
    const float a = x[i] * c[i];
    const float b = x[i - lo] * s[i];
    y[i] = a + b;
  }
}

void Run(KernelContext& ctx) {
  RowMap m;
  if (!row_map(ctx, m)) ctx.fail("problem not supported by the CPU RotaryHalf kernel");
  const Tensor& x = ctx.input(0);
  const int64_t D = x.shape().back();
  const int64_t h = std::min(ctx.attr_int("split", 0), D);
  const int64_t rows = static_cast<int64_t>(x.element_count()) / D;
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* xp = x.data<float>();
  const float* cp = ctx.input(1).data<float>();
  const float* sp = ctx.input(2).data<float>();
  float* yp = y.mutable_data<float>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rest = r, co = 0, so = 0;
      for (size_t d = m.lead.size(); d-- > 0;) {
        const int64_t i = rest % m.lead[d];
        rest /= m.lead[d];
        co += i * m.cos_stride[d];
        so += i * m.sin_stride[d];
      }
      rotate_row(xp + r * D, cp + co * D, sp + so * D, yp + r * D, D, h);
    }
  });
}

}  // namespace

void register_rotary_half_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kRotaryHalf, 1, INT_MAX, "cpu-simd", Run, accepts});
}

}  // namespace onnxscope::cpu
