// Slice of any fixed-width element type as a strided block copy
// (strided_copy.h): the slice is a view of the input with per-dim start and
// step, so each output row is one memcpy when the last dim steps by one.
// Parameters the spec rejects (a zero step, an axis twice, lengths that
// differ) are left to the reference kernel, which names the problem.
#include <numeric>
#include <optional>

#include "core/slice_range.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

struct Problem {
  Shape out;
  std::vector<int64_t> strides;  // source strides per output dim (elements)
  int64_t offset = 0;            // source element of output index 0
};

std::optional<Problem> problem_of(const KernelContext& ctx) {
  const Value* xv = ctx.input_count() >= 1 ? ctx.input_value(0) : nullptr;
  if (!xv || !xv->is_tensor() || !copyable_dtype(xv->tensor())) return std::nullopt;
  const Tensor& x = xv->tensor();
  const int64_t rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset_version() < 10) {
    if (!ctx.has_attr("starts") || !ctx.has_attr("ends")) return std::nullopt;
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
    if (axes.empty()) {
      axes.resize(starts.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    steps.assign(starts.size(), 1);
  } else {
    if (ctx.input_count() < 3 || ctx.input_count() > 5) return std::nullopt;
    auto s = int_list(ctx.input_value(1)), e = int_list(ctx.input_value(2));
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (ctx.input_count() > 3 && ctx.input_value(3)) {
      auto a = int_list(ctx.input_value(3));
      if (!a) return std::nullopt;
      axes = *a;
    } else {
      axes.resize(starts.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    if (ctx.input_count() > 4 && ctx.input_value(4)) {
      auto st = int_list(ctx.input_value(4));
      if (!st) return std::nullopt;
      steps = *st;
    } else {
      steps.assign(starts.size(), 1);
    }
  }
  const size_t n = starts.size();
  if (ends.size() != n || axes.size() != n || steps.size() != n) return std::nullopt;
  Problem p;
  p.out = x.shape();
  p.strides = contiguous_strides(x.shape());
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    if (axes[i] < -rank || axes[i] >= rank || steps[i] == 0) return std::nullopt;
    const size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (seen[a]) return std::nullopt;
    seen[a] = true;
    const SliceRange r = slice_range(x.shape()[a], starts[i], ends[i], steps[i]);
    p.out[a] = r.count;
    if (r.count > 0) p.offset += r.start * p.strides[a];
    // With two or more elements taken |step| < dim, so the product cannot overflow.
    if (r.count > 1) p.strides[a] *= steps[i];
  }
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

void Slice(KernelContext& ctx) {
  const std::optional<Problem> p = problem_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU slice kernel");
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), p->out);
  if (y.element_count() == 0) return;
  const size_t elem = *storage_bytes(x.dtype(), 1);
  strided_copy(y.mutable_raw(), contiguous_strides(p->out), x.raw() + p->offset * static_cast<int64_t>(elem),
               p->strides, p->out, elem);
}

}  // namespace

void register_slice_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Slice", 1, INT_MAX, "cpu-copy", Slice, accepts});
}

}  // namespace onnxscope::cpu
