// Reference kernel: com.microsoft QLinearAveragePool (ONNX Runtime's
// contrib operator, which its QOperator quantizer writes for AveragePool).
//
// Inputs X, x_scale, x_zero_point (optional: 0), y_scale, y_zero_point
// (optional: 0); uint8 or int8, per-tensor parameters. AveragePool's
// attributes (auto_pad, ceil_mode, count_include_pad, kernel_shape, pads,
// strides) and channels_last (0: N C spatial..., 1: N spatial... C); 1 to 3
// spatial dims. Each window's mean of the dequantized taps inside X, divided
// by the taps inside X or, with count_include_pad, inside X and its declared
// padding (not ceil_mode's extra), as AveragePool counts them; the sum exact
// in integers, the mean and the requantization in double, then rounded half
// to even and saturated.
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

template <typename T>
void pool(KernelContext& ctx, bool channels_last) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    ctx.fail("X must have 1 to 3 spatial dims (rank 3 to 5), got " + shape_to_string(x.shape()));
  const float sx = qlinear_scale(ctx, 1, "x_scale"), sy = qlinear_scale(ctx, 3, "y_scale");
  const T zx = qlinear_zero_point<T>(ctx, 2, x.dtype(), "x_zero_point");
  const T zy = qlinear_zero_point<T>(ctx, 4, x.dtype(), "y_zero_point");
  const Shape& s = x.shape();
  const size_t k = static_cast<size_t>(rank - 2);
  const int64_t N = s[0], C = channels_last ? s.back() : s[1];
  std::vector<int64_t> in(k);
  for (size_t d = 0; d < k; ++d) in[d] = s[channels_last ? 1 + d : 2 + d];
  if (!ctx.has_attr("kernel_shape")) ctx.fail("kernel_shape is required");
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != k)
    ctx.fail("kernel_shape has " + std::to_string(kernel.size()) + " values but X has " + std::to_string(k) +
             " spatial dimensions");
  const nn::Window w = nn::resolve_window(ctx, in, kernel, ctx.attr_int("ceil_mode", 0) != 0);
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  Shape out{N};
  if (!channels_last) out.push_back(C);
  out.insert(out.end(), w.out.begin(), w.out.end());
  if (channels_last) out.push_back(C);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  const T* src = x.data<T>();
  T* dst = y.mutable_data<T>();
  int64_t in_plane = 1, out_plane = 1;
  for (size_t d = 0; d < k; ++d) {
    in_plane *= in[d];
    out_plane *= w.out[d];
  }
  // Per output position and dim: the taps inside X, [lo, hi), and the count inside X and its declared padding.
  auto span = [&](size_t d, int64_t o, int64_t lo, int64_t hi) {
    const int64_t start = o * w.strides[d] - w.pad_begin[d];
    return std::pair<int64_t, int64_t>{std::clamp(start, lo, hi), std::clamp(start + w.kernel[d], lo, hi)};
  };
  std::vector<int64_t> oi(k), ti(k);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t op = 0; op < out_plane; ++op) {
      int64_t rest = op;
      for (size_t d = k; d-- > 0;) {
        oi[d] = rest % w.out[d];
        rest /= w.out[d];
      }
      std::vector<std::pair<int64_t, int64_t>> taps(k);
      int64_t count = 1;
      for (size_t d = 0; d < k; ++d) {
        taps[d] = span(d, oi[d], 0, in[d]);
        const auto c = include_pad ? span(d, oi[d], -w.pad_begin[d], in[d] + w.pad_end[d]) : taps[d];
        count *= c.second - c.first;
      }
      for (int64_t c = 0; c < C; ++c) {
        int64_t sum = 0;
        bool any = true;
        for (size_t d = 0; d < k; ++d) {
          ti[d] = taps[d].first;
          any = any && taps[d].first < taps[d].second;
        }
        while (any) {
          int64_t ip = 0;
          for (size_t d = 0; d < k; ++d) ip = ip * in[d] + ti[d];
          const int64_t at = channels_last ? (n * in_plane + ip) * C + c : (n * C + c) * in_plane + ip;
          sum += static_cast<int64_t>(src[at]) - static_cast<int64_t>(zx);
          size_t d = k;
          while (d-- > 0) {
            if (++ti[d] < taps[d].second) break;
            ti[d] = taps[d].first;
          }
          if (d == static_cast<size_t>(-1)) break;
        }
        // A window with no counted position is 0 / 0: NaN, which quantizes to the zero point.
        const double mean = count > 0 ? static_cast<double>(sum) * sx / static_cast<double>(count) : 0.0;
        const int64_t yo = channels_last ? (n * out_plane + op) * C + c : (n * C + c) * out_plane + op;
        dst[yo] = quantize_float<T>(static_cast<float>(mean / sy), zy);
      }
    }
}

}  // namespace

void QLinearAveragePool(KernelContext& ctx) {
  const int64_t cl = ctx.attr_int("channels_last", 0);
  if (cl != 0 && cl != 1) ctx.fail("channels_last must be 0 or 1, got " + std::to_string(cl));
  qlinear_unary_entry(ctx, "QLinearAveragePool", [&](auto tag) { pool<typename decltype(tag)::type>(ctx, cl == 1); });
}

}  // namespace onnxscope::ref
