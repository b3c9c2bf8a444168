// Resampling and detection: Resize, Upsample, GridSample, AffineGrid,
// RoiAlign, NonMaxSuppression. Interpolation weights and sums are computed
// in double (float16/float inputs included) and rounded once on store.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/grid_sample_math.h"
#include "core/nms_math.h"
#include "core/roi_align_math.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn_parts.h"
#include "core/resize_plan.h"

namespace onnxscope::ref {
namespace {

using nn::Counter;

// Stores a real value into element i of a numeric tensor the way numpy's
// saturating cast does: integers are rounded half to even and clamped.
template <typename S> void put_saturated(Tensor& t, uint64_t i, double v) {
  using C = compute_t<S>;
  if constexpr (std::is_integral_v<C>) {
    if (std::isnan(v)) v = 0;
    v = std::nearbyint(v);
    v = std::clamp(v, static_cast<double>(std::numeric_limits<C>::lowest()), static_cast<double>(std::numeric_limits<C>::max()));
    put<S>(t, i, static_cast<C>(v));
  } else {
    put<S>(t, i, static_cast<C>(v));
  }
}

// --- Resize / Upsample -------------------------------------------------------------

using resize::AxisTaps;
using resize::Spec;

// The element types dispatch<kFloats | kInts> accepts.
bool is_real_numeric(DataType t) {
  const DTypeInfo& info = dtype_info(t);
  return (info.is_integer && !is_packed_dtype(t)) || t == DataType::Float || t == DataType::Double ||
         t == DataType::Float16 || t == DataType::BFloat16;
}

// Resizes input 0 into output 0 according to `sp` (scales and out filled in).
void resample(KernelContext& ctx, const Spec& sp) {
  const Tensor& x = ctx.input(0);
  const Shape& xs = x.shape();
  const size_t rank = xs.size();
  for (size_t d = 0; d < rank; ++d)
    if (sp.out[d] < 0) ctx.fail("the output shape " + shape_to_string(sp.out) + " is negative");
  Tensor& y = ctx.allocate_output(0, x.dtype(), sp.out);
  if (y.element_count() == 0) return;
  if (x.element_count() == 0) ctx.fail("cannot resize an empty input to a non-empty output");
  if (sp.mode == "nearest") {
    // Each output element copies one input element (any element type).
    std::vector<std::vector<int64_t>> pick(rank);  // -1: outside the crop box
    for (size_t d = 0; d < rank; ++d) pick[d] = resize::nearest_picks(sp, d, xs[d], sp.out[d]);
    const auto in_strides = strides_of(xs);
    const bool is_str = x.is_string();
    const bool numeric = is_real_numeric(x.dtype());
    if (is_packed_dtype(x.dtype())) ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
    const uint64_t elem = is_str ? 0 : *storage_bytes(x.dtype(), 1);
    StringBudget budget(&ctx);
    uint64_t o = 0;
    for (Counter c(sp.out); c.valid(); c.next(), ++o) {
      int64_t src = 0;
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t p = pick[d][c.index[d]];
        if (p < 0) outside = true;
        src += p * in_strides[d];
      }
      if (outside) {
        // Numeric types get extrapolation_value; others keep their zero value ("" / false / 0).
        if (numeric)
          dispatch<kFloats | kInts>(ctx, x.dtype(), [&](auto tag) {
            put_saturated<typename decltype(tag)::type>(y, o, sp.extrapolation);
          });
      } else if (is_str) {
        budget.add(x.strings()[static_cast<uint64_t>(src)]);
        y.mutable_strings()[o] = x.strings()[static_cast<uint64_t>(src)];
      } else {
        std::memcpy(y.mutable_raw() + o * elem, x.raw() + static_cast<uint64_t>(src) * elem, elem);
      }
    }
    return;
  }
  dispatch<kFloats | kInts>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    // Separable: interpolate one axis at a time, in double. Each step's
    // buffer is held to the tensor limit (sizes of [4194304, 1] from a
    // [1, 4096] input would make 128 GiB in the first step).
    auto check_step = [&](const Shape& s) {
      auto n = checked_element_count(s);
      if (!n || *n > ctx.max_tensor_bytes() / sizeof(double))
        ctx.fail("resizing one axis at a time makes an intermediate of shape " + shape_to_string(s) +
                 " in double, more than the tensor limit of " + std::to_string(ctx.max_tensor_bytes()) + " bytes");
    };
    check_step(xs);
    std::vector<double> cur = real_values(x);
    Shape cur_shape = xs;
    for (size_t d = 0; d < rank; ++d) {
      if (resize::axis_unchanged(sp, d, cur_shape[d])) continue;
      AxisTaps t = resize::plan_axis(sp, d, cur_shape[d], sp.out[d]);
      const int64_t outer = nn::product(Shape(cur_shape.begin(), cur_shape.begin() + d));
      const int64_t inner = nn::product(cur_shape, d + 1);
      const int64_t in = cur_shape[d], out = sp.out[d];
      Shape step = cur_shape;
      step[d] = out;
      check_step(step);
      std::vector<double> next(static_cast<size_t>(outer * out * inner));
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t o = 0; o < out; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double v = 0;
            if (t.outside[o]) {
              v = sp.extrapolation;
            } else {
              for (int64_t j = 0; j < t.n; ++j) v += t.w[o * t.n + j] * cur[(a * in + t.idx[o * t.n + j]) * inner + i];
            }
            next[(a * out + o) * inner + i] = v;
          }
      cur.swap(next);
      cur_shape[d] = out;
    }
    for (uint64_t i = 0; i < cur.size(); ++i) put_saturated<S>(y, i, cur[i]);
  });
}

