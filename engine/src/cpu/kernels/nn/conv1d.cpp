// 1-D Conv at unit stride, group 1, float32, as one matrix product per
// kernel tap: with X zero-padded into rows of Wp = W + pads, output column t
// reads column t + j*d of the padded rows for tap j, so tap j's share of Y
// [M, OW] is W_j [M, C] times the C x OW window of the padded X starting at
// column j*d (a strided view: no im2col copy), accumulated by oneDNN's sgemm.
// oneDNN's own 1-D convolution paid two layout reorders around its kernel
// (0.76x onnxruntime at [1,64,1000] k3).
#include <algorithm>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

struct Conv1d {
  int64_t N = 0, C = 0, W = 0, M = 0, K = 0, dil = 1, pl = 0, pr = 0, OW = 0;
  bool bias = false;
};

bool conv1d_of(const KernelContext& ctx, Conv1d& p) {
  if (!float_conv_inputs(ctx)) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const Tensor& w = ctx.input_value(1)->tensor();
  if (x.rank() != 3 || w.rank() != 3 || x.element_count() == 0 || w.element_count() == 0) return false;
  if (ctx.attr_int("group", 1) != 1 || w.shape()[1] != x.shape()[1]) return false;
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != std::vector<int64_t>{w.shape()[2]}) return false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (b->tensor().rank() != 1 || b->tensor().shape()[0] != w.shape()[0]) return false;
    p.bias = true;
  }
  ref::nn::Window win;
  try {
    win = ref::nn::resolve_window(ctx, {x.shape()[2]}, {w.shape()[2]}, false);
  } catch (const std::exception&) {
    return false;  // the reference names what is wrong
  }
  // Unit stride only (a strided window is not a view of rows), and a window
  // inside X and its padding (a mutated dilation of 2^40 is the reference's).
  if (win.strides[0] != 1 || (w.shape()[2] - 1) * win.dilations[0] + 1 > x.shape()[2] + win.pad_begin[0] + win.pad_end[0])
    return false;
  p.N = x.shape()[0];
  p.C = x.shape()[1];
  p.W = x.shape()[2];
  p.M = w.shape()[0];
  p.K = w.shape()[2];
  p.dil = win.dilations[0];
  p.pl = win.pad_begin[0];
  p.pr = win.pad_end[0];
  p.OW = win.out[0];
  // The padded copy of X (C x Wp floats) is this kernel's own allocation: a
  // mutated pad of 2^40 must not make it; the reference names the problem.
  const double padded = static_cast<double>(p.C) * static_cast<double>(p.W + p.pl + p.pr) * sizeof(float);
  return padded <= static_cast<double>(ctx.max_tensor_bytes());
}

bool accepts(const KernelContext& ctx) {
  Conv1d p;
  return conv1d_of(ctx, p);
}

void Run(KernelContext& ctx) {
  Conv1d p;
  if (!conv1d_of(ctx, p)) ctx.fail("problem not supported by the CPU 1-D convolution");
  const float* x = ctx.input(0).data<float>();
  const float* w = ctx.input(1).data<float>();
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, {p.N, p.M, p.OW});
  float* y = out.mutable_data<float>();
  // W [M, C, K] as K matrices [M, C]; X padded.
  std::vector<float> wk(static_cast<size_t>(p.K * p.M * p.C));
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t c = 0; c < p.C; ++c)
      for (int64_t j = 0; j < p.K; ++j) wk[static_cast<size_t>((j * p.M + m) * p.C + c)] = w[(m * p.C + c) * p.K + j];
  const int64_t Wp = p.W + p.pl + p.pr;
  std::vector<float> xp(static_cast<size_t>(p.C * Wp), 0.0f);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t c = 0; c < p.C; ++c) {
      const float* src = x + (n * p.C + c) * p.W;
      std::copy(src, src + p.W, xp.begin() + c * Wp + p.pl);
    }
    float* yn = y + n * p.M * p.OW;
    float beta = 0.0f;
    if (p.bias) {
      const float* b = ctx.input(2).data<float>();
      for (int64_t m = 0; m < p.M; ++m) std::fill(yn + m * p.OW, yn + (m + 1) * p.OW, b[m]);
      beta = 1.0f;
    }
    onednn::sync_threads();
    for (int64_t j = 0; j < p.K; ++j) {
      const dnnl::status st = dnnl::sgemm('N', 'N', p.M, p.OW, p.C, 1.0f, wk.data() + j * p.M * p.C, p.C,
                                          xp.data() + j * p.dil, Wp, j ? 1.0f : beta, yn, p.OW);
      if (st != dnnl::status::success) ctx.fail("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) + ")");
    }
  }
}

}  // namespace

void register_conv1d_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Conv", 1, INT_MAX, "cpu-gemm", Run, accepts});
}

}  // namespace onnxscope::cpu
