// Conv on the runtime's convolution (cuDNN on the GPU), float32, 1 to 3
// spatial dims; asymmetric pads are applied by copying into a zeroed,
// padded input first; the bias (and a fused activation) as the runtime's
// epilogue (inside cuDNN's call where it can, else one kernel).
// float16 / bfloat16 through float32 (run_on_float32), rounded once.
#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_conv(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("Conv takes X and W");
  if (auto r = require_one_real_type(g, n, 0, 3)) return r;
  return refuse_spatial_rank(g, n);
}

}  // namespace

bool conv_forward(OpContext& c, const Activation& act_in, const DeviceTensor* residual_in) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& w = c.input(1);
  if (w.shape.size() != x.shape.size()) c.fail("W " + shape_to_string(w.shape) + " and X " + shape_to_string(x.shape) + " differ in rank");
  const int64_t groups = c.attr_int("group", 1);
  const int64_t n = x.shape[0], ch = x.shape[1], k = w.shape[0];
  if (groups <= 0 || ch % groups || k % groups || w.shape[1] * groups != ch)
    c.fail("X has " + std::to_string(ch) + " channels, W " + shape_to_string(w.shape) + ", group " + std::to_string(groups));
  const Window win = window_of(c, x.shape, std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()), false);
  const std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  if (!ks.empty() && ks != win.kernel) c.fail("kernel_shape disagrees with W " + shape_to_string(w.shape));
  Shape out = {n, k};
  out.insert(out.end(), win.out.begin(), win.out.end());
  const bool residual_fits = !residual_in || residual_in->shape == out;
  const DeviceTensor* residual = residual_fits ? residual_in : nullptr;
  const Activation act = residual_fits ? act_in : Activation{};
  c.output(0) = c.allocate(DataType::Float, out);
  if (elements_of(out) == 0) return residual_fits;

  ConvArgs a;
  a.rank = win.rank;
  a.n = n;
  a.c = ch;
  a.k = k;
  a.groups = groups;
  bool symmetric = true;
  for (int d = 0; d < win.rank; ++d) symmetric = symmetric && win.pad_begin[static_cast<size_t>(d)] == win.pad_end[static_cast<size_t>(d)];
  DeviceTensor padded;
  const void* xdata = x.data;
  for (int d = 0; d < win.rank; ++d) {
    const auto s = static_cast<size_t>(d);
    a.in[d] = win.in[s];
    a.kernel[d] = win.kernel[s];
    a.out[d] = win.out[s];
    a.stride[d] = win.stride[s];
    a.dilation[d] = win.dilation[s];
    a.pad[d] = symmetric ? win.pad_begin[s] : 0;
  }
  if (!symmetric) {
    Shape ps = {n, ch};
    for (int d = 0; d < win.rank; ++d) {
      const auto s = static_cast<size_t>(d);
      ps.push_back(win.in[s] + win.pad_begin[s] + win.pad_end[s]);
      a.in[d] = ps.back();
    }
    padded = c.allocate(DataType::Float, ps);
    c.rt().zero(padded.data, bytes_of(DataType::Float, ps));
    StridedCopy p;
    p.dims = x.shape;
    p.in_stride = contiguous_strides(x.shape);
    p.out_stride = contiguous_strides(ps);
    for (int d = 0; d < win.rank; ++d) p.out_base += win.pad_begin[static_cast<size_t>(d)] * p.out_stride[static_cast<size_t>(d) + 2];
    strided_copy(c, DataType::Float, p, x.data, padded.data);
    xdata = padded.data;
  }
  a.x = static_cast<const float*>(xdata);
  a.w = static_cast<const float*>(w.data);
  a.y = static_cast<float*>(c.output(0).data);
  a.w_half = c.half_constant(1);
  if (xdata == x.data) a.x_half = c.half_input(0);  // fp16: X's half copy, when its producer wrote one
  const DeviceTensor* bias = c.has_input(2) ? &c.input(2) : nullptr;
  if (bias && elements_of(bias->shape) != static_cast<uint64_t>(k))
    c.fail("the bias " + shape_to_string(bias->shape) + " does not have " + std::to_string(k) + " elements");
  const int64_t inner = static_cast<int64_t>(elements_of(out) / static_cast<uint64_t>(n * k));
  a.epilogue = epilogue_of(act);
  a.epilogue.bias = bias ? static_cast<const float*>(bias->data) : nullptr;
  a.epilogue.inner = inner;
  a.epilogue.channels = k;
  a.epilogue.residual = residual ? static_cast<const float*>(residual->data) : nullptr;
  // fp16: the output's half copy, for the next convolution or GEMM (a
  // convolution's output most often feeds one).
  if (residual_fits) a.epilogue.half_out = c.make_half_copy(c.output(0));
  if (ch == 0) {  // a sum over no channels (cuDNN takes no empty tensor): the epilogue over zeros
    c.rt().zero(a.y, bytes_of(DataType::Float, out));
    if (a.epilogue.any()) run_epilogue(c.rt(), a.epilogue, a.y, static_cast<int64_t>(elements_of(out)));
    return residual_fits;
  }
  c.rt().conv(a, c.mode());
  return residual_fits;
}

namespace {

void run_conv(OpContext& c) {
  run_on_float32(c, [](OpContext& f) { conv_forward(f, {}); });
}

}  // namespace

void add_conv_ops(std::vector<OpDef>& t) { t.push_back({"Conv", refuse_conv, run_conv, OpBackend::Conv}); }

}  // namespace onnxscope::cuda
