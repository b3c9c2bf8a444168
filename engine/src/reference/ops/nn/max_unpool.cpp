// Reference kernel: MaxUnpool.
//
// Values are widened to double; sums of float16/float inputs are
// accumulated in double and rounded once on store.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// MaxUnpool: scatters X into zeros at the flat positions I (as MaxPool's
// Indices output gives them, over the unpooled shape inferred from the
// attributes); with output_shape, that tensor is placed at the origin of a
// zero tensor of the requested shape.
void MaxUnpool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  nn::require_nc_spatial(ctx, x, "X");
  if (ind.shape() != x.shape())
    ctx.fail("I must have the shape of X " + shape_to_string(x.shape()) + ", got " + shape_to_string(ind.shape()));
  if (ind.dtype() != DataType::Int64) ctx.fail("I must be int64");
  const Shape& xs = x.shape();
  const size_t k = xs.size() - 2;
  if (!ctx.has_attr("kernel_shape")) ctx.fail("kernel_shape is required");
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != k) ctx.fail("kernel_shape must have one value per spatial dimension");
  for (int64_t v : kernel)
    if (v < 1 || v > nn::kMaxWindowValue) ctx.fail("kernel_shape values must be in [1, 2^40]");
  std::vector<int64_t> strides = nn::spatial_attr(ctx, "strides", k, 1, 1);
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.empty()) pads.assign(2 * k, 0);
  if (pads.size() != 2 * k) ctx.fail("pads must have 2 values per spatial dimension");
  for (int64_t v : pads)
    if (v < 0 || v > nn::kMaxWindowValue) ctx.fail("pads must be in [0, 2^40]");
  Shape inferred{xs[0], xs[1]};
  for (size_t d = 0; d < k; ++d) {
    inferred.push_back((xs[d + 2] - 1) * strides[d] - (pads[d] + pads[k + d]) + kernel[d]);
    if (inferred.back() < 0) ctx.fail("the inferred output shape is negative");
  }
  Shape out_shape = inferred;
  if (const Tensor* os = ctx.optional_input(2)) {
    out_shape = int_values(ctx, *os);
    if (out_shape.size() != xs.size()) ctx.fail("output_shape must have the rank of X");
    for (size_t d = 0; d < out_shape.size(); ++d)
      if (out_shape[d] < inferred[d])
        ctx.fail("output_shape " + shape_to_string(out_shape) + " is smaller than the inferred shape " + shape_to_string(inferred));
  }
  const uint64_t total = *checked_element_count(inferred);
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const auto in_strides = strides_of(inferred), out_strides = strides_of(out_shape);
  const uint64_t elem = *storage_bytes(x.dtype(), 1);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto) {});  // type check
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    const int64_t flat = ind.element_as_int64(i);
    if (flat < 0 || static_cast<uint64_t>(flat) >= total)
      ctx.fail("index " + std::to_string(flat) + " in I is out of range for the unpooled shape " + shape_to_string(inferred));
    // Map the flat index of the inferred shape into the (possibly larger) output.
    int64_t rem = flat, o = 0;
    for (size_t d = 0; d < inferred.size(); ++d) {
      o += (rem / in_strides[d]) * out_strides[d];
      rem %= in_strides[d];
    }
    std::memcpy(out.mutable_raw() + static_cast<uint64_t>(o) * elem, x.raw() + i * elem, elem);
  }
}

}  // namespace onnxscope::ref
