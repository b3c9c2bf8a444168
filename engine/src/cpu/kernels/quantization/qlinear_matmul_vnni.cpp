// QLinearMatMul on the 8-bit product of vnni_gemm.h (bit for bit, the
// requantization as the reference computes it, requantize.h):
// - B with batch dims (a QOperator ViT's attention products, Q K^T and P V:
//   64 of its 173 ms on Eigen's double GEMM), one batch after another across
//   the pool, B's bytes packed as they come (uint8 minus 128, so any zero
//   point works: A's row sums carry the rest);
// - B a constant matrix (a QOperator transformer's linear layers) where
//   oneDNN's int8 matmul cannot take it (CPUs without VNNI, where its AVX2
//   path saturates): B packed once for the node and its bytes given back, as
//   matmul_integer_vnni.cpp does.
#include <algorithm>
#include <climits>  // INT_MAX
#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/kept_packing.h"
#include "cpu/kernels/quantization/qgemm.h"
#include "cpu/kernels/quantization/vnni_gemm.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

// B's packed bytes for a constant 2-D B, kept for the node.
struct Packed : KeptPacking {
  std::shared_ptr<vnni::PackedB> b = std::make_shared<vnni::PackedB>();
};

const Packed* packed_of(const KernelContext& ctx, Packed& local) {
  return kept_packing(ctx, local, 3, SIZE_MAX, [&](Packed& p) {
    const Tensor& b = ctx.input(3);
    const bool b_signed = b.dtype() == DataType::Int8;
    p.b = std::make_shared<vnni::PackedB>();
    vnni::pack_bytes(reinterpret_cast<const uint8_t*>(b.raw()), b.shape()[0], b.shape()[1], b.shape()[1], b_signed, *p.b);
    p.fits = true;
    give_back_packed_weights(b, p, local, [packed = p.b, flip = b_signed ? 0 : 0x80](std::byte* dst) {
      const vnni::PackedB& pb = *packed;
      for (int64_t k = 0; k < pb.K; ++k)
        for (int64_t n = 0; n < pb.N; ++n)
          dst[k * pb.N + n] = static_cast<std::byte>(static_cast<uint8_t>(pb.at(k, n)) ^ flip);
    });
    return true;
  });
}

// A constant 2-D B: this kernel's where oneDNN's int8 matmul cannot run.
bool constant_matrix(const KernelContext& ctx) {
  return ctx.input(3).rank() == 2 && is_initializer(ctx, 3) && !onednn::has_int8_vnni();
}

bool accepts(const KernelContext& ctx) {
  if (!vnni::available()) return false;
  const auto p = qlinear_matmul_batches(ctx);
  if (!p || p->K > vnni::kMaxK || p->K <= 0 || p->M <= 0 || p->N <= 0) return false;
  return ctx.input(3).rank() > 2 || constant_matrix(ctx);
}

void Run(KernelContext& ctx) {
  const auto p = qlinear_matmul_batches(ctx);
  if (!p || !accepts(ctx)) ctx.fail("problem not supported by the 8-bit product's QLinearMatMul");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& yz = ctx.input(7);
  const float sa = ctx.input(1).data<float>()[0], sb = ctx.input(4).data<float>()[0], sy = ctx.input(6).data<float>()[0];
  const std::vector<double> mult(static_cast<size_t>(p->N), static_cast<float>(sa * sb / sy));  // formed in float, as the reference does
  Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), p->out);
  if (y.element_count() == 0) return;
  const bool b_signed = b.dtype() == DataType::Int8;
  const auto* ab = reinterpret_cast<const uint8_t*>(a.raw());
  const auto* bb = reinterpret_cast<const uint8_t*>(b.raw());
  std::byte* out = y.mutable_raw();
  Packed local;
  const Packed* kept = constant_matrix(ctx) ? packed_of(ctx, local) : nullptr;
  // One B for every batch: the batches one after another, each product across the pool.
  parallel_for(p->batches, kept ? p->batches : 1, [&](int64_t b0, int64_t b1) {
    vnni::PackedB packed;
    for (int64_t i = b0; i < b1; ++i) {
      if (!kept) vnni::pack_bytes(bb + p->b_off[static_cast<size_t>(i)], p->K, p->N, p->N, b_signed, packed);
      const uint8_t* rows = ab + p->a_off[static_cast<size_t>(i)];
      vnni::Product pr;
      pr.b = kept ? kept->b.get() : &packed;
      pr.rows = p->M;
      pr.row = [rows, K = p->K](int64_t r) { return rows + r * K; };
      pr.a_signed = a.dtype() == DataType::Int8;
      pr.a_zero_point = int8_at(ctx.input(2));
      pr.b_offset = (b_signed ? 0 : 128) - int8_at(ctx.input(5));
      pr.stage = vnni::Stage::requantize;
      pr.mult = mult.data();
      pr.zero_point = static_cast<double>(int8_at(yz));
      pr.type = yz.dtype() == DataType::Uint8 ? vnni::Product::Type::u8 : vnni::Product::Type::s8;
      pr.y = out + i * p->M * p->N;
      vnni::run(pr);
    }
  });
}

}  // namespace

void register_qlinear_matmul_vnni_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "QLinearMatMul", 10, INT_MAX, "cpu-int8", Run, accepts});
}

}  // namespace onnxscope::cpu
