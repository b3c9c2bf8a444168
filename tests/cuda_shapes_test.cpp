// The CUDA engine's host-side shape arithmetic (cuda/shapes.h), in every
// build: broadcast strides walk the same elements as the numpy rule, the
// view ops' shapes follow the spec (and refuse what it refuses), and MatMul
// maps onto a strided-batched GEMM only where that is exact.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
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

// A strided copy carried out byte by byte: as given (units of `width`
// bytes) and as planned (units of p.unit bytes), into y, from x.
void copy_bytes(const std::vector<int64_t>& dims, const std::vector<int64_t>& in_stride, const std::vector<int64_t>& out_stride,
                int64_t in_base, int64_t out_base, int width, const unsigned char* x, unsigned char* y) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, in = in_base, out = out_base;
    for (size_t d = dims.size(); d-- > 0;) {
      const int64_t c = rest % dims[d];
      rest /= dims[d];
      in += c * in_stride[d];
      out += c * out_stride[d];
    }
    std::memcpy(y + out * width, x + in * width, static_cast<size_t>(width));
  }
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

// BERT's attention transpose ([32, 128, 12, 64] to [32, 12, 128, 64]) keeps
// its rank (no neighbours run on together) and moves 16-byte units; a
// contiguous copy is one dim; an address off the unit, or an odd inner size,
// narrows the unit; a broadcast inner dim is not widened.
TEST(CudaShapes, CopyPlanMergesAndWidens) {
  const std::vector<int64_t> dims = {32, 12, 128, 64}, in = {128 * 768, 64, 768, 1}, out = {12 * 128 * 64, 128 * 64, 64, 1};
  CopyPlan p = plan_copy(dims, in, out, 0, 0, 4, 256, 512);
  EXPECT_EQ(p.unit, 16);
  EXPECT_EQ(p.dims, (std::vector<int64_t>{32, 12, 128, 16}));
  EXPECT_EQ(p.in_stride, (std::vector<int64_t>{128 * 192, 16, 192, 1}));
  p = plan_copy(dims, in, out, 0, 0, 4, 256, 512 + 8);  // y on 8 bytes only
  EXPECT_EQ(p.unit, 8);
  const std::vector<int64_t> flat = {2, 3, 1, 5}, flat_stride = {15, 5, 5, 1};
  p = plan_copy(flat, flat_stride, flat_stride, 0, 0, 2, 0, 0);
  EXPECT_EQ(p.dims, (std::vector<int64_t>{15}));  // 30 halves as one dim: 60 bytes, units of 4
  EXPECT_EQ(p.unit, 4);
  const std::vector<int64_t> expand = {4, 8}, expand_in = {1, 0}, expand_out = {8, 1};
  p = plan_copy(expand, expand_in, expand_out, 0, 0, 4, 0, 0);
  EXPECT_EQ(p.unit, 4);
  EXPECT_EQ(p.dims, expand);
}

// On random copies (transposes, slices with steps, broadcasts, offsets,
// element widths 1 to 8, addresses off alignment) the plan moves exactly
// the bytes the copy as given moves.
TEST(CudaShapes, CopyPlanMovesTheSameBytes) {
  std::mt19937 gen(7);
  int widened = 0, merged = 0;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int round = 0; round < 400; ++round) {
    const int rank = pick(0, 5), width = 1 << pick(0, 3);
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int64_t& d : dims) d = pick(1, 4) * (pick(0, 1) ? 4 : 1);
    // The source: a contiguous buffer of (possibly larger) dims, read through
    // a permutation, steps and broadcast dims; the output contiguous or placed
    // inside a larger buffer (a Concat).
    std::vector<int64_t> src_dims(dims), perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    if (pick(0, 1)) std::shuffle(perm.begin(), perm.end(), gen);
    std::vector<int64_t> steps(static_cast<size_t>(rank), 1);
    for (int d = 0; d < rank; ++d)
      if (pick(0, 3) == 0) steps[static_cast<size_t>(d)] = 2;
    std::vector<int64_t> src_extent(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) src_extent[static_cast<size_t>(d)] = dims[static_cast<size_t>(perm[static_cast<size_t>(d)])] * steps[static_cast<size_t>(perm[static_cast<size_t>(d)])];
    std::vector<int64_t> src_stride(static_cast<size_t>(rank), 1);
    for (int d = rank - 1; d > 0; --d) src_stride[static_cast<size_t>(d - 1)] = src_stride[static_cast<size_t>(d)] * src_extent[static_cast<size_t>(d)];
    std::vector<int64_t> in(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) in[static_cast<size_t>(perm[static_cast<size_t>(d)])] = src_stride[static_cast<size_t>(d)] * steps[static_cast<size_t>(perm[static_cast<size_t>(d)])];
    for (int d = 0; d < rank; ++d)
      if (pick(0, 5) == 0) in[static_cast<size_t>(d)] = 0;  // broadcast
    const int64_t pad = pick(0, 1) ? pick(1, 3) : 0;  // the output inside a wider buffer
    std::vector<int64_t> out(static_cast<size_t>(rank), 1);
    for (int d = rank - 1; d > 0; --d) out[static_cast<size_t>(d - 1)] = out[static_cast<size_t>(d)] * (dims[static_cast<size_t>(d)] + (d == rank - 1 ? pad : 0));
    const int64_t in_base = pick(0, 1) ? pick(0, 8) : 0, out_base = pick(0, 1) ? pick(0, 8) : 0;
    int64_t src_count = 1, dst_count = 1;
    for (int d = 0; d < rank; ++d) src_count *= src_extent[static_cast<size_t>(d)];
    dst_count = rank ? out[0] * dims[0] : 1;
    std::vector<unsigned char> x(static_cast<size_t>((src_count + in_base) * width + 64));
    for (auto& b : x) b = static_cast<unsigned char>(pick(0, 255));
    const size_t xoff = static_cast<size_t>(pick(0, 1) ? 0 : pick(0, 16)), yoff = static_cast<size_t>(pick(0, 1) ? 0 : pick(0, 16));
    // Addresses as a device's would be: 256-aligned plus the offset.
    const uintptr_t xa = 4096 + xoff, ya = 8192 + yoff;
    std::vector<unsigned char> want(static_cast<size_t>((dst_count + out_base) * width + 64), 0), got(want);
    copy_bytes(dims, in, out, in_base, out_base, width, x.data(), want.data());
    const CopyPlan p = plan_copy(dims, in, out, in_base, out_base, width, xa, ya);
    ASSERT_EQ(p.unit % width, 0);
    ASSERT_LE(p.dims.size(), dims.size());
    widened += p.unit > width;
    merged += p.dims.size() < dims.size();
    if (p.unit > width) {
      ASSERT_EQ(xa % static_cast<uintptr_t>(p.unit), 0u);
      ASSERT_EQ(ya % static_cast<uintptr_t>(p.unit), 0u);
    }
    copy_bytes(p.dims, p.in_stride, p.out_stride, p.in_base, p.out_base, p.unit, x.data(), got.data());
    ASSERT_EQ(got, want) << "round " << round << ", rank " << rank << ", width " << width << ", unit " << p.unit;
  }
  EXPECT_GT(widened, 20);  // the cases reach the paths they are here for (27 and more of 400)
  EXPECT_GT(merged, 40);
}
