// Reference kernels: DepthToSpace and SpaceToDepth.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

int64_t blocksize_of(const KernelContext& ctx) {
  const int64_t b = ctx.required_attr("blocksize").i;
  if (b <= 0) ctx.fail("blocksize must be positive, got " + std::to_string(b));
  return b;
}

bool crd_mode(const KernelContext& ctx) {
  const std::string mode = ctx.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be 'DCR' or 'CRD', got '" + mode + "'");
  return mode == "CRD";
}

}  // namespace

void DepthToSpace(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-D, got shape " + shape_to_string(x.shape()));
  const int64_t b = blocksize_of(ctx);
  const bool crd = crd_mode(ctx);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (C % mul(ctx, b, b) != 0) ctx.fail("channels " + std::to_string(C) + " are not divisible by blocksize^2");
  const int64_t c_out = C / (b * b);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, c_out, mul(ctx, H, b), mul(ctx, W, b)});
  ElementMover move(x, y, &ctx);
  uint64_t pos = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < c_out; ++c)
      for (int64_t oh = 0; oh < H * b; ++oh)
        for (int64_t ow = 0; ow < W * b; ++ow, ++pos) {
          const int64_t h = oh / b, i = oh % b, w = ow / b, j = ow % b;
          // DCR: channel = (i * b + j) * c_out + c; CRD: channel = c * b * b + i * b + j.
          const int64_t ic = crd ? c * b * b + i * b + j : (i * b + j) * c_out + c;
          move(pos, static_cast<uint64_t>(((n * C + ic) * H + h) * W + w));
        }
}

void SpaceToDepth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-D, got shape " + shape_to_string(x.shape()));
  const int64_t b = blocksize_of(ctx);
  const bool crd = crd_mode(ctx);  // mode exists from opset 28; DCR before
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (H % b != 0 || W % b != 0) ctx.fail("spatial size " + shape_to_string(x.shape()) + " is not divisible by blocksize");
  const int64_t oh_n = H / b, ow_n = W / b, c_out = mul(ctx, C, mul(ctx, b, b));
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, c_out, oh_n, ow_n});
  ElementMover move(x, y, &ctx);
  uint64_t pos = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < c_out; ++oc)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow, ++pos) {
          // DCR: oc = (i * b + j) * C + c; CRD: oc = c * b * b + i * b + j.
          const int64_t c = crd ? oc / (b * b) : oc % C;
          const int64_t ij = crd ? oc % (b * b) : oc / C;
          const int64_t h = oh * b + ij / b, w = ow * b + ij % b;
          move(pos, static_cast<uint64_t>(((n * C + c) * H + h) * W + w));
        }
}

}  // namespace onnxscope::ref
