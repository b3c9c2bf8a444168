// Line kernels (kernels/portable.h, elementwise form): item i walks one line
// of a tensor viewed as [outer, n, inner] along an axis, the elements
// base + j * inner for j < n with base = (i / inner) * n * inner + i % inner.
// A line is sequential by nature here (a running sum, a first extreme), so
// one thread takes it whole, as the reference does: ArgMax / ArgMin,
// CumSum / CumProd, Hardmax, LpNormalization. TopK instead ranks each
// element of a line by comparing it with the whole line (one thread per
// element); LRN sums each element's window across channels.
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

OS_HD int64_t line_base(int64_t i, int64_t n, int64_t inner) { return (i / inner) * n * inner + i % inner; }

OS_HD bool is_nan_value(float v) { return v != v; }
OS_HD bool is_nan_value(double v) { return v != v; }
OS_HD bool is_nan_value(int32_t) { return false; }
OS_HD bool is_nan_value(int64_t) { return false; }
OS_HD bool is_nan_value(uint64_t) { return false; }

// ArgMax (max) / ArgMin: the index of the line's extreme, the first one
// (the last with select_last), a NaN beating every number and the first NaN
// winning (numpy's rule, the reference's), y int64 per line.
template <class T>
struct ArgReduceKernel {
  bool max, select_last;
  int64_t n, inner;
  const T* x;
  int64_t* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t base = line_base(i, n, inner);
    T best = x[base];
    int64_t at = 0;
    for (int64_t j = 1; j < n; ++j) {
      const T cur = x[base + j * inner];
      bool better = false, tie = false;
      if (is_nan_value(best)) {
        tie = is_nan_value(cur);
      } else if (is_nan_value(cur)) {
        better = true;
      } else {
        better = max ? cur > best : cur < best;
        tie = cur == best;
      }
      if (better || (tie && select_last)) {
        best = cur;
        at = j;
      }
    }
    y[i] = at;
  }
};

// The accumulator of a running sum or product: floats in double (rounded
// once when stored, as the reference does), integers in uint64, which wraps
// as the element type does once truncated.
template <class T>
struct LineAccumulator {
  using type = unsigned long long;
};
template <>
struct LineAccumulator<float> {
  using type = double;
};
template <>
struct LineAccumulator<double> {
  using type = double;
};

// CumSum (CumProd with prod) along the line: exclusive leaves out the
// element itself, reverse runs from the end.
template <class T>
struct CumulativeKernel {
  bool prod, exclusive, reverse;
  int64_t n, inner;
  const T* x;
  T* y;
  OS_HD void operator()(int64_t i) const {
    using Acc = typename LineAccumulator<T>::type;
    const int64_t base = line_base(i, n, inner);
    Acc acc = prod ? Acc(1) : Acc(0);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t off = base + (reverse ? n - 1 - step : step) * inner;
      const Acc v = static_cast<Acc>(x[off]);
      if (exclusive) y[off] = static_cast<T>(acc);
      acc = prod ? Acc(acc * v) : Acc(acc + v);
      if (!exclusive) y[off] = static_cast<T>(acc);
    }
  }
};

// TopK: item i is element j = i % n of line i / n. Its rank is the number
// of elements of the line that come before it: larger first (largest) or
// smaller first, NaN counting as above every number, equal values in index
// order, the reference's order. A rank below k writes the element (its
// exact bits) and its index there. The ranks of a line are a permutation,
// so each output place is written once. n * n comparisons per line: the
// placement rule bounds n.
template <class T>
struct TopKKernel {
  bool largest;
  int64_t n, k, inner;
  const T* x;
  T* values;
  int64_t* indices;
  static OS_HD bool less(T a, T b) {  // numbers ascending, NaN last
    if (is_nan_value(a)) return false;
    if (is_nan_value(b)) return true;
    return a < b;
  }
  OS_HD void operator()(int64_t i) const {
    const int64_t line = i / n, j = i % n;
    const int64_t base = line_base(line, n, inner);
    const T v = x[base + j * inner];
    int64_t rank = 0;
    for (int64_t q = 0; q < n; ++q) {
      const T w = x[base + q * inner];
      const bool w_first = largest ? less(v, w) : less(w, v);
      const bool v_first = largest ? less(w, v) : less(v, w);
      if (w_first || (!v_first && q < j)) ++rank;
    }
    if (rank >= k) return;
    const int64_t out = (line / inner) * k * inner + line % inner + rank * inner;
    values[out] = v;
    indices[out] = j;
  }
};

