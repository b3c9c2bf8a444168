// Resize's geometry (core/resize_plan.h), shared by the reference kernel
// and the CUDA engine.
#include "core/resize_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace onnxscope::resize {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) || a == b; }

// floor(in * scale), failing when it does not fit an int64 comfortably.
int64_t output_size(double scale, int64_t in) {
  const double v = std::floor(scale * static_cast<double>(in));
  if (!(v < 9.0e15)) fail("scale " + std::to_string(scale) + " gives an output dimension that is too large");
  return static_cast<int64_t>(v);
}

std::vector<double> resize_coeffs(const Spec& sp, double ratio, double scale, bool down) {
  const double A = sp.cubic_a;
  if (sp.mode == "nearest") {
    bool second;
    if (ratio == 1.0) second = true;  // integral source coordinate
    else if (sp.nearest == "round_prefer_floor") second = ratio > 0.5;
    else if (sp.nearest == "round_prefer_ceil") second = ratio >= 0.5;
    else if (sp.nearest == "floor") second = false;
    else if (sp.nearest == "ceil") second = true;
    else second = down;  // "simple" (opset <= 10): ceil when downsampling, floor otherwise
    return {second ? 0.0 : 1.0, second ? 1.0 : 0.0};
  }
  if (sp.mode == "linear") {
    if (!sp.antialias) return {1 - ratio, ratio};
    // Triangle filter stretched by 1/scale when downsampling, normalised.
    const double s = std::min(scale, 1.0);
    const int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    const int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      c.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
      sum += c.back();
    }
    for (auto& v : c) v /= sum;
    return c;
  }
  if (sp.mode == "cubic") {
    if (!sp.antialias) {
      const double r = ratio, q = 1 - ratio;
      return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
              ((A + 2) * q - (A + 3)) * q * q + 1, ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
    }
    const double s = std::min(scale, 1.0);
    auto kernel = [&](double x) {
      x = std::abs(x);
      if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
      if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
      return 0.0;
    };
    const int64_t i_start = static_cast<int64_t>(std::floor(-2 / s) + 1), i_end = 2 - i_start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = i_start; i < i_end; ++i) {
      c.push_back(kernel(s * (static_cast<double>(i) - ratio)));
      sum += c.back();
    }
    for (auto& v : c) v /= sum;
    return c;
  }
  fail("mode must be nearest, linear or cubic, got '" + sp.mode + "'");
}

}  // namespace

AxisTaps plan_axis(const Spec& sp, size_t axis, int64_t in, int64_t out) {
  AxisTaps t;
  const double scale = sp.scales[axis];
  const double out_f = scale * static_cast<double>(in);  // output width as a real number
  const double roi_start = sp.roi.empty() ? 0.0 : sp.roi[axis];
  const double roi_end = sp.roi.empty() ? 1.0 : sp.roi[sp.out.size() + axis];
  t.outside.assign(static_cast<size_t>(out), 0);
  for (int64_t y = 0; y < out; ++y) {
    const double yd = static_cast<double>(y);
    double x;
    const std::string& m = sp.coord;
    if (m == "half_pixel") {
      x = (yd + 0.5) / scale - 0.5;
    } else if (m == "pytorch_half_pixel") {
      x = out_f == 1 ? -0.5 : (yd + 0.5) / scale - 0.5;
    } else if (m == "align_corners") {
      x = out_f == 1 ? 0.0 : yd * static_cast<double>(in - 1) / (out_f - 1);
    } else if (m == "asymmetric") {
      x = yd / scale;
    } else if (m == "half_pixel_symmetric") {
      const double adjustment = static_cast<double>(out) / out_f;
      const double center = static_cast<double>(in) / 2;
      x = center * (1 - adjustment) + (yd + 0.5) / scale - 0.5;
    } else if (m == "tf_half_pixel_for_nn") {  // Resize-11 only
      x = (yd + 0.5) / scale;
    } else if (m == "tf_crop_and_resize") {
      x = out_f == 1 ? (roi_end - roi_start) * static_cast<double>(in - 1) / 2
                     : yd * (roi_end - roi_start) * static_cast<double>(in - 1) / (out_f - 1);
      x += roi_start * static_cast<double>(in - 1);
      if (x < 0 || x > static_cast<double>(in - 1)) t.outside[y] = 1;
    } else {
      fail("unknown coordinate_transformation_mode '" + m + "'");
    }
    // Keep far-away source coordinates (huge crop boxes) in integer range; they only read the edge.
    x = std::clamp(x, -static_cast<double>(in) - 8, 2.0 * static_cast<double>(in) + 8);
    const double xf = std::floor(x);
    const double ratio = x == xf ? 1.0 : x - xf;
    std::vector<double> c = resize_coeffs(sp, ratio, scale, scale < 1);
    const int64_t n = static_cast<int64_t>(c.size());
    if (t.n == 0) t.n = n;
    if (n != t.n) fail("internal error: inconsistent resize filter size");
    // The n input coordinates nearest x (ties prefer the lower ones).
    const int64_t pad = (n + 1) / 2;
    const double xp = x + static_cast<double>(pad);
    const double pf = std::floor(xp);
    const double frac = xp - pf;
    int64_t start = static_cast<int64_t>(pf);
    if (n % 2 == 0) start += frac == 0 ? -(n / 2) : -(n / 2) + 1;
    else start += frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    start -= pad;
    if (sp.exclude_outside) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (start + j < 0 || start + j >= in) c[j] = 0;
        sum += c[j];
      }
      if (sum != 0)
        for (auto& v : c) v /= sum;
    }
    for (int64_t j = 0; j < n; ++j) {
      t.idx.push_back(std::clamp<int64_t>(start + j, 0, in - 1));
      t.w.push_back(c[j]);
    }
  }
  return t;
}

