// Reference kernel: GatherND.
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

void GatherND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t r = data.rank(), q = ind.rank();
  const int64_t b = ctx.attr_int("batch_dims", 0);
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    ctx.fail("batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices))) = [0, " +
             std::to_string(std::min(q, r)) + ")");
  for (int64_t d = 0; d < b; ++d)
    if (data.shape()[d] != ind.shape()[d])
      ctx.fail("the first batch_dims dimensions of data " + shape_to_string(data.shape()) + " and indices " +
               shape_to_string(ind.shape()) + " must be equal");
  const int64_t k = ind.shape()[q - 1];
  if (k < 1 || k > r - b)
    ctx.fail("indices.shape[-1] = " + std::to_string(k) + " must be in [1, rank(data) - batch_dims] = [1, " +
             std::to_string(r - b) + "]");
  const size_t ub = static_cast<size_t>(b), uk = static_cast<size_t>(k);
  Shape out_shape = concat_shapes({{&ind.shape(), {0, static_cast<size_t>(q - 1)}},
                                   {&data.shape(), {ub + uk, static_cast<size_t>(r)}}});
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  const std::vector<int64_t> strides = strides_of(data.shape());
  const uint64_t batches = dims_product(data.shape(), 0, ub);
  const uint64_t tuples = dims_product(ind.shape(), ub, static_cast<size_t>(q - 1));  // per batch
  const uint64_t batch_block = dims_product(data.shape(), ub, static_cast<size_t>(r));
  const uint64_t slice = dims_product(data.shape(), ub + uk, static_cast<size_t>(r));
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  ElementCopier copy(ctx, data, out);
  for (uint64_t bi = 0; bi < batches; ++bi) {
    for (uint64_t t = 0; t < tuples; ++t) {
      const uint64_t tuple = bi * tuples + t;
      int64_t off = 0;
      for (size_t j = 0; j < uk; ++j)
        off += wrap_index(ctx, idx[tuple * uk + j], data.shape()[ub + j], static_cast<int64_t>(ub + j)) *
               strides[ub + j];
      copy.block(tuple * slice, bi * batch_block + static_cast<uint64_t>(off), slice);
    }
  }
}

}  // namespace onnxscope::ref