// TopK for long lines, in two steps. A key orders a line as the output
// does: a larger key comes first (largest: larger numbers, NaN above them
// all; smallest: the reverse), -0 equal to 0 and every NaN equal, ties in
// index order.
OS_HD uint64_t topk_key(float v, bool largest) {
  uint32_t u = 0xFFFFFFFFu;  // NaN
  if (v == v) {
    const uint32_t b = float_to_bits(v == 0.f ? 0.f : v);
    u = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
  return largest ? u : 0xFFFFFFFFu - u;
}
OS_HD uint64_t topk_key(int32_t v, bool largest) {
  const uint32_t u = static_cast<uint32_t>(v) ^ 0x80000000u;
  return largest ? u : 0xFFFFFFFFu - u;
}
OS_HD uint64_t topk_key(int64_t v, bool largest) {
  const uint64_t u = static_cast<uint64_t>(v) ^ 0x8000000000000000ull;
  return largest ? u : ~u;
}
OS_HD uint64_t topk_key(uint64_t v, bool largest) { return largest ? v : ~v; }

// Step 1, a warp per line: the k-th key T, found bit by bit (a radix
// select: n elements read per key bit), and the last index J admitted among
// the elements whose key is T (ties in index order). Exactly k elements
// have a key above T, or T and an index up to J.
template <class T>
struct TopKCutKernel {
  static constexpr bool kRows = true;
  bool largest;
  int key_bits;  // 32 or 64
  int64_t n, k, inner;
  const T* x;
  int64_t* cut;  // per line: T (as bits), J
  template <class L>
  OS_HD void operator()(int64_t line, const L& lanes) const {
    const int64_t base = line_base(line, n, inner);
    uint64_t prefix = 0;
    int64_t need = k;  // the rank of T among the keys that start with prefix
    for (int bit = key_bits - 1; bit >= 0; --bit) {
      const uint64_t want = (prefix | (1ull << bit)) >> bit;
      int64_t c = 0;
      for (int64_t j = lanes.lane(); j < n; j += lanes.count()) c += (topk_key(x[base + j * inner], largest) >> bit) == want;
      const int64_t above = exact_lane_sum(c, lanes);
      if (above >= need) prefix |= 1ull << bit;
      else need -= above;
    }
    // The need-th element (in index order) whose key is T: blocks of one
    // element per lane, then the block that holds it read by every lane.
    int64_t seen = 0, last = -1;
    for (int64_t start = 0; start < n && last < 0; start += lanes.count()) {
      const int64_t j = start + lanes.lane();
      const int64_t c = exact_lane_sum(j < n && topk_key(x[base + j * inner], largest) == prefix ? 1 : 0, lanes);
      if (seen + c < need) {
        seen += c;
        continue;
      }
      for (int64_t q = start; q < n && last < 0; ++q)
        if (topk_key(x[base + q * inner], largest) == prefix && ++seen == need) last = q;
    }
    if (lanes.lane() == 0) {
      cut[2 * line] = static_cast<int64_t>(prefix);
      cut[2 * line + 1] = last;
    }
  }
};

// Step 2, an item per element: an admitted element counts the line's
// elements before it (a larger key, or the same key at a lower index) and
// writes itself at that rank; the others return at once. k * n reads per
// line.
template <class T>
struct TopKSelectKernel {
  bool largest;
  int64_t n, k, inner;
  const T* x;
  const int64_t* cut;
  T* values;
  int64_t* indices;
  OS_HD void operator()(int64_t i) const {
    const int64_t line = i / n, j = i % n;
    const int64_t base = line_base(line, n, inner);
    const T v = x[base + j * inner];
    const uint64_t key = topk_key(v, largest), t = static_cast<uint64_t>(cut[2 * line]);
    if (key < t || (key == t && j > cut[2 * line + 1])) return;
    int64_t rank = 0;
    for (int64_t q = 0; q < n; ++q) {
      const uint64_t other = topk_key(x[base + q * inner], largest);
      rank += other > key || (other == key && q < j);
    }
    if (rank >= k) return;  // never for a right cut; a wrong one must not write past the output
    const int64_t out = (line / inner) * k * inner + line % inner + rank * inner;
    values[out] = v;
    indices[out] = j;
  }
};

// Hardmax (float32): 1 at the line's first maximum (its first NaN if it has
// one, as numpy.argmax), 0 elsewhere.
struct HardmaxKernel {
  int64_t n, inner;
  const float* x;
  float* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t base = line_base(i, n, inner);
    int64_t best = 0;
    for (int64_t j = 1; j < n && !is_nan_value(x[base + best * inner]); ++j) {
      const float v = x[base + j * inner];
      if (is_nan_value(v) || v > x[base + best * inner]) best = j;
    }
    for (int64_t j = 0; j < n; ++j) y[base + j * inner] = j == best ? 1.f : 0.f;
  }
};

// LpNormalization (float32, p 1 or 2): the line divided by its norm, summed
// in double as the reference does; a zero norm gives zeros.
struct LpNormKernel {
  int p;
  int64_t n, inner;
  const float* x;
  float* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t base = line_base(i, n, inner);
    double norm = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = x[base + j * inner];
      norm += p == 1 ? fabs(v) : v * v;
    }
    if (p == 2) norm = sqrt(norm);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = base + j * inner;
      y[at] = norm == 0 ? 0.f : static_cast<float>(static_cast<double>(x[at]) / norm);
    }
  }
};

// LRN (float32, x as [batch, channels, inner]): each element over
// (bias + alpha / size * the sum of squares of its channel window)^beta,
// the window the `before` channels below it to the `after` above, in double
// as the reference computes it.
struct LrnKernel {
  int64_t channels, inner, before, after;
  double alpha_over_size, beta, bias;
  const float* x;
  float* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t k = i % inner, ch = (i / inner) % channels, b = i / (inner * channels);
    const int64_t lo = ch - before > 0 ? ch - before : 0, hi = ch + after < channels - 1 ? ch + after : channels - 1;
    double sq = 0;
    for (int64_t c = lo; c <= hi; ++c) {
      const double v = x[(b * channels + c) * inner + k];
      sq += v * v;
    }
    y[i] = static_cast<float>(static_cast<double>(x[i]) / pow(bias + alpha_over_size * sq, beta));
  }
};

}  // namespace onnxscope::cuda
