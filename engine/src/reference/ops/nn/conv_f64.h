// The reference's float convolution (Conv on float16, bfloat16, float,
// double), computed as the direct sum defines it:
//   y[n, m, o] = sum over c of m's group, then over the kernel positions k in
//                order, of x[n, c, o * stride - pad_begin + k * dilation] * w[m, c, k]
// with positions in the padding skipped (not multiplied by zero: a weight of
// inf there stays out), each product and partial sum rounded in double, then
// + B[m], then one rounding to the output type.
//
// It is a matrix product W[m, (c, k)] x X[(c, k), o] with the same order of
// terms (math/gemm_f64.h), X's columns read straight from the input (no
// unfolded copy), a padding position giving 0; with an inf or NaN weight,
// where 0 * w would not be nothing, only the positions whose whole window
// is inside go through the product and the border keeps the direct loop.
// Both spread over the thread pool; each result is computed by one thread
// in one order, so the bits do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/gemm_f64.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref::nn {

namespace conv_detail {

template <typename S>
double at(const std::byte* p, int64_t i) {
  S v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
  return static_cast<double>(to_compute(v));
}

// Columns of the unfolded input for one image and group: column j is output
// position j of `first` (its window's first input position per dim, in
// first[j * dims ...]), element t = c * KS + k is x[c * IS + the input
// position of kernel position k], or 0 where that lies in the padding.
// `inside[j]`: every kernel position of column j is inside (no checks).
struct Columns {
  const std::byte* x = nullptr;  // the group's first channel of this image
  int64_t IS = 0, KS = 0;
  size_t dims = 0;
  const std::vector<int64_t>* in = nullptr;        // input dims
  const std::vector<int64_t>* in_strides = nullptr;
  const std::vector<int64_t>* kstep = nullptr;     // [k * dims + d]: kernel position k's offset along d
  const std::vector<int64_t>* koff = nullptr;      // [k]: its offset in the plane
  const std::vector<int64_t>* first = nullptr;     // [j * dims + d]
  const std::vector<int64_t>* base = nullptr;      // [j]: the first position's offset in the plane
  const std::vector<char>* inside = nullptr;       // [j]
  const std::vector<int64_t>* columns = nullptr;   // the output positions the product computes (all or some)
};

template <typename S>
void pack_columns(const void* ctx, int64_t j0, int64_t cols, int64_t K, int64_t width, double* out) {
  const Columns& m = *static_cast<const Columns*>(ctx);
  for (int64_t g = 0; g * width < cols; ++g)
    for (int64_t t = 0; t < K; ++t) {
      double* o = out + (g * K + t) * width;
      const int64_t c = t / m.KS, k = t % m.KS, off = c * m.IS + (*m.koff)[static_cast<size_t>(k)];
      for (int64_t r = 0; r < width; ++r) {
        const int64_t jj = g * width + r;
        if (jj >= cols) {
          o[r] = 0.0;
          continue;
        }
        const auto j = static_cast<size_t>((*m.columns)[static_cast<size_t>(j0 + jj)]);
        bool in = (*m.inside)[j] != 0;
        if (!in) {
          in = true;
          for (size_t d = 0; d < m.dims && in; ++d) {
            const int64_t pos = (*m.first)[j * m.dims + d] + (*m.kstep)[static_cast<size_t>(k) * m.dims + d];
            in = pos >= 0 && pos < (*m.in)[d];
          }
        }
        o[r] = in ? at<S>(m.x, (*m.base)[j] + off) : 0.0;
      }
    }
}

// One input channel per group (depthwise, with any channel multiplier),
// 1-D or 2-D: the direct sum, the kernel positions outermost so that a row
// of outputs takes each term at once. Each output's terms are still added in
// the order of the kernel positions, and positions in the padding are
// skipped; the product path adds 0 * w there, which for a finite w is the
// same, so the bits are the product path's. (As a product it was one
// [1, K] x [K, positions] call per channel: 672 of them for EfficientNet's
// 5x5 layer on 14x14, 19 ms.)
template <typename S>
void depthwise_direct(const std::byte* xr, const std::byte* wr, const std::vector<double>& bias, const Window& win, int64_t N,
                      int64_t C, int64_t M, std::byte* po) {
  const bool two = win.in.size() == 2;
  const int64_t IH = two ? win.in[0] : 1, IW = win.in.back(), OH = two ? win.out[0] : 1, OW = win.out.back();
  const int64_t KH = two ? win.kernel[0] : 1, KW = win.kernel.back();
  const int64_t SH = two ? win.strides[0] : 1, SW = win.strides.back(), DH = two ? win.dilations[0] : 1,
                DW = win.dilations.back(), PH = two ? win.pad_begin[0] : 0, PW = win.pad_begin.back();
  const int64_t Mg = M / C;
  const S* xs = reinterpret_cast<const S*>(xr);
  const S* ws = reinterpret_cast<const S*>(wr);
  cpu::parallel_for(N * M, 1, [&](int64_t lo, int64_t hi) {
    std::vector<double> acc(static_cast<size_t>(OW));
    for (int64_t nm = lo; nm < hi; ++nm) {
      poll_deadline();
      const int64_t n = nm / M, m = nm % M;
      const S* x = xs + (n * C + m / Mg) * IH * IW;
      const S* w = ws + m * KH * KW;
      S* y = reinterpret_cast<S*>(po) + nm * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= IH) continue;  // a kernel row in the padding: no terms
          const S* row = x + ih * IW;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const double wv = static_cast<double>(to_compute(w[kh * KW + kw]));
            // The outputs whose input column iw = ow * SW - PW + kw * DW lies inside.
            const int64_t shift = kw * DW - PW;
            const int64_t first = shift >= 0 ? 0 : (-shift + SW - 1) / SW;
            const int64_t last = IW - 1 - shift < 0 ? -1 : std::min(OW - 1, (IW - 1 - shift) / SW);
            double* a = acc.data();
            for (int64_t ow = first; ow <= last; ++ow) {
              const double p = static_cast<double>(to_compute(row[ow * SW + shift])) * wv;
              a[ow] = a[ow] + p;
            }
          }
        }
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double v = acc[static_cast<size_t>(ow)];
          y[oh * OW + ow] = from_compute<S>(static_cast<compute_t<S>>(bias.empty() ? v : v + bias[static_cast<size_t>(m)]));
        }
      }
    }
  });
}

