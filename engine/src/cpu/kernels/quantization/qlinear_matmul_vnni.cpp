// QLinearMatMul with batch dims on B (a QOperator ViT's attention products,
// Q K^T and P V: 64 of its 173 ms on Eigen's double GEMM) on the VNNI
// product of vnni_gemm.h, one batch after another across the pool: B's
// bytes packed as they come (uint8 minus 128, so any zero point works: A's
// row sums carry the rest), the requantization in registers as the
// reference computes it (requantize.h). Bit for bit.
#include <algorithm>
#include <climits>  // INT_MAX
#include <vector>

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/qgemm.h"
#include "cpu/kernels/quantization/vnni_gemm.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

bool accepts(const KernelContext& ctx) {
  if (!vnni::available()) return false;
  const auto p = qlinear_matmul_batches(ctx);
  return p && p->K <= vnni::kMaxK && p->K > 0 && p->M > 0 && p->N > 0;
}

void Run(KernelContext& ctx) {
  const auto p = qlinear_matmul_batches(ctx);
  if (!p || !vnni::available()) ctx.fail("problem not supported by the VNNI QLinearMatMul");
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
  parallel_for(p->batches, 1, [&](int64_t b0, int64_t b1) {
    vnni::PackedB packed;
    for (int64_t i = b0; i < b1; ++i) {
      vnni::pack_bytes(bb + p->b_off[static_cast<size_t>(i)], p->K, p->N, p->N, b_signed, packed);
      const uint8_t* rows = ab + p->a_off[static_cast<size_t>(i)];
      vnni::Product pr;
      pr.b = &packed;
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