std::vector<double> float_values(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (!dtype_info(t.dtype()).is_float || dtype_info(t.dtype()).is_complex)
    ctx.fail(std::string(what) + " must be a float tensor");
  if (t.rank() > 1) ctx.fail(std::string(what) + " must be 1-D");
  return real_values(t);
}

// The spec's problems (std::invalid_argument) fail the node.
template <class F>
Spec checked_spec(const KernelContext& ctx, F&& make) {
  try {
    return make();
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
}

void Resize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  resize::Request r = resize::request_of(ctx.node(), ctx.opset_version());
  if (r.opset < 11) {  // X, scales
    r.scales = float_values(ctx, ctx.input(1), "scales");
  } else {  // X, roi, scales, sizes
    if (const Tensor* s = ctx.optional_input(2)) r.scales = float_values(ctx, *s, "scales");
    if (const Tensor* s = ctx.optional_input(3)) r.sizes = int_values(ctx, *s);
    if (const Tensor* t = ctx.optional_input(1)) r.roi = float_values(ctx, *t, "roi");
  }
  resample(ctx, checked_spec(ctx, [&] { return resize::resize_spec(r, x.shape()); }));
}

// Upsample (deprecated): asymmetric coordinates; nearest takes floor when
// enlarging (ceil when shrinking), linear interpolates.
void Upsample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<double> scales;
  const int64_t opset = ctx.opset_version();
  if (opset >= 9) {
    scales = float_values(ctx, ctx.input(1), "scales");
  } else if (opset >= 7) {
    for (float f : ctx.attr_floats("scales")) scales.push_back(f);
  } else {
    if (x.rank() != 4) ctx.fail("Upsample-1 needs a 4-D input");
    scales = {1.0, 1.0, ctx.attr_float("height_scale", 1.0f), ctx.attr_float("width_scale", 1.0f)};
  }
  const std::string mode = ctx.attr_string("mode", "nearest");
  resample(ctx, checked_spec(ctx, [&] { return resize::upsample_spec(mode, scales, x.shape()); }));
}

// --- GridSample -------------------------------------------------------------------
// Integer X is interpolated in double and rounded half to even on store, like
// Resize (onnx's Python reference truncates its integer weights instead).

using grid::cubic_weights;  // core/grid_sample_math.h, shared with the CUDA kernel
using grid::reflect;