Request request_of(const Node& n, int64_t opset) {
  Request r;
  r.opset = opset;
  auto str = [&](const char* name) { return n.attribute(name) ? std::optional<std::string>(n.attribute(name)->s) : std::nullopt; };
  auto real = [&](const char* name) { return n.attribute(name) ? std::optional<double>(n.attribute(name)->f) : std::nullopt; };
  auto integer = [&](const char* name) { return n.attribute(name) ? std::optional<int64_t>(n.attribute(name)->i) : std::nullopt; };
  r.mode = str("mode");
  r.coord = str("coordinate_transformation_mode");
  r.nearest = str("nearest_mode");
  r.policy = str("keep_aspect_ratio_policy");
  r.cubic_a = real("cubic_coeff_a");
  r.extrapolation = real("extrapolation_value");
  r.exclude_outside = integer("exclude_outside");
  r.antialias = integer("antialias");
  if (const Attribute* a = n.attribute("axes")) r.axes = a->ints;
  return r;
}

Spec resize_spec(const Request& r, const Shape& x) {
  const size_t rank = x.size();
  const int64_t opset = r.opset;
  Spec sp;
  sp.mode = r.mode.value_or("nearest");
  if (sp.mode != "nearest" && sp.mode != "linear" && sp.mode != "cubic")
    fail("mode must be nearest, linear or cubic, got '" + sp.mode + "'");
  const std::vector<double>& scales = r.scales;
  const std::vector<int64_t>& sizes = r.sizes;
  if (opset < 11) {
    if (sp.mode == "cubic") fail("mode cubic needs opset 11");
    sp.coord = "asymmetric";
    sp.nearest = "simple";
  } else {
    sp.coord = r.coord.value_or("half_pixel");
    sp.nearest = r.nearest.value_or("round_prefer_floor");
    if (sp.nearest != "round_prefer_floor" && sp.nearest != "round_prefer_ceil" && sp.nearest != "floor" && sp.nearest != "ceil")
      fail("unknown nearest_mode '" + sp.nearest + "'");
    if (sp.coord == "half_pixel_symmetric" && opset < 19) fail("half_pixel_symmetric needs opset 19");
    if (opset >= 13 && sp.coord == "tf_half_pixel_for_nn") fail("tf_half_pixel_for_nn was removed in opset 13");
    sp.cubic_a = r.cubic_a.value_or(-0.75);
    sp.exclude_outside = r.exclude_outside.value_or(0) != 0;
    sp.extrapolation = r.extrapolation.value_or(0.0);
    sp.roi = r.roi;
    if (sp.coord == "tf_crop_and_resize")
      for (double v : sp.roi)
        if (std::isnan(v)) fail("roi must not contain NaN");
  }
  if (opset >= 18) {
    sp.antialias = r.antialias.value_or(0) != 0;
    if (sp.antialias && sp.mode == "nearest") fail("antialias is not supported with mode nearest");
  }
  // axes (opset 18): scales/sizes/roi name only these dims.
  std::vector<int64_t> axes;
  if (opset >= 18 && r.axes) {
    const auto rk = static_cast<int64_t>(rank);
    for (int64_t a : *r.axes) {
      if (a < -rk || a >= std::max<int64_t>(rk, 1)) fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rk));
      const int64_t n = a < 0 ? a + rk : a;
      if (std::find(axes.begin(), axes.end(), n) != axes.end()) fail("axes must be unique");
      axes.push_back(n);
    }
  } else {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  const size_t na = axes.size();
  if (scales.empty() == sizes.empty()) fail("exactly one of scales and sizes must be given (non-empty)");
  if (sp.coord != "tf_crop_and_resize") sp.roi.clear();
  if (!sp.roi.empty()) {
    if (sp.roi.size() != 2 * na) fail("roi must have " + std::to_string(2 * na) + " values, got " + std::to_string(sp.roi.size()));
    std::vector<double> full(2 * rank);
    for (size_t d = 0; d < rank; ++d) {
      full[d] = 0;
      full[rank + d] = 1;
    }
    for (size_t i = 0; i < na; ++i) {
      full[static_cast<size_t>(axes[i])] = sp.roi[i];
      full[rank + static_cast<size_t>(axes[i])] = sp.roi[na + i];
    }
    sp.roi = full;
  }
  if (sp.coord == "tf_crop_and_resize" && sp.roi.empty()) fail("tf_crop_and_resize needs roi");
  sp.scales.assign(rank, 1.0);
  sp.out = x;
  if (!scales.empty()) {
    if (scales.size() != na) fail("scales must have " + std::to_string(na) + " values, got " + std::to_string(scales.size()));
    for (size_t i = 0; i < na; ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) fail("scales must be positive and finite");
      sp.scales[a] = scales[i];
      sp.out[a] = output_size(scales[i], x[a]);
    }
  } else {
    if (sizes.size() != na) fail("sizes must have " + std::to_string(na) + " values, got " + std::to_string(sizes.size()));
    for (size_t i = 0; i < na; ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      if (sizes[i] < 0) fail("sizes must be non-negative");
      if (x[a] == 0) fail("cannot resize an empty dimension");
      sp.out[a] = sizes[i];
      sp.scales[a] = static_cast<double>(sizes[i]) / static_cast<double>(x[a]);
    }
    const std::string policy = opset >= 18 ? r.policy.value_or("stretch") : "stretch";
    if (policy == "not_larger" || policy == "not_smaller") {
      double s = sp.scales[static_cast<size_t>(axes[0])];
      for (int64_t a : axes) s = policy == "not_larger" ? std::min(s, sp.scales[static_cast<size_t>(a)]) : std::max(s, sp.scales[static_cast<size_t>(a)]);
      for (int64_t a : axes) {
        sp.scales[static_cast<size_t>(a)] = s;
        const double v = s * static_cast<double>(x[static_cast<size_t>(a)]) + 0.5;  // round half up
        if (!(v >= 0 && v < 9.2e18)) fail("keep_aspect_ratio_policy " + policy + " makes an output size of " + std::to_string(v));
        sp.out[static_cast<size_t>(a)] = static_cast<int64_t>(v);
      }
    } else if (policy != "stretch") {
      fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, got '" + policy + "'");
    }
  }
  return sp;
}

