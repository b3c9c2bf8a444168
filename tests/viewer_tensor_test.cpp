// Tensor viewer under QT_QPA_PLATFORM=offscreen: statistics, histogram bins,
// the slicing table model (values and laziness), the A-B difference, the
// heatmap colours and the per-channel grid, against hand computation.
#include <gtest/gtest.h>

#include <QApplication>
#include <QTableView>
#include <cmath>
#include <cstring>

#include "onnxscope/viewer/tensor_data.h"
#include "onnxscope/viewer/tensor_table_model.h"
#include "onnxscope/viewer/tensor_view.h"

using namespace onnxscope;
using namespace onnxscope::viewer;

namespace {

Tensor floats(Shape s, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

// Element i holds i.
Tensor iota(Shape s) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(s));
  for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<float>()[i] = static_cast<float>(i);
  return t;
}

}  // namespace

TEST(TensorData, StatisticsMatchHandComputation) {
  Tensor t = floats({6}, {1, 2, 3, NAN, INFINITY, -1});
  TensorStats s = summarize(t);
  EXPECT_EQ(s.elements, 6u);
  EXPECT_EQ(s.nan_count, 1u);
  EXPECT_EQ(s.inf_count, 1u);
  EXPECT_EQ(s.min, -1);
  EXPECT_TRUE(std::isinf(s.max));
  // Mean and std over the finite values 1, 2, 3, -1.
  EXPECT_DOUBLE_EQ(s.mean, 1.25);
  EXPECT_NEAR(s.stddev, std::sqrt((1 + 4 + 9 + 1) / 4.0 - 1.25 * 1.25), 1e-12);
  EXPECT_EQ(describe(t), "float [6]");
}

TEST(TensorData, HistogramBinsFiniteValuesWithTheLastBinClosed) {
  Histogram h = histogram(floats({6}, {1, 2, 3, NAN, INFINITY, -1}), 4);
  EXPECT_EQ(h.lo, -1);
  EXPECT_EQ(h.hi, 3);
  ASSERT_EQ(h.counts.size(), 4u);
  // Bins of width 1: [-1,0) [0,1) [1,2) [2,3].
  EXPECT_EQ(h.counts[0], 1u);
  EXPECT_EQ(h.counts[1], 0u);
  EXPECT_EQ(h.counts[2], 1u);
  EXPECT_EQ(h.counts[3], 2u);
  EXPECT_EQ(h.non_finite, 2u);
  Histogram flat = histogram(floats({3}, {5, 5, 5}), 8);
  EXPECT_EQ(flat.counts[0], 3u);  // one value: everything in the first bin
}

TEST(TensorData, DifferenceIsBMinusAAndRefusesMismatches) {
  QString why;
  auto d = difference(floats({2, 2}, {1, 2, 3, 4}), floats({2, 2}, {1, 2.5f, 2, 4}), &why);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->dtype(), DataType::Double);
  EXPECT_EQ(d->shape(), (Shape{2, 2}));
  EXPECT_EQ(d->data<double>()[0], 0);
  EXPECT_EQ(d->data<double>()[1], 0.5);
  EXPECT_EQ(d->data<double>()[2], -1);
  EXPECT_FALSE(difference(floats({2}, {1, 2}), floats({1, 2}, {1, 2}), &why));
  EXPECT_TRUE(why.contains("shape")) << why.toStdString();
}

// float16 against float32 is a difference in double, with a note; values
// that agree (the same infinity, NaN and NaN) differ by 0; inf against a
// finite value stays inf.
TEST(TensorData, DifferenceAcrossTypesAndNonFiniteValues) {
  Tensor h = Tensor::zeros(DataType::Float16, {4});
  const uint16_t bits[] = {0x3C00 /*1*/, 0x7C00 /*inf*/, 0x7E00 /*nan*/, 0x7C00};
  std::memcpy(h.mutable_raw(), bits, sizeof bits);
  QString why;
  auto d = difference(floats({4}, {1.25f, INFINITY, NAN, 3}), h, &why);
  ASSERT_TRUE(d) << why.toStdString();
  EXPECT_EQ(why, "B is float16, A float: compared in double");
  EXPECT_EQ(d->data<double>()[0], -0.25);
  EXPECT_EQ(d->data<double>()[1], 0);
  EXPECT_EQ(d->data<double>()[2], 0);
  EXPECT_TRUE(std::isinf(d->data<double>()[3]));
  Tensor i = Tensor::zeros(DataType::Int64, {4});
  EXPECT_FALSE(difference(floats({4}, {1, 2, 3, 4}), i, &why));
  EXPECT_TRUE(why.contains("dtype float vs int64")) << why.toStdString();
  TensorPanel p;
  p.show_values("t", Value(floats({4}, {1.25f, INFINITY, NAN, 3})), Value(h), "reference", "ort");
  EXPECT_TRUE(p.view_diff()->table_model()->has_tensor());
  EXPECT_TRUE(p.view_diff()->title_text().contains("ort - reference (B is float16, A float: compared in double)"))
      << p.view_diff()->title_text().toStdString();
}

