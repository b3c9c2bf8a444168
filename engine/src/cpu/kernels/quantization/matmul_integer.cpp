// MatMulInteger (onnxruntime's dynamic quantization: DynamicQuantizeLinear's
// uint8 activations times int8 or uint8 weights) and QLinearMatMul (its
// static QOperator format) as oneDNN's int8 matmul,
// u8/s8 x s8 -> s32, with the zero points applied afterwards:
//   sum_k (a - za)(b - zb) = sum_k a b - zb * rowsum(a) - za * colsum(b) + K za zb
// A uint8 B is shifted to int8 (b - 128, so a b = a (b - 128) + 128 a); the
// shifted weights and their column sums are kept between runs when B is an
// initializer. Everything is exact modulo 2^32 (the reference keeps the low
// 32 bits of its int64 sums), so only CPUs with VNNI are taken: without it
// oneDNN's u8 x s8 path saturates 16-bit pair sums. A of any rank, B 2-D,
// zero points scalar (B's also per column); the rest goes to the reference.
// com.microsoft QGemm (A 2-D, B [K, N] or with transB [N, K]) takes the
// same sums and its own output stage (quantization/qgemm.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/kernels/quantization/qgemm.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/thread_pool.h"
#include "reference/thread_scratch.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;
using dt = dnnl::memory::data_type;

bool int8_type(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

struct Problem {
  int64_t m = 0, k = 0, n = 0;
  bool a_signed = false, b_signed = false;
  bool trans_b = false;  // B stored [N, K] (QGemm's transB)
  Shape out;
  std::string key;
};

// A scalar zero point (or none), or for B also one per column.
bool zero_point_ok(const Value* v, DataType type, int64_t per_column) {
  if (!v) return true;
  if (!v->is_tensor() || v->tensor().dtype() != type) return false;
  const uint64_t c = v->tensor().element_count();
  return (c == 1 && v->tensor().rank() <= 1) || (per_column > 0 && v->tensor().rank() == 1 && c == static_cast<uint64_t>(per_column));
}

// Where A, B and their zero points are among the node's inputs.
struct Slots {
  size_t a, b, za, zb;
};
constexpr Slots kMatMulInteger{0, 1, 2, 3};
constexpr Slots kQLinearMatMul{0, 3, 2, 5};
constexpr Slots kQGemm{0, 3, 2, 5};

const Value* input_at(const KernelContext& ctx, size_t i) { return ctx.input_count() > i ? ctx.input_value(i) : nullptr; }

std::optional<Problem> problem_of(const KernelContext& ctx, Slots sl, bool trans_b = false) {
  if (!has_int8_vnni()) return std::nullopt;
  const Value* av = input_at(ctx, sl.a);
  const Value* bv = input_at(ctx, sl.b);
  if (!av || !bv || !av->is_tensor() || !bv->is_tensor()) return std::nullopt;
  const Tensor& a = av->tensor();
  const Tensor& b = bv->tensor();
  if (!int8_type(a.dtype()) || !int8_type(b.dtype()) || a.rank() < 2 || b.rank() != 2) return std::nullopt;
  Problem p;
  p.trans_b = trans_b;
  p.k = a.shape().back();
  p.n = b.shape()[trans_b ? 0 : 1];
  if (b.shape()[trans_b ? 1 : 0] != p.k) return std::nullopt;
  p.m = static_cast<int64_t>(a.element_count()) / std::max<int64_t>(p.k, 1);
  if (p.m == 0 || p.k == 0 || p.n == 0) return std::nullopt;
  if (!zero_point_ok(input_at(ctx, sl.za), a.dtype(), 0)) return std::nullopt;
  if (!zero_point_ok(input_at(ctx, sl.zb), b.dtype(), p.n)) return std::nullopt;
  p.a_signed = a.dtype() == DataType::Int8;
  p.b_signed = b.dtype() == DataType::Int8;
  p.out = a.shape();
  p.out.back() = p.n;
  p.key = std::string("mmint") + (p.a_signed ? "s" : "u") + (p.trans_b ? "T" : "") + std::to_string(p.m) + "x" +
          std::to_string(p.k) + "x" + std::to_string(p.n) + "|t" + std::to_string(sync_threads());
  return p;
}

// B's descriptor: [K, N], or its transpose in storage.
dnnl::memory::desc weights_md(const Problem& p) {
  return dnnl::memory::desc({p.k, p.n}, dt::s8, p.trans_b ? dnnl::memory::format_tag::ba : dnnl::memory::format_tag::ab);
}

std::shared_ptr<const Prim> prim_of(const Problem& p) {
  return get_prim(p.key, [&] {
    const dnnl::memory::desc src({p.m, p.k}, p.a_signed ? dt::s8 : dt::u8, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc wei = weights_md(p);
    const dnnl::memory::desc dst({p.m, p.n}, dt::s32, dnnl::memory::format_tag::ab);
    dnnl::matmul::desc d(src, wei, dst);
    dnnl::matmul::primitive_desc pd(d, base_attr(), engine());
    return make_prim<dnnl::matmul>(pd, /*no_ref=*/true);
  });
}

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() < 2 || ctx.input_count() > 4) return false;
  return safely([&] {
    auto p = problem_of(ctx, kMatMulInteger);
    return p && prim_of(*p)->ok;
  });
}

