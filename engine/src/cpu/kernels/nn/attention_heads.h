// The float attention over heads that the CPU engine's com.microsoft
// attention kernels (Attention, MultiHeadAttention, GroupQueryAttention)
// share: per (batch, head) in the thread pool, one Eigen product for the
// scores, the softcap, the operator's additive bias (its masks; -inf leaves
// a key out) and the softmax (with an extra logit: a head sink, or 0 for
// smooth_softmax), then one product with the values. The reference's
// version of the same computation, in double, is
// reference/ops/nn/contrib_attention_common.h.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "cpu/thread_pool.h"

namespace onnxscope::cpu::heads {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// (B, N, S, H) values, contiguous.
struct Heads {
  int64_t B = 0, N = 0, S = 0, H = 0;
  std::vector<float> v;
  Heads() = default;
  Heads(int64_t b, int64_t n, int64_t s, int64_t h) : B(b), N(n), S(s), H(h), v(static_cast<size_t>(b * n * s * h)) {}
  float* at(int64_t b, int64_t n, int64_t s) { return &v[static_cast<size_t>(((b * N + n) * S + s) * H)]; }
  const float* at(int64_t b, int64_t n, int64_t s) const { return &v[static_cast<size_t>(((b * N + n) * S + s) * H)]; }
};

// Heads from (B, S, row_width) rows: head n is columns col0 + n*H ... (+ bias[that column] when given).
inline void split(Heads& out, const float* x, int64_t row_width, int64_t col0, const float* bias = nullptr) {
  for (int64_t b = 0; b < out.B; ++b)
    for (int64_t s = 0; s < out.S; ++s)
      for (int64_t n = 0; n < out.N; ++n) {
        const float* src = x + (b * out.S + s) * row_width + col0 + n * out.H;
        float* dst = out.at(b, n, s);
        for (int64_t h = 0; h < out.H; ++h) dst[h] = src[h] + (bias ? bias[col0 + n * out.H + h] : 0.0f);
      }
}

// Keys and values: (B, Nkv, L, H) and (B, Nkv, L, Hv) buffers of which batch
// b uses the first keys(b) rows (a cache longer than what is attended).
struct Cache {
  const float *k = nullptr, *v = nullptr;
  int64_t Nkv = 0, L = 0, Hv = 0;
  std::function<int64_t(int64_t b)> keys;
};

struct Softmax {
  float scale = 1, softcap = 0;
  bool extra = false;           // an extra logit in the sum: sink[h], or 0 without sinks
  const float* sink = nullptr;  // (N)
};

// Fills row[0..T) with the additive bias of query i of head h in batch b.
using RowBias = std::function<void(int64_t b, int64_t h, int64_t i, int64_t T, float* row)>;

// out: (B, S, N * Hv).
inline void attend(const Heads& q, const Cache& kv, const Softmax& sm, const RowBias& bias, float* out) {
  const int64_t B = q.B, N = q.N, S = q.S, H = q.H, Hv = kv.Hv, group = N / kv.Nkv;
  parallel_for(B * N, 1, [&](int64_t t0, int64_t t1) {
    RowMat scores;
    std::vector<float> add;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / N, h = t % N, head = b * kv.Nkv + h / group, T = kv.keys(b);
      Eigen::Map<const RowMat> Q(q.at(b, h, 0), S, H);
      Eigen::Map<const RowMat> K(kv.k + head * kv.L * H, T, H), V(kv.v + head * kv.L * Hv, T, Hv);
      scores.noalias() = (Q * K.transpose()) * sm.scale;
      add.assign(static_cast<size_t>(T), 0.0f);
      const float extra = sm.sink ? sm.sink[h] : 0.0f;
      for (int64_t i = 0; i < S; ++i) {
        if (bias) bias(b, h, i, T, add.data());
        float* row = scores.row(i).data();
        float mx = sm.extra ? extra : -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < T; ++j) {
          float s = row[j];
          if (sm.softcap > 0) s = sm.softcap * std::tanh(s / sm.softcap);
          s += add[static_cast<size_t>(j)];
          row[j] = s;
          mx = std::max(mx, s);
        }
        if (!(mx > -std::numeric_limits<float>::infinity())) {  // nothing to attend: zeros
          scores.row(i).setZero();
          continue;
        }
        float sum = sm.extra ? std::exp(extra - mx) : 0.0f;
        for (int64_t j = 0; j < T; ++j) sum += row[j] = std::exp(row[j] - mx);
        scores.row(i) /= sum;
      }
      Eigen::Map<RowMat, 0, Eigen::OuterStride<>> Y(out + b * S * N * Hv + h * Hv, S, Hv, Eigen::OuterStride<>(N * Hv));
      Y.noalias() = scores * V;
    }
  });
}

}  // namespace onnxscope::cpu::heads
