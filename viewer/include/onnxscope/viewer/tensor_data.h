// What the tensor viewer computes from a tensor, apart from widgets:
// summary statistics, a histogram, the A-B difference of a pair, 2-D slices
// of N-d tensors, a heatmap image of a slice, and a grid of per-channel
// thumbnails for 4-D (N,C,H,W) activations.
#pragma once

#include <QImage>
#include <QString>
#include <cstdint>
#include <optional>
#include <vector>

#include "onnxscope/dump.h"
#include "onnxscope/tensor.h"

namespace onnxscope::viewer {

// Which 2 axes a table or heatmap shows and where the other axes stand.
// row_axis/col_axis -1: that side has extent 1 (scalars, 1-D tensors).
struct TensorSlice {
  int row_axis = -1, col_axis = -1;
  std::vector<int64_t> index;  // one entry per axis; entries of the shown axes are ignored
};

// Rows = second-to-last axis, columns = last axis, other indices 0.
TensorSlice default_slice(const Tensor& t);
// Clamps axes and indices into the tensor's shape.
TensorSlice clamp_slice(const Tensor& t, TensorSlice s);
int64_t slice_rows(const Tensor& t, const TensorSlice& s);
int64_t slice_cols(const Tensor& t, const TensorSlice& s);
// Flat (row-major) index of cell (r, c) of the slice.
uint64_t slice_flat_index(const Tensor& t, const TensorSlice& s, int64_t r, int64_t c);

// min, max, mean, std over finite values; NaN/Inf counts (engine's tensor_stats).
TensorStats summarize(const Tensor& t);

struct Histogram {
  double lo = 0, hi = 0;          // range of the finite values
  std::vector<uint64_t> counts;   // equal-width bins over [lo, hi], the last one closed
  uint64_t non_finite = 0;        // NaN and Inf elements, not binned
};
Histogram histogram(const Tensor& t, int bins);

// b - a element-wise as float64 of a's shape; nullopt (with why) when the
// two are not comparable (dtype, shape, strings).
std::optional<Tensor> difference(const Tensor& a, const Tensor& b, QString* why = nullptr);

// "float32 [1,16,8,8]"
QString describe(const Tensor& t);
// One element as text (strings as themselves, floats with 6 digits).
QString element_text(const Tensor& t, uint64_t flat_index);

// Colour of v on the viewer's colour scale over [lo, hi]: a diverging
// blue-white-red scale when the range straddles 0, else dark-to-yellow; NaN
// is magenta.
QRgb heat_colour(double v, double lo, double hi);

// One pixel per cell of the slice, scaled over the slice's finite range.
QImage heatmap(const Tensor& t, const TensorSlice& s);
// 4-D (N,C,H,W): the C channels of sample n as thumbnails of `thumb` pixels,
// each scaled over its own range, laid out in a near-square grid with 2 px
// gaps; at most max_channels shown. Null image for other ranks.
QImage channel_grid(const Tensor& t, int64_t n, int thumb = 48, int max_channels = 256);

}  // namespace onnxscope::viewer
