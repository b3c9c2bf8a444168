// Reference kernel: LayerNormalization.
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::dims_product;

// Normalizes over dims [axis, rank): Normalized = (x - mean) / sqrt(var + eps),
// rounded to X's type, then Y = Normalized * Scale + B (Scale and B broadcast
// to X). Mean and InvStdDev (shape d0..d(axis-1), 1, ...) are of stash_type.
void LayerNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank()));
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const int64_t stash = ctx.attr_int("stash_type", 1);
  if (stash != static_cast<int64_t>(DataType::Float) && stash != static_cast<int64_t>(DataType::BFloat16))
    ctx.fail("stash_type must be 1 (float) or 16 (bfloat16), got " + std::to_string(stash));
  for (const Tensor* p : {&scale, bias})
    if (p && p->dtype() != x.dtype()) ctx.fail("Scale and B must have X's element type");
  require_unidirectional(ctx, x.shape(), scale, "Scale");
  if (bias) require_unidirectional(ctx, x.shape(), *bias, "B");
  const Shape& s = x.shape();
  const uint64_t rows = dims_product(s, 0, axis), cols = dims_product(s, axis, s.size());
  Shape stat_shape(s.begin(), s.begin() + static_cast<ptrdiff_t>(axis));
  stat_shape.resize(s.size(), 1);
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  std::vector<double> means(rows), inv_std(rows);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    // One row: its statistics, then its outputs, Scale and B read at so(k), bo(k).
    auto one_row = [&](uint64_t r, const std::byte* xin, const std::byte* sin, const std::byte* bin, std::byte* yout,
                       auto so, auto bo) {
      const uint64_t base = r * cols;
      auto [mean, var] = mean_var(cols, [&](uint64_t k) { return static_cast<double>(to_compute(load_at<S>(xin, base + k))); });
      means[r] = mean;
      inv_std[r] = 1.0 / std::sqrt(var + eps);
      const double is = inv_std[r];
      for (uint64_t k = 0; k < cols; ++k) {
        const C normalized = static_cast<C>(round_as<S>((static_cast<double>(to_compute(load_at<S>(xin, base + k))) - mean) * is));
        C v = normalized * to_compute(load_at<S>(sin, so(k)));
        if (bin) v = v + to_compute(load_at<S>(bin, bo(k)));
        store_at<S>(yout, base + k, from_compute<S>(v));
      }
    };
    const std::byte* const px = x.raw();
    const std::byte* const ps = scale.raw();
    const std::byte* const pb = bias ? bias->raw() : nullptr;
    std::byte* const py = y.mutable_raw();
    // Scale and B of the normalized dims' shape (the usual [cols], or with
    // leading 1s): read at k in every row. Rows are independent, so the
    // threads change no result.
    auto per_row = [&](const Tensor& t) {
      const auto b = BroadcastBlock::of(t.shape(), s);
      return b && b->inner == 1 && b->period == cols;
    };
    if (rows > 0 && per_row(scale) && (!bias || per_row(*bias))) {
      cpu::parallel_for(static_cast<int64_t>(rows), std::max<int64_t>(1, 32768 / static_cast<int64_t>(std::max<uint64_t>(cols, 1))),
                        [&](int64_t lo, int64_t hi) {
                          poll_deadline();
                          const std::byte *const xin = px, *const sin = ps, *const bin = pb;  // locals (math/common.h's unary)
                          std::byte* const yout = py;
                          auto at = [](uint64_t k) { return k; };
                          for (auto r = static_cast<uint64_t>(lo); r < static_cast<uint64_t>(hi); ++r)
                            one_row(r, xin, sin, bin, yout, at, at);
                        });
      return;
    }
    const Shape* shapes[] = {&scale.shape(), bias ? &bias->shape() : &scale.shape()};
    BroadcastIndex bi(s, shapes);
    for (uint64_t r = 0; r < rows; ++r) {
      std::vector<uint64_t> so(cols), bo(cols);
      for (uint64_t k = 0; k < cols; ++k, bi.next()) {
        so[k] = bi.offsets()[0];
        bo[k] = bi.offsets()[1];
      }
      one_row(r, px, ps, pb, py, [&](uint64_t k) { return so[k]; }, [&](uint64_t k) { return bo[k]; });
    }
  });
  if (ctx.output_wanted(1))
    rn::store_reals(ctx, ctx.allocate_output(1, static_cast<DataType>(stash), stat_shape), means);
  if (ctx.output_wanted(2))
    rn::store_reals(ctx, ctx.allocate_output(2, static_cast<DataType>(stash), stat_shape), inv_std);
}

}  // namespace onnxscope::ref
