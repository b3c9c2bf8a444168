// Reference kernel: GridSample.
//
// Interpolation weights and sums are computed in double (float16/float
// inputs included) and rounded once on store.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/grid_sample_math.h"
#include "core/nms_math.h"
#include "core/roi_align_math.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "core/resize_plan.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Counter;
using grid::reflect;
namespace {

// Integer X is interpolated in double and rounded half to even on store, like
// Resize (onnx's Python reference truncates its integer weights instead).

using grid::cubic_weights;  // core/grid_sample_math.h, shared with the CUDA kernel

}  // namespace

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

}  // namespace onnxscope::ref