// B as int8 and its column sums (of the original values), kept for a constant B.
struct Weights {
  const void* source = nullptr;
  int64_t k = 0, n = 0;
  bool trans_b = false;
  std::vector<int8_t> shifted;  // empty when B is int8 already
  std::vector<int64_t> colsum;
};

void make_weights(const Tensor& b, const Problem& p, Weights& w) {
  w.source = b.raw();
  w.k = p.k;
  w.n = p.n;
  w.trans_b = p.trans_b;
  w.colsum.assign(static_cast<size_t>(p.n), 0);
  w.shifted.clear();
  // Element i of B's storage is in column i % N ([K, N]) or i / K ([N, K]).
  auto column = [&](int64_t i) { return static_cast<size_t>(p.trans_b ? i / p.k : i % p.n); };
  if (p.b_signed) {
    const int8_t* s = b.data<int8_t>();
    for (int64_t i = 0; i < p.k * p.n; ++i) w.colsum[column(i)] += s[i];
    return;
  }
  const uint8_t* s = b.data<uint8_t>();
  w.shifted.resize(static_cast<size_t>(p.k * p.n));
  for (int64_t i = 0; i < p.k * p.n; ++i) {
    w.shifted[static_cast<size_t>(i)] = static_cast<int8_t>(static_cast<int>(s[i]) - 128);
    w.colsum[column(i)] += s[i];
  }
}

// out = (A - za) (B - zb) as int32 (the low 32 bits of the exact sums).
void int8_matmul(KernelContext& ctx, const Problem& p, Slots sl, int32_t* out) {
  auto prim = prim_of(p);
  if (!prim->ok) ctx.fail("oneDNN could not create this int8 matmul");
  const Tensor& a = ctx.input(sl.a);
  const Tensor& b = ctx.input(sl.b);
  Weights local;
  Weights* w = &local;
  if (is_initializer(ctx, sl.b)) {
    if (Weights* kept = node_state<Weights>(ctx)) w = kept;
  }
  if (w->source != b.raw() || w->k != p.k || w->n != p.n || w->trans_b != p.trans_b) make_weights(b, p, *w);
  const dnnl::memory::desc src({p.m, p.k}, p.a_signed ? dt::s8 : dt::u8, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc wei = weights_md(p);
  const dnnl::memory::desc dst({p.m, p.n}, dt::s32, dnnl::memory::format_tag::ab);
  const void* weights = p.b_signed ? b.raw() : static_cast<const void*>(w->shifted.data());
  execute(*prim, {{DNNL_ARG_SRC, user_mem(src, a.raw())}, {DNNL_ARG_WEIGHTS, user_mem(wei, weights)},
                  {DNNL_ARG_DST, user_mem(dst, out)}});
  // The zero points, and the shift of a uint8 B, applied to the exact sums (mod 2^32 as the reference's low bits).
  auto zp = [&](size_t i, int64_t col) -> int64_t {
    const Value* v = input_at(ctx, i);
    if (!v) return 0;
    const Tensor& t = v->tensor();
    const int64_t at = t.element_count() == 1 ? 0 : col;
    return t.dtype() == DataType::Int8 ? t.data<int8_t>()[at] : t.data<uint8_t>()[at];
  };
  const int64_t za = zp(sl.za, 0);
  std::vector<int64_t> zb(static_cast<size_t>(p.n));
  for (int64_t j = 0; j < p.n; ++j) zb[static_cast<size_t>(j)] = zp(sl.zb, j);
  const int64_t shift = p.b_signed ? 0 : 128;
  // Pointers in locals: a.data() in the loops was a call per element (a
  // fifth of QLinearMatMul's time).
  const int8_t* as = p.a_signed ? a.data<int8_t>() : nullptr;
  const uint8_t* au = p.a_signed ? nullptr : a.data<uint8_t>();
  const int64_t* colsum = w->colsum.data();
  const int64_t* zbs = zb.data();
  const int64_t K = p.k, N = p.n;
  parallel_for(p.m, std::max<int64_t>(1, 4096 / N), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rowsum = 0;
      if (as) for (int64_t k = 0; k < K; ++k) rowsum += as[r * K + k];
      else for (int64_t k = 0; k < K; ++k) rowsum += au[r * K + k];
      int32_t* row = out + r * N;
      for (int64_t j = 0; j < N; ++j) {
        const int64_t zbj = zbs[j];
        const int64_t fix = (shift - zbj) * rowsum - za * colsum[j] + K * za * zbj;
        row[j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint32_t>(row[j]) + static_cast<uint64_t>(fix)));
      }
    }
  });
}

