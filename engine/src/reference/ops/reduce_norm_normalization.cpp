// Reference kernels, second part of the reduce_norm family: LpNormalization,
// BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, RMSNormalization, LRN, MeanVarianceNormalization,
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/reduce_norm_parts.h"

namespace onnxscope::ref {
namespace {

using rn::dims_product;
using rn::put_real;

// Fails unless `p` holds exactly `n` elements; returns its values as doubles.
std::vector<double> param_values(const KernelContext& ctx, const Tensor& p, uint64_t n, const char* what) {
  rn::require_float(ctx, p, what);
  if (p.element_count() != n)
    ctx.fail(std::string(what) + " has shape " + shape_to_string(p.shape()) + " but " + std::to_string(n) +
             " elements are needed");
  return real_values(p);
}

// Checks that `p` broadcasts unidirectionally to `x` (p's shape aligned to the right).
void require_unidirectional(const KernelContext& ctx, const Shape& x, const Tensor& p, const char* what) {
  if (broadcast_shapes(ctx, x, p.shape()) != x)
    ctx.fail(std::string(what) + " of shape " + shape_to_string(p.shape()) + " does not broadcast to " +
             shape_to_string(x));
}

// Rounds a double to what storage type S can hold (the spec's "cast back to T").
template <typename S> double round_as(double v) {
  return static_cast<double>(to_compute(from_compute<S>(static_cast<compute_t<S>>(v))));
}

// Population mean and variance of n values read by at(k), two-pass for accuracy.
template <typename F> std::pair<double, double> mean_var(uint64_t n, F at) {
  double sum = 0;
  for (uint64_t k = 0; k < n; ++k) sum += at(k);
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (uint64_t k = 0; k < n; ++k) {
    const double d = at(k) - mean;
    sq += d * d;
  }
  return {mean, sq / static_cast<double>(n)};
}

// --- LpNormalization -------------------------------------------------------

// y = x / ||x||_p along `axis`; an all-zero slice gives zeros (opset 22 wording).
void LpNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got " + std::to_string(p));
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank()));
  const Shape& s = x.shape();
  const uint64_t outer = dims_product(s, 0, axis), len = dims_product(s, axis, axis + 1),
                 inner = dims_product(s, axis + 1, s.size());
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t o = 0; o < outer; ++o)
      for (uint64_t k = 0; k < inner; ++k) {
        const uint64_t base = o * len * inner + k;
        double norm = 0;
        for (uint64_t j = 0; j < len; ++j) {
          const double v = static_cast<double>(get<S>(x, base + j * inner));
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (uint64_t j = 0; j < len; ++j) {
          const uint64_t i = base + j * inner;
          put_real<S>(y, i, norm == 0 ? 0.0 : static_cast<double>(get<S>(x, i)) / norm);
        }
      }
  });
}

// --- BatchNormalization ----------------------------------------------------

// y = scale * (x - mean) / sqrt(var + epsilon) + B per channel, X of shape
// (N, C, D1, ...). Inference uses the given mean and var. Training uses the
// batch statistics (population variance over N and D) and outputs the running
// statistics input * momentum + batch * (1 - momentum).
//  - opset 14+: training_mode attribute; outputs Y, running_mean, running_var
//    (of the mean input's type, which may differ from X's from opset 15).
//  - opset < 14: training when the node has the optional outputs (Y, mean, var,
//    saved_mean, saved_var; saved_* are the batch mean and variance); opsets 1
//    and 6 also need is_test = 0. Before opset 9 spatial = 0 gives every
//    activation its own statistics: scale etc. then have shape (C, D1, ...).
void BatchNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t version = ctx.opset_version();
  if (x.rank() < 2) ctx.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  rn::require_float(ctx, x, "X");
  const bool spatial = version >= 9 || ctx.attr_int("spatial", 1) != 0;
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]), c = static_cast<uint64_t>(x.shape()[1]);
  const uint64_t d = dims_product(x.shape(), 2, x.shape().size());
  // X viewed as [N, P, inner]: P parameters, each shared by `inner` elements of a sample.
  const uint64_t params = spatial ? c : c * d, inner = spatial ? d : 1;
  const auto scale = param_values(ctx, ctx.input(1), params, "scale");
  const auto bias = param_values(ctx, ctx.input(2), params, "B");
  const auto in_mean = param_values(ctx, ctx.input(3), params, "mean");
  const auto in_var = param_values(ctx, ctx.input(4), params, "var");
  const double eps = ctx.attr_float("epsilon", 1e-5f), momentum = ctx.attr_float("momentum", 0.9f);

  bool training;
  if (version >= 14) {
    training = ctx.attr_int("training_mode", 0) != 0;
  } else {
    bool extra_outputs = false;
    for (size_t k = 1; k < ctx.output_count(); ++k) extra_outputs = extra_outputs || ctx.output_wanted(k);
    training = extra_outputs && (version >= 7 || ctx.attr_int("is_test", 0) == 0);
  }
  for (size_t k = 1; k < ctx.output_count() && !training; ++k)
    if (ctx.output_wanted(k)) ctx.fail("outputs after Y are only produced in training mode");

  std::vector<double> mean = in_mean, var = in_var;
  if (training) {
    for (uint64_t p = 0; p < params; ++p) {
      auto at = [&](uint64_t k) { return x.element_as_double(((k / inner) * params + p) * inner + k % inner); };
      std::tie(mean[p], var[p]) = mean_var(n * inner, at);
    }
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const uint64_t p = (i / inner) % params;
      const double v = static_cast<double>(get<S>(x, i));
      put_real<S>(y, i, scale[p] * (v - mean[p]) / std::sqrt(var[p] + eps) + bias[p]);
    }
  });
  if (!training) return;
  std::vector<double> running_mean(params), running_var(params);
  for (uint64_t p = 0; p < params; ++p) {
    running_mean[p] = in_mean[p] * momentum + mean[p] * (1 - momentum);
    running_var[p] = in_var[p] * momentum + var[p] * (1 - momentum);
  }
  const DataType stat_type = ctx.input(3).dtype();
  const Shape stat_shape = ctx.input(3).shape();
  const std::vector<double>* outs[] = {&running_mean, &running_var, &mean, &var};
  for (size_t k = 1; k < ctx.output_count() && k <= (version >= 14 ? 2u : 4u); ++k)
    if (ctx.output_wanted(k)) rn::store_reals(ctx, ctx.allocate_output(k, stat_type, stat_shape), *outs[k - 1]);
}

