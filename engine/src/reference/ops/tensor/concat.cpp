// Reference kernel: Concat.
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Concat(KernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n == 0) ctx.fail("Concat needs at least one input");
  const Tensor& first = ctx.input(0);
  const int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  if (ctx.opset_version() >= 4 && !ctx.has_attr("axis")) ctx.fail("required attribute 'axis' is missing");
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attr_int("axis", 1), rank));
  Shape out = first.shape();
  out[axis] = 0;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& t = ctx.input(k);
    if (t.dtype() != first.dtype()) ctx.fail("all inputs must have the same element type");
    bool ok = t.rank() == rank;
    for (size_t d = 0; ok && d < out.size(); ++d) ok = d == axis || t.shape()[d] == first.shape()[d];
    if (!ok)
      ctx.fail("input " + std::to_string(k) + " of shape " + shape_to_string(t.shape()) +
               " does not match input 0 of shape " + shape_to_string(first.shape()) + " outside axis " +
               std::to_string(axis));
    out[axis] += t.shape()[axis];
  }
  Tensor& y = ctx.allocate_output(0, first.dtype(), out);
  std::vector<ElementMover> movers;
  std::vector<uint64_t> block;  // elements of input k per outer index
  for (size_t k = 0; k < n; ++k) {
    movers.emplace_back(ctx.input(k), y);
    block.push_back(static_cast<uint64_t>(product(ctx.input(k).shape(), axis, out.size())));
  }
  const uint64_t outer = static_cast<uint64_t>(product(out, 0, axis));
  uint64_t pos = 0;
  if (std::all_of(movers.begin(), movers.end(), [](const ElementMover& m) { return m.whole_bytes(); })) {
    // Each input's block per outer index is contiguous in both: one copy.
    const size_t w = movers[0].width();
    for (uint64_t o = 0; o < outer; ++o)
      for (size_t k = 0; k < n; ++k) {
        if (block[k]) std::memcpy(movers[k].dst() + pos * w, movers[k].src() + o * block[k] * w, block[k] * w);
        pos += block[k];
      }
    return;
  }
  for (uint64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < n; ++k)
      for (uint64_t j = 0; j < block[k]; ++j) movers[k](pos++, o * block[k] + j);
}

}  // namespace onnxscope::ref
