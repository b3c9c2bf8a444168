// MatMulInteger with constant weights (onnxruntime's dynamic quantization:
// DynamicQuantizeLinear's uint8 activations by int8 weights in every linear
// layer of a transformer) on the VNNI product of vnni_gemm.h: B minus its
// zero points packed once per initializer (kept_packing.h), A's zero point
// (a runtime scalar) carried by the sums' start, the int32 sums written
// from registers. oneDNN's int8 matmul ran GPT-2's 48 such products at about
// 270 G multiply-adds a second on this machine's two cores; the VNNI tiles
// run ViT-B/16's QGemms at 370. The sums are exact: the reference's bits.
#include <climits>  // INT_MAX
#include <memory>
#include <vector>

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
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
const Packed* packed_of(const KernelContext& ctx, Packed& local) {
  return kept_packing(ctx, local, 1, 3, [&](Packed& p) {
    const Tensor& b = ctx.input(1);
    const Tensor* zb = input_at(ctx, 3);
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

bool accepts(const KernelContext& ctx) {
  if (!vnni::available() || ctx.input_count() < 2 || ctx.output_count() != 1) return false;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* b = input_at(ctx, 1);
  if (!a || !b || !eight_bit(a->dtype()) || !eight_bit(b->dtype()) || a->rank() < 2 || b->rank() != 2) return false;
  if (!is_initializer(ctx, 1)) return false;
  const int64_t K = b->shape()[0], N = b->shape()[1];
  if (a->shape().back() != K || K == 0 || K > vnni::kMaxK || N == 0) return false;
  if (const Tensor* za = input_at(ctx, 2); za && (za->element_count() != 1 || za->dtype() != a->dtype())) return false;
  if (const Tensor* zb = input_at(ctx, 3)) {
    if (!is_initializer(ctx, 3) || zb->dtype() != b->dtype() || zb->rank() > 1) return false;
    if (zb->element_count() != 1 && static_cast<int64_t>(zb->element_count()) != N) return false;
  }
  return safely([&] {
    Packed local;
    return packed_of(ctx, local)->fits;
  });
}

void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    if (!accepts(ctx)) ctx.fail("problem not supported by the VNNI MatMulInteger");
    Packed local;
    const Packed& pk = *packed_of(ctx, local);
    const Tensor& a = ctx.input(0);
    const int64_t K = pk.b->K, N = pk.b->N;
    Shape ys = a.shape();
    ys.back() = N;
    Tensor& y = uninitialized_output(ctx, 0, DataType::Int32, ys);
    const int64_t M = K > 0 ? static_cast<int64_t>(a.element_count()) / K : 0;
    if (M == 0) return;
    const auto* ab = reinterpret_cast<const uint8_t*>(a.raw());
    vnni::Product p;
    p.b = pk.b.get();
    p.rows = M;
    p.row = [&](int64_t r) { return ab + r * K; };
    p.a_signed = a.dtype() == DataType::Int8;
    p.a_zero_point = input_at(ctx, 2) ? int8_at(*input_at(ctx, 2), 0) : 0;
    p.b_offset = pk.b_offset;
    p.type = vnni::Product::Type::s32;
    p.y = y.mutable_raw();
    vnni::run(p);
  });
}

}  // namespace

void register_matmul_integer_vnni_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "MatMulInteger", 10, INT_MAX, "cpu-int8", Run, accepts});
}

}  // namespace onnxscope::cpu
