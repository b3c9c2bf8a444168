// MatMulInteger with constant weights (onnxruntime's dynamic quantization:
// DynamicQuantizeLinear's uint8 activations by int8 weights in every linear
// layer of a transformer) on the VNNI product of vnni_gemm.h: B minus its
// zero points packed once per initializer (kept_packing.h), A's zero point
// (a runtime scalar) carried by the sums' start, the int32 sums written
// from registers. oneDNN's int8 matmul ran GPT-2's 48 such products at about
// 270 G multiply-adds a second on this machine's two cores; the VNNI tiles
// run ViT-B/16's QGemms at 370. The sums are exact: the reference's bits.
//
// The same product under the two com.microsoft operators onnxruntime's
// optimizer makes of quantize_dynamic's DynamicQuantizeLinear, MatMulInteger,
// Cast and Mul (its saved optimized models carry them):
//   MatMulIntegerToFloat(A, B, a_scale, b_scale, [a_zp], [b_zp], [bias])
//   DynamicQuantizeMatMul(A float, B, b_scale, [b_zp], [bias])  (A quantized
//       as DynamicQuantizeLinear does, then the same)
// Y = float(sum) * (a_scale * b_scale[n]) [+ bias[n]] in float, the
// reference's arithmetic (reference/ops/quantization/matmul_integer_to_float.cpp),
// from registers.
#include <algorithm>
#include <climits>  // INT_MAX
#include <memory>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/quantization/dynamic_quantize.h"
#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/kept_packing.h"
#include "cpu/kernels/quantization/vnni_gemm.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

