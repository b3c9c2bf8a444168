// Reference kernels: ScatterElements and its older name Scatter, with every reduction.
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

namespace {

void scatter_elements(KernelContext& ctx, bool has_reduction) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  const Reduction red = has_reduction ? parse_reduction(ctx) : Reduction::None;
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  require_same_type(ctx, data, "data", upd, "updates");
  if (upd.shape() != ind.shape())
    ctx.fail("updates shape " + shape_to_string(upd.shape()) + " must equal indices shape " +
             shape_to_string(ind.shape()));
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), data.rank());
  const std::vector<uint64_t> targets = element_targets(ctx, data.shape(), ind, axis);
  std::vector<std::pair<uint64_t, uint64_t>> pairs(targets.size());
  for (uint64_t i = 0; i < targets.size(); ++i) pairs[i] = {targets[i], i};
  Tensor& out = copy_to_output(ctx, 0, data);
  scatter_apply(ctx, upd, out, pairs, red);
}

}  // namespace

void ScatterElements(KernelContext& ctx) { scatter_elements(ctx, true); }
void Scatter(KernelContext& ctx) { scatter_elements(ctx, false); }  // deprecated alias, no reduction

}  // namespace onnxscope::ref
