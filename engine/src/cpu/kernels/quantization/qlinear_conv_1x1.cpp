// NhwcQLinearConv with a 1x1 window, group 1 and no padding (the pointwise
// convolutions of MobileNets, EfficientNets and ResNet bottlenecks): on a
// channels-last image it is a product of the [pixels, C] uint8/int8 rows by
// the [C, M] int8 weights, here the VNNI product of vnni_gemm.h with the
// requantization done on each tile while it is in registers. oneDNN's int8
// convolution wrote the int32 sums to memory and the requantization read
// them back: 4.8 MB for MobileNetV2's 16 -> 96 layer at 112x112, 0.44 ms in
// oneDNN alone. Y is the reference's bit for bit (requantize.h).
#include <algorithm>
#include <climits>  // INT_MAX

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/kernels/quantization/kept_packing.h"
#include "cpu/kernels/quantization/qlinear_conv_params.h"
#include "cpu/kernels/quantization/vnni_gemm.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

// The node's weights minus their zero points, packed (vnni_gemm.h).
struct Packed : KeptPacking {
  vnni::PackedB b;
};

bool pack(const Tensor& w, const Tensor* wz, Packed& p) {
  const int64_t M = w.shape()[0], C = w.shape()[1];
  return vnni::pack(C, M, [&](int64_t c, int64_t m) {
    const int64_t z = wz ? int8_at(*wz, wz->element_count() == 1 ? 0 : static_cast<uint64_t>(m)) : 0;
    return int8_at(w, static_cast<uint64_t>(m * C + c)) - z;
  }, p.b);
}

// The node's packed weights, made again when the initializer changes.
const Packed* packed_of(const KernelContext& ctx, Packed& local) {
  return kept_packing(ctx, local, 3, 5, [&](Packed& p) {
    const Value* zv = ctx.input_count() > 5 ? ctx.input_value(5) : nullptr;
    return pack(ctx.input(3), zv ? &zv->tensor() : nullptr, p);
  });
}

// The problem, when it is this kernel's: X [N, D..., C] 8-bit, W [M, C, 1...]
// an 8-bit initializer, group 1, no padding; strides any (a strided 1x1
// reads every s-th pixel). Output dims in `out`.
bool problem_of(const KernelContext& ctx, std::vector<int64_t>& out, std::vector<int64_t>& strides) {
  if (!vnni::available() || !qlinear_conv_params_ok(ctx)) return false;
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(3);
  if (!xv || !xv->is_tensor() || !wv || !wv->is_tensor() || !onednn::is_initializer(ctx, 3)) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  auto int8 = [](DataType t) { return t == DataType::Uint8 || t == DataType::Int8; };
  if (!int8(x.dtype()) || !int8(w.dtype()) || x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) return false;
  if (ctx.attr_int("group", 1) != 1 || w.shape()[1] != x.shape().back() || w.shape()[1] > vnni::kMaxK) return false;
  for (size_t d = 2; d < w.shape().size(); ++d)
    if (w.shape()[d] != 1) return false;
  // A kernel_shape other than W's is the model's error (the reference names it), not a 1x1 product.
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()))
    return false;
  if (x.element_count() == 0 || w.element_count() == 0) return false;
  if (const Value* z = ctx.input_value(2))  // the input's zero point: a scalar of its type
    if (!z->is_tensor() || z->tensor().dtype() != x.dtype() || z->tensor().element_count() != 1) return false;
  if (ctx.input_count() > 5)
    if (const Value* z = ctx.input_value(5)) {
      const Tensor& t = z->tensor();
      if (!z->is_tensor() || t.dtype() != w.dtype() || !onednn::is_initializer(ctx, 5)) return false;
      if (!(t.element_count() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.shape()[0] == w.shape()[0])) return false;
    }
  const Shape& xs = x.shape();
  ref::nn::Window win;
  try {
    win = ref::nn::resolve_window(ctx, std::vector<int64_t>(xs.begin() + 1, xs.end() - 1),
                                  std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), false);
  } catch (const std::exception&) {
    return false;
  }
  for (size_t d = 0; d < win.out.size(); ++d)
    if (win.pad_begin[d] != 0 || win.pad_end[d] != 0 || win.out[d] <= 0) return false;
  out = win.out;
  strides = win.strides;
  return true;
}

bool accepts(const KernelContext& ctx) {
  return safely([&] {
    std::vector<int64_t> out, strides;
    if (!problem_of(ctx, out, strides)) return false;
    Packed local;
    return packed_of(ctx, local)->fits;
  });
}

void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::vector<int64_t> out, strides;
    if (!problem_of(ctx, out, strides)) ctx.fail("problem not supported by the 1x1 int8 kernel");
    Packed local;
    const Packed& pk = *packed_of(ctx, local);
    if (!pk.fits) ctx.fail("the weights minus their zero points do not fit int8");
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    const int64_t N = xs[0], C = pk.b.K, M = pk.b.N;
    Shape ys{N};
    ys.insert(ys.end(), out.begin(), out.end());
    ys.push_back(M);
    const Tensor& yz = ctx.input(7);
    Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), ys);
    const std::vector<double> mult = qlinear_conv_multipliers(ctx, M);
    // Pixels of the output (all images) and the input pixel each reads.
    int64_t pixels = N, in_pixels = 1;
    for (int64_t o : out) pixels *= o;
    for (size_t d = 1; d + 1 < xs.size(); ++d) in_pixels *= xs[d];
    const bool dense = std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 1; });
    const uint8_t* xb = reinterpret_cast<const uint8_t*>(x.raw());
    vnni::Product p;
    p.b = &pk.b;
    p.rows = pixels;
    p.row = [&](int64_t r) -> const uint8_t* {
      if (dense) return xb + r * C;
      int64_t rest = r, index = 0, scale = 1;
      for (size_t d = out.size(); d-- > 0;) {
        index += rest % out[d] * strides[d] * scale;
        rest /= out[d];
        scale *= xs[d + 1];
      }
      return xb + (rest * in_pixels + index) * C;  // rest: the image
    };
    p.a_signed = x.dtype() == DataType::Int8;
    p.a_zero_point = ctx.input_value(2) ? int8_at(ctx.input(2), 0) : 0;
    p.stage = vnni::Stage::requantize;
    p.bias = ctx.input_count() > 8 && ctx.input_value(8) ? ctx.input(8).data<int32_t>() : nullptr;
    p.mult = mult.data();
    p.zero_point = static_cast<double>(int8_at(yz, 0));
    p.type = yz.dtype() == DataType::Uint8 ? vnni::Product::Type::u8 : vnni::Product::Type::s8;
    p.y = y.mutable_raw();
    vnni::run(p);
  });
}

}  // namespace

void register_qlinear_conv_1x1_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kNhwcQLinearConv, 1, INT_MAX, "cpu-int8", Run, accepts});
}

}  // namespace onnxscope::cpu