bool eight_bit(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

// (The packed form behind a shared pointer: the restore function of bytes given back keeps it.)
struct Packed : KeptPacking {
  std::shared_ptr<vnni::PackedB> b = std::make_shared<vnni::PackedB>();
  int64_t b_offset = 0;  // Product::b_offset: what the packed values lack of B minus its zero point
};

// B [K, N] packed: its bytes as they are (int8; uint8 minus 128) with one
// zero point carried by b_offset (a tight loop: 85 M weights of a GPT-2 took
// half a second through pack()'s per-value function), or minus its zero
// point per column.
// bi, zbi: the positions of B and of its zero point among the node's inputs.
const Packed* packed_of(const KernelContext& ctx, Packed& local, size_t bi, size_t zbi) {
  return kept_packing(ctx, local, bi, zbi, [&](Packed& p) {
    const Tensor& b = ctx.input(bi);
    const Tensor* zb = input_at(ctx, zbi);
    const int64_t K = b.shape()[0], N = b.shape()[1];
    const bool b_signed = b.dtype() == DataType::Int8;
    p.b = std::make_shared<vnni::PackedB>();
    // What each packed value lacks of B's byte: 128 (uint8 packed minus 128),
    // or the column's zero point (packed minus it).
    std::vector<int64_t> add(static_cast<size_t>(N), b_signed ? 0 : 128);
    bool fits = true;
    if (!zb || zb->element_count() == 1) {
      vnni::pack_bytes(reinterpret_cast<const uint8_t*>(b.raw()), K, N, N, b_signed, *p.b);
      p.b_offset = (b_signed ? 0 : 128) - (zb ? int8_at(*zb, 0) : 0);
    } else {
      p.b_offset = 0;
      for (int64_t n = 0; n < N; ++n) add[static_cast<size_t>(n)] = int8_at(*zb, static_cast<uint64_t>(n));
      fits = vnni::pack(K, N, [&](int64_t k, int64_t n) {
        return int8_at(b, static_cast<uint64_t>(k * N + n)) - add[static_cast<size_t>(n)];
      }, *p.b);
    }
    // The packed copy holds B exactly: with the model no one else's, B's own
    // bytes go back, remade from it if read again (as qgemm_vnni.cpp's; a
    // dynamically quantized BERT-base held both, 1.36x onnxruntime's peak RSS).
    p.fits = fits;
    give_back_packed_weights(b, p, local, [packed = p.b, add = std::move(add)](std::byte* dst) {
      const vnni::PackedB& pb = *packed;
      for (int64_t k = 0; k < pb.K; ++k)
        for (int64_t n = 0; n < pb.N; ++n)
          dst[k * pb.N + n] = static_cast<std::byte>(static_cast<uint8_t>(pb.at(k, n) + add[static_cast<size_t>(n)]));
    });
    return fits;
  });
}

// B (input bi) a constant 8-bit [K, N] with K = A's last dimension, its
// zero point (input zbi) absent or a constant scalar or one per column, and
// B minus it packed into int8.
bool b_accepts(const KernelContext& ctx, const Tensor& a, size_t bi, size_t zbi) {
  const Tensor* b = input_at(ctx, bi);
  if (!b || !eight_bit(b->dtype()) || a.rank() < 2 || b->rank() != 2) return false;
  if (!is_initializer(ctx, bi)) return false;
  const int64_t K = b->shape()[0], N = b->shape()[1];
  if (a.shape().back() != K || K == 0 || K > vnni::kMaxK || N == 0) return false;
  if (const Tensor* zb = input_at(ctx, zbi)) {
    if (!is_initializer(ctx, zbi) || zb->dtype() != b->dtype() || zb->rank() > 1) return false;
    if (zb->element_count() != 1 && static_cast<int64_t>(zb->element_count()) != N) return false;
  }
  return safely([&] {
    Packed local;
    return packed_of(ctx, local, bi, zbi)->fits;
  });
}

bool accepts(const KernelContext& ctx) {
  if (!vnni::available() || ctx.input_count() < 2 || ctx.output_count() != 1) return false;
  const Tensor* a = input_at(ctx, 0);
  if (!a || !eight_bit(a->dtype())) return false;
  if (const Tensor* za = input_at(ctx, 2); za && (za->element_count() != 1 || za->dtype() != a->dtype())) return false;
  return b_accepts(ctx, *a, 1, 3);
}

// The product of A's M rows of K bytes (minus a_zero_point) by the packed B.
vnni::Product product_of(const Packed& pk, const Tensor& a, const uint8_t* ab, bool a_signed, int64_t a_zero_point) {
  const int64_t K = pk.b->K;
  vnni::Product p;
  p.b = pk.b.get();
  p.rows = K > 0 ? static_cast<int64_t>(a.element_count()) / K : 0;
  p.row = [ab, K](int64_t r) { return ab + r * K; };
  p.a_signed = a_signed;
  p.a_zero_point = a_zero_point;
  p.b_offset = pk.b_offset;
  return p;
}

void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    if (!accepts(ctx)) ctx.fail("problem not supported by the VNNI MatMulInteger");
    Packed local;
    const Packed& pk = *packed_of(ctx, local, 1, 3);
    const Tensor& a = ctx.input(0);
    Shape ys = a.shape();
    ys.back() = pk.b->N;
    Tensor& y = uninitialized_output(ctx, 0, DataType::Int32, ys);
    vnni::Product p = product_of(pk, a, reinterpret_cast<const uint8_t*>(a.raw()), a.dtype() == DataType::Int8,
                                 input_at(ctx, 2) ? int8_at(*input_at(ctx, 2), 0) : 0);
    if (p.rows == 0) return;
    p.type = vnni::Product::Type::s32;
    p.y = y.mutable_raw();
    vnni::run(p);
  });
}

// --- MatMulIntegerToFloat and DynamicQuantizeMatMul (com.microsoft) ----------------

// b_scale (input si): float, one value or one per column; bias (input bi):
// absent or float [N].
bool float_stage_accepts(const KernelContext& ctx, size_t si, size_t bi, int64_t N) {
  const Tensor* s = input_at(ctx, si);
  if (!s || s->dtype() != DataType::Float) return false;
  if (s->element_count() != 1 && (s->rank() != 1 || static_cast<int64_t>(s->element_count()) != N)) return false;
  const Tensor* bias = input_at(ctx, bi);
  return !bias || (bias->dtype() == DataType::Float && bias->rank() == 1 && bias->shape()[0] == N);
}

