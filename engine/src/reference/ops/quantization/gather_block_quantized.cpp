// Reference kernel: com.microsoft GatherBlockQuantized (ONNX Runtime's
// contrib operator for block-quantized embedding tables and tied LM heads:
// onnxruntime-genai's model builder and ONNX Runtime's quantizers write it).
//
//   output = Gather(dequantized data, indices, axis = gather_axis)
//   dequantized data[i] = (q[i] - zero_point[blk(i)]) * scales[blk(i)]
//   blk(i): i's index along quantize_axis divided by block_size, its own
//           index on every other axis
//
// data (T1): int4 or uint4 (bits 4; zero point default 0); uint8 holding
// 8 / bits values of `bits` (2, 4 or 8) bits each, packed along the last
// axis from the low bits up (the logical last dimension is the stored one
// times 8 / bits; gather_axis must be 0 and quantize_axis the last axis;
// zero point default 2^(bits-1); zero_points uint8, packed the same way per
// row of scales); or a float8 or float4e2m1 type (no zero point,
// output = q * scale; block_size 0 means one block over the whole
// quantize_axis; a scales dimension of 1 off quantize_axis broadcasts).
// block_size: a power of two of at least 16 (default 128). scales (T2:
// float, float16, bfloat16; the output's type): data's rank,
// ceil(dim / block_size) on quantize_axis, data's (logical) dims elsewhere;
// zero_points (optional, data's type): scales' shape (for packed uint8, the
// last dimension ceil(blocks * bits / 8)). indices (int32, int64): in
// [-s, s-1] along gather_axis, negative ones from the back; as the operator
// says, unlike ONNX Gather an index out of range gives zeros for its slice
// (ONNX Runtime 1.31 does the same). The product in double, rounded once.
#include <algorithm>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

bool is_float_quantized(DataType t) {
  switch (t) {
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::Float4E2M1: return true;
    default: return false;
  }
}

int64_t axis_attr(const KernelContext& ctx, const char* name, int64_t fallback, int64_t rank) {
  const int64_t a = ctx.attr_int(name, fallback);
  if (a < -rank || a >= rank)
    ctx.fail(std::string(name) + " " + std::to_string(a) + " is out of range for data of rank " +
             std::to_string(rank) + " (accepted: [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "])");
  return a < 0 ? a + rank : a;
}

}  // namespace

