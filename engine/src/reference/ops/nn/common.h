// Helpers shared by the reference's nn kernels: the window geometry that
// convolutions and pools have in common (strides, dilations, pads,
// auto_pad), the normalizations' statistics and the attention layouts. The
// convolutions' own helpers are in conv_common.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/attention_plan.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

namespace nn {

// Sliding-window geometry over the spatial dims of an [N, C, D1..Dk] tensor.
struct Window {
  std::vector<int64_t> in;         // input spatial dims
  std::vector<int64_t> kernel;     // kernel spatial dims
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;  // resolved pads (after auto_pad)
  std::vector<int64_t> pad_end;
  std::vector<int64_t> out;        // output spatial dims
};

// Bound on window attribute values, so that size arithmetic cannot overflow.
inline constexpr int64_t kMaxWindowValue = int64_t{1} << 40;

// A list attribute of length k, or `fill` repeated k times when absent; fails
// when it has another length or a value below `min_value`.
inline std::vector<int64_t> spatial_attr(const KernelContext& ctx, const char* name, size_t k, int64_t fill,
                                         int64_t min_value) {
  std::vector<int64_t> v = ctx.attr_ints(name, std::vector<int64_t>(k, fill));
  if (v.empty()) v.assign(k, fill);
  if (v.size() != k)
    ctx.fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(k) +
             " (one per spatial dimension)");
  for (int64_t x : v)
    if (x < min_value || x > kMaxWindowValue)
      ctx.fail(std::string(name) + " values must be in [" + std::to_string(min_value) + ", 2^40]");
  return v;
}

// Resolves strides, dilations, pads and auto_pad into output sizes. `ceil_mode`
// is the ceil_mode of pools (a window must start inside the input or its left
// padding). Reads the attributes "strides", "dilations", "pads", "auto_pad".
inline Window resolve_window(const KernelContext& ctx, const std::vector<int64_t>& in_spatial,
                             const std::vector<int64_t>& kernel, bool ceil_mode, bool has_dilations = true) {
  const size_t k = in_spatial.size();
  Window w;
  w.in = in_spatial;
  w.kernel = kernel;
  for (int64_t x : kernel)
    if (x < 1 || x > kMaxWindowValue) ctx.fail("kernel dimensions must be in [1, 2^40]");
  w.strides = spatial_attr(ctx, "strides", k, 1, 1);
  w.dilations = has_dilations ? spatial_attr(ctx, "dilations", k, 1, 1) : std::vector<int64_t>(k, 1);
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.empty()) pads.assign(2 * k, 0);
  if (pads.size() != 2 * k)
    ctx.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * k));
  for (int64_t p : pads)
    if (p < 0 || p > kMaxWindowValue) ctx.fail("pads must be in [0, 2^40]");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  w.pad_begin.assign(k, 0);
  w.pad_end.assign(k, 0);
  w.out.assign(k, 0);
  for (size_t i = 0; i < k; ++i) {
    // Kernel and dilation are each at most 2^40, their product is not: checked.
    int64_t span = 0;  // extent of one dilated window
    if (__builtin_mul_overflow(kernel[i] - 1, w.dilations[i], &span) || span > (int64_t{1} << 62))
      ctx.fail("the dilated window (kernel " + std::to_string(kernel[i]) + ", dilation " + std::to_string(w.dilations[i]) +
               ") is too large");
    span += 1;
    const int64_t s = w.strides[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[i] = (in_spatial[i] + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * s + span - in_spatial[i]);
      const int64_t small = total / 2, big = total - total / 2;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? big : small;
    } else if (auto_pad == "VALID") {
      w.out[i] = in_spatial[i] >= span ? (in_spatial[i] - span) / s + 1 : 0;
    } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
      w.pad_begin[i] = pads[i];
      w.pad_end[i] = pads[k + i];
      const int64_t room = in_spatial[i] + pads[i] + pads[k + i] - span;
      if (room < 0) {
        w.out[i] = 0;
      } else if (ceil_mode) {
        w.out[i] = (room + s - 1) / s + 1;
        // The last window must start inside the input or its left padding.
        if ((w.out[i] - 1) * s >= in_spatial[i] + pads[i]) --w.out[i];
      } else {
        w.out[i] = room / s + 1;
      }
    } else {
      ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
    }
    if (w.out[i] <= 0)
      ctx.fail("window of size " + std::to_string(span) + " does not fit spatial dimension " + std::to_string(i) +
               " of size " + std::to_string(in_spatial[i]));
  }
  return w;
}

