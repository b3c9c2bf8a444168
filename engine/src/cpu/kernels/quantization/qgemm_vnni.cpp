// com.microsoft QGemm (onnxruntime's quantizer writes it for Linear layers
// and MatMul + Add: a quantized ConvNeXt-T's 37 pointwise layers) on the VNNI
// product of vnni_gemm.h with QGemm's output stage in registers: A [M, K] not
// transposed, B an 8-bit initializer (transB or not) whose values minus their
// zero points fit int8, C absent or one value per column, finite scales.
// oneDNN's int8 matmul (matmul_integer.cpp) wrote the int32 sums to memory
// for QGemmOutput to read back: a [3136, 96] x [96, 384] product took
// 1.2 ms. Y is the reference's bit for bit (qgemm.h's arithmetic).
#include <algorithm>
#include <climits>  // INT_MAX
#include <cmath>
#include <memory>

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/kept_packing.h"
#include "cpu/kernels/quantization/qgemm.h"
#include "cpu/kernels/quantization/vnni_gemm.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

// B minus its zero points, packed, for the node's initializers (keyed by
// their buffers, not their bytes' address: reading that would bring bytes
// given back to the model's buffer back).
// (Held by a shared pointer: the restore function of bytes given back keeps it.)
struct Packed : KeptPacking {
  std::shared_ptr<vnni::PackedB> b = std::make_shared<vnni::PackedB>();
};

const Packed* packed_of(const KernelContext& ctx, Packed& local) {
  return kept_packing(ctx, local, 3, 5, [&](Packed& p) {
    const Tensor& b = ctx.input(3);
    const Tensor* zb = input_at(ctx, 5);
    const bool trans = ctx.attr_int("transB", 0) != 0;
    const int64_t K = trans ? b.shape()[1] : b.shape()[0], N = trans ? b.shape()[0] : b.shape()[1];
    std::vector<int64_t> z(static_cast<size_t>(N), 0);
    if (zb)
      for (int64_t n = 0; n < N; ++n) z[static_cast<size_t>(n)] = int8_at(*zb, zb->element_count() == 1 ? 0 : static_cast<uint64_t>(n));
    p.b = std::make_shared<vnni::PackedB>();
    const bool fits = vnni::pack(K, N, [&](int64_t k, int64_t n) {
      return int8_at(b, static_cast<uint64_t>(trans ? n * K + k : k * N + n)) - z[static_cast<size_t>(n)];
    }, *p.b);
    // The packed copy holds B exactly (its values minus their zero points):
    // with the model no one else's, the plain bytes go back, remade from it if
    // read again (a quantized ViT-B/16 held both, 1.03x onnxruntime's peak).
    p.fits = fits;
    const bool u8 = b.dtype() == DataType::Uint8;
    give_back_packed_weights(b, p, local, [packed = p.b, z = std::move(z), trans, u8](std::byte* dst) {
      const vnni::PackedB& pb = *packed;
      for (int64_t k = 0; k < pb.K; ++k)
        for (int64_t n = 0; n < pb.N; ++n) {
          const int64_t v = pb.at(k, n) + z[static_cast<size_t>(n)];
          dst[trans ? n * pb.K + k : k * pb.N + n] = static_cast<std::byte>(u8 ? static_cast<uint8_t>(v) : static_cast<uint8_t>(static_cast<int8_t>(v)));
        }
    });
    return fits;
  });
}

bool accepts(const KernelContext& ctx) {
  if (!vnni::available() || !qgemm_accepts(ctx) || ctx.attr_int("transA", 0) != 0) return false;
  if (!is_initializer(ctx, 3) || (input_at(ctx, 5) && !is_initializer(ctx, 5))) return false;
  const Tensor& b = ctx.input(3);
  const bool trans = ctx.attr_int("transB", 0) != 0;
  const int64_t K = trans ? b.shape()[1] : b.shape()[0], N = trans ? b.shape()[0] : b.shape()[1];
  if (K > vnni::kMaxK || K == 0 || N == 0 || ctx.input(0).shape()[0] == 0) return false;
  if (const Tensor* c = input_at(ctx, 6)) {  // one value, or one per column
    const Shape& cs = c->shape();
    if (!(c->element_count() == 1 || (cs.size() == 1 && cs[0] == N) || (cs.size() == 2 && cs[0] == 1 && cs[1] == N)))
      return false;
  }
  const std::vector<float> scale = qgemm_column_scales(ctx, N);
  if (!std::all_of(scale.begin(), scale.end(), [](float v) { return std::isfinite(v); })) return false;
  return safely([&] {
    Packed local;
    return packed_of(ctx, local)->fits;
  });
}

void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    if (!accepts(ctx)) ctx.fail("problem not supported by the VNNI QGemm");
    Packed local;
    const Packed& pk = *packed_of(ctx, local);
    const Tensor& a = ctx.input(0);
    const int64_t M = a.shape()[0], K = pk.b->K, N = pk.b->N;
    const std::vector<float> scale = qgemm_column_scales(ctx, N);
    const Tensor* yz = input_at(ctx, 8);
    const DataType yt = yz ? yz->dtype() : DataType::Float;
    Tensor& y = uninitialized_output(ctx, 0, yt, {M, N});
    const auto* ab = reinterpret_cast<const uint8_t*>(a.raw());
    vnni::Product p;
    p.b = pk.b.get();
    p.rows = M;
    p.row = [&](int64_t r) { return ab + r * K; };
    p.a_signed = a.dtype() == DataType::Int8;
    p.a_zero_point = input_at(ctx, 2) ? int8_at(*input_at(ctx, 2), 0) : 0;
    p.stage = vnni::Stage::scale_float;
    if (const Tensor* c = input_at(ctx, 6)) {
      p.addend = c->data<int32_t>();
      p.addend_step = c->element_count() == 1 ? 0 : 1;
    }
    p.scale = scale.data();
    p.zero_point = yz ? static_cast<double>(int8_at(*yz, 0)) : 0.0;
    p.type = yt == DataType::Float ? vnni::Product::Type::f32
             : yt == DataType::Uint8 ? vnni::Product::Type::u8 : vnni::Product::Type::s8;
    p.y = y.mutable_raw();
    vnni::run(p);
  });
}

}  // namespace

void register_qgemm_vnni_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QGemm", 1, INT_MAX, "cpu-int8", Run, accepts});
}

}  // namespace onnxscope::cpu
