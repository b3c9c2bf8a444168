// Shared pieces of the nn family (nn.cpp, nn_conv.cpp, nn_pool.cpp,
// nn_resize.cpp): the extra register functions and the window geometry that
// convolutions and pools have in common (strides, dilations, pads, auto_pad).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

void register_nn_conv_ops(KernelRegistry& r);    // nn_conv.cpp
void register_nn_pool_ops(KernelRegistry& r);    // nn_pool.cpp
void register_nn_resize_ops(KernelRegistry& r);  // nn_resize.cpp

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
}  // namespace onnxscope::ref
