// Reference kernel: Tile.
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> repeats;
  if (ctx.opset_version() < 6) {
    // Tile-1: `tiles` copies along the single axis `axis` (both scalar inputs).
    const Tensor& tiles = ctx.input(1);
    const Tensor& axis_t = ctx.input(2);
    if (tiles.element_count() != 1 || axis_t.element_count() != 1) ctx.fail("tiles and axis must be scalars");
    repeats.assign(static_cast<size_t>(rank), 1);
    repeats[static_cast<size_t>(checked_axis(ctx, axis_t.element_as_int64(0), rank))] = tiles.element_as_int64(0);
  } else {
    repeats = int_values(ctx, ctx.input(1));
  }
  if (static_cast<int64_t>(repeats.size()) != rank)
    ctx.fail("repeats has " + std::to_string(repeats.size()) + " entries for an input of rank " + std::to_string(rank));
  Shape out(static_cast<size_t>(rank));
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats must not be negative: " + shape_to_string(repeats));
    if (__builtin_mul_overflow(x.shape()[d], repeats[d], &out[d])) ctx.fail("output shape overflows");
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  // Output coordinate k reads input coordinate k mod dim.
  const auto strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> table(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    for (int64_t k = 0; k < out[d]; ++k) table[d].push_back((k % x.shape()[d]) * strides[d]);
  gather_by_tables(ctx, x, y, table);
}

}  // namespace onnxscope::ref
