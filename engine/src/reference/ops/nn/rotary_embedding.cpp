// Reference kernel: RotaryEmbedding.
//
// Inputs are widened to double and sums accumulate in double; where the
// spec's computation graph has an intermediate tensor of the input type
// (Attention's QK^T, its softmax output) the value is rounded to that type
// there, so narrow-float results follow the spec's precision.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/attention_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/nn/contrib_attention_common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void RotaryEmbedding(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& cos_cache = ctx.input(1);
  const Tensor& sin_cache = ctx.input(2);
  const Tensor* pos = ctx.optional_input(3);
  real::require_float(ctx, X, "X");
  if (cos_cache.dtype() != X.dtype() || sin_cache.dtype() != X.dtype()) ctx.fail("cos_cache and sin_cache must have the type of X");
  if (cos_cache.shape() != sin_cache.shape()) ctx.fail("cos_cache and sin_cache must have the same shape");
  HeadLayout xl;  // logical (B, H, S, D)
  int64_t B = 0;
  if (X.rank() == 4) {
    B = X.shape()[0];
    xl = HeadLayout{false, X.shape()[1], X.shape()[2], X.shape()[3]};
  } else if (X.rank() == 3) {
    const int64_t heads = ctx.attr_int("num_heads", 0);
    if (heads <= 0) ctx.fail("3-D input needs a positive num_heads attribute");
    if (X.shape()[2] % heads != 0) ctx.fail("hidden size " + std::to_string(X.shape()[2]) + " is not divisible by num_heads");
    B = X.shape()[0];
    xl = HeadLayout{true, heads, X.shape()[1], X.shape()[2] / heads};
  } else {
    ctx.fail("X must be 3-D or 4-D, got " + shape_to_string(X.shape()));
  }
  const int64_t H = xl.H, S = xl.S, D = xl.D;
  int64_t rd = ctx.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2 != 0) ctx.fail("rotary_embedding_dim " + std::to_string(rd) + " must be even and at most head_size " + std::to_string(D));
  const int64_t half = rd / 2;
  const bool interleaved = ctx.attr_int("interleaved", 0) != 0;
  if (cos_cache.shape().empty() || cos_cache.shape().back() != half)
    ctx.fail("cos/sin cache last dimension must be rotary_embedding_dim/2 = " + std::to_string(half) + ", got " +
             shape_to_string(cos_cache.shape()));
  std::vector<int64_t> pids;
  int64_t max_pos = 0;
  if (pos) {
    if (pos->shape() != Shape{B, S}) ctx.fail("position_ids must have shape [" + std::to_string(B) + "," + std::to_string(S) + "]");
    if (cos_cache.rank() != 2) ctx.fail("with position_ids the caches must be 2-D, got " + shape_to_string(cos_cache.shape()));
    max_pos = cos_cache.shape()[0];
    pids.resize(size_t(B * S));
    for (uint64_t i = 0; i < pids.size(); ++i) {
      pids[i] = pos->element_as_int64(i);
      if (pids[i] < 0 || pids[i] >= max_pos) ctx.fail("position id " + std::to_string(pids[i]) + " outside the cache of " + std::to_string(max_pos));
    }
  } else if (cos_cache.shape() != Shape{B, S, half}) {
    ctx.fail("without position_ids the caches must have shape [" + std::to_string(B) + "," + std::to_string(S) + "," +
             std::to_string(half) + "], got " + shape_to_string(cos_cache.shape()));
  }
  const std::vector<double> x = real_values(X), cs = real_values(cos_cache), sn = real_values(sin_cache);
  std::vector<double> y = x;  // dimensions past rotary_embedding_dim pass through
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t row = pos ? pids[size_t(b * S + s)] : b * S + s;  // cache row
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t d1 = interleaved ? 2 * i : i, d2 = interleaved ? 2 * i + 1 : i + half;
          const double c = cs[size_t(row * half + i)], sv = sn[size_t(row * half + i)];
          const double x1 = x[xl(b, h, s, d1)], x2 = x[xl(b, h, s, d2)];
          y[xl(b, h, s, d1)] = c * x1 - sv * x2;
          y[xl(b, h, s, d2)] = sv * x1 + c * x2;
        }
    }
  real::store_doubles(ctx, ctx.allocate_output(0, X.dtype(), X.shape()), y);
}

}  // namespace onnxscope::ref