// Whether no value is inf or NaN. float and double by their exponent bits,
// a loop that vectorises (a value at a time through `at`, ResNet-50's
// convolutions took 259 ms against 245 with it).
template <typename S>
bool all_finite(const std::byte* p, uint64_t n) {
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) {
    using U = std::conditional_t<std::is_same_v<S, float>, uint32_t, uint64_t>;
    constexpr U kExp = static_cast<U>(std::is_same_v<S, float> ? 0x7f800000ull : 0x7ff0000000000000ull);
    U bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      U u;
      std::memcpy(&u, p + i * sizeof(U), sizeof(U));
      bad |= static_cast<U>((u & kExp) == kExp);
    }
    return bad == 0;
  } else {
    for (uint64_t i = 0; i < n; ++i)
      if (!std::isfinite(at<S>(p, static_cast<int64_t>(i)))) return false;
    return true;
  }
}

// Few output positions (a late layer's 1x1 or 2x2 maps): each result the
// direct sum, 8 output channels at a time sharing the input values. As a
// product the positions were a panel of 24 columns mostly zero and the
// weights were packed into double for each call: [1, 512, 1, 1] with
// [512, 512, 3, 3] took 7 ms.
template <typename S>
void few_positions_direct(const std::byte* xr, const std::byte* wr, const std::vector<double>& bias, int64_t N, int64_t C,
                          int64_t M, int64_t group, int64_t IS, int64_t OS, int64_t KS,
                          const std::vector<std::vector<std::pair<int64_t, int64_t>>>& taps, std::byte* po) {
  const int64_t Cg = C / group, Mg = M / group, K = Cg * KS;
  const S* xs = reinterpret_cast<const S*>(xr);
  const S* ws = reinterpret_cast<const S*>(wr);
  S* ys = reinterpret_cast<S*>(po);
  constexpr int64_t kLanes = 8;
  const int64_t blocks = (M + kLanes - 1) / kLanes;
  cpu::parallel_for(N * blocks, 1, [&](int64_t lo, int64_t hi) {
    std::vector<double> col;
    for (int64_t nb = lo; nb < hi; ++nb) {
      poll_deadline();
      const int64_t n = nb / blocks, m0 = (nb % blocks) * kLanes, lanes = std::min(kLanes, M - m0);
      for (int64_t o = 0; o < OS; ++o) {
        double acc[kLanes] = {};
        if (m0 / Mg == (m0 + lanes - 1) / Mg) {  // one group: the lanes share each input value
          const S* x = xs + (n * C + (m0 / Mg) * Cg) * IS;
          const S* w = ws + m0 * K;
          for (int64_t c = 0; c < Cg; ++c)
            for (const auto& [k, off] : taps[static_cast<size_t>(o)]) {
              const double xv = static_cast<double>(to_compute(x[c * IS + off]));
              for (int64_t r = 0; r < lanes; ++r) {
                const double p = xv * static_cast<double>(to_compute(w[r * K + c * KS + k]));
                acc[r] = acc[r] + p;
              }
            }
        } else
        for (int64_t r = 0; r < lanes; ++r) {
          const int64_t m = m0 + r, g = m / Mg;
          const S* w = ws + m * K;
          const S* x = xs + (n * C + g * Cg) * IS;
          double a = 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (const auto& [k, off] : taps[static_cast<size_t>(o)]) {
              const double p = static_cast<double>(to_compute(x[c * IS + off])) * static_cast<double>(to_compute(w[c * KS + k]));
              a = a + p;
            }
          acc[r] = a;
        }
        for (int64_t r = 0; r < lanes; ++r) {
          const int64_t m = m0 + r;
          const double v = bias.empty() ? acc[r] : acc[r] + bias[static_cast<size_t>(m)];
          ys[(n * M + m) * OS + o] = from_compute<S>(static_cast<compute_t<S>>(v));
        }
      }
    }
  });
}

}  // namespace conv_detail

