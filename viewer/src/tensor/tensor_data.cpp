#include "onnxscope/viewer/tensor_data.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

namespace onnxscope::viewer {

namespace {

std::vector<uint64_t> strides(const Shape& shape) {
  std::vector<uint64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * static_cast<uint64_t>(std::max<int64_t>(shape[i], 0));
  return s;
}

int64_t extent(const Tensor& t, int axis) { return axis < 0 ? 1 : t.shape()[static_cast<size_t>(axis)]; }

// Finite range of the given elements; {0, 0} when none are finite.
template <typename F>
std::pair<double, double> finite_range(uint64_t count, F value_at) {
  double lo = INFINITY, hi = -INFINITY;
  for (uint64_t i = 0; i < count; ++i) {
    const double v = value_at(i);
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) return {0, 0};
  return {lo, hi};
}

// Element i as double, with direct reads for float32 (most activations) and
// float64 (differences): element_as_double dispatches on the dtype per element.
struct Reader {
  const Tensor& t;
  const float* f32 = t.dtype() == DataType::Float ? t.data<float>() : nullptr;
  const double* f64 = t.dtype() == DataType::Double ? t.data<double>() : nullptr;
  double operator()(uint64_t i) const {
    return f32 ? static_cast<double>(f32[i]) : f64 ? f64[i] : t.element_as_double(i);
  }
};

// Flat index of slice cell (r, c) = base + r * row_stride + c * col_stride.
struct SliceIndex {
  uint64_t base = 0, row_stride = 0, col_stride = 0;
  SliceIndex(const Tensor& t, const TensorSlice& s) {
    const auto st = strides(t.shape());
    for (size_t a = 0; a < st.size(); ++a) {
      if (static_cast<int>(a) == s.row_axis) row_stride = st[a];
      else if (static_cast<int>(a) == s.col_axis) col_stride = st[a];
      else base += static_cast<uint64_t>(s.index[a]) * st[a];
    }
  }
  uint64_t at(int64_t r, int64_t c) const {
    return base + static_cast<uint64_t>(r) * row_stride + static_cast<uint64_t>(c) * col_stride;
  }
};

QRgb mix(QRgb a, QRgb b, double f) {
  auto ch = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
  return qRgb(ch(qRed(a), qRed(b)), ch(qGreen(a), qGreen(b)), ch(qBlue(a), qBlue(b)));
}

}  // namespace

TensorSlice default_slice(const Tensor& t) {
  TensorSlice s;
  const int r = static_cast<int>(t.rank());
  s.index.assign(static_cast<size_t>(r), 0);
  if (r >= 2) {
    s.row_axis = r - 2;
    s.col_axis = r - 1;
  } else if (r == 1) {
    s.row_axis = 0;
  }
  return s;
}

TensorSlice clamp_slice(const Tensor& t, TensorSlice s) {
  const int r = static_cast<int>(t.rank());
  if (s.row_axis >= r) s.row_axis = -1;
  if (s.col_axis >= r || s.col_axis == s.row_axis) s.col_axis = -1;
  s.index.resize(static_cast<size_t>(r), 0);
  for (int a = 0; a < r; ++a) {
    const int64_t dim = t.shape()[static_cast<size_t>(a)];
    s.index[static_cast<size_t>(a)] = std::clamp<int64_t>(s.index[static_cast<size_t>(a)], 0, std::max<int64_t>(dim - 1, 0));
  }
  return s;
}

int64_t slice_rows(const Tensor& t, const TensorSlice& s) { return extent(t, s.row_axis); }
int64_t slice_cols(const Tensor& t, const TensorSlice& s) { return extent(t, s.col_axis); }

uint64_t slice_flat_index(const Tensor& t, const TensorSlice& s, int64_t r, int64_t c) {
  const auto st = strides(t.shape());
  uint64_t flat = 0;
  for (size_t a = 0; a < st.size(); ++a) {
    int64_t i = static_cast<int>(a) == s.row_axis ? r : static_cast<int>(a) == s.col_axis ? c : s.index[a];
    flat += static_cast<uint64_t>(i) * st[a];
  }
  return flat;
}

TensorStats summarize(const Tensor& t) { return tensor_stats(t); }

Histogram histogram(const Tensor& t, int bins) {
  Histogram h;
  bins = std::max(1, bins);
  h.counts.assign(static_cast<size_t>(bins), 0);
  if (t.is_string() || t.element_count() == 0) return h;
  const Reader read{t};
  auto [lo, hi] = finite_range(t.element_count(), read);
  h.lo = lo;
  h.hi = hi;
  const double width = (hi - lo) / bins;
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    const double v = read(i);
    if (!std::isfinite(v)) {
      ++h.non_finite;
      continue;
    }
    int b = width > 0 ? static_cast<int>((v - lo) / width) : 0;
    ++h.counts[static_cast<size_t>(std::clamp(b, 0, bins - 1))];
  }
  return h;
}

