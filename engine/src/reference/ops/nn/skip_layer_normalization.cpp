// Reference kernels: com.microsoft SkipLayerNormalization and
// SkipSimplifiedLayerNormalization (ONNX Runtime's contrib operators, as its
// transformers optimizer writes them for BERT- and Llama-style models).
//
//   s = input + skip (+ bias)                    over the last axis, hidden H
//   SkipLayerNormalization:           y = (s - mean(s)) / sqrt(var(s) + eps) * gamma (+ beta)
//   SkipSimplifiedLayerNormalization: y = s / sqrt(mean(s^2) + eps) * gamma
//
// skip is input's shape, or its trailing dims ((1, S, H) or (S, H)): the
// same rows for every batch. Statistics in double, each result rounded once.
// Outputs: y; mean and inv_std_var (float, input's shape with the last dim
// 1; ONNX Runtime keeps them for training); input_skip_bias_sum (s).
#include <cmath>
#include <type_traits>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/reduction/common.h"

namespace onnxscope::ref {
namespace {

// A 1-D parameter of H values, or the message that names it.
void require_hidden(const KernelContext& ctx, const Tensor& p, int64_t hidden, DataType type, const char* what) {
  if (p.rank() != 1 || p.shape()[0] != hidden)
    ctx.fail(std::string(what) + " must have shape [" + std::to_string(hidden) + "] (the input's last dimension), got " +
             shape_to_string(p.shape()));
  if (p.dtype() != type)
    ctx.fail(std::string(what) + " has element type " + std::string(dtype_name(p.dtype())) + ", the input " +
             std::string(dtype_name(type)));
}

void skip_norm(KernelContext& ctx, bool simplified) {
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  const Tensor& gamma = ctx.input(2);
  const Tensor* beta = simplified ? nullptr : ctx.optional_input(3);
  const Tensor* bias = ctx.optional_input(simplified ? 3 : 4);
  if (x.rank() < 2) ctx.fail("input must have rank 2 or 3 ((tokens, hidden) or (batch, sequence, hidden)), got " +
                             shape_to_string(x.shape()));
  const Shape& s = x.shape();
  const int64_t hidden = s.back();
  // skip: input's shape, or its trailing dims (leading ones dropped).
  const Shape& ks = skip.shape();
  size_t lead = 0;
  while (lead < ks.size() && ks[lead] == 1 && ks.size() - lead > 1) ++lead;
  const size_t kept = ks.size() - lead;
  bool trailing = kept >= 1 && kept <= s.size() && ks.size() <= s.size();
  for (size_t d = 0; trailing && d < kept; ++d) trailing = ks[lead + d] == s[s.size() - kept + d];
  if (!trailing || skip.element_count() == 0)
    ctx.fail("skip of shape " + shape_to_string(ks) + " must be the input's shape " + shape_to_string(s) +
             " or its trailing dimensions");
  if (skip.dtype() != x.dtype()) ctx.fail("skip must have the input's element type");
  require_hidden(ctx, gamma, hidden, x.dtype(), "gamma");
  if (beta) require_hidden(ctx, *beta, hidden, x.dtype(), "beta");
  if (bias) require_hidden(ctx, *bias, hidden, x.dtype(), "bias");
  const double eps = ctx.attr_float("epsilon", 1e-12f);
  const uint64_t H = static_cast<uint64_t>(hidden), rows = hidden == 0 ? 0 : x.element_count() / H;
  const uint64_t skip_n = skip.element_count();
  Shape stat_shape(s.begin(), s.end() - 1);
  stat_shape.push_back(1);
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  Tensor* sum_out = ctx.output_wanted(3) ? &ctx.allocate_output(3, x.dtype(), s) : nullptr;
  std::vector<double> means(rows), inv_std(rows);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    // Element reads and writes: on pointers fetched once for float and
    // double (a tensor access per element cost more than the arithmetic).
    constexpr bool plain = std::is_same_v<S, float> || std::is_same_v<S, double>;
    const std::byte *xp = x.raw(), *kp = skip.raw(), *gp = gamma.raw(), *bp = beta ? beta->raw() : nullptr,
                    *cp = bias ? bias->raw() : nullptr;
    std::byte* yp = y.mutable_raw();
    std::byte* sp = sum_out ? sum_out->mutable_raw() : nullptr;
    auto in = [&](const Tensor& t, const std::byte* p, uint64_t i) -> double {
      if constexpr (plain) return static_cast<double>(load_at<S>(p, i));
      else return static_cast<double>(get<S>(t, i));
    };
    auto out = [&](Tensor& t, std::byte* p, uint64_t i, C v) {
      if constexpr (plain) store_at<S>(p, i, v);
      else put<S>(t, i, v);
    };
    // Rows across the threads, each computed alone (the same bits at any count).
    for_rows(rows, H, [&](uint64_t r0, uint64_t r1) {
      std::vector<double> row(H);
      for (uint64_t r = r0; r < r1; ++r) {
        const uint64_t base = r * H;
        // The sum rounded to the input's type, as ONNX Runtime stores it.
        for (uint64_t k = 0; k < H; ++k) {
          double v = round_as<S>(in(x, xp, base + k) + in(skip, kp, (base + k) % skip_n));
          if (bias) v = round_as<S>(v + in(*bias, cp, k));
          row[k] = v;
          if (sum_out) out(*sum_out, sp, base + k, static_cast<C>(v));
        }
        if (simplified) {
          double sq = 0;
          for (uint64_t k = 0; k < H; ++k) sq += row[k] * row[k];
          means[r] = 0;
          inv_std[r] = 1.0 / std::sqrt(sq / static_cast<double>(H) + eps);
        } else {
          const auto [mean, var] = mean_var(H, [&](uint64_t k) { return row[k]; });
          means[r] = mean;
          inv_std[r] = 1.0 / std::sqrt(var + eps);
        }
        for (uint64_t k = 0; k < H; ++k) {
          double v = (row[k] - means[r]) * inv_std[r] * in(gamma, gp, k);
          if (beta) v += in(*beta, bp, k);
          out(y, yp, base + k, static_cast<C>(v));
        }
      }
    });
  });
  if (ctx.output_wanted(1)) rn::store_reals(ctx, ctx.allocate_output(1, DataType::Float, stat_shape), means);
  if (ctx.output_wanted(2)) rn::store_reals(ctx, ctx.allocate_output(2, DataType::Float, stat_shape), inv_std);
}

}  // namespace

void SkipLayerNormalization(KernelContext& ctx) { skip_norm(ctx, false); }
void SkipSimplifiedLayerNormalization(KernelContext& ctx) { skip_norm(ctx, true); }

}  // namespace onnxscope::ref