// y = Conv(x, w) + b for a resolved window, into `out` ([N, M, out...]).
template <typename S>
void conv_f64(const Tensor& x, const Tensor& w, const Tensor* b, const Window& win, int64_t group, Tensor& out) {
  const Shape& xs = x.shape();
  const int64_t N = xs[0], C = xs[1], M = w.shape()[0], Cg = C / group, Mg = M / group;
  const size_t dims = win.in.size();
  const int64_t IS = product(win.in), OS = product(win.out), KS = product(win.kernel), K = Cg * KS;
  const auto in_strides = strides_of(win.in);
  // Each kernel position's offset in the input plane, and along each dim.
  std::vector<int64_t> koff, kstep;
  for (Counter kc(win.kernel); kc.valid(); kc.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < dims; ++d) {
      kstep.push_back(kc.index[d] * win.dilations[d]);
      off += kc.index[d] * win.dilations[d] * in_strides[d];
    }
    koff.push_back(off);
  }
  // Every output position's window: its first input position per dim, and
  // whether every kernel position is inside the input.
  std::vector<int64_t> first, base, all, inner, border;
  std::vector<char> inside;
  int64_t op = 0;
  for (Counter oc(win.out); oc.valid(); oc.next(), ++op) {
    bool in = true;
    int64_t at0 = 0;
    for (size_t d = 0; d < dims; ++d) {
      const int64_t f = oc.index[d] * win.strides[d] - win.pad_begin[d];
      if (f < 0 || f + (win.kernel[d] - 1) * win.dilations[d] >= win.in[d]) in = false;
      first.push_back(f);
      at0 += f * in_strides[d];
    }
    base.push_back(at0);
    inside.push_back(in ? 1 : 0);
    all.push_back(op);
    (in ? inner : border).push_back(op);
  }
  // A kernel position in the padding adds nothing to the sum. In the product
  // it adds 0 * w, which is the same (a sum that starts at +0 never becomes
  // -0, and x + 0 is x) unless w is inf or NaN: then the border keeps the
  // direct loop, which skips those positions.
  const std::byte* xr = x.raw();  // fetched once: per element they cost more than the read
  const std::byte* wr = w.raw();
  const auto elem = static_cast<int64_t>(sizeof(S));
  std::vector<double> bias;  // (its length is the caller's check)
  if (b)
    for (int64_t m = 0; m < M; ++m) bias.push_back(b->element_as_double(static_cast<uint64_t>(m)));
  std::byte* po = out.mutable_raw();  // fetched once: per element it costs more than the store
  if (Cg == 1 && dims <= 2 && dims >= 1) {
    conv_detail::depthwise_direct<S>(xr, wr, bias, win, N, C, M, po);
    return;
  }
  // Output position j's kernel positions inside the input, in order, with
  // their input offsets: appended to `taps`.
  auto taps_inside = [&](size_t j, std::vector<std::pair<int64_t, int64_t>>& taps) {
    for (int64_t kp = 0; kp < KS; ++kp) {
      bool in = true;
      for (size_t d = 0; d < dims && in; ++d) {
        const int64_t pos = first[j * dims + d] + kstep[static_cast<size_t>(kp) * dims + d];
        in = pos >= 0 && pos < win.in[d];
      }
      if (in) taps.emplace_back(kp, base[j] + koff[static_cast<size_t>(kp)]);
    }
  };
  if (OS <= 4) {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> taps(static_cast<size_t>(OS));
    for (int64_t o = 0; o < OS; ++o) taps_inside(static_cast<size_t>(o), taps[static_cast<size_t>(o)]);
    conv_detail::few_positions_direct<S>(xr, wr, bias, N, C, M, group, IS, OS, KS, taps, po);
    return;
  }
  // (The direct paths above skip the padding whatever w holds; the product
  // needs to know.)
  const bool finite = conv_detail::all_finite<S>(wr, w.element_count());
  const std::vector<int64_t>& columns = finite ? all : inner;
  auto finish = [&](int64_t n, int64_t m, int64_t o, double v) {
    const S y = from_compute<S>(static_cast<compute_t<S>>(b ? v + bias[static_cast<size_t>(m)] : v));
    std::memcpy(po + static_cast<uint64_t>((n * M + m) * OS + o) * sizeof(S), &y, sizeof(S));
  };
  bool pointwise = KS == 1 && OS == IS;
  for (size_t d = 0; d < dims; ++d)
    pointwise = pointwise && win.strides[d] == 1 && win.pad_begin[d] == 0 && win.pad_end[d] == 0;
  if (!columns.empty())
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < group; ++g) {
        const math::Operand wa{wr + g * Mg * K * elem, K, 1};
        const conv_detail::Columns cols{xr + (n * C + g * Cg) * IS * elem, IS, KS, dims, &win.in, &in_strides, &kstep, &koff,
                                        &first, &base, &inside, &columns};
        // A 1x1 kernel at stride 1 without padding reads the input's planes
        // as they lie: column j, element c is x[c * IS + j], packed as a
        // strided matrix (rows widened whole) instead of position by position.
        const math::Operand planes{xr + (n * C + g * Cg) * IS * elem, 1, IS};
        const math::Packer columns_packer = pointwise ? math::Packer{&math::detail::pack_strided<S>, &planes}
                                                      : math::Packer{&conv_detail::pack_columns<S>, &cols};
        math::gemm_packed(math::Packer{&math::detail::pack_strided<S>, &wa}, columns_packer, Mg,
                          static_cast<int64_t>(columns.size()), K,
                          [&](int64_t i, int64_t j0, const double* v, int64_t cnt) {
                            const int64_t m = g * Mg + i;
                            if (finite) {  // every position: the row's outputs are contiguous
                              S* y = reinterpret_cast<S*>(po) + (n * M + m) * OS + j0;
                              const double bm = b ? bias[static_cast<size_t>(m)] : 0.0;
                              for (int64_t k = 0; k < cnt; ++k)
                                y[k] = from_compute<S>(static_cast<compute_t<S>>(b ? v[k] + bm : v[k]));
                              return;
                            }
                            for (int64_t k = 0; k < cnt; ++k) finish(n, m, columns[static_cast<size_t>(j0 + k)], v[k]);
                          },
                          math::exact_double_products<S>);
      }
  if (finite) return;
  // The border: the direct sum over the kernel positions inside the input,
  // found once per output position (they do not depend on n or m).
  if (border.empty()) return;
  std::vector<size_t> tap_start{0};
  std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel position, input offset), in order of the position
  for (int64_t o : border) {
    taps_inside(static_cast<size_t>(o), taps);
    tap_start.push_back(taps.size());
  }
  cpu::parallel_for(N * M, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t nm = lo; nm < hi; ++nm) {
      poll_deadline();
      const int64_t n = nm / M, m = nm % M, g = m / Mg;
      for (size_t e = 0; e < border.size(); ++e) {
        double acc = 0.0;
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t xo = (n * C + g * Cg + c) * IS, wo = (m * Cg + c) * KS;
          for (size_t t = tap_start[e]; t < tap_start[e + 1]; ++t) {
            const double p = conv_detail::at<S>(xr, xo + taps[t].second) * conv_detail::at<S>(wr, wo + taps[t].first);
            acc = acc + p;
          }
        }
        finish(n, m, border[e], acc);
      }
    }
  });
}

}  // namespace onnxscope::ref::nn