void GridSample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  nn::require_nc_spatial(ctx, x, "X");
  const size_t r = static_cast<size_t>(x.rank()) - 2;
  const Shape& xs = x.shape();
  const Shape& gs = grid.shape();
  if (gs.size() != r + 2 || gs[0] != xs[0] || gs.back() != static_cast<int64_t>(r))
    ctx.fail("grid must have shape [N, out spatial..., " + std::to_string(r) + "] for X of shape " + shape_to_string(xs) +
             ", got " + shape_to_string(gs));
  // Opset 16 names the modes bilinear/bicubic and takes 4-D input only; opset 20 says linear/cubic, any rank.
  const bool v20 = ctx.opset_version() >= 20;
  std::string mode = ctx.attr_string("mode", v20 ? "linear" : "bilinear");
  if (!v20 && r != 2) ctx.fail("GridSample before opset 20 takes 4-D input [N, C, H, W] only");
  if (v20 ? (mode != "linear" && mode != "nearest" && mode != "cubic")
          : (mode != "bilinear" && mode != "nearest" && mode != "bicubic"))
    ctx.fail("unknown mode '" + mode + "' for opset " + std::to_string(ctx.opset_version()));
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const std::string padding = ctx.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") ctx.fail("unknown padding_mode '" + padding + "'");
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  if (!dtype_info(grid.dtype()).is_float || dtype_info(grid.dtype()).is_complex) ctx.fail("grid must be a float tensor");
  const int64_t N = xs[0], C = xs[1];
  const std::vector<int64_t> dims(xs.begin() + 2, xs.end());
  const std::vector<int64_t> out_sp(gs.begin() + 1, gs.end() - 1);
  Shape out_shape{N, C};
  out_shape.insert(out_shape.end(), out_sp.begin(), out_sp.end());
  const int64_t IS = nn::product(dims), OS = nn::product(out_sp);
  const auto in_strides = strides_of(dims);
  if (OS > 0 && N > 0)
    for (int64_t dsz : dims)
      if (dsz == 0) ctx.fail("cannot sample from an empty spatial dimension");
  const std::vector<double> gv = real_values(grid);
  // Taps of one sampling point: per dim, indices (-1: reads zero) and weights.
  std::vector<std::vector<int64_t>> ti(r);
  std::vector<std::vector<double>> tw(r);
  auto pixel_index = [&](int64_t i, size_t d, double lo, double hi) -> int64_t {
    if (padding == "zeros") return (i >= 0 && i < dims[d]) ? i : -1;
    if (padding == "border") return std::clamp<int64_t>(i, 0, dims[d] - 1);
    return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, dims[d] - 1);
  };
  // Fills `taps` with (input spatial offset, weight) for output point o of batch n;
  // returns false when a grid coordinate is NaN (the output is NaN then).
  auto sample_taps = [&](int64_t n, int64_t o, std::vector<std::pair<int64_t, double>>& taps) {
    taps.clear();
    for (size_t d = 0; d < r; ++d) {
      // Grid's last axis lists coordinates innermost dim first (x, y, z).
      const double g = gv[static_cast<size_t>((n * OS + o) * static_cast<int64_t>(r) + static_cast<int64_t>(r - 1 - d))];
      if (std::isnan(g)) return false;
      const double L = static_cast<double>(dims[d]);
      // Denormalised to pixel units, rounded to float as the reference does.
      double v = static_cast<float>(align ? (g + 1) / 2.0 * (L - 1) : ((g + 1) * L - 1) / 2.0);
      const double lo = align ? 0.0 : -0.5, hi = align ? L - 1 : L - 0.5;
      if (mode == "nearest") v = std::nearbyint(v);
      if (v < lo || v > hi) {
        if (padding == "border") v = std::clamp(v, 0.0, L - 1);
        else if (padding == "reflection") v = static_cast<float>(reflect(v, lo, hi));
      }
      // Far outside, every tap reads zero anyway; keep the integer conversions in range.
      v = std::clamp(v, -L - 8, 2 * L + 8);
      ti[d].clear();
      tw[d].clear();
      if (mode == "nearest") {
        ti[d].push_back(pixel_index(static_cast<int64_t>(v), d, lo, hi));
        tw[d].push_back(1.0);
      } else if (mode == "linear") {
        const double f = std::floor(v);
        const int64_t i0 = static_cast<int64_t>(f);
        ti[d] = {pixel_index(i0, d, lo, hi), pixel_index(i0 + 1, d, lo, hi)};
        tw[d] = {1 - (v - f), v - f};
      } else {
        const double f = std::floor(v);
        const int64_t i0 = static_cast<int64_t>(f);
        double w[4];
        cubic_weights(v - f, w);
        for (int64_t j = 0; j < 4; ++j) {
          ti[d].push_back(pixel_index(i0 - 1 + j, d, lo, hi));
          tw[d].push_back(w[j]);
        }
      }
    }
    // Combine the per-dim taps (separable); taps reading zero padding are dropped.
    std::vector<int64_t> tap_dims;
    for (size_t d = 0; d < r; ++d) tap_dims.push_back(static_cast<int64_t>(ti[d].size()));
    for (Counter tc(tap_dims); tc.valid(); tc.next()) {
      int64_t off = 0;
      double w = 1;
      bool zero = false;
      for (size_t d = 0; d < r; ++d) {
        const int64_t i = ti[d][tc.index[d]];
        if (i < 0) zero = true;
        off += i * in_strides[d];
        w *= tw[d][tc.index[d]];
      }
      if (!zero) taps.emplace_back(off, w);
    }
    return true;
  };
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  std::vector<std::pair<int64_t, double>> taps;
  if (!is_real_numeric(x.dtype())) {
    // Other element types (string, bool, complex): nearest copies; outside reads the zero value.
    if (mode != "nearest") ctx.fail("mode " + mode + " needs a numeric X, got " + std::string(dtype_name(x.dtype())));
    if (is_packed_dtype(x.dtype())) ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
    const uint64_t elem = x.is_string() ? 0 : *storage_bytes(x.dtype(), 1);
    StringBudget budget(&ctx);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < OS; ++o) {
        if (!sample_taps(n, o, taps) || taps.empty()) continue;
        for (int64_t c = 0; c < C; ++c) {
          const uint64_t src = static_cast<uint64_t>((n * C + c) * IS + taps[0].first);
          const uint64_t dst = static_cast<uint64_t>((n * C + c) * OS + o);
          if (x.is_string()) {
            budget.add(x.strings()[src]);
            y.mutable_strings()[dst] = x.strings()[src];
          }
          else std::memcpy(y.mutable_raw() + dst * elem, x.raw() + src * elem, elem);
        }
      }
    return;
  }
  dispatch<kFloats | kInts>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < OS; ++o) {
        const bool ok = sample_taps(n, o, taps);
        for (int64_t c = 0; c < C; ++c) {
          const double* plane = xv.data() + (n * C + c) * IS;
          double acc = ok ? 0.0 : std::numeric_limits<double>::quiet_NaN();
          for (const auto& [off, w] : taps) acc += w * plane[off];
          put_saturated<S>(y, static_cast<uint64_t>((n * C + c) * OS + o), acc);
        }
      }
  });
}