// --- InstanceNormalization ---------------------------------------------------

// y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], statistics per (n, c)
// over the spatial dims.
void InstanceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  const uint64_t c = static_cast<uint64_t>(x.shape()[1]), d = dims_product(x.shape(), 2, x.shape().size());
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]);
  const auto scale = param_values(ctx, ctx.input(1), c, "scale");
  const auto bias = param_values(ctx, ctx.input(2), c, "B");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t nc = 0; nc < n * c; ++nc) {
      const uint64_t base = nc * d, ch = nc % c;
      auto [mean, var] = mean_var(d, [&](uint64_t k) { return static_cast<double>(get<S>(x, base + k)); });
      const double inv = 1.0 / std::sqrt(var + eps);
      for (uint64_t k = 0; k < d; ++k)
        put_real<S>(y, base + k, scale[ch] * (static_cast<double>(get<S>(x, base + k)) - mean) * inv + bias[ch]);
    }
  });
}

// --- LayerNormalization, RMSNormalization -----------------------------------

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
    const Shape* shapes[] = {&scale.shape(), bias ? &bias->shape() : &scale.shape()};
    BroadcastIndex bi(s, shapes);
    for (uint64_t r = 0; r < rows; ++r) {
      const uint64_t base = r * cols;
      auto [mean, var] = mean_var(cols, [&](uint64_t k) { return static_cast<double>(get<S>(x, base + k)); });
      means[r] = mean;
      inv_std[r] = 1.0 / std::sqrt(var + eps);
      for (uint64_t k = 0; k < cols; ++k, bi.next()) {
        const C normalized = static_cast<C>(round_as<S>((static_cast<double>(get<S>(x, base + k)) - mean) * inv_std[r]));
        C v = normalized * get<S>(scale, bi.offsets()[0]);
        if (bias) v = v + get<S>(*bias, bi.offsets()[1]);
        put<S>(y, base + k, v);
      }
    }
  });
  if (ctx.output_wanted(1))
    rn::store_reals(ctx, ctx.allocate_output(1, static_cast<DataType>(stash), stat_shape), means);
  if (ctx.output_wanted(2))
    rn::store_reals(ctx, ctx.allocate_output(2, static_cast<DataType>(stash), stat_shape), inv_std);
}

// Y = X / sqrt(mean(X^2 over dims [axis, rank)) + epsilon), rounded to X's
// type, times Scale (broadcast to X); Y has Scale's type.
void RMSNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank()));
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  require_unidirectional(ctx, x.shape(), scale, "scale");
  const Shape& s = x.shape();
  const uint64_t rows = dims_product(s, 0, axis), cols = dims_product(s, axis, s.size());
  Tensor& y = ctx.allocate_output(0, scale.dtype(), s);
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
        for (uint64_t k = 0; k < cols; ++k, bi.next()) {
          const double normalized = round_as<S>(static_cast<double>(get<S>(x, base + k)) * inv_rms);
          put<V>(y, base + k, static_cast<CV>(static_cast<CV>(normalized) * get<V>(scale, bi.offsets()[0])));
        }
      }
    });
  });
}

