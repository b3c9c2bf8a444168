// Row kernels (kernels/portable.h): one warp per row on the GPU, lanes
// striding the row and reducing across the warp. Softmax and LogSoftmax,
// LayerNormalization, GroupNormalization (InstanceNormalization),
// RMSNormalization, the Reduce* family and pooling live here.
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// Row r of a tensor viewed as [outer, n, inner] along one axis: elements
// base + j * inner for j < n, base = (r / inner) * n * inner + r % inner.
OS_HD int64_t row_base(int64_t r, int64_t n, int64_t inner) { return (r / inner) * n * inner + r % inner; }

// The mean of n contiguous elements and 1 / sqrt(variance + epsilon), two
// passes over the row, each lane its share, every lane getting both.
template <class L>
OS_HD void row_moments(const float* xr, int64_t n, float epsilon, const L& lanes, float& mu, float& inv) {
  float s = 0.f;
  for (int64_t j = lanes.lane(); j < n; j += lanes.count()) s += xr[j];
  mu = lanes.sum(s) / static_cast<float>(n);
  float v = 0.f;
  for (int64_t j = lanes.lane(); j < n; j += lanes.count()) {
    const float d = xr[j] - mu;
    v += d * d;
  }
  inv = 1.f / sqrtf(lanes.sum(v) / static_cast<float>(n) + epsilon);
}

// Softmax (log: LogSoftmax) along the axis, max-subtracted.
struct SoftmaxKernel {
  static constexpr bool kRows = true;
  int64_t n, inner;
  bool log;
  const float* x;
  float* y;
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const int64_t base = row_base(r, n, inner);
    float m = -INFINITY;
    for (int64_t j = lanes.lane(); j < n; j += lanes.count()) m = fmaxf(m, x[base + j * inner]);
    m = lanes.max(m);
    float s = 0.f;
    for (int64_t j = lanes.lane(); j < n; j += lanes.count()) s += expf(x[base + j * inner] - m);
    s = lanes.sum(s);
    if (log) {
      const float ls = logf(s);
      for (int64_t j = lanes.lane(); j < n; j += lanes.count()) y[base + j * inner] = x[base + j * inner] - m - ls;
    } else {
      const float inv = 1.f / s;
      for (int64_t j = lanes.lane(); j < n; j += lanes.count()) y[base + j * inner] = expf(x[base + j * inner] - m) * inv;
    }
  }
};

// LayerNormalization over the last n elements of each row (contiguous):
// y = (x - mean) / sqrt(var + eps) * scale + bias, in float; mean and
// inv_std_dev written per row when asked for (nullptr otherwise). scale and
// bias hold n elements or 1 (scale_step / bias_step 0).
struct LayerNormKernel {
  static constexpr bool kRows = true;
  int64_t n;
  float epsilon;
  int narrow;  // 1 float16, 2 bfloat16: the normalized value rounded to it first, as the reference's
  int64_t scale_step, bias_step;
  const float *x, *scale, *bias;
  float *y, *mean, *inv_std_dev;
  const float* skip;  // FusedAddLayerNorm's B (x's shape), or nullptr
  uint16_t* half_out;  // fp16 mode: Y rounded to float16 too (its half copy), or nullptr
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    if (skip) {  // the sum, rounded to float as the Add's, into y: each lane rereads only what it wrote
      const float* sr = skip + r * n;
      for (int64_t j = lanes.lane(); j < n; j += lanes.count()) yr[j] = xr[j] + sr[j];
      xr = yr;
    }
    float mu, inv;
    row_moments(xr, n, epsilon, lanes, mu, inv);
    for (int64_t j = lanes.lane(); j < n; j += lanes.count()) {
      const float normalized = round_to_narrow((xr[j] - mu) * inv, narrow);
      const float out = normalized * scale[j * scale_step] + (bias ? bias[j * bias_step] : 0.f);
      yr[j] = out;
      if (half_out) half_out[r * n + j] = float_to_half(out);
    }
    if (lanes.lane() == 0) {
      if (mean) mean[r] = mu;
      if (inv_std_dev) inv_std_dev[r] = inv;
    }
  }
};

// GroupNormalization, and InstanceNormalization as a group per channel:
// row r is (n, group), a block of channels_per_group * spatial contiguous
// elements; y = (x - mean) / sqrt(var + epsilon) * scale[p] + bias[p] with
// the block's statistics, p the element's channel (per_channel: opset 21's
// GroupNormalization, InstanceNormalization) or its group (opset 18).
struct GroupNormKernel {
  static constexpr bool kRows = true;
  int64_t groups, channels_per_group, spatial;
  float epsilon;
  bool per_channel;
  const float *x, *scale, *bias;
  float* y;
  int narrow = 0;  // GroupNormalization's normalized value rounded to X's type first (1 float16, 2 bfloat16)
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const int64_t block = channels_per_group * spatial;
    const float* xr = x + r * block;
    float mu, inv;
    row_moments(xr, block, epsilon, lanes, mu, inv);
    const int64_t g = r % groups;
    float* yr = y + r * block;
    for (int64_t j = lanes.lane(); j < block; j += lanes.count()) {
      const int64_t p = per_channel ? g * channels_per_group + j / spatial : g;
      yr[j] = round_to_narrow((xr[j] - mu) * inv, narrow) * scale[p] + bias[p];
    }
  }
};

