// Expand and Tile of any fixed-width element type as strided block copies
// (strided_copy.h): a broadcast or repeated dim reads its source with stride
// 0, so each output row is one memcpy when the last dim is not broadcast.
// Tile views the output as [r0, x0, r1, x1, ...]: each repeat count a dim of
// its own whose source stride is 0. Shapes the spec rejects are left to the
// reference, which names the problem.
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

std::optional<std::vector<int64_t>> int64s_of(const Value* v) {
  if (!v || !v->is_tensor() || v->tensor().rank() != 1 || v->tensor().dtype() != DataType::Int64) return std::nullopt;
  const Tensor& t = v->tensor();
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.element_count());
}

// --- Expand ------------------------------------------------------------------

struct ExpandProblem {
  Shape out;
  std::vector<int64_t> src_strides;  // per output dim, 0 where x is broadcast
};

std::optional<ExpandProblem> expand_problem(const KernelContext& ctx) {
  if (ctx.input_count() != 2 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return std::nullopt;
  const Tensor& x = ctx.input_value(0)->tensor();
  if (!copyable_dtype(x)) return std::nullopt;
  const std::optional<std::vector<int64_t>> shape = int64s_of(ctx.input_value(1));
  if (!shape) return std::nullopt;
  const size_t rank = std::max(x.shape().size(), shape->size());
  ExpandProblem p;
  p.out.assign(rank, 1);
  p.src_strides.assign(rank, 0);
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  for (size_t d = 0; d < rank; ++d) {
    const size_t xo = rank - x.shape().size(), so = rank - shape->size();
    const int64_t a = d < xo ? 1 : x.shape()[d - xo];
    const int64_t b = d < so ? 1 : (*shape)[d - so];
    if (b < 0 || (a != b && a != 1 && b != 1)) return std::nullopt;
    p.out[d] = a == 1 ? b : a;  // bidirectional, as numpy
    if (d >= xo && a != 1) p.src_strides[d] = xs[d - xo];
  }
  return p;
}

bool expand_accepts(const KernelContext& ctx) { return expand_problem(ctx).has_value(); }

void Expand(KernelContext& ctx) {
  const std::optional<ExpandProblem> p = expand_problem(ctx);
  if (!p) ctx.fail("problem not supported by the CPU expand kernel");
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), p->out);
  if (y.element_count() == 0) return;
  strided_copy(y.mutable_raw(), contiguous_strides(p->out), x.raw(), p->src_strides, p->out, *storage_bytes(x.dtype(), 1));
}

// --- Tile ----------------------------------------------------------------------

bool tile_accepts(const KernelContext& ctx) {
  if (ctx.opset_version() < 6 || ctx.input_count() != 2 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor())
    return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const std::optional<std::vector<int64_t>> r = int64s_of(ctx.input_value(1));
  if (!copyable_dtype(x) || !r || r->size() != x.shape().size()) return false;
  for (size_t d = 0; d < r->size(); ++d) {
    int64_t o = 0;
    if ((*r)[d] < 0 || __builtin_mul_overflow(x.shape()[d], (*r)[d], &o)) return false;
  }
  return true;
}

void Tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> r = *int64s_of(ctx.input_value(1));
  const size_t rank = x.shape().size();
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) out[d] = x.shape()[d] * r[d];
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), out);
  if (y.element_count() == 0) return;
  const std::vector<int64_t> xs = contiguous_strides(x.shape()), ys = contiguous_strides(out);
  Shape view;
  std::vector<int64_t> dst, src;
  for (size_t d = 0; d < rank; ++d) {
    view.push_back(r[d]);  // which copy: the source does not move
    dst.push_back(ys[d] * x.shape()[d]);
    src.push_back(0);
    view.push_back(x.shape()[d]);  // within a copy
    dst.push_back(ys[d]);
    src.push_back(xs[d]);
  }
  strided_copy(y.mutable_raw(), dst, x.raw(), src, view, *storage_bytes(x.dtype(), 1));
}

}  // namespace

void register_expand_tile_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Expand", 8, INT_MAX, "cpu-copy", Expand, expand_accepts});
  r.add(KernelDef{"", "Tile", 6, INT_MAX, "cpu-copy", Tile, tile_accepts});
}

}  // namespace onnxscope::cpu