Spec upsample_spec(const std::string& mode, const std::vector<double>& scales, const Shape& x) {
  const size_t rank = x.size();
  Spec sp;
  sp.mode = mode == "bilinear" ? "linear" : mode;
  if (sp.mode != "nearest" && sp.mode != "linear") fail("mode must be nearest or linear, got '" + mode + "'");
  sp.coord = "asymmetric";
  sp.nearest = "simple";
  if (scales.size() != rank) fail("scales must have one value per dimension (" + std::to_string(rank) + ")");
  sp.scales = scales;
  sp.out = x;
  for (size_t d = 0; d < rank; ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d])) fail("scales must be positive and finite");
    sp.out[d] = output_size(scales[d], x[d]);
  }
  return sp;
}

std::vector<int64_t> nearest_picks(const Spec& sp, size_t axis, int64_t in, int64_t out) {
  const AxisTaps t = plan_axis(sp, axis, in, out);
  std::vector<int64_t> pick;
  for (int64_t o = 0; o < out; ++o) {
    int64_t chosen = t.idx[static_cast<size_t>(o * t.n)];
    for (int64_t j = 0; j < t.n; ++j)
      if (t.w[static_cast<size_t>(o * t.n + j)] != 0) chosen = t.idx[static_cast<size_t>(o * t.n + j)];
    pick.push_back(t.outside[static_cast<size_t>(o)] ? -1 : chosen);
  }
  return pick;
}

bool axis_unchanged(const Spec& sp, size_t axis, int64_t in) {
  const size_t rank = sp.out.size();
  const bool trivial_roi = sp.roi.empty() || (near(sp.roi[axis], 0.0) && near(sp.roi[rank + axis], 1.0));
  return near(sp.scales[axis], 1.0) && sp.out[axis] == in && trivial_roi;
}

}  // namespace onnxscope::resize