// RMSNormalization over the last n elements of each row (contiguous):
// y = x / sqrt(mean(x^2) + epsilon) * scale, scale n elements or 1
// (scale_step 0).
struct RmsNormKernel {
  static constexpr bool kRows = true;
  int64_t n;
  float epsilon;
  int64_t scale_step;
  const float *x, *scale;
  float* y;
  int narrow;  // 1 float16, 2 bfloat16: the normalized value rounded to it first, as the reference's
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const float* xr = x + r * n;
    float s = 0.f;
    for (int64_t j = lanes.lane(); j < n; j += lanes.count()) s += xr[j] * xr[j];
    const float inv = 1.f / sqrtf(lanes.sum(s) / static_cast<float>(n) + epsilon);
    float* yr = y + r * n;
    for (int64_t j = lanes.lane(); j < n; j += lanes.count()) {
      const float normalized = round_to_narrow(xr[j] * inv, narrow);
      yr[j] = normalized * scale[j * scale_step];
    }
  }
};

enum class ReduceOp : int { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

// One output element per row: the reduced elements are the coordinates of
// `red` (dims and input strides), from the input offset of the kept
// coordinates (`kept` dims and input strides, in output order).
struct ReduceKernel {
  static constexpr bool kRows = true;
  ReduceOp op;
  int kept_rank, red_rank;
  int64_t kept[kKernelRank], kept_stride[kKernelRank];
  int64_t red[kKernelRank], red_stride[kKernelRank];
  int64_t red_count;
  const float* x;
  float* y;
  OS_HD int64_t offset(int64_t i, int rank, const int64_t* dims, const int64_t* strides) const {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return off;
  }
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const int64_t base = offset(r, kept_rank, kept, kept_stride);
    float acc;
    if (op == ReduceOp::Max || op == ReduceOp::LogSumExp) {
      acc = -INFINITY;
      bool nan = false;
      for (int64_t j = lanes.lane(); j < red_count; j += lanes.count()) {
        const float v = x[base + offset(j, red_rank, red, red_stride)];
        nan = nan || v != v;
        acc = fmaxf(acc, v);
      }
      const bool any_nan = lanes.max(nan ? 1.f : 0.f) > 0.f;  // fmaxf drops NaN; the reference keeps it
      acc = lanes.max(acc);
      if (any_nan) acc = NAN;
      if (op == ReduceOp::Max) {
        if (lanes.lane() == 0) y[r] = red_count == 0 ? -INFINITY : acc;
        return;
      }
      const float m = acc == -INFINITY || acc != acc ? 0.f : acc;  // LogSumExp, shifted by the max
      float s = 0.f;
      for (int64_t j = lanes.lane(); j < red_count; j += lanes.count()) s += expf(x[base + offset(j, red_rank, red, red_stride)] - m);
      s = lanes.sum(s);
      if (lanes.lane() == 0) y[r] = logf(s) + m;
      return;
    }
    if (op == ReduceOp::Min) {
      acc = INFINITY;
      bool nan = false;
      for (int64_t j = lanes.lane(); j < red_count; j += lanes.count()) {
        const float v = x[base + offset(j, red_rank, red, red_stride)];
        nan = nan || v != v;
        acc = fminf(acc, v);
      }
      const bool any_nan = lanes.max(nan ? 1.f : 0.f) > 0.f;
      acc = lanes.min(acc);
      if (lanes.lane() == 0) y[r] = any_nan ? NAN : acc;
      return;
    }
    if (op == ReduceOp::Prod) {
      acc = 1.f;
      for (int64_t j = lanes.lane(); j < red_count; j += lanes.count()) acc *= x[base + offset(j, red_rank, red, red_stride)];
      acc = lanes.prod(acc);
      if (lanes.lane() == 0) y[r] = acc;
      return;
    }
    acc = 0.f;
    for (int64_t j = lanes.lane(); j < red_count; j += lanes.count()) {
      const float v = x[base + offset(j, red_rank, red, red_stride)];
      acc += op == ReduceOp::SumSquare || op == ReduceOp::L2 ? v * v : op == ReduceOp::L1 ? fabsf(v) : v;
    }
    acc = lanes.sum(acc);
    if (lanes.lane() != 0) return;
    switch (op) {
      case ReduceOp::Mean: y[r] = acc / static_cast<float>(red_count); break;
      case ReduceOp::L2: y[r] = sqrtf(acc); break;
      case ReduceOp::LogSum: y[r] = logf(acc); break;
      default: y[r] = acc; break;
    }
  }
};

