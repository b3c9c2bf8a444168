// Reference kernel: RMSNormalization.
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::dims_product;

// Y = X / sqrt(mean(X^2 over dims [axis, rank)) + epsilon), rounded to X's
// type, times Scale (broadcast to X); Y has Scale's type. Also ONNX Runtime's
// SimplifiedLayerNormalization-1, whose optional second output is the
// inverse RMS (of stash_type, float by default; shape d0..d(axis-1), 1, ...).
void RMSNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank()));
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  require_unidirectional(ctx, x.shape(), scale, "scale");
  const Shape& s = x.shape();
  const uint64_t rows = dims_product(s, 0, axis), cols = dims_product(s, axis, s.size());
  Tensor& y = ctx.allocate_output(0, scale.dtype(), s);
  std::vector<double> inv(ctx.output_wanted(1) ? rows : 0);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto xtag) {
    using S = typename decltype(xtag)::type;
    dispatch<kFloats>(ctx, scale.dtype(), [&](auto vtag) {
      using V = typename decltype(vtag)::type;
      using CV = compute_t<V>;
      const Shape* shapes[] = {&scale.shape()};
      BroadcastIndex bi(s, shapes);
      for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t base = r * cols;
        double sq = 0;
        for (uint64_t k = 0; k < cols; ++k) {
          const double v = static_cast<double>(get<S>(x, base + k));
          sq += v * v;
        }
        const double inv_rms = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
        if (!inv.empty()) inv[r] = inv_rms;
        for (uint64_t k = 0; k < cols; ++k, bi.next()) {
          const double normalized = round_as<S>(static_cast<double>(get<S>(x, base + k)) * inv_rms);
          put<V>(y, base + k, static_cast<CV>(static_cast<CV>(normalized) * get<V>(scale, bi.offsets()[0])));
        }
      }
    });
  });
  if (ctx.output_wanted(1)) {
    const int64_t stash = ctx.attr_int("stash_type", 1);
    if (stash != static_cast<int64_t>(DataType::Float) && stash != static_cast<int64_t>(DataType::Double) &&
        stash != static_cast<int64_t>(DataType::Float16) && stash != static_cast<int64_t>(DataType::BFloat16))
      ctx.fail("stash_type must be a float type, got " + std::to_string(stash));
    Shape stat_shape(s.begin(), s.begin() + static_cast<ptrdiff_t>(axis));
    stat_shape.resize(s.size(), 1);
    rn::store_reals(ctx, ctx.allocate_output(1, static_cast<DataType>(stash), stat_shape), inv);
  }
}

}  // namespace onnxscope::ref