void GatherBlockQuantized(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& scales = ctx.input(2);
  const Tensor* zp = ctx.optional_input(3);
  const DataType qt = data.dtype();
  const bool fp = is_float_quantized(qt), packed = qt == DataType::Uint8;
  if (!fp && !packed && qt != DataType::Int4 && qt != DataType::Uint4)
    ctx.fail("data must be int4, uint4, uint8, a float8 type or float4e2m1, got " + std::string(dtype_name(qt)));
  if (indices.dtype() != DataType::Int32 && indices.dtype() != DataType::Int64)
    ctx.fail("indices must be int32 or int64, got " + std::string(dtype_name(indices.dtype())));
  const DataType out_t = scales.dtype();
  if (out_t != DataType::Float && out_t != DataType::Float16 && out_t != DataType::BFloat16)
    ctx.fail("scales must be float, float16 or bfloat16, got " + std::string(dtype_name(out_t)));
  const int64_t r = data.rank();
  if (r < 1) ctx.fail("data must have rank 1 or more, got a scalar");
  const int64_t g = axis_attr(ctx, "gather_axis", 0, r), q = axis_attr(ctx, "quantize_axis", 1, r);
  const int64_t block_attr = ctx.attr_int("block_size", 128);
  if (!(fp && block_attr == 0) && (block_attr < 16 || (block_attr & (block_attr - 1)) != 0))
    ctx.fail("block_size must be a power of two of at least 16" + std::string(fp ? " or 0" : "") + ", got " +
             std::to_string(block_attr));
  const int64_t bits = fp ? 0 : ctx.attr_int("bits", 4);
  if (packed) {
    if (bits != 2 && bits != 4 && bits != 8)
      ctx.fail("bits must be 2, 4 or 8 for uint8 data, got " + std::to_string(bits));
    if (g != 0) ctx.fail("gather_axis must be 0 for uint8 data, got " + std::to_string(g));
    if (q != r - 1)
      ctx.fail("quantize_axis must be the last axis (" + std::to_string(r - 1) + ") for uint8 data, got " +
               std::to_string(q));
    if (r < 2) ctx.fail("uint8 data must have rank 2 or more (gather_axis 0 and quantize_axis the last must differ)");
  } else if (!fp && bits != 4) {
    ctx.fail("bits must be 4 for " + std::string(dtype_name(qt)) + " data, got " + std::to_string(bits));
  }
  if (fp && zp) ctx.fail("zero_points must not be given for " + std::string(dtype_name(qt)) + " data (symmetric)");

  // The logical shape: packed uint8 holds 8 / bits values a byte along the last axis.
  const int64_t per_byte = packed ? 8 / bits : 1;
  Shape ls = data.shape();
  ls.back() *= per_byte;
  const int64_t block = block_attr == 0 ? std::max<int64_t>(ls[q], 1) : block_attr;
  const int64_t blocks = (ls[q] + block - 1) / block;
  Shape want = ls;
  want[q] = blocks;
  bool ok = scales.rank() == r;
  std::vector<char> bcast(static_cast<size_t>(r), 0);
  for (int64_t d = 0; ok && d < r; ++d) {
    if (scales.shape()[d] == want[d]) continue;
    if (fp && d != q && scales.shape()[d] == 1) bcast[d] = 1;
    else ok = false;
  }
  if (!ok)
    ctx.fail("scales must have shape " + shape_to_string(want) + " (data's" + (packed ? " unpacked" : "") +
             " shape with ceil(" + std::to_string(ls[q]) + " / block_size " + std::to_string(block) + ") = " +
             std::to_string(blocks) + " blocks on quantize_axis " + std::to_string(q) +
             (fp ? ", a 1 broadcasting on another axis" : "") + "), got " + shape_to_string(scales.shape()));
  const int64_t zp_last = packed ? (blocks + per_byte - 1) / per_byte : blocks;
  if (zp) {
    if (zp->dtype() != qt)
      ctx.fail("zero_points must have data's type " + std::string(dtype_name(qt)) + ", got " +
               std::string(dtype_name(zp->dtype())));
    Shape zwant = want;
    if (packed) zwant.back() = zp_last;
    if (zp->shape() != zwant)
      ctx.fail("zero_points must have shape " + shape_to_string(zwant) + " (scales' shape" +
               (packed && per_byte > 1 ? ", its " + std::to_string(blocks) + " blocks packed " +
                                             std::to_string(per_byte) + " a byte" : std::string()) +
               "), got " + shape_to_string(zp->shape()));
  }

  // Output: data's logical shape with the gather axis replaced by indices' shape.
  Shape os(ls.begin(), ls.begin() + g);
  os.insert(os.end(), indices.shape().begin(), indices.shape().end());
  os.insert(os.end(), ls.begin() + g + 1, ls.end());
  Tensor& y = ctx.allocate_output(0, out_t, os);
  if (y.element_count() == 0) return;

  const std::vector<int64_t> lstride = strides_of(ls), sstride = strides_of(scales.shape());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < g; ++d) outer *= ls[d];
  for (int64_t d = g + 1; d < r; ++d) inner *= ls[d];
  const int64_t gdim = ls[g], n_idx = static_cast<int64_t>(indices.element_count());
  const int64_t default_zp = packed ? int64_t{1} << (bits - 1) : 0;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1u);
  const uint8_t* bytes = packed ? data.data<uint8_t>() : nullptr;
  std::vector<int64_t> at(static_cast<size_t>(r));
  dispatch<kFloats>(ctx, out_t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for (int64_t m = 0; m < outer; ++m)
      for (int64_t j = 0; j < n_idx; ++j) {
        int64_t idx = indices.element_as_int64(static_cast<uint64_t>(j));
        if (idx < -gdim || idx >= gdim) continue;  // out of range: its slice stays zeros, as the operator says
        if (idx < 0) idx += gdim;
        const int64_t src0 = (m * gdim + idx) * inner, dst0 = (m * n_idx + j) * inner;
        for (int64_t e = 0; e < inner; ++e) {
          const int64_t src = src0 + e;
          // The scale (and zero point) of src: its block on quantize_axis, its index elsewhere.
          int64_t rest = src, s = 0;
          for (int64_t d = 0; d < r; ++d) {
            at[d] = rest / lstride[d];
            rest -= at[d] * lstride[d];
            s += (d == q ? at[d] / block : bcast[d] ? 0 : at[d]) * sstride[d];
          }
          const double scale = scales.element_as_double(static_cast<uint64_t>(s));
          double v;
          if (fp) {
            v = data.element_as_double(static_cast<uint64_t>(src)) * scale;
          } else {
            int64_t qv, z = default_zp;
            if (packed) {
              qv = (bytes[src / per_byte] >> ((src % per_byte) * bits)) & mask;
              if (zp) {
                const int64_t row = s / blocks, b = s % blocks;
                z = (zp->data<uint8_t>()[row * zp_last + b / per_byte] >> ((b % per_byte) * bits)) & mask;
              }
            } else {
              qv = data.element_as_int64(static_cast<uint64_t>(src));
              if (zp) z = zp->element_as_int64(static_cast<uint64_t>(s));
            }
            v = static_cast<double>(qv - z) * scale;  // exact in double
          }
          put<T>(y, static_cast<uint64_t>(dst0 + e), static_cast<C>(v));
        }
      }
  });
}

}  // namespace onnxscope::ref