// MaxPool / AveragePool / LpPool over up to 3 spatial dims, one output
// element per item: x [N, C, *in], y [N, C, *out]; pads are the leading
// pads (trailing ones only bound the window). As the reference: the max
// skips NaN (NaN when no tap holds a number), sums are in double.
// count_include_pad counts padded positions in an average (the window
// clipped to in + pads), else only real ones.
struct PoolKernel {
  int kind;  // 0 max, 1 average, 2 Lp
  bool count_include_pad;
  double p;  // LpPool's p
  int rank;
  int64_t in[3], out[3], kernel[3], stride[3], pad_begin[3], pad_end[3], dilation[3];
  const float* x;
  float* y;
  // MaxPool's Indices, or nullptr: the maximum's place in X, flattened over
  // (N, C, spatial dims), the spatial dims row-major or (storage_order 1)
  // column-major; 0 within the plane when no tap holds a number.
  int64_t* indices = nullptr;
  bool column_major = false;
  // The first kernel index along d whose position base + j * dilation is at least lo (at most the kernel's size).
  OS_HD int64_t index_from(int64_t lo, int d, int64_t base) const {
    const int64_t a = lo - base;
    if (a <= 0) return 0;
    const int64_t j = (a + dilation[d] - 1) / dilation[d];
    return j < kernel[d] ? j : kernel[d];
  }
  OS_HD void operator()(int64_t i) const {
    int64_t o[3] = {0, 0, 0};
    int64_t rest = i, in_size = 1;
    for (int d = rank - 1; d >= 0; --d) {
      o[d] = rest % out[d];
      rest /= out[d];
      in_size *= in[d];
    }
    const float* plane = x + rest * in_size;  // rest = n * C + c
    // Per dim, the kernel indices [first, last) that land inside X, found by
    // division: the kernel_shape attribute may be 2^40 long, X is not.
    int64_t base[3] = {0, 0, 0}, first[3] = {0, 0, 0}, last[3] = {0, 0, 0}, step[3] = {1, 1, 1}, col_step[3] = {1, 1, 1};
    double padded = 1;  // taps inside X and its declared padding (a product that may pass 2^63)
    bool any = true;
    for (int d = 0; d < rank; ++d) {
      base[d] = o[d] * stride[d] - pad_begin[d];
      first[d] = index_from(0, d, base[d]);
      last[d] = index_from(in[d], d, base[d]);
      if (last[d] < first[d]) last[d] = first[d];
      const int64_t pf = index_from(-pad_begin[d], d, base[d]);
      int64_t pl = index_from(in[d] + pad_end[d], d, base[d]);
      if (pl < pf) pl = pf;
      padded *= static_cast<double>(pl - pf);
      any = any && last[d] > first[d];
      for (int e = d + 1; e < rank; ++e) step[d] *= in[e];
      for (int e = 0; e < d; ++e) col_step[d] *= in[e];
    }
    double acc = 0;
    float best = NAN;  // max: NaN inputs skipped, the first maximum kept; NaN when no tap has a number
    bool found = false;
    int64_t best_off = 0, best_col = 0;
    int64_t counted = 0;
    int64_t kk[3] = {first[0], first[1], first[2]};
    // The taps inside X in the kernel's row-major order.
    for (bool more = any; more;) {
      int64_t off = 0, col = 0;
      for (int d = 0; d < rank; ++d) {
        const int64_t q = base[d] + kk[d] * dilation[d];
        off += q * step[d];
        col += q * col_step[d];
      }
      const float v = plane[off];
      if (kind == 0) {
        if (v == v && (!found || v > best)) {
          best = v;
          found = true;
          best_off = off;
          best_col = col;
        }
      } else {
        acc += kind == 1 ? static_cast<double>(v) : pow(fabs(static_cast<double>(v)), p);
      }
      ++counted;
      more = false;
      for (int d = rank - 1; d >= 0; --d) {
        if (++kk[d] < last[d]) {
          more = true;
          break;
        }
        kk[d] = first[d];
      }
    }
    if (kind == 0 && indices) indices[i] = rest * in_size + (column_major ? best_col : best_off);
    if (kind == 0) y[i] = best;
    else if (kind == 1) y[i] = static_cast<float>(acc / (count_include_pad ? padded : static_cast<double>(counted)));
    else y[i] = static_cast<float>(pow(acc, 1.0 / p));
  }
};

}  // namespace onnxscope::cuda