// --- AffineGrid -------------------------------------------------------------------

// grid[n, (d,) h, w] = theta[n] @ [x_w, y_h, (z_d,) 1] with normalised base coordinates in [-1, 1].
void AffineGrid(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = int_values(ctx, ctx.input(1));
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  if (size.size() != 4 && size.size() != 5) ctx.fail("size must be [N, C, H, W] or [N, C, D, H, W]");
  const size_t r = size.size() - 2;  // spatial rank: 2 or 3
  const int64_t N = size[0];
  if (theta.shape() != Shape{N, static_cast<int64_t>(r), static_cast<int64_t>(r + 1)})
    ctx.fail("theta must have shape " + shape_to_string(Shape{N, static_cast<int64_t>(r), static_cast<int64_t>(r + 1)}) +
             ", got " + shape_to_string(theta.shape()));
  std::vector<int64_t> sp(size.begin() + 2, size.end());
  for (int64_t s : sp)
    if (s < 0) ctx.fail("size must be non-negative");
  Shape out_shape{N};
  out_shape.insert(out_shape.end(), sp.begin(), sp.end());
  out_shape.push_back(static_cast<int64_t>(r));
  auto base = [&](int64_t i, int64_t L) {
    if (align) return L == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(L - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(L) - 1.0;
  };
  dispatch<kFloats>(ctx, theta.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> tv = real_values(theta);
    Tensor& y = ctx.allocate_output(0, theta.dtype(), out_shape);
    uint64_t o = 0;
    for (int64_t n = 0; n < N; ++n) {
      const double* t = tv.data() + n * static_cast<int64_t>(r * (r + 1));
      for (Counter c(sp); c.valid(); c.next()) {
        // Homogeneous base point, innermost dim first: (x, y[, z], 1).
        std::vector<double> p;
        for (size_t d = r; d-- > 0;) p.push_back(base(c.index[d], sp[d]));
        p.push_back(1.0);
        for (size_t row = 0; row < r; ++row) {
          double v = 0;
          for (size_t j = 0; j <= r; ++j) v += t[row * (r + 1) + j] * p[j];
          put<S>(y, o++, static_cast<compute_t<S>>(v));
        }
      }
    }
  });
}

