// Reference kernel: Split.
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

void Split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attr_int("axis", 0), rank));
  const int64_t dim = x.shape()[axis];
  const size_t nout = ctx.output_count();
  std::vector<int64_t> sizes;
  bool given = false;
  const int64_t opset = ctx.opset_version();
  // Sizes come from input 1 from opset 13, from the attribute before (Split-1
  // took either).
  if (opset < 13 && ctx.has_attr("split")) {
    sizes = ctx.attr_ints("split");
    given = true;
  } else if ((opset >= 13 || opset < 2) && ctx.has_input(1)) {
    sizes = int_values(ctx, ctx.input(1));
    given = true;
  }
  if (!given) {
    if (opset >= 18 && ctx.has_attr("num_outputs")) {
      // Chunks of ceil(dim / n); the last one takes what is left.
      const int64_t parts = ctx.attr_int("num_outputs", 0);
      if (parts < 1) ctx.fail("num_outputs must be positive, got " + std::to_string(parts));
      if (static_cast<size_t>(parts) != nout)
        ctx.fail("num_outputs is " + std::to_string(parts) + " but the node has " + std::to_string(nout) + " outputs");
      const int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::clamp<int64_t>(dim - k * chunk, 0, chunk));
    } else {
      if (nout == 0 || dim % static_cast<int64_t>(nout) != 0)
        ctx.fail("dimension " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(nout) + " parts");
      sizes.assign(nout, dim / static_cast<int64_t>(nout));
    }
  } else if (opset >= 18 && ctx.has_attr("num_outputs")) {
    ctx.fail("split and num_outputs cannot both be given");
  }
  if (sizes.size() != nout)
    ctx.fail("split has " + std::to_string(sizes.size()) + " entries but the node has " + std::to_string(nout) +
             " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split sizes must not be negative: " + shape_to_string(sizes));
    // Each size within what is left: a sum that wraps ([2^63-1, 2^63-1, 2, 4] adds up to 4) would read before x.
    if (s > dim - total)
      ctx.fail("split sizes " + shape_to_string(sizes) + " add up to more than dimension " + std::to_string(dim));
    total += s;
  }
  if (total != dim)
    ctx.fail("split sizes " + shape_to_string(sizes) + " do not add up to dimension " + std::to_string(dim));
  const uint64_t outer = static_cast<uint64_t>(product(x.shape(), 0, axis));
  const uint64_t inner = static_cast<uint64_t>(product(x.shape(), axis + 1, x.shape().size()));
  int64_t start = 0;
  for (size_t k = 0; k < nout; ++k) {
    const int64_t size = sizes[k];
    if (ctx.output_wanted(k)) {
      Shape s = x.shape();
      s[axis] = size;
      Tensor& y = ctx.allocate_output(k, x.dtype(), s);
      ElementMover move(x, y, &ctx);
      const uint64_t block = static_cast<uint64_t>(size) * inner;
      uint64_t pos = 0;
      for (uint64_t o = 0; o < outer; ++o) {
        const uint64_t base = (o * static_cast<uint64_t>(dim) + static_cast<uint64_t>(start)) * inner;
        if (move.whole_bytes()) {  // the block is contiguous in both: one copy (as Concat)
          if (block) std::memcpy(move.dst() + pos * move.width(), move.src() + base * move.width(), block * move.width());
          pos += block;
          continue;
        }
        for (uint64_t j = 0; j < block; ++j) move(pos++, base + j);
      }
    }
    start += size;
  }
}

}  // namespace onnxscope::ref
