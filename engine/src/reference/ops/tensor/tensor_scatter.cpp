// Reference kernel: TensorScatter (a KV cache update).
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

void TensorScatter(KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& upd = ctx.input(1);
  const Tensor* write = ctx.optional_input(2);
  const std::string mode = ctx.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be 'linear' or 'circular', got '" + mode + "'");
  const bool circular = mode == "circular";
  require_same_type(ctx, past, "past_cache", upd, "update");
  const int64_t r = past.rank();
  if (r < 2) ctx.fail("past_cache must have rank >= 2 (batch and sequence axes), got " + shape_to_string(past.shape()));
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -2), r);
  if (axis == 0) ctx.fail("axis must not be 0, the batch axis");
  if (upd.rank() != r) ctx.fail("update must have the same rank as past_cache");
  for (int64_t d = 0; d < r; ++d) {
    const bool ok = d == axis ? upd.shape()[d] <= past.shape()[d] : upd.shape()[d] == past.shape()[d];
    if (!ok)
      ctx.fail("update shape " + shape_to_string(upd.shape()) + " does not fit past_cache shape " +
               shape_to_string(past.shape()) + " on axis " + std::to_string(d));
  }
  const int64_t batch = past.shape()[0], max_len = past.shape()[axis], seq_len = upd.shape()[axis];
  std::vector<int64_t> w(static_cast<size_t>(batch), 0);
  if (write) {
    if (write->rank() != 1 || write->shape()[0] != batch)
      ctx.fail("write_indices must have shape [" + std::to_string(batch) + "], got " + shape_to_string(write->shape()));
    w = index_values(ctx, *write, "write_indices");
  }
  if (!circular)
    for (size_t b = 0; b < w.size(); ++b)
      if (w[b] < 0 || w[b] > max_len - seq_len)
        ctx.fail("write_indices[" + std::to_string(b) + "] = " + std::to_string(w[b]) + " with sequence length " +
                 std::to_string(seq_len) + " does not fit max_sequence_length " + std::to_string(max_len) +
                 " (linear mode)");

  Tensor& out = copy_to_output(ctx, 0, past);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(past.shape(), 0, a);
  const uint64_t per_batch = dims_product(past.shape(), 1, a);  // prefix positions per batch entry
  const uint64_t inner = dims_product(past.shape(), a + 1, static_cast<size_t>(r));
  ElementCopier copy(ctx, upd, out);
  for (uint64_t o = 0; o < outer; ++o) {
    const int64_t start = w[o / per_batch];
    for (int64_t s = 0; s < seq_len; ++s) {
      // Circular: (start + s) mod max_len as Python's modulo (never negative), without forming start + s.
      int64_t c = circular ? (((start % max_len) + max_len) % max_len + s) % max_len : start + s;
      copy.block((o * static_cast<uint64_t>(max_len) + static_cast<uint64_t>(c)) * inner,
                 (o * static_cast<uint64_t>(seq_len) + static_cast<uint64_t>(s)) * inner, inner);
    }
  }
}

}  // namespace onnxscope::ref