// --- RoiAlign ---------------------------------------------------------------------

void RoiAlign(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& bidx = ctx.input(2);
  if (x.rank() != 4) ctx.fail("X must have shape [N, C, H, W], got " + shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.shape()[1] != 4) ctx.fail("rois must have shape [num_rois, 4], got " + shape_to_string(rois.shape()));
  if (bidx.rank() != 1 || bidx.shape()[0] != rois.shape()[0])
    ctx.fail("batch_indices must have shape [num_rois], got " + shape_to_string(bidx.shape()));
  if (rois.dtype() != x.dtype()) ctx.fail("rois must have the element type of X");
  const std::string mode = ctx.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be avg or max, got '" + mode + "'");
  // Opset 10 behaves like 'output_half_pixel'; opset 16 added the attribute, defaulting to 'half_pixel'.
  const std::string ctm = ctx.opset_version() >= 16 ? ctx.attr_string("coordinate_transformation_mode", "half_pixel")
                                                    : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel") ctx.fail("unknown coordinate_transformation_mode '" + ctm + "'");
  const bool half_pixel = ctm == "half_pixel";
  const int64_t oh = ctx.attr_int("output_height", 1), ow = ctx.attr_int("output_width", 1);
  const int64_t sampling = ctx.attr_int("sampling_ratio", 0);
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  if (oh < 1 || ow < 1) ctx.fail("output_height and output_width must be >= 1");
  if (sampling < 0) ctx.fail("sampling_ratio must be >= 0");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], R = rois.shape()[0];
  // A sample clamps to pixel H - 1 or W - 1, which an empty image does not have.
  if ((H == 0 || W == 0) && R > 0 && C > 0)
    ctx.fail("cannot sample from an empty image (X has shape " + shape_to_string(x.shape()) + ")");
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x), rv = real_values(rois);
    Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{R, C, oh, ow});
    struct Sample { int64_t p[4]; double w[4]; };
    for (int64_t r = 0; r < R; ++r) {
      const int64_t b = bidx.element_as_int64(static_cast<uint64_t>(r));
      if (b < 0 || b >= N) ctx.fail("batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(N) + ")");
      for (int q = 0; q < 4; ++q)
        if (!std::isfinite(rv[r * 4 + q])) ctx.fail("rois must be finite");
      // The roi's bins and samples (core/roi_align_math.h, shared with the
      // CUDA kernel); the grid is bounded so a huge roi with adaptive
      // sampling cannot ask for billions of points.
      roi::Geometry g;
      if (!roi::plan(&rv[r * 4], scale, half_pixel, oh, ow, sampling, b,
                     static_cast<double>(ctx.max_tensor_bytes()) / sizeof(Sample), g))
        ctx.fail("the sampling grid of roi " + std::to_string(r) + " is too large");
      const int64_t gh = g.grid_h, gw = g.grid_w;
      const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      // Bilinear sample points of every bin, shared by all channels.
      std::vector<Sample> samples;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              Sample s;
              roi::corners(roi::sample_y(g, ph, iy), roi::sample_x(g, pw, ix), H, W, s.p, s.w);
              samples.push_back(s);
            }
      for (int64_t c = 0; c < C; ++c) {
        const double* plane = xv.data() + (b * C + c) * H * W;
        size_t si = 0;
        for (int64_t ph = 0; ph < oh; ++ph)
          for (int64_t pw = 0; pw < ow; ++pw) {
            double v = 0;
            bool first = true;
            for (int64_t k = 0; k < gh * gw; ++k, ++si) {
              const Sample& s = samples[si];
              if (mode == "avg") {
                for (int q = 0; q < 4; ++q) v += s.w[q] * plane[s.p[q]];
              } else {
                // Max mode takes the largest weighted corner (as onnxruntime does).
                double m = s.w[0] * plane[s.p[0]];
                for (int q = 1; q < 4; ++q) m = std::max(m, s.w[q] * plane[s.p[q]]);
                v = first ? m : std::max(v, m);
                first = false;
              }
            }
            if (mode == "avg") v /= count;
            put<S>(y, static_cast<uint64_t>(((r * C + c) * oh + ph) * ow + pw), static_cast<compute_t<S>>(v));
          }
      }
    }
  });
}

