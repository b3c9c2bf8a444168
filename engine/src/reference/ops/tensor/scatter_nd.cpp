// Reference kernel: ScatterND, with every reduction.
//
// Data movement copies elements without interpreting them, so it works for
// every element type, strings and packed sub-byte types included. Every index
// is bounds-checked; negative indices count from the end where the spec
// allows them.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void ScatterND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  const Reduction red = parse_reduction(ctx);
  const int64_t r = data.rank(), q = ind.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  require_same_type(ctx, data, "data", upd, "updates");
  const int64_t k = ind.shape()[q - 1];
  if (k > r)
    ctx.fail("indices.shape[-1] = " + std::to_string(k) + " must not exceed rank(data) = " + std::to_string(r));
  const size_t uk = static_cast<size_t>(k);
  const Shape want = concat_shapes({{&ind.shape(), {0, static_cast<size_t>(q - 1)}},
                                    {&data.shape(), {uk, static_cast<size_t>(r)}}});
  if (upd.shape() != want)
    ctx.fail("updates shape " + shape_to_string(upd.shape()) + " must be indices.shape[:-1] ++ data.shape[k:] = " +
             shape_to_string(want));
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  const std::vector<int64_t> strides = strides_of(data.shape());
  const uint64_t tuples = dims_product(ind.shape(), 0, static_cast<size_t>(q - 1));
  const uint64_t slice = dims_product(data.shape(), uk, static_cast<size_t>(r));
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  pairs.reserve(tuples * slice);
  for (uint64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (size_t j = 0; j < uk; ++j)
      off += wrap_index(ctx, idx[t * uk + j], data.shape()[j], static_cast<int64_t>(j)) * strides[j];
    for (uint64_t s = 0; s < slice; ++s) pairs.emplace_back(static_cast<uint64_t>(off) + s, t * slice + s);
  }
  Tensor& out = copy_to_output(ctx, 0, data);
  scatter_apply(ctx, upd, out, pairs, red);
}

}  // namespace onnxscope::ref
