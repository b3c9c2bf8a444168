// The reference's NonMaxSuppression order where the spec leaves it open:
// NaN scores rank after every number (and among themselves by box index),
// equal scores by box index. Before, a comparator that is not a strict weak
// order left NaN's place to std::stable_sort; the CUDA engine ranks boxes
// by this rule too (kernels/nms.h), and its tests compare the two.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model_builder.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// The boxes kept, in output order, for six boxes that do not overlap.
std::vector<int64_t> kept_order(const std::vector<float>& scores) {
  const auto n = static_cast<int64_t>(scores.size());
  ModelBuilder mb(11);
  mb.input("boxes", DataType::Float, {int64_t{1}, n, int64_t{4}});
  mb.input("scores", DataType::Float, {int64_t{1}, int64_t{1}, n});
  mb.initializer(make_int64_tensor("max_out", {1}, {n}));
  mb.node("NonMaxSuppression", {"boxes", "scores", "max_out"}, {"kept"});
  mb.output_untyped("kept");
  auto r = mb.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  Tensor boxes = Tensor::zeros(DataType::Float, {1, n, 4});
  Tensor s = Tensor::zeros(DataType::Float, {1, 1, n});
  for (int64_t i = 0; i < n; ++i) {
    float* p = boxes.mutable_data<float>() + i * 4;
    p[0] = p[1] = 2.f * static_cast<float>(i);
    p[2] = p[3] = p[0] + 1.f;
    s.mutable_data<float>()[i] = scores[static_cast<size_t>(i)];
  }
  auto out = make_reference_engine()->prepare(m)->run({{"boxes", Value(boxes)}, {"scores", Value(s)}}, {});
  const Tensor& y = out[0].second.tensor();
  std::vector<int64_t> order;
  for (int64_t k = 0; k < y.shape()[0]; ++k) order.push_back(y.data<int64_t>()[k * 3 + 2]);
  return order;
}

}  // namespace

TEST(ReferenceNms, NaNScoresRankAfterEveryNumberAndTiesByIndex) {
  const float nan = std::nanf("");
  EXPECT_EQ(kept_order({nan, 0.5f, nan, 0.7f, 0.5f, -1.f}), (std::vector<int64_t>{3, 1, 4, 5, 0, 2}));
  EXPECT_EQ(kept_order({nan, nan, nan}), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(kept_order({0.1f, nan, 0.9f}), (std::vector<int64_t>{2, 0, 1}));
}
