// Reference kernels: Softmax, LogSoftmax and Hardmax (one kernel, both axis conventions).
//
// Float math accumulates in double (the spec leaves the precision open) and
// rounds once on store; integer sums and products wrap like numpy's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/exp_f64.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

// Softmax or LogSoftmax of float32 rows of `len` contiguous values (the
// last axis): the same operations as the general loop below, with the same
// bits, arranged so they overlap. Up to 8 rows at a time: each row's
// maximum and sum still run in order, but the 8 rows' interleave, so each
// step waits on the one before it 8 times less (a row's sum alone, at 4
// cycles an add, was most of a 197-wide attention row); the divisions run
// over contiguous rows.
void softmax_float_rows(const float* x, float* y, uint64_t rows, uint64_t len, bool log) {
  constexpr uint64_t kRows = 8;
  std::vector<double> e(kRows * len);
  for (uint64_t r0 = 0; r0 < rows; r0 += kRows) {
    const uint64_t n = std::min(kRows, rows - r0);
    double mx[kRows], sum[kRows] = {};
    const float* in = x + r0 * len;
    for (uint64_t r = 0; r < n; ++r) mx[r] = -std::numeric_limits<double>::infinity();
    for (uint64_t j = 0; j < len; ++j)
      for (uint64_t r = 0; r < n; ++r) mx[r] = std::max(mx[r], static_cast<double>(in[r * len + j]));
    for (uint64_t r = 0; r < n; ++r) {
      double* er = e.data() + r * len;
      for (uint64_t j = 0; j < len; ++j) er[j] = static_cast<double>(in[r * len + j]) - mx[r];
      math::exp_nonpositive(er, static_cast<int64_t>(len));
    }
    for (uint64_t j = 0; j < len; ++j)
      for (uint64_t r = 0; r < n; ++r) sum[r] += e[r * len + j];
    for (uint64_t r = 0; r < n; ++r) {
      const double* er = e.data() + r * len;
      const float* row = x + (r0 + r) * len;  // read before the write: y may be x's bytes
      float* out = y + (r0 + r) * len;
      if (log) {
        const double ls = std::log(sum[r]);
        for (uint64_t j = 0; j < len; ++j) out[j] = static_cast<float>((static_cast<double>(row[j]) - mx[r]) - ls);
      } else {
        const double s = sum[r];
        for (uint64_t j = 0; j < len; ++j) out[j] = static_cast<float>(er[j] / s);
      }
    }
  }
}

// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and the
// operator works on each row of [d0*..*d(axis-1), d(axis)*..*d(n-1)]; from 13
// it works along the single dimension `axis` (default -1).
void softmax_family(KernelContext& ctx, SoftmaxKind kind) {
  const Tensor& x = ctx.input(0);
  const bool coerce_2d = ctx.opset_version() < 13;
  const int64_t rank = x.rank();
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", coerce_2d ? 1 : -1), rank));
  const Shape& s = x.shape();
  const uint64_t outer = rn::dims_product(s, 0, axis);
  const uint64_t len = coerce_2d ? rn::dims_product(s, axis, s.size()) : rn::dims_product(s, axis, axis + 1);
  const uint64_t inner = coerce_2d ? 1 : rn::dims_product(s, axis + 1, s.size());  // stride along the axis
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  if (x.element_count() == 0) return;
  if (x.dtype() == DataType::Float && inner == 1 && kind != SoftmaxKind::Hardmax) {
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    cpu::parallel_for(static_cast<int64_t>(outer), std::max<int64_t>(1, 4096 / static_cast<int64_t>(len)), [&](int64_t r0, int64_t r1) {
      poll_deadline();
      softmax_float_rows(px + r0 * len, py + r0 * len, static_cast<uint64_t>(r1 - r0), len, kind == SoftmaxKind::LogSoftmax);
    });
    return;
  }
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* px = x.raw();  // fetched once: per element they cost more than the copy
    std::byte* py = y.mutable_raw();
    auto at = [&](uint64_t i) {
      S v;
      std::memcpy(&v, px + i * sizeof(S), sizeof(S));
      return static_cast<double>(to_compute(v));
    };
    auto set = [&](uint64_t i, double v) {
      const S r = from_compute<S>(static_cast<compute_t<S>>(v));
      std::memcpy(py + i * sizeof(S), &r, sizeof(S));
    };
    // Rows are independent: each is computed by one thread, in one order.
    cpu::parallel_for(static_cast<int64_t>(outer * inner), std::max<int64_t>(1, 4096 / static_cast<int64_t>(len)), [&](int64_t r0, int64_t r1) {
      poll_deadline();
      std::vector<double> row(len), e(len);
      for (auto r = static_cast<uint64_t>(r0); r < static_cast<uint64_t>(r1); ++r) {
        const uint64_t o = r / inner, k = r % inner;
        const uint64_t base = o * len * inner + k;
        for (uint64_t j = 0; j < len; ++j) row[j] = at(base + j * inner);
        if (kind == SoftmaxKind::Hardmax) {
          // 1 at the first maximum (the first NaN if any, like numpy.argmax), 0 elsewhere.
          uint64_t best = 0;
          for (uint64_t j = 1; j < len && !std::isnan(row[best]); ++j)
            if (std::isnan(row[j]) || row[j] > row[best]) best = j;
          for (uint64_t j = 0; j < len; ++j) set(base + j * inner, j == best ? 1.0 : 0.0);
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (double v : row) mx = std::max(mx, v);
        // exp(x - max) (at most 0: math/exp_f64.h, over the row at once), summed in order.
        for (uint64_t j = 0; j < len; ++j) e[j] = row[j] - mx;
        math::exp_nonpositive(e.data(), static_cast<int64_t>(len));
        double sum = 0;
        for (uint64_t j = 0; j < len; ++j) sum += e[j];
        for (uint64_t j = 0; j < len; ++j) set(base + j * inner, kind == SoftmaxKind::Softmax ? e[j] / sum : (row[j] - mx) - std::log(sum));
      }
    });
  });
}

}  // namespace

void Softmax(KernelContext& c) { softmax_family(c, SoftmaxKind::Softmax); }
void LogSoftmax(KernelContext& c) { softmax_family(c, SoftmaxKind::LogSoftmax); }
void Hardmax(KernelContext& c) { softmax_family(c, SoftmaxKind::Hardmax); }

}  // namespace onnxscope::ref
