// Reference kernel: Col2Im.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Col2Im(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> image = int_values(ctx, ctx.input(1));
  const std::vector<int64_t> block = int_values(ctx, ctx.input(2));
  const size_t nd = image.size();
  if (nd == 0 || block.size() != nd) ctx.fail("image_shape and block_shape must have the same, non-zero length");
  const auto dil = ctx.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  const auto strides = ctx.attr_ints("strides", std::vector<int64_t>(nd, 1));
  const auto pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (dil.size() != nd || strides.size() != nd || pads.size() != 2 * nd)
    ctx.fail("dilations, strides and pads must match the " + std::to_string(nd) + " spatial dimensions");
  if (x.rank() != 3) ctx.fail("input must be 3-D [N, C * prod(block_shape), L], got " + shape_to_string(x.shape()));
  int64_t kernel = 1, blocks = 1;
  std::vector<int64_t> nblocks(nd);
  for (size_t i = 0; i < nd; ++i) {
    if (image[i] <= 0 || block[i] <= 0 || dil[i] <= 0 || strides[i] <= 0 || pads[i] < 0 || pads[nd + i] < 0)
      ctx.fail("image_shape, block_shape, dilations and strides must be positive and pads not negative");
    if (image[i] > INT32_MAX || block[i] > INT32_MAX || dil[i] > INT32_MAX || strides[i] > INT32_MAX ||
        pads[i] > INT32_MAX || pads[nd + i] > INT32_MAX)
      ctx.fail("Col2Im sizes beyond 2^31 are not supported");
    kernel = mul(ctx, kernel, block[i]);
    const int64_t room = image[i] + pads[i] + pads[nd + i] - dil[i] * (block[i] - 1) - 1;
    if (room < 0) ctx.fail("the blocks do not fit the padded image");
    nblocks[i] = room / strides[i] + 1;
    blocks = mul(ctx, blocks, nblocks[i]);
  }
  const int64_t N = x.shape()[0];
  if (x.shape()[1] % kernel != 0)
    ctx.fail("input dimension 1 (" + std::to_string(x.shape()[1]) + ") is not divisible by prod(block_shape)");
  if (x.shape()[2] != blocks)
    ctx.fail("input dimension 2 is " + std::to_string(x.shape()[2]) + ", expected " + std::to_string(blocks) +
             " blocks");
  const int64_t C = x.shape()[1] / kernel;
  Shape out{N, C};
  out.insert(out.end(), image.begin(), image.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  int64_t image_size = 1;
  for (int64_t v : image) image_size = mul(ctx, image_size, v);
  if (x.is_string()) ctx.fail("overlapping blocks of strings cannot be summed");
  dispatch<kFloats | kInts | kBool | kComplex>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Cmp = compute_t<S>;
    // Overlapping blocks add up; floats are summed in double, complex numbers in
    // complex<double>, integers in 64 bits (bool: any true block gives true).
    using Acc = std::conditional_t<std::is_floating_point_v<Cmp>, double,
                                   std::conditional_t<std::is_integral_v<Cmp>, int64_t, std::complex<double>>>;
    std::vector<Acc> acc(static_cast<size_t>(y.element_count()), Acc(0));
    std::vector<int64_t> kpos(nd), bpos(nd);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t kidx = 0; kidx < kernel; ++kidx) {
          for (int64_t r = kidx, i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
            kpos[static_cast<size_t>(i)] = r % block[static_cast<size_t>(i)];
            r /= block[static_cast<size_t>(i)];
          }
          for (int64_t bidx = 0; bidx < blocks; ++bidx) {
            int64_t linear = 0;
            bool inside = true;
            for (int64_t r = bidx, i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
              bpos[static_cast<size_t>(i)] = r % nblocks[static_cast<size_t>(i)];
              r /= nblocks[static_cast<size_t>(i)];
            }
            for (size_t i = 0; i < nd; ++i) {
              const int64_t p = bpos[i] * strides[i] - pads[i] + kpos[i] * dil[i];
              if (p < 0 || p >= image[i]) inside = false;
              linear = linear * image[i] + p;
            }
            if (!inside) continue;
            const uint64_t src = static_cast<uint64_t>(((n * C + c) * kernel + kidx) * blocks + bidx);
            acc[static_cast<size_t>((n * C + c) * image_size + linear)] += static_cast<Acc>(get<S>(x, src));
          }
        }
    for (size_t i = 0; i < acc.size(); ++i) {
      if constexpr (std::is_same_v<Cmp, bool>) put<S>(y, i, acc[i] != 0);
      else put<S>(y, i, static_cast<Cmp>(acc[i]));
    }
  });
}

}  // namespace onnxscope::ref