// Y float: float(sum) * (a_scale * b_scale[n]) [+ bias[n]].
void run_to_float(KernelContext& ctx, const Packed& pk, vnni::Product p, float a_scale, size_t si, size_t bi, Shape ys) {
  const int64_t N = pk.b->N;
  const Tensor& bs = ctx.input(si);
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) scale[static_cast<size_t>(n)] = a_scale * bs.data<float>()[bs.element_count() == 1 ? 0 : n];
  ys.back() = N;
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, ys);
  if (p.rows == 0) return;
  p.stage = vnni::Stage::scale_float;
  p.scale = scale.data();
  p.bias_float = input_at(ctx, bi) ? input_at(ctx, bi)->data<float>() : nullptr;
  p.type = vnni::Product::Type::f32;
  p.y = y.mutable_raw();
  vnni::run(p);
}

bool to_float_accepts(const KernelContext& ctx) {
  if (!vnni::available() || ctx.input_count() < 4 || ctx.input_count() > 7 || ctx.output_count() != 1) return false;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* as = input_at(ctx, 2);
  if (!a || !eight_bit(a->dtype()) || !as || as->dtype() != DataType::Float || as->element_count() != 1) return false;
  if (const Tensor* za = input_at(ctx, 4); za && (za->element_count() != 1 || za->dtype() != a->dtype())) return false;
  return b_accepts(ctx, *a, 1, 5) && float_stage_accepts(ctx, 3, 6, input_at(ctx, 1)->shape()[1]);
}

void MatMulIntegerToFloat(KernelContext& ctx) {
  guarded(ctx, [&] {
    if (!to_float_accepts(ctx)) ctx.fail("problem not supported by the VNNI MatMulIntegerToFloat");
    Packed local;
    const Packed& pk = *packed_of(ctx, local, 1, 5);
    const Tensor& a = ctx.input(0);
    const vnni::Product p = product_of(pk, a, reinterpret_cast<const uint8_t*>(a.raw()), a.dtype() == DataType::Int8,
                                       input_at(ctx, 4) ? int8_at(*input_at(ctx, 4), 0) : 0);
    run_to_float(ctx, pk, p, ctx.input(2).data<float>()[0], 3, 6, a.shape());
  });
}

bool dynamic_accepts(const KernelContext& ctx) {
  if (!vnni::available() || ctx.input_count() < 3 || ctx.input_count() > 5 || ctx.output_count() != 1) return false;
  const Tensor* a = input_at(ctx, 0);
  if (!a || a->dtype() != DataType::Float) return false;
  return b_accepts(ctx, *a, 1, 3) && float_stage_accepts(ctx, 2, 4, input_at(ctx, 1)->shape()[1]);
}

void DynamicQuantizeMatMul(KernelContext& ctx) {
  guarded(ctx, [&] {
    if (!dynamic_accepts(ctx)) ctx.fail("problem not supported by the VNNI DynamicQuantizeMatMul");
    Packed local;
    const Packed& pk = *packed_of(ctx, local, 1, 3);
    const Tensor& a = ctx.input(0);
    // A quantized into scratch bounded like the tensor it mirrors (a quarter
    // of A's bytes), left uninitialized: the quantization writes every byte.
    const auto n = static_cast<int64_t>(a.element_count());
    const std::unique_ptr<uint8_t[]> aq(new uint8_t[static_cast<size_t>(std::max<int64_t>(n, 1))]);
    const DynamicQuantParams q = dynamic_quantize_uint8(a.data<float>(), n, aq.get());
    const vnni::Product p = product_of(pk, a, aq.get(), false, static_cast<int64_t>(q.zero_point));
    run_to_float(ctx, pk, p, q.scale, 2, 4, a.shape());
  });
}

}  // namespace

void register_matmul_integer_vnni_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "MatMulInteger", 10, INT_MAX, "cpu-int8", Run, accepts});
  r.add(KernelDef{"com.microsoft", "MatMulIntegerToFloat", 1, INT_MAX, "cpu-int8", MatMulIntegerToFloat, to_float_accepts});
  r.add(KernelDef{"com.microsoft", "DynamicQuantizeMatMul", 1, INT_MAX, "cpu-int8", DynamicQuantizeMatMul, dynamic_accepts});
}

}  // namespace onnxscope::cpu
