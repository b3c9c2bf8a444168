// Resize (opset 11 on) of float32 tensors, every mode and coordinate
// transformation but tf_crop_and_resize, with the geometry the reference and
// the CUDA engine share (core/resize_plan.h). Nearest copies one input
// element per output element (a table per dim, rows split across the thread
// pool); linear and cubic resize one axis after another, as the reference
// does, each output row a weighted sum of input rows, vectorised over the
// dims after the axis. Weights are float here (the reference sums in
// double): the harness holds them to 2e-5.
#include <climits>
#include <Eigen/Core>
#include <optional>
#include <stdexcept>

#include "core/target_clones.h"
#include "core/resize_plan.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using CMap = Eigen::Map<const Arr>;
using Map = Eigen::Map<Arr>;

std::optional<std::vector<double>> reals_of(const Value* v) {
  if (!v || !v->is_tensor() || v->tensor().rank() > 1) return std::nullopt;
  const Tensor& t = v->tensor();
  std::vector<double> out(t.element_count());
  if (t.dtype() == DataType::Float) std::copy_n(t.data<float>(), out.size(), out.begin());
  else if (t.dtype() == DataType::Double) std::copy_n(t.data<double>(), out.size(), out.begin());
  else return std::nullopt;
  return out;
}

std::optional<resize::Spec> spec_of(const KernelContext& ctx) {
  if (ctx.opset_version() < 11 || ctx.input_count() < 1 || ctx.input_count() > 4) return std::nullopt;
  const Value* xv = ctx.input_value(0);
  if (!xv || !xv->is_tensor() || xv->tensor().dtype() != DataType::Float || xv->tensor().element_count() == 0 ||
      xv->tensor().rank() == 0)
    return std::nullopt;
  try {
    resize::Request r = resize::request_of(ctx.node(), ctx.opset_version());
    if (ctx.input_count() > 1 && ctx.input_value(1)) {
      auto roi = reals_of(ctx.input_value(1));
      if (!roi) return std::nullopt;
      r.roi = *roi;
    }
    if (ctx.input_count() > 2 && ctx.input_value(2)) {
      auto sc = reals_of(ctx.input_value(2));
      if (!sc) return std::nullopt;
      r.scales = *sc;
    }
    if (ctx.input_count() > 3 && ctx.input_value(3)) {
      const Value* s = ctx.input_value(3);
      if (!s->is_tensor() || s->tensor().dtype() != DataType::Int64 || s->tensor().rank() != 1) return std::nullopt;
      r.sizes.assign(s->tensor().data<int64_t>(), s->tensor().data<int64_t>() + s->tensor().element_count());
    }
    resize::Spec sp = resize::resize_spec(r, xv->tensor().shape());
    if (sp.coord == "tf_crop_and_resize") return std::nullopt;  // the extrapolation value: the reference
    for (int64_t d : sp.out)
      if (d < 0) return std::nullopt;
    return sp;
  } catch (const std::exception&) {
    return std::nullopt;  // the reference names the problem
  }
}

bool accepts(const KernelContext& ctx) { return spec_of(ctx).has_value(); }

void nearest(const resize::Spec& sp, const Tensor& x, float* y) {
  const Shape& xs = x.shape();
  const size_t rank = xs.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * xs[d];
  std::vector<std::vector<int64_t>> src(rank);  // per dim: the input offset each output coordinate reads
  for (size_t d = 0; d < rank; ++d) {
    src[d] = resize::nearest_picks(sp, d, xs[d], sp.out[d]);
    for (auto& p : src[d]) p *= strides[d];
  }
  const int64_t n = sp.out.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= sp.out[d];
  const float* in = x.data<float>();
  const std::vector<int64_t>& last = src.back();
  parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off = 0, rest = r;
      for (size_t d = rank - 1; d-- > 0;) {
        off += src[d][static_cast<size_t>(rest % sp.out[d])];
        rest /= sp.out[d];
      }
      const float* row = in + off;
      float* o = y + r * n;
      for (int64_t k = 0; k < n; ++k) o[k] = row[last[static_cast<size_t>(k)]];
    }
  });
}