namespace onnxscope::ref {

// com.microsoft RotaryEmbedding (ONNX Runtime's contrib operator, the
// origin of the ONNX one): input (B, S, N*H) or (B, N, S, H); position_ids
// (B, S), or (1) holding the first position (token s at position_ids[0] +
// s); caches (max_sequence_length, rotary_dim / 2). Without num_heads the
// head size is rotary_embedding_dim, or twice the caches' width.
void RotaryEmbeddingContrib(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& pos = ctx.input(1);
  const Tensor& cos_cache = ctx.input(2);
  const Tensor& sin_cache = ctx.input(3);
  real::require_float(ctx, X, "input");
  if (ctx.attr_int("is_packed_batching", 0) != 0) ctx.fail("is_packed_batching: ragged batches are not supported");
  if (cos_cache.dtype() != X.dtype() || sin_cache.dtype() != X.dtype()) ctx.fail("cos_cache and sin_cache must have the input's type");
  if (cos_cache.rank() != 2 || sin_cache.shape() != cos_cache.shape())
    ctx.fail("cos_cache and sin_cache must be 2-D (max_sequence_length, rotary_dim / 2) of one shape, got " +
             shape_to_string(cos_cache.shape()) + " and " + shape_to_string(sin_cache.shape()));
  const int64_t rows = cos_cache.shape()[0], half = cos_cache.shape()[1];
  int64_t rd = ctx.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = 2 * half;
  if (rd != 2 * half) ctx.fail("rotary_embedding_dim " + std::to_string(rd) + " must be twice the caches' width " + std::to_string(half));
  HeadLayout xl;
  int64_t B = 0;
  if (X.rank() == 4) {
    B = X.shape()[0];
    xl = HeadLayout{false, X.shape()[1], X.shape()[2], X.shape()[3]};
  } else if (X.rank() == 3) {
    B = X.shape()[0];
    int64_t heads = ctx.attr_int("num_heads", 0);
    if (heads <= 0) {
      if (X.shape()[2] % rd != 0) ctx.fail("hidden size " + std::to_string(X.shape()[2]) + " is not a multiple of the rotary dim; give num_heads");
      heads = X.shape()[2] / rd;
    }
    if (X.shape()[2] % heads != 0) ctx.fail("hidden size " + std::to_string(X.shape()[2]) + " is not divisible by num_heads");
    xl = HeadLayout{true, heads, X.shape()[1], X.shape()[2] / heads};
  } else {
    ctx.fail("input must be 3-D or 4-D, got " + shape_to_string(X.shape()));
  }
  const int64_t H = xl.H, S = xl.S, D = xl.D;
  if (rd > D) ctx.fail("rotary dim " + std::to_string(rd) + " exceeds the head size " + std::to_string(D));
  const std::vector<int64_t> pv = contrib_attention::ints(pos);
  const bool offset = pos.element_count() == 1 && pos.rank() == 1;
  if (!offset && pos.shape() != Shape{B, S})
    ctx.fail("position_ids must be (1) or (batch, sequence) = " + shape_to_string(Shape{B, S}) + ", got " + shape_to_string(pos.shape()));
  const std::vector<double> x = real_values(X), cs = real_values(cos_cache), sn = real_values(sin_cache);
  std::vector<double> y = x, head(static_cast<size_t>(D));
  const bool interleaved = ctx.attr_int("interleaved", 0) != 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = offset ? pv[0] + s : pv[size_t(b * S + s)];
      if (p < 0 || p >= rows)
        ctx.fail("position " + std::to_string(p) + " is outside the caches of " + std::to_string(rows) + " rows");
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t d = 0; d < D; ++d) head[size_t(d)] = x[xl(b, h, s, d)];
        contrib_attention::rotate(head.data(), &cs[size_t(p * half)], &sn[size_t(p * half)], rd, interleaved);
        for (int64_t d = 0; d < D; ++d) y[xl(b, h, s, d)] = head[size_t(d)];
      }
    }
  real::store_doubles(ctx, ctx.allocate_output(0, X.dtype(), X.shape()), y);
}

}  // namespace onnxscope::ref