void MatMulInteger(KernelContext& ctx) {
  guarded(ctx, [&] {
    const std::optional<Problem> p = problem_of(ctx, kMatMulInteger);
    if (!p) ctx.fail("problem not supported by the oneDNN int8 matmul");
    Tensor& y = uninitialized_output(ctx, 0, DataType::Int32, p->out);
    int8_matmul(ctx, *p, kMatMulInteger, y.mutable_data<int32_t>());
  });
}

// --- QLinearMatMul ------------------------------------------------------------------
// y = saturate(round_half_even(acc * float(a_scale * b_scale / y_scale)) + y_zp), the
// multiplier formed in float and applied in double, as the reference does;
// per-tensor scales and zero points, 8-bit types.

bool qlinear_accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 8) return false;
  for (size_t i : {size_t{2}, size_t{5}, size_t{7}}) {
    const Value* v = ctx.input_value(i);
    if (!v || !v->is_tensor() || v->tensor().element_count() != 1) return false;
  }
  if (!scalar_float(ctx.input_value(1)) || !scalar_float(ctx.input_value(4)) || !scalar_float(ctx.input_value(6)))
    return false;
  const DataType yt = ctx.input_value(7)->tensor().dtype();
  if (yt != DataType::Uint8 && yt != DataType::Int8) return false;
  return safely([&] {
    auto p = problem_of(ctx, kQLinearMatMul);
    // The reference sums in int64; int32 holds every sum while K * 255 * 255 < 2^31.
    return p && p->k <= 33000 && prim_of(*p)->ok;
  });
}

void QLinearMatMul(KernelContext& ctx) {
  guarded(ctx, [&] {
    const std::optional<Problem> p = problem_of(ctx, kQLinearMatMul);
    if (!p) ctx.fail("problem not supported by the oneDNN int8 matmul");
    struct Sums;
    ref::ThreadScratch<int32_t, Sums> acc;  // kept by the thread: no mapping and zero fill per call
    acc->resize(static_cast<size_t>(p->m * p->n));
    int8_matmul(ctx, *p, kQLinearMatMul, acc->data());
    const float a_scale = *scalar_float(ctx.input_value(1)), b_scale = *scalar_float(ctx.input_value(4)),
                y_scale = *scalar_float(ctx.input_value(6));
    const double mult = static_cast<float>(a_scale * b_scale / y_scale);
    const Tensor& yz = ctx.input(7);
    const bool u8 = yz.dtype() == DataType::Uint8;
    const double zp = u8 ? yz.data<uint8_t>()[0] : yz.data<int8_t>()[0];
    Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), p->out);
    std::byte* out = y.mutable_raw();
    parallel_for(p->m * p->n, 16384, [&](int64_t b, int64_t e) {
      requantize_run(acc->data() + b, e - b, 0, mult, zp, u8, out + b);
    });
  });
}

// --- QGemm ----------------------------------------------------------------------------
// The exact sums from the int8 matmul, then QGemm's own output stage
// (quantization/qgemm.h: C, the scales folded in float, the rounding). A
// transposed A goes to the Eigen form.

bool qgemm_int8_accepts(const KernelContext& ctx) {
  if (!qgemm_accepts(ctx) || ctx.attr_int("transA", 0) != 0) return false;
  return safely([&] {
    auto p = problem_of(ctx, kQGemm, ctx.attr_int("transB", 0) != 0);
    // Exact in int32 while K * 255 * 255 < 2^31 (the Eigen form sums in double).
    return p && p->k <= 33000 && prim_of(*p)->ok;
  });
}

void QGemmInt8(KernelContext& ctx) {
  guarded(ctx, [&] {
    const std::optional<Problem> p = problem_of(ctx, kQGemm, ctx.attr_int("transB", 0) != 0);
    if (!p) ctx.fail("problem not supported by the oneDNN int8 matmul");
    struct Sums;
    ref::ThreadScratch<int32_t, Sums> acc;  // kept by the thread: no mapping and zero fill per call
    acc->resize(static_cast<size_t>(p->m * p->n));
    int8_matmul(ctx, *p, kQGemm, acc->data());
    const QGemmOutput y(ctx, p->m, p->n);
    const int64_t N = p->n;
    parallel_for(p->m, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) y.store_row(m, acc->data() + m * N);
    });
  });
}

}  // namespace

void register_matmul_integer_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "MatMulInteger", 10, INT_MAX, "onednn-int8", MatMulInteger, accepts});
  r.add(KernelDef{"", "QLinearMatMul", 10, INT_MAX, "onednn-int8", QLinearMatMul, qlinear_accepts});
  r.add(KernelDef{"com.microsoft", "QGemm", 1, INT_MAX, "onednn-int8", QGemmInt8, qgemm_int8_accepts});
}

}  // namespace onnxscope::cpu