// --- GroupNormalization ----------------------------------------------------

// Statistics per (n, group) over the group's C/G channels and the spatial dims;
// Normalized is rounded to X's type, then y = scale * Normalized + bias.
// Opset 18 has one scale/bias per group, opset 21 one per channel.
void GroupNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  ctx.required_attr("num_groups");
  const int64_t groups = ctx.attr_int("num_groups", 0);
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]), c = static_cast<uint64_t>(x.shape()[1]);
  const uint64_t d = dims_product(x.shape(), 2, x.shape().size());
  if (groups <= 0 || c % static_cast<uint64_t>(groups) != 0)
    ctx.fail("num_groups (" + std::to_string(groups) + ") must be positive and divide the channel count " +
             std::to_string(c));
  const uint64_t g_count = static_cast<uint64_t>(groups), per_group = c / g_count;
  const bool per_channel = ctx.opset_version() >= 21;
  const auto scale = param_values(ctx, ctx.input(1), per_channel ? c : g_count, "scale");
  const auto bias = param_values(ctx, ctx.input(2), per_channel ? c : g_count, "bias");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const uint64_t block = per_group * d;  // a group's elements are contiguous
    for (uint64_t ng = 0; ng < n * g_count; ++ng) {
      const uint64_t base = ng * block, g = ng % g_count;
      auto [mean, var] = mean_var(block, [&](uint64_t k) { return static_cast<double>(get<S>(x, base + k)); });
      const double inv = 1.0 / std::sqrt(var + eps);
      for (uint64_t k = 0; k < block; ++k) {
        const uint64_t p = per_channel ? g * per_group + k / d : g;
        const double normalized = round_as<S>((static_cast<double>(get<S>(x, base + k)) - mean) * inv);
        put_real<S>(y, base + k, scale[p] * normalized + bias[p]);
      }
    }
  });
}

// --- LRN -------------------------------------------------------------------

// y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to [0, C-1]) ^ beta.
void LRN(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  ctx.required_attr("size");
  const int64_t size = ctx.attr_int("size", 0);
  if (size <= 0) ctx.fail("size must be positive, got " + std::to_string(size));
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f),
               bias = ctx.attr_float("bias", 1.0f);
  const int64_t c = x.shape()[1];
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]), d = dims_product(x.shape(), 2, x.shape().size());
  const int64_t before = (size - 1) / 2, after = size / 2;  // floor((size-1)/2), ceil((size-1)/2)
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (uint64_t k = 0; k < d; ++k) {
          double sq = 0;
          for (int64_t i = std::max<int64_t>(0, ch - before); i <= std::min(c - 1, ch + after); ++i) {
            const double v = static_cast<double>(get<S>(x, (b * c + i) * d + k));
            sq += v * v;
          }
          const uint64_t at = (b * c + ch) * d + k;
          put_real<S>(y, at, static_cast<double>(get<S>(x, at)) / std::pow(bias + alpha / size * sq, beta));
        }
  });
}

// --- MeanVarianceNormalization -----------------------------------------------

// y = (x - mean) / (sqrt(var) + 1e-9) with mean and variance over `axes`
// (default [0, 2, 3]); the epsilon is the one in the spec's function body.
void MeanVarianceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : ctx.attr_ints("axes", {0, 2, 3})) {
    const int64_t k = normalize_axis(ctx, a, rank);
    if (k >= rank) ctx.fail("axis " + std::to_string(a) + " is out of range for a scalar (rank 0)");
    if (reduced[k]) ctx.fail("axes lists axis " + std::to_string(a) + " more than once");
    reduced[k] = true;
  }
  uint64_t groups = 1, count = 1;
  for (int64_t k = 0; k < rank; ++k) (reduced[k] ? count : groups) *= static_cast<uint64_t>(x.shape()[k]);
  std::vector<double> mean(groups, 0.0), var(groups, 0.0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto value = [&](uint64_t i) { return static_cast<double>(get<S>(x, i)); };
    rn::for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) { mean[o] += value(i); });
    for (double& m : mean) m /= static_cast<double>(count);
    rn::for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      const double dv = value(i) - mean[o];
      var[o] += dv * dv;
    });
    for (double& v : var) v /= static_cast<double>(count);
    rn::for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      put_real<S>(y, i, (value(i) - mean[o]) / (std::sqrt(var[o]) + 1e-9));
    });
  });
}

// --- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ----------------------