TEST(TensorTableModel, SlicesAnNdTensorByChosenAxesAndIndices) {
  Tensor t = iota({2, 3, 4});
  TensorTableModel m;
  m.set_tensor(t);
  // Default: rows = axis 1, cols = axis 2, axis 0 at 0.
  EXPECT_EQ(m.rowCount(), 3);
  EXPECT_EQ(m.columnCount(), 4);
  EXPECT_EQ(m.index(2, 3).data(TensorTableModel::ValueRole).toDouble(), 2 * 4 + 3);
  m.set_index(0, 1);
  EXPECT_EQ(m.index(2, 3).data(TensorTableModel::ValueRole).toDouble(), 12 + 2 * 4 + 3);
  // Rows = axis 0, cols = axis 2, axis 1 fixed at 2: cell (r, c) = r*12 + 2*4 + c.
  TensorSlice s = m.slice();
  s.row_axis = 0;
  s.col_axis = 2;
  s.index = {0, 2, 0};
  m.set_slice(s);
  ASSERT_EQ(m.rowCount(), 2);
  ASSERT_EQ(m.columnCount(), 4);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(m.index(r, c).data(TensorTableModel::ValueRole).toDouble(), r * 12 + 8 + c) << r << "," << c;
  EXPECT_EQ(m.index(1, 1).data().toString(), "21");
  // Out-of-range indices clamp instead of reading past the tensor.
  m.set_index(1, 99);
  EXPECT_EQ(m.slice().index[1], 2);
  // 1-D: one column; scalars: one cell.
  m.set_tensor(iota({5}));
  EXPECT_EQ(m.rowCount(), 5);
  EXPECT_EQ(m.columnCount(), 1);
  m.set_tensor(floats({}, {7}));
  EXPECT_EQ(m.rowCount(), 1);
  EXPECT_EQ(m.index(0, 0).data().toString(), "7");
}

TEST(TensorTableModel, ReadsOnlyTheCellsAViewShows) {
  Tensor big = iota({1000, 1000});  // a million cells
  TensorTableModel m;
  m.set_tensor(big);
  QTableView view;
  view.setModel(&m);
  view.resize(400, 300);
  view.show();
  QCoreApplication::processEvents();
  view.grab();  // paint once
  EXPECT_GT(m.cells_read(), 0u);
  EXPECT_LT(m.cells_read(), 2000u) << "the model read far more than the visible cells";
}

TEST(TensorData, HeatmapColoursFollowTheValues) {
  Tensor t = iota({2, 3});  // 0..5, all >= 0: sequential scale
  QImage img = heatmap(t, default_slice(t));
  ASSERT_EQ(img.width(), 3);
  ASSERT_EQ(img.height(), 2);
  EXPECT_EQ(img.pixel(0, 0), heat_colour(0, 0, 5));
  EXPECT_EQ(img.pixel(2, 1), heat_colour(5, 0, 5));
  EXPECT_NE(img.pixel(0, 0), img.pixel(2, 1));
  // A range around zero uses the diverging scale: 0 is white.
  Tensor signed_t = floats({1, 3}, {-2, 0, 2});
  QImage s = heatmap(signed_t, default_slice(signed_t));
  EXPECT_EQ(s.pixel(1, 0), qRgb(255, 255, 255));
  EXPECT_GT(qBlue(s.pixel(0, 0)), qRed(s.pixel(0, 0)));
  EXPECT_GT(qRed(s.pixel(2, 0)), qBlue(s.pixel(2, 0)));
  EXPECT_EQ(heat_colour(NAN, 0, 1), qRgb(255, 0, 255));
}

TEST(TensorData, ChannelGridHasOneThumbnailPerChannel) {
  Tensor t = iota({2, 5, 4, 4});
  QImage g = channel_grid(t, 1, 16);
  // 5 channels in a 3-wide grid of 2 rows, 16 px thumbnails with 2 px gaps.
  EXPECT_EQ(g.width(), 3 * 18 + 2);
  EXPECT_EQ(g.height(), 2 * 18 + 2);
  // Each channel is scaled over its own range: every thumbnail's first pixel
  // is its channel's minimum colour.
  const QRgb lowest = heat_colour(0, 0, 1);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(g.pixel(2 + (c % 3) * 18, 2 + (c / 3) * 18), lowest) << c;
  EXPECT_TRUE(channel_grid(iota({3, 3}), 0).isNull());
}

TEST(TensorPanel, ShowsABAndTheirDifferenceWithOneSlice) {
  TensorPanel p;
  p.resize(1200, 600);
  p.show();
  Tensor a = iota({2, 3, 4}), b = iota({2, 3, 4});
  b.mutable_data<float>()[5] += 1.5f;
  p.show_values("t", Value(a), Value(b), "reference", "cpu");
  ASSERT_TRUE(p.view_b()->isVisible());
  ASSERT_TRUE(p.view_diff()->isVisible());
  auto* dm = p.view_diff()->table_model();
  ASSERT_TRUE(dm->has_tensor());
  // Flat 5 = [0,1,1] sits at row 1, col 1 of the default slice.
  EXPECT_DOUBLE_EQ(dm->index(1, 1).data(TensorTableModel::ValueRole).toDouble(), 1.5);
  EXPECT_TRUE(p.view_diff()->stats_text().contains("max 1.5")) << p.view_diff()->stats_text().toStdString();
  // Moving A's slice moves B's and the difference's with it.
  TensorSlice s = p.view_a()->table_model()->slice();
  s.index[0] = 1;
  p.view_a()->set_slice(s);
  emit p.view_a()->slice_edited(p.view_a()->table_model()->slice());
  EXPECT_EQ(p.view_b()->table_model()->slice().index[0], 1);
  EXPECT_EQ(p.view_diff()->table_model()->slice().index[0], 1);
  // One side only: B and the difference hide.
  p.show_values("u", Value(a), std::nullopt);
  EXPECT_FALSE(p.view_b()->isVisible());
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
