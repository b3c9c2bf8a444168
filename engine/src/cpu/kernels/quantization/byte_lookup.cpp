// 8-bit elementwise maps as 256-entry tables, applied 64 bytes at a time
// with AVX-512 VBMI's two-register byte permutes (the input's top bit picks
// the half of the table), split across the thread pool:
//   com.microsoft QLinearSigmoid and QLinearLeakyRelu (the SiLU of a
//     quantized EfficientNet: 65 of them, a third of its time on the
//     reference): the reference's own table for the node's parameters
//     (reference/ops/quantization/qlinear_activation.cpp), kept while they
//     stay the same;
//   onnxscope.cpu::QuantizedLookup (fuse-quantized-lookup): the table is its
//     second input, made by the reference at prepare time.
// The bytes are the reference's by construction.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <climits>  // INT_MAX
#include <cstring>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/qlinear_unary_params.h"
#include "cpu/kernels/quantization/byte_lookup.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

// The table and the parameters it was made for.
struct Table {
  bool made = false;
  std::array<float, 2> scales{};
  std::array<int, 2> zero_points{};
  float alpha = 0;
  DataType type = DataType::Undefined;
  std::array<std::byte, 256> bytes{};
};

bool accepts(const KernelContext& ctx) { return qlinear_unary_params(ctx).has_value(); }

int zero_point_at(const KernelContext& ctx, size_t i) {
  const Value* z = i < ctx.input_count() ? ctx.input_value(i) : nullptr;
  if (!z) return 0;
  const Tensor& t = z->tensor();
  return t.dtype() == DataType::Int8 ? t.data<int8_t>()[0] : t.data<uint8_t>()[0];
}

const Table& table_of(KernelContext& ctx, bool leaky, Table& local) {
  Table* t = node_state<Table>(ctx);
  if (!t) t = &local;
  const std::array<float, 2> scales{ctx.input(1).data<float>()[0], ctx.input(3).data<float>()[0]};
  const std::array<int, 2> zps{zero_point_at(ctx, 2), zero_point_at(ctx, 4)};
  const float alpha = leaky ? ctx.attr_float("alpha", 0.01f) : 0.0f;
  const DataType type = ctx.input(0).dtype();
  if (t->made && t->scales == scales && t->zero_points == zps && t->alpha == alpha && t->type == type) return *t;
  ref::qlinear_activation_table(ctx, leaky, t->bytes.data());
  t->scales = scales;
  t->zero_points = zps;
  t->alpha = alpha;
  t->type = type;
  t->made = true;
  return *t;
}

bool have_vbmi() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512vbmi") && ONNXSCOPE_CPU_AVX512("avx512bw");
  return yes;
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lookup_vbmi(const uint8_t* in, uint8_t* out, int64_t n,
                                                                       const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  for (int64_t i = 0; i < n; i += 64) {
    const __mmask64 m = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    const __m512i x = _mm512_maskz_loadu_epi8(m, in + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, x, t1);  // entries 0-127 by the low seven bits
    const __m512i high = _mm512_permutex2var_epi8(t2, x, t3);  // entries 128-255
    _mm512_mask_storeu_epi8(out + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), low, high));
  }
}

void lookup_plain(const uint8_t* in, uint8_t* out, int64_t n, const uint8_t* table) {
  for (int64_t i = 0; i < n; ++i) out[i] = table[in[i]];
}

// Y = table[X] for 8-bit X, Y of `type`.
void apply(KernelContext& ctx, const std::byte* table_bytes, DataType type) {
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, type, x.shape());
  const auto* in = reinterpret_cast<const uint8_t*>(x.raw());
  auto* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  const auto* table = reinterpret_cast<const uint8_t*>(table_bytes);
  parallel_for(static_cast<int64_t>(x.element_count()), 65536,
               [&](int64_t i0, int64_t i1) { lookup_bytes(in + i0, out + i0, i1 - i0, table); });
}

void run(KernelContext& ctx, bool leaky) {
  Table local;
  const Table& t = table_of(ctx, leaky, local);
  apply(ctx, t.bytes.data(), ctx.input(0).dtype());
}

void QLinearSigmoid(KernelContext& ctx) { run(ctx, false); }
void QLinearLeakyRelu(KernelContext& ctx) { run(ctx, true); }

bool lookup_accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 2) return false;
  const Value* x = ctx.input_value(0);
  const Value* t = ctx.input_value(1);
  auto int8 = [](DataType d) { return d == DataType::Uint8 || d == DataType::Int8; };
  if (!x || !t || !x->is_tensor() || !t->is_tensor() || !int8(x->tensor().dtype()) || !int8(t->tensor().dtype())) return false;
  if (!ctx.has_attr("axis")) return t->tensor().shape() == Shape{256};
  const int64_t axis = ctx.attr_int("axis", 1);
  const Tensor& xt = x->tensor();
  return axis >= 0 && axis < xt.rank() && t->tensor().shape() == Shape{xt.shape()[static_cast<size_t>(axis)], 256};
}

// Channels last (a run of C values per position): one table row per value.
void lookup_rows(const uint8_t* in, uint8_t* out, int64_t positions, int64_t C, const uint8_t* table) {
  for (int64_t p = 0; p < positions; ++p, in += C, out += C)
    for (int64_t c = 0; c < C; ++c) out[c] = table[c * 256 + in[c]];
}

// A table per channel along `axis`: each channel's run of `inner` values
// (a plane of [N, C, H, W]) with its row, 64 bytes at a time; with channels
// last (inner 1) a row per value.
void per_channel_lookup(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& t = ctx.input(1);
  const auto axis = static_cast<size_t>(ctx.attr_int("axis", 1));
  const int64_t C = x.shape()[axis];
  int64_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  for (size_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  Tensor& y = uninitialized_output(ctx, 0, t.dtype(), x.shape());
  const auto* in = reinterpret_cast<const uint8_t*>(x.raw());
  auto* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  const auto* table = reinterpret_cast<const uint8_t*>(t.raw());
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)),
                 [&](int64_t p0, int64_t p1) { lookup_rows(in + p0 * C, out + p0 * C, p1 - p0, C, table); });
    return;
  }
  parallel_for(outer * C, std::max<int64_t>(1, 65536 / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) lookup_bytes(in + r * inner, out + r * inner, inner, table + (r % C) * 256);
  });
}

void QuantizedLookup(KernelContext& ctx) {
  if (ctx.has_attr("axis")) per_channel_lookup(ctx);
  else apply(ctx, ctx.input(1).raw(), ctx.input(1).dtype());
}

}  // namespace

void lookup_bytes(const uint8_t* in, uint8_t* out, int64_t n, const uint8_t* table) {
  static const bool vbmi = have_vbmi();
  if (vbmi) lookup_vbmi(in, out, n, table);
  else lookup_plain(in, out, n, table);
}

void register_byte_lookup_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QLinearSigmoid", 1, INT_MAX, "cpu-simd", QLinearSigmoid, accepts});
  r.add(KernelDef{"com.microsoft", "QLinearLeakyRelu", 1, INT_MAX, "cpu-simd", QLinearLeakyRelu, accepts});
  r.add(KernelDef{kCpuDomain, kQuantizedLookup, 1, INT_MAX, "cpu-simd", QuantizedLookup, lookup_accepts});
}

}  // namespace onnxscope::cpu