// Odometer over a shape: for (Counter c(shape); c.valid(); c.next()) c.index ...
struct Counter {
  std::vector<int64_t> dims, index;
  bool ok;
  explicit Counter(std::vector<int64_t> d) : dims(std::move(d)), index(dims.size(), 0), ok(true) {
    for (int64_t x : dims)
      if (x <= 0) ok = false;
  }
  bool valid() const { return ok; }
  void next() {
    for (size_t i = dims.size(); i-- > 0;) {
      if (++index[i] < dims[i]) return;
      index[i] = 0;
    }
    ok = false;
  }
};

inline int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// Requires a rank >= 3 [N, C, spatial...] tensor.
inline void require_nc_spatial(const KernelContext& ctx, const Tensor& x, const char* what) {
  if (x.rank() < 3)
    ctx.fail(std::string(what) + " must have shape [N, C, D1, ...] with at least one spatial dimension, got " +
             shape_to_string(x.shape()));
}

// Stores doubles into a tensor of storage type S (rounded for narrow floats,
// truncated for ints: NaN gives 0 and out-of-range values saturate, so a max
// over a window of padding only, -inf, is the type's lowest value).
template <typename S> inline void put_all(Tensor& t, const std::vector<double>& v) {
  for (uint64_t i = 0; i < v.size(); ++i) put<S>(t, i, from_double<compute_t<S>>(v[i]));
}

}  // namespace nn

enum class PoolKind { Max, Average, Lp };

// The p of LpPool/GlobalLpPool: a float attribute in opset 1, an int after.
inline double lp_norm_p(KernelContext& ctx) {
  const Attribute* a = ctx.attr("p");
  double p = 2.0;
  if (a) p = a->type == AttrType::Float ? static_cast<double>(a->f) : static_cast<double>(a->i);
  if (!(p > 0)) ctx.fail("p must be positive");
  return p;
}

// Fails unless `p` holds exactly `n` elements; returns its values as doubles.
inline std::vector<double> param_values(const KernelContext& ctx, const Tensor& p, uint64_t n, const char* what) {
  rn::require_float(ctx, p, what);
  if (p.element_count() != n)
    ctx.fail(std::string(what) + " has shape " + shape_to_string(p.shape()) + " but " + std::to_string(n) +
             " elements are needed");
  return real_values(p);
}

// Checks that `p` broadcasts unidirectionally to `x` (p's shape aligned to the right).
inline void require_unidirectional(const KernelContext& ctx, const Shape& x, const Tensor& p, const char* what) {
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

// --- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ----------------------

// The loss both operators end in, from log-probabilities logp of shape
// (N, C, D1, ...) (row-major, as doubles): loss[n, d] = -logp[n, t, d] * w[t]
// with t = target[n, d] and w the optional weights (1 without). Targets equal
// to ignore_index count as weight 0. 'mean' divides the sum by the total weight
// of the counted elements; 'none' keeps the target's shape.
inline void nll_output(KernelContext& ctx, const std::vector<double>& logp, const Tensor& input) {
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
  const uint64_t n = static_cast<uint64_t>(s[0]), d = rn::dims_product(s, 2, s.size());
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

inline constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Precision named by a softmax_precision attribute value.
inline DataType softmax_type(const KernelContext& ctx, int64_t v) {
  switch (v) {
    case 1: return DataType::Float;
    case 10: return DataType::Float16;
    case 11: return DataType::Double;
    case 16: return DataType::BFloat16;
    default: ctx.fail("unsupported softmax_precision " + std::to_string(v));
  }
}

// --- Attention ---------------------------------------------------------------------

// Maps (b, h, s, d) of a logical (B, H, S, D) tensor to the flat index of its
// 4-D (B, H, S, D) or 3-D (B, S, H*D) storage.
struct HeadLayout {
  bool packed = false;  // 3-D input
  int64_t H = 1, S = 0, D = 0;
  uint64_t operator()(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return packed ? uint64_t(((b * S + s) * H + h) * D + d) : uint64_t(((b * H + h) * S + s) * D + d);
  }
};

}  // namespace onnxscope::ref