std::optional<Tensor> difference(const Tensor& a, const Tensor& b, QString* why) {
  auto fail = [&](QString w) -> std::optional<Tensor> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (a.is_string() || b.is_string()) return fail("string tensors have no difference");
  // Numbers of two types (float16 against float32, int32 against int64) are
  // compared in double, as the diff does; the note says so.
  auto kind = [](DataType t) {
    const DTypeInfo& i = dtype_info(t);
    return i.is_float && !i.is_complex ? 1 : i.is_integer && t != DataType::Bool ? 2 : 0;
  };
  if (a.dtype() != b.dtype() && (kind(a.dtype()) != kind(b.dtype()) || kind(a.dtype()) == 0))
    return fail(QString("dtype %1 vs %2").arg(QString::fromUtf8(dtype_name(a.dtype()).data()),
                                              QString::fromUtf8(dtype_name(b.dtype()).data())));
  if (a.shape() != b.shape())
    return fail(QString("shape %1 vs %2").arg(QString::fromStdString(shape_to_string(a.shape())),
                                              QString::fromStdString(shape_to_string(b.shape()))));
  Tensor d = Tensor::zeros(DataType::Double, a.shape());
  double* out = d.mutable_data<double>();
  const Reader ra{a}, rb{b};
  for (uint64_t i = 0; i < a.element_count(); ++i) {
    const double x = ra(i), y = rb(i);
    // Values that agree differ by 0, the same infinity and NaN against NaN
    // included; inf against a finite value stays inf, NaN against a number NaN.
    out[i] = (x == y || (std::isnan(x) && std::isnan(y))) ? 0.0 : y - x;
  }
  if (why)
    *why = a.dtype() == b.dtype() ? QString()
                                  : QString("B is %1, A %2: compared in double")
                                        .arg(QString::fromUtf8(dtype_name(b.dtype()).data()),
                                             QString::fromUtf8(dtype_name(a.dtype()).data()));
  return d;
}

QString describe(const Tensor& t) {
  return QString("%1 %2").arg(QString::fromUtf8(dtype_name(t.dtype()).data()),
                              QString::fromStdString(shape_to_string(t.shape())));
}

QString element_text(const Tensor& t, uint64_t i) {
  if (i >= t.element_count()) return {};
  if (t.is_string()) return QString::fromStdString(t.strings()[i]);
  const DTypeInfo& info = dtype_info(t.dtype());
  if (t.dtype() == DataType::Bool) return t.element_as_int64(i) ? "true" : "false";
  if (info.is_integer) return QString::number(t.element_as_int64(i));
  return QString::number(t.element_as_double(i), 'g', 6);
}

QRgb heat_colour(double v, double lo, double hi) {
  if (std::isnan(v)) return qRgb(255, 0, 255);
  if (lo < 0 && hi > 0) {
    // Diverging around zero so the sign of a value (or of an error) shows.
    const double m = std::max(-lo, hi);
    const double f = std::clamp(v / m, -1.0, 1.0);
    return f < 0 ? mix(qRgb(255, 255, 255), qRgb(40, 80, 200), -f) : mix(qRgb(255, 255, 255), qRgb(200, 40, 40), f);
  }
  const double f = hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 0.5;
  static const QRgb stops[] = {qRgb(20, 12, 50), qRgb(120, 30, 110), qRgb(220, 80, 60), qRgb(252, 230, 90)};
  const double x = f * 3;
  const int k = std::min(2, static_cast<int>(x));
  return mix(stops[k], stops[k + 1], x - k);
}

QImage heatmap(const Tensor& t, const TensorSlice& s0) {
  if (t.is_string() || t.element_count() == 0) return {};
  TensorSlice s = clamp_slice(t, s0);
  const int64_t rows = slice_rows(t, s), cols = slice_cols(t, s);
  if (rows > 16384 || cols > 16384) return {};
  const Reader read{t};
  const SliceIndex idx(t, s);
  auto at = [&](uint64_t k) { return read(idx.at(static_cast<int64_t>(k) / cols, static_cast<int64_t>(k) % cols)); };
  auto [lo, hi] = finite_range(static_cast<uint64_t>(rows * cols), at);
  QImage img(static_cast<int>(cols), static_cast<int>(rows), QImage::Format_RGB32);
  for (int64_t r = 0; r < rows; ++r) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(static_cast<int>(r)));
    for (int64_t c = 0; c < cols; ++c) {
      double v = read(idx.at(r, c));
      if (std::isinf(v)) v = v > 0 ? hi : lo;
      line[c] = heat_colour(v, lo, hi);
    }
  }
  return img;
}

QImage channel_grid(const Tensor& t, int64_t n, int thumb, int max_channels) {
  if (t.rank() != 4 || t.is_string() || t.element_count() == 0) return {};
  const auto& sh = t.shape();
  n = std::clamp<int64_t>(n, 0, sh[0] - 1);
  const int channels = static_cast<int>(std::min<int64_t>(sh[1], max_channels));
  const int per_row = std::max(1, static_cast<int>(std::ceil(std::sqrt(channels))));
  const int grid_rows = (channels + per_row - 1) / per_row;
  constexpr int gap = 2;
  QImage grid(per_row * (thumb + gap) + gap, grid_rows * (thumb + gap) + gap, QImage::Format_RGB32);
  grid.fill(qRgb(60, 60, 60));
  QPainter p(&grid);
  TensorSlice s;
  s.row_axis = 2;
  s.col_axis = 3;
  s.index = {n, 0, 0, 0};
  for (int c = 0; c < channels; ++c) {
    s.index[1] = c;
    QImage one = heatmap(t, s);
    if (one.isNull()) continue;
    QImage scaled = one.scaled(thumb, thumb, Qt::KeepAspectRatio, Qt::FastTransformation);
    p.drawImage(gap + (c % per_row) * (thumb + gap), gap + (c / per_row) * (thumb + gap), scaled);
  }
  return grid;
}

}  // namespace onnxscope::viewer