// The last axis with two taps per output (linear): a whole row at a time from
// separate index and weight arrays, so the compiler can gather (cloned for
// AVX-512 / AVX2; int32 indices, the caller checks they fit).
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") void two_tap_row(const float* row, const int32_t* i0,
                                                                              const int32_t* i1, const float* w0,
                                                                              const float* w1, float* y, int64_t out) {
  for (int64_t k = 0; k < out; ++k) y[k] = w0[k] * row[i0[k]] + w1[k] * row[i1[k]];
}

// x viewed as [outer, in, inner] -> y [outer, out, inner] along one axis.
void resize_axis(const resize::AxisTaps& t, const float* x, float* y, int64_t outer, int64_t in, int64_t out,
                 int64_t inner) {
  std::vector<float> w(t.w.begin(), t.w.end());
  if (inner == 1 && t.n == 2 && in <= INT32_MAX) {
    std::vector<int32_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
    std::vector<float> w0(static_cast<size_t>(out)), w1(static_cast<size_t>(out));
    for (int64_t k = 0; k < out; ++k) {
      const auto u = static_cast<size_t>(k);
      i0[u] = static_cast<int32_t>(t.idx[2 * u]);
      i1[u] = static_cast<int32_t>(t.idx[2 * u + 1]);
      w0[u] = w[2 * u];
      w1[u] = w[2 * u + 1];
    }
    parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(out, 1)), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) two_tap_row(x + o * in, i0.data(), i1.data(), w0.data(), w1.data(), y + o * out, out);
    });
    return;
  }
  parallel_for(outer * out, std::max<int64_t>(1, 16384 / (inner * t.n)), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t o = j / out, k = j % out;
      const float* base = x + o * in * inner;
      const int64_t* idx = t.idx.data() + k * t.n;
      const float* wk = w.data() + k * t.n;
      float* dst = y + j * inner;
      if (inner == 1) {
        float s = 0;
        for (int64_t q = 0; q < t.n; ++q) s += wk[q] * base[idx[q]];
        *dst = s;
        continue;
      }
      Map acc(dst, inner);
      acc = wk[0] * CMap(base + idx[0] * inner, inner);
      for (int64_t q = 1; q < t.n; ++q) acc += wk[q] * CMap(base + idx[q] * inner, inner);
    }
  });
}

void Resize(KernelContext& ctx) {
  const std::optional<resize::Spec> sp = spec_of(ctx);
  if (!sp) ctx.fail("problem not supported by the CPU resize kernel");
  const Tensor& x = ctx.input(0);
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, sp->out);
  if (yt.element_count() == 0) return;
  float* y = yt.mutable_data<float>();
  if (sp->mode == "nearest") return nearest(*sp, x, y);
  // One axis after another; the axes left as they are are skipped.
  Shape cur = x.shape();
  std::vector<size_t> axes;
  for (size_t d = 0; d < cur.size(); ++d)
    if (!resize::axis_unchanged(*sp, d, cur[d])) axes.push_back(d);
  if (axes.empty()) {
    std::copy_n(x.data<float>(), x.element_count(), y);
    return;
  }
  std::vector<float> a, b;  // ping-pong buffers for the steps before the last
  const float* src = x.data<float>();
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = axes[k];
    int64_t outer = 1, inner = 1;
    for (size_t e = 0; e < d; ++e) outer *= cur[e];
    for (size_t e = d + 1; e < cur.size(); ++e) inner *= cur[e];
    const resize::AxisTaps t = resize::plan_axis(*sp, d, cur[d], sp->out[d]);
    float* dst = y;
    if (k + 1 < axes.size()) {
      std::vector<float>& buf = (k % 2 == 0) ? a : b;
      // An intermediate can be larger than the output (enlarged first, shrunk later): held to the tensor limit.
      const double elems = static_cast<double>(outer) * static_cast<double>(sp->out[d]) * static_cast<double>(inner);
      if (elems * 4 > static_cast<double>(ctx.max_tensor_bytes()))
        ctx.fail("an intermediate of " + std::to_string(static_cast<uint64_t>(elems)) + " floats is larger than the limit of " +
                 std::to_string(ctx.max_tensor_bytes()) + " bytes");
      buf.resize(static_cast<size_t>(elems));
      dst = buf.data();
    }
    resize_axis(t, src, dst, outer, cur[d], sp->out[d], inner);
    cur[d] = sp->out[d];
    src = dst;
  }
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Resize", 11, INT_MAX, "cpu-eigen", Resize, accepts});
}

}  // namespace onnxscope::cpu
