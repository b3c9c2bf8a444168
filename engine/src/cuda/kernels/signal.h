// DFT, STFT and the cosine windows, in double as the reference computes
// them (ops/signal/dft.cpp, stft.cpp): one thread per transformed line,
// its signal built in a scratch line, then the reference's radix-2 FFT in
// place for power-of-two lengths of 64 and more, or its direct sum per bin
// otherwise, with the twiddles the host computed as the reference does. A
// complex product is (ac - bd, ad + bc), std::complex's for finite values.
#pragma once

#include "core/mel_weights.h"
#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

struct Cplx {
  double re, im;
};

OS_HD Cplx cplx_mul(Cplx a, Cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

// Whether a line of `len` takes the FFT (the reference's dft_line rule).
OS_HD bool fft_length(int64_t len) { return len >= 64 && (len & (len - 1)) == 0; }

// The radix-2 FFT of sig in place: bit-reversal permutation, then butterflies.
OS_HD void fft_in_place(Cplx* sig, int64_t len, const Cplx* w) {
  for (int64_t i = 1, j = 0; i < len; ++i) {
    int64_t bit = len >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const Cplx t = sig[i];
      sig[i] = sig[j];
      sig[j] = t;
    }
  }
  for (int64_t size = 2; size <= len; size <<= 1) {
    const int64_t half = size / 2, stride = len / size;
    for (int64_t start = 0; start < len; start += size)
      for (int64_t j = 0; j < half; ++j) {
        const Cplx t = cplx_mul(sig[start + j + half], w[j * stride]);
        const Cplx a = sig[start + j];
        sig[start + j + half] = {a.re - t.re, a.im - t.im};
        sig[start + j] = {a.re + t.re, a.im + t.im};
      }
  }
}

// Bin k of the direct sum: sum over m of sig[m] * w[(k * m) mod len].
OS_HD Cplx dft_bin(const Cplx* sig, int64_t len, const Cplx* w, int64_t k) {
  Cplx acc{0, 0};
  for (int64_t m = 0; m < len; ++m) {
    const Cplx p = cplx_mul(sig[m], w[(k * m) % len]);
    acc.re += p.re;
    acc.im += p.im;
  }
  return acc;
}

// DFT of the lines of x along an axis, x viewed as [outer, n_in, inner,
// comps] (comps 1 real, 2 complex), y as [outer, n_out, inner, out_comps].
// Item: line = o * inner + in.
struct DftKernel {
  ElemType type;  // x's and y's: float32, float16 or bfloat16
  int64_t n_in, len, n_out, inner, comps, out_comps;
  bool inverse, irfft;  // irfft: inverse and onesided, the Hermitian spectrum rebuilt
  const void* x;
  const Cplx* twiddle;  // [len]
  Cplx* scratch;        // [lines, len]
  void* y;
  OS_HD Cplx at(int64_t o, int64_t in, int64_t m) const {
    if (m >= n_in) return {0, 0};
    const int64_t base = ((o * n_in + m) * inner + in) * comps;
    return {static_cast<double>(load_real(type, x, base)), comps == 2 ? static_cast<double>(load_real(type, x, base + 1)) : 0.0};
  }
  OS_HD void operator()(int64_t line) const {
    const int64_t o = line / inner, in = line % inner;
    Cplx* sig = scratch + line * len;
    if (irfft) {
      const int64_t half = len / 2 + 1;
      for (int64_t k = 0; k < len; ++k) {
        if (k < half) {
          sig[k] = at(o, in, k);
        } else {
          const Cplx v = at(o, in, len - k);
          sig[k] = {v.re, -v.im};
        }
      }
      sig[0].im = 0;
      if (len % 2 == 0) sig[len / 2].im = 0;
    } else {
      for (int64_t m = 0; m < len; ++m) sig[m] = at(o, in, m);
    }
    const bool fft = fft_length(len);
    if (fft) fft_in_place(sig, len, twiddle);
    for (int64_t k = 0; k < n_out; ++k) {
      Cplx v = fft ? sig[k] : dft_bin(sig, len, twiddle, k);
      if (inverse) v = {v.re / static_cast<double>(len), v.im / static_cast<double>(len)};
      const int64_t base = ((o * n_out + k) * inner + in) * out_comps;
      store_real(type, y, base, static_cast<float>(v.re));
      if (out_comps == 2) store_real(type, y, base + 1, static_cast<float>(v.im));
    }
  }
};

