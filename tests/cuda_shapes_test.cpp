// The CUDA engine's host-side shape arithmetic (cuda/shapes.h), in every
// build: broadcast strides walk the same elements as the numpy rule, the
// view ops' shapes follow the spec (and refuse what it refuses), and MatMul
// maps onto a strided-batched GEMM only where that is exact.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "cuda/shapes.h"

using namespace onnxscope;
using namespace onnxscope::cuda;

namespace {

// The offsets a kernel computes from the strides, for every output element.
std::vector<std::pair<int64_t, int64_t>> offsets(const Broadcast& b) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < b.count; ++i) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int d = b.rank - 1; d >= 0; --d) {
      const int64_t c = rest % b.out[static_cast<size_t>(d)];
      rest /= b.out[static_cast<size_t>(d)];
      oa += c * b.a_stride[static_cast<size_t>(d)];
      ob += c * b.b_stride[static_cast<size_t>(d)];
    }
    out.emplace_back(oa, ob);
  }
  return out;
}

}  // namespace

TEST(CudaShapes, BroadcastStridesFollowNumpy) {
  auto b = broadcast({2, 1, 3}, {4, 1});
  ASSERT_TRUE(b);
  EXPECT_EQ(broadcast_shape(*b), (Shape{2, 4, 3}));
  const auto off = offsets(*b);
  ASSERT_EQ(off.size(), 24u);
  // out[i][j][k] = a[i][0][k] op b[j][0]
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const auto [oa, ob] = off[static_cast<size_t>((i * 4 + j) * 3 + k)];
        EXPECT_EQ(oa, i * 3 + k);
        EXPECT_EQ(ob, j);
      }
  EXPECT_FALSE(broadcast({2, 3}, {4, 3}));
  EXPECT_FALSE(broadcast(Shape(9, 1), {1}));  // beyond the kernel's rank
  auto scalar = broadcast({}, {5});
  ASSERT_TRUE(scalar);
  EXPECT_EQ(scalar->a_stride[0], 0);
  EXPECT_EQ(broadcast({3, 0}, {1, 1})->count, 0);
}

TEST(CudaShapes, ViewOpsFollowTheSpec) {
  const std::vector<int64_t> t1{0, -1};
  EXPECT_EQ(reshape_shape({2, 3, 4}, t1, false), (Shape{2, 12}));
  const std::vector<int64_t> t2{0, 4};
  EXPECT_EQ(reshape_shape({0, 4}, t2, true), (Shape{0, 4}));
  const std::vector<int64_t> bad{5, -1};
  EXPECT_THROW(reshape_shape({2, 3, 4}, bad, false), std::invalid_argument);
  const std::vector<int64_t> two_infer{-1, -1};
  EXPECT_THROW(reshape_shape({4}, two_infer, false), std::invalid_argument);
  const std::vector<int64_t> ax{1, -1};
  EXPECT_EQ(unsqueeze_shape({3, 4}, ax), (Shape{3, 1, 4, 1}));
  const std::vector<int64_t> twice{0, 0};
  EXPECT_THROW(unsqueeze_shape({3}, twice), std::invalid_argument);
  EXPECT_EQ(squeeze_shape({1, 3, 1}, {}), (Shape{3}));
  const std::vector<int64_t> sq{-1};
  EXPECT_EQ(squeeze_shape({1, 3, 1}, sq), (Shape{1, 3}));
  const std::vector<int64_t> not_one{1};
  EXPECT_THROW(squeeze_shape({1, 3, 1}, not_one), std::invalid_argument);
  EXPECT_EQ(flatten_shape({2, 3, 4}, 1), (Shape{2, 12}));
  EXPECT_EQ(flatten_shape({2, 3, 4}, 0), (Shape{1, 24}));
  EXPECT_EQ(flatten_shape({2, 3, 4}, -1), (Shape{6, 4}));
  EXPECT_THROW(flatten_shape({2, 3}, 3), std::invalid_argument);
}

TEST(CudaShapes, MatMulAsOneStridedBatchedGemm) {
  auto p = matmul_plan({8, 128, 768}, {768, 3072});  // a transformer's linear layer
  ASSERT_TRUE(p);
  EXPECT_EQ(p->batch, 8);
  EXPECT_EQ(p->m, 128);
  EXPECT_EQ(p->k, 768);
  EXPECT_EQ(p->n, 3072);
  EXPECT_EQ(p->b_stride, 0);
  EXPECT_EQ(p->out, (Shape{8, 128, 3072}));
  auto q = matmul_plan({2, 12, 128, 64}, {2, 12, 64, 128});  // attention scores
  ASSERT_TRUE(q);
  EXPECT_EQ(q->batch, 24);
  EXPECT_EQ(q->b_stride, 64 * 128);
  EXPECT_FALSE(matmul_plan({2, 3, 4}, {5, 6}));         // K mismatch
  EXPECT_FALSE(matmul_plan({4}, {4, 3}));               // 1-D: the CPU engine's
  EXPECT_FALSE(matmul_plan({2, 3, 4}, {3, 4, 5}));      // batch dims that broadcast otherwise
  EXPECT_FALSE(matmul_plan({3, 4}, {1, 4, 5}));         // B's batch would add a dim
}