// The loss both operators end in, from log-probabilities logp of shape
// (N, C, D1, ...) (row-major, as doubles): loss[n, d] = -logp[n, t, d] * w[t]
// with t = target[n, d] and w the optional weights (1 without). Targets equal
// to ignore_index count as weight 0. 'mean' divides the sum by the total weight
// of the counted elements; 'none' keeps the target's shape.
void nll_output(KernelContext& ctx, const std::vector<double>& logp, const Tensor& input) {
  const Tensor& target = ctx.input(1);
  const Tensor* weight = ctx.optional_input(2);
  const Shape& s = input.shape();
  if (s.size() < 2) ctx.fail("input must have shape (N, C, ...), got " + shape_to_string(s));
  Shape expected_target{s[0]};
  expected_target.insert(expected_target.end(), s.begin() + 2, s.end());
  if (target.shape() != expected_target)
    ctx.fail("target has shape " + shape_to_string(target.shape()) + ", expected " + shape_to_string(expected_target));
  if (target.dtype() != DataType::Int32 && target.dtype() != DataType::Int64)
    ctx.fail("target must be int32 or int64, got " + std::string(dtype_name(target.dtype())));
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction must be 'none', 'sum' or 'mean', got '" + reduction + "'");
  const bool has_ignore = ctx.has_attr("ignore_index");
  const int64_t ignore = ctx.attr_int("ignore_index", 0);
  const int64_t c = s[1];
  const uint64_t n = static_cast<uint64_t>(s[0]), d = dims_product(s, 2, s.size());
  std::vector<double> w;
  if (weight) w = param_values(ctx, *weight, static_cast<uint64_t>(c), "weight");
  std::vector<double> loss(n * d);
  double loss_sum = 0, weight_sum = 0;
  for (uint64_t b = 0; b < n; ++b)
    for (uint64_t k = 0; k < d; ++k) {
      const uint64_t at = b * d + k;
      const int64_t t = target.element_as_int64(at);
      if (has_ignore && t == ignore) continue;  // loss 0, weight 0
      if (t < 0 || t >= c)
        ctx.fail("target value " + std::to_string(t) + " is out of range [0, " + std::to_string(c) + ")");
      const double wt = weight ? w[static_cast<size_t>(t)] : 1.0;
      loss[at] = -logp[(b * static_cast<uint64_t>(c) + static_cast<uint64_t>(t)) * d + k] * wt;
      loss_sum += loss[at];
      weight_sum += wt;
    }
  if (reduction == "none") {
    rn::store_reals(ctx, ctx.allocate_output(0, input.dtype(), target.shape()), loss);
    return;
  }
  const double r = reduction == "sum" ? loss_sum : loss_sum / weight_sum;  // all ignored: 0/0 = NaN, as PyTorch
  rn::store_reals(ctx, ctx.allocate_output(0, input.dtype(), {}), {r});
}

// input holds log-probabilities already.
void NegativeLogLikelihoodLoss(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  rn::require_float(ctx, input, "input");
  nll_output(ctx, real_values(input), input);
}

// log_prob = LogSoftmax(scores) along axis 1, then the NLL loss of it;
// log_prob is the optional second output.
void SoftmaxCrossEntropyLoss(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  rn::require_float(ctx, scores, "scores");
  const Shape& s = scores.shape();
  if (s.size() < 2) ctx.fail("scores must have shape (N, C, ...), got " + shape_to_string(s));
  std::vector<double> logp = real_values(scores);
  const uint64_t n = static_cast<uint64_t>(s[0]), c = static_cast<uint64_t>(s[1]), d = dims_product(s, 2, s.size());
  for (uint64_t b = 0; b < n; ++b)
    for (uint64_t k = 0; k < d; ++k) {
      auto at = [&](uint64_t j) -> double& { return logp[(b * c + j) * d + k]; };
      double mx = -std::numeric_limits<double>::infinity();
      for (uint64_t j = 0; j < c; ++j) mx = std::max(mx, at(j));
      double sum = 0;
      for (uint64_t j = 0; j < c; ++j) sum += std::exp(at(j) - mx);
      const double log_sum = std::log(sum);
      for (uint64_t j = 0; j < c; ++j) at(j) = at(j) - mx - log_sum;
    }
  nll_output(ctx, logp, scores);
  if (ctx.output_wanted(1)) rn::store_reals(ctx, ctx.allocate_output(1, scores.dtype(), s), logp);
}

}  // namespace

void register_reduce_norm_normalization_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) {
    r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr});
  };
  // Version differences are handled inside the kernels (BatchNormalization's
  // modes and spatial attribute, GroupNormalization's scale shape).
  add("LpNormalization", LpNormalization, 1);
  add("BatchNormalization", BatchNormalization, 1);
  add("InstanceNormalization", InstanceNormalization, 1);
  add("LayerNormalization", LayerNormalization, 17);
  add("GroupNormalization", GroupNormalization, 18);
  add("RMSNormalization", RMSNormalization, 23);
  add("LRN", LRN, 1);
  add("MeanVarianceNormalization", MeanVarianceNormalization, 9);
  add("NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss, 12);
  add("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss, 12);
}

}  // namespace onnxscope::ref