// STFT: frame f of batch b (item b * frames + f) is signal[b, f * step + n]
// times window[n] for n < frame, transformed; y [batch, frames, bins, 2].
struct StftKernel {
  ElemType type;  // the signal's, the window's and y's
  int64_t length, comps, step, frame, frames, bins;
  const void* signal;
  const void* window;  // [frame] or nullptr: ones
  const Cplx* twiddle;  // [frame]
  Cplx* scratch;        // [batch * frames, frame]
  void* y;
  OS_HD void operator()(int64_t item) const {
    const int64_t b = item / frames, f = item % frames;
    Cplx* seg = scratch + item * frame;
    for (int64_t n = 0; n < frame; ++n) {
      const int64_t base = (b * length + f * step + n) * comps;
      const double w = window ? static_cast<double>(load_real(type, window, n)) : 1.0;
      const double re = static_cast<double>(load_real(type, signal, base));
      const double im = comps == 2 ? static_cast<double>(load_real(type, signal, base + 1)) : 0.0;
      seg[n] = {w * re, w * im};
    }
    const bool fft = fft_length(frame);
    if (fft) fft_in_place(seg, frame, twiddle);
    for (int64_t k = 0; k < bins; ++k) {
      const Cplx v = fft ? seg[k] : dft_bin(seg, frame, twiddle, k);
      store_real(type, y, item * bins * 2 + 2 * k, static_cast<float>(v.re));
      store_real(type, y, item * bins * 2 + 2 * k + 1, static_cast<float>(v.im));
    }
  }
};

// HannWindow, HammingWindow, BlackmanWindow: w[n] = sum_j a[j] * cos(2 pi j n / N)
// (N = 0, a symmetric window of one point: 1), stored in `out` as the
// reference stores it: through float for the narrow floats, truncated for
// integers.
struct CosineWindowKernel {
  ElemType out;
  int terms;
  double a[3];
  double period;  // N
  void* y;
  OS_HD void operator()(int64_t n) const {
    double acc = 0;
    for (int j = 0; j < terms; ++j)
      acc += a[j] * cos(2.0 * 3.141592653589793 * static_cast<double>(j) * static_cast<double>(n) / period);
    const double v = period == 0 ? 1.0 : acc;
    if (out == ElemType::Double) static_cast<double*>(y)[n] = v;
    else if (out == ElemType::Float || out == ElemType::Float16 || out == ElemType::BFloat16) store_real(out, y, n, static_cast<float>(v));
    else cast_store(out, y, n, CastValue{v, 0, 0, 0});
  }
};

// MelWeightMatrix: element (bin j, filter i) of [spec_bins, mel_bins] from
// filter i's three edges (computed on the host, core/mel_weights.h), in
// double, stored as the window kernels store (float types through float32).
struct MelWeightKernel {
  ElemType out;
  int64_t mel_bins;
  const int64_t* edges;  // mel_bins + 2
  void* y;
  OS_HD void operator()(int64_t k) const {
    const int64_t j = k / mel_bins, i = k % mel_bins;
    const double v = onnxscope::mel::weight(j, edges[i], edges[i + 1], edges[i + 2]);
    if (out == ElemType::Double) static_cast<double*>(y)[k] = v;
    else if (out == ElemType::Float || out == ElemType::Float16 || out == ElemType::BFloat16) store_real(out, y, k, static_cast<float>(v));
    else cast_store(out, y, k, CastValue{v, 0, 0, 0});
  }
};

}  // namespace onnxscope::cuda
