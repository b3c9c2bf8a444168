// Data movement of the CPU engine: Concat as block copies (memcpy per
// outer index and input), split across the thread pool. Any fixed-width,
// unpacked element type; strings and 4/2/6-bit types go to the reference.
#include <algorithm>
#include <cstring>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

bool concat_accepts(const KernelContext& ctx) {
  if (ctx.input_count() == 0) return false;
  const Value* first = ctx.input_value(0);
  if (!first || !first->is_tensor()) return false;
  const Tensor& t0 = first->tensor();
  if (t0.is_string() || is_packed_dtype(t0.dtype()) || t0.rank() == 0) return false;
  const int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -t0.rank() || axis >= t0.rank()) return false;
  const size_t a = static_cast<size_t>(axis < 0 ? axis + t0.rank() : axis);
  for (size_t k = 1; k < ctx.input_count(); ++k) {
    const Value* v = ctx.input_value(k);
    if (!v || !v->is_tensor()) return false;
    const Tensor& t = v->tensor();
    if (t.dtype() != t0.dtype() || t.rank() != t0.rank()) return false;
    for (size_t d = 0; d < t.shape().size(); ++d)
      if (d != a && t.shape()[d] != t0.shape()[d]) return false;
  }
  return true;
}

void Concat(KernelContext& ctx) {
  const Tensor& t0 = ctx.input(0);
  const size_t axis = static_cast<size_t>(ref::normalize_axis(ctx, ctx.attr_int("axis", 1), t0.rank()));
  Shape out_shape = t0.shape();
  out_shape[axis] = 0;
  for (size_t k = 0; k < ctx.input_count(); ++k) out_shape[axis] += ctx.input(k).shape()[axis];
  Tensor& y = uninitialized_output(ctx, 0, t0.dtype(), out_shape);
  const size_t elem = *storage_bytes(t0.dtype(), 1);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out_shape[d];
  for (size_t d = axis + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  // Bytes each input contributes per outer index, and where it starts in a row.
  std::vector<size_t> chunk(ctx.input_count()), offset(ctx.input_count());
  size_t row = 0;
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    chunk[k] = static_cast<size_t>(ctx.input(k).shape()[axis] * inner) * elem;
    offset[k] = row;
    row += chunk[k];
  }
  if (row == 0 || outer == 0) return;
  std::byte* out = y.mutable_raw();
  std::vector<const std::byte*> in(ctx.input_count());
  for (size_t k = 0; k < in.size(); ++k) in[k] = ctx.input(k).raw();  // fetched once, not per copy
  // Threads split the output's bytes, not its outer rows: a Concat on axis 1
  // of a batch of one is a single row (and ran on one thread).
  const int64_t total = outer * static_cast<int64_t>(row);
  parallel_for(total, 65536, [&](int64_t lo, int64_t hi) {
    int64_t o = lo / static_cast<int64_t>(row);
    size_t pos = static_cast<size_t>(lo % static_cast<int64_t>(row)), k = 0;
    while (pos >= offset[k] + chunk[k]) ++k;  // the input holding byte `pos` of the row
    for (int64_t at = lo; at < hi;) {
      const size_t in_chunk = pos - offset[k];
      const size_t len = std::min<size_t>(chunk[k] - in_chunk, static_cast<size_t>(hi - at));
      std::memcpy(out + at, in[k] + static_cast<size_t>(o) * chunk[k] + in_chunk, len);
      at += static_cast<int64_t>(len);
      pos += len;
      if (pos == offset[k] + chunk[k]) {  // on to the next input with bytes, or the next row
        do {
          if (++k == chunk.size()) {
            k = 0;
            pos = 0;
            ++o;
          }
        } while (chunk[k] == 0);
      }
    }
  });
}

}  // namespace

void register_data_movement_kernels(KernelRegistry& r) {
  // Opset 4+: axis is required (opset 1 defaulted it to 1; the reference keeps that form).
  r.add(KernelDef{"", "Concat", 4, INT_MAX, "cpu-copy", Concat, concat_accepts});
}

}  // namespace onnxscope::cpu
