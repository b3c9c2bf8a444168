// Softmax and LogSoftmax (opset 13 on) over an axis that is not the last
// (a segmentation head's channels, [N, classes, H*W]): the input viewed as
// [outer, D, inner], each of the D rows of `inner` elements combined into a
// running maximum and then a sum of exponentials, vectorised over inner with
// Eigen, (outer, inner chunk) pairs split across the thread pool. oneDNN's
// primitive takes the last axis; on another axis with a plain layout it fell
// back to a reference loop about 100x slower than onnxruntime.
#include <Eigen/Core>
#include <cmath>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using CMap = Eigen::Map<const Arr>;
using Map = Eigen::Map<Arr>;
using NanMax = Eigen::internal::scalar_max_op<float, float, Eigen::PropagateNaN>;

bool accepts(const KernelContext& ctx) {
  if (ctx.opset_version() < 13 || ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor())
    return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const int64_t rank = x.rank(), axis = ctx.attr_int("axis", -1);
  if (x.dtype() != DataType::Float || rank == 0 || axis < -rank || axis >= rank || x.element_count() == 0) return false;
  return (axis < 0 ? axis + rank : axis) != rank - 1;  // the last axis is oneDNN's
}

template <bool Log>
void SoftmaxAxis(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank(), a = ctx.attr_int("axis", -1);
  const size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (size_t d = axis + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  const int64_t dim = x.shape()[axis];
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* y = yt.mutable_data<float>();
  const int64_t chunk = std::min<int64_t>(inner, 512), chunks = (inner + chunk - 1) / chunk;
  parallel_for(outer * chunks, std::max<int64_t>(1, 16384 / (dim * chunk)), [&](int64_t t0, int64_t t1) {
    Arr m(chunk), s(chunk);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, i0 = (t % chunks) * chunk, len = std::min(chunk, inner - i0);
      const float* base = in + o * dim * inner + i0;
      float* out = y + o * dim * inner + i0;
      auto row = [&](int64_t d) { return CMap(base + d * inner, len); };
      auto mh = m.head(len);
      auto sh = s.head(len);
      mh = row(0);
      for (int64_t d = 1; d < dim; ++d) mh = mh.binaryExpr(row(d), NanMax());
      // An infinite maximum makes inf - inf, NaN: as the reference's formula gives it.
      sh.setZero();
      for (int64_t d = 0; d < dim; ++d) {
        Map e(out + d * inner, len);
        e = (row(d) - mh).exp();
        sh += e;
      }
      if constexpr (Log) {
        const Arr ls = sh.log();
        for (int64_t d = 0; d < dim; ++d) Map(out + d * inner, len) = row(d) - mh - ls;
      } else {
        const Arr inv = sh.inverse();
        for (int64_t d = 0; d < dim; ++d) Map(out + d * inner, len) *= inv;
      }
    }
  });
}

}  // namespace

void register_softmax_axis_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Softmax", 13, INT_MAX, "cpu-eigen", SoftmaxAxis<false>, accepts});
  r.add(KernelDef{"", "LogSoftmax", 13, INT_MAX, "cpu-eigen", SoftmaxAxis<true>, accepts});
}

}  // namespace onnxscope::cpu