// --- NonMaxSuppression --------------------------------------------------------------

void NonMaxSuppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.shape()[2] != 4) ctx.fail("boxes must have shape [batches, boxes, 4], got " + shape_to_string(boxes.shape()));
  if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1])
    ctx.fail("scores must have shape [batches, classes, boxes] matching boxes, got " + shape_to_string(scores.shape()));
  int64_t max_out = 0;
  if (const Tensor* t = ctx.optional_input(2); t && t->element_count() > 0) max_out = t->element_as_int64(0);
  float iou_threshold = 0;
  if (const Tensor* t = ctx.optional_input(3); t && t->element_count() > 0) iou_threshold = static_cast<float>(t->element_as_double(0));
  std::optional<float> score_threshold;
  if (const Tensor* t = ctx.optional_input(4); t && t->element_count() > 0) score_threshold = static_cast<float>(t->element_as_double(0));
  const int64_t center = ctx.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) ctx.fail("center_point_box must be 0 or 1");
  if (iou_threshold < 0 || iou_threshold > 1) ctx.fail("iou_threshold must be in [0, 1]");
  const int64_t B = boxes.shape()[0], NB = boxes.shape()[1], NC = scores.shape()[1];
  // Coordinates and scores are compared in float, as onnxruntime does.
  const std::vector<double> bv = real_values(boxes), sv = real_values(scores);
  // Corners and the overlap test are core/nms_math.h's, shared with the CUDA kernels.
  auto suppress = [&](int64_t b, int64_t i, int64_t j) {
    float pi[4], pj[4], a[4], c[4];
    for (int k = 0; k < 4; ++k) {
      pi[k] = static_cast<float>(bv[static_cast<size_t>((b * NB + i) * 4 + k)]);
      pj[k] = static_cast<float>(bv[static_cast<size_t>((b * NB + j) * 4 + k)]);
    }
    nms::corners(pi, center == 1, a);
    nms::corners(pj, center == 1, c);
    return nms::suppresses(a, c, iou_threshold);
  };
  std::vector<int64_t> selected;  // triples
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < NC; ++c) {
      const double* sc = sv.data() + (b * NC + c) * NB;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < NB; ++i)
        if (!score_threshold || static_cast<float>(sc[i]) > *score_threshold) cand.push_back(i);
      // Highest score first, NaN after every number (the spec leaves NaN
      // open; a comparator that is not a strict weak order would leave the
      // order to the sort's implementation), then the lower box index.
      std::sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
        return nms::before(static_cast<float>(sc[p]), p, static_cast<float>(sc[q]), q);
      });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t k : kept)
          if (suppress(b, i, k)) {
            ok = false;
            break;
          }
        if (ok) {
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
  Tensor& y = ctx.allocate_output(0, DataType::Int64, Shape{static_cast<int64_t>(selected.size() / 3), 3});
  for (uint64_t i = 0; i < selected.size(); ++i) store<int64_t>(y, i, selected[i]);
}

}  // namespace

void register_nn_resize_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) { r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr}); };
  add("Resize", Resize, 10);
  add("Upsample", Upsample, 1);
  add("GridSample", GridSample, 16);
  add("AffineGrid", AffineGrid, 20);
  add("RoiAlign", RoiAlign, 10);
  add("NonMaxSuppression", NonMaxSuppression, 10);
}

}  // namespace onnxscope::ref
