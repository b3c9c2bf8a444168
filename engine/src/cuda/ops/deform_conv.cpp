// DeformConv (opset 19, 2-D; float32, and float16 / bfloat16 through it,
// rounded once): the reference's geometry and checks, then one thread per
// output element (kernels/deform_conv.h).
#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_deform_conv(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3) return std::string("DeformConv takes X, W and offset");
  if (auto r = require_one_real_type(g, n, 0, 3)) return r;
  for (size_t i = 3; i < n.inputs.size() && i < 5; ++i)
    if (!n.inputs[i].empty() && declared_type(g, n.inputs[i]) != declared_type(g, n.inputs[0]))
      return std::string("the CUDA DeformConv takes B and mask of X's type");
  return std::nullopt;
}

void deform_conv_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& w = c.input(1);
  const DeviceTensor& offset = c.input(2);
  if (x.shape.size() != 4) c.fail("DeformConv supports 2-D inputs [N, C, H, W] only, got " + shape_to_string(x.shape));
  if (w.shape.size() != 4) c.fail("W must be [M, C / group, kH, kW], got " + shape_to_string(w.shape));
  DeformConvKernel k{};
  k.N = x.shape[0];
  k.C = x.shape[1];
  k.H = x.shape[2];
  k.W = x.shape[3];
  k.M = w.shape[0];
  k.group = c.attr_int("group", 1);
  k.offset_group = c.attr_int("offset_group", 1);
  if (k.group < 1 || k.C % k.group || k.M % k.group || w.shape[1] * k.group != k.C)
    c.fail("X has " + std::to_string(k.C) + " channels, W " + shape_to_string(w.shape) + ", group " + std::to_string(k.group));
  if (k.offset_group < 1 || k.C % k.offset_group) c.fail("offset_group must divide the input channels");
  const Window win = window_of(c, x.shape, {w.shape[2], w.shape[3]}, false);
  const std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  if (!ks.empty() && ks != win.kernel) c.fail("kernel_shape disagrees with W " + shape_to_string(w.shape));
  k.kH = win.kernel[0];
  k.kW = win.kernel[1];
  k.oH = win.out[0];
  k.oW = win.out[1];
  for (int d = 0; d < 2; ++d) {
    k.stride[d] = win.stride[static_cast<size_t>(d)];
    k.pad[d] = win.pad_begin[static_cast<size_t>(d)];
    k.dilation[d] = win.dilation[static_cast<size_t>(d)];
  }
  const int64_t KS = k.kH * k.kW;
  const Shape want_offset = {k.N, k.offset_group * KS * 2, k.oH, k.oW};
  if (offset.shape != want_offset)
    c.fail("offset must have shape " + shape_to_string(want_offset) + ", got " + shape_to_string(offset.shape));
  if (c.has_input(3) && elements_of(c.input(3).shape) != static_cast<uint64_t>(k.M))
    c.fail("B has " + std::to_string(elements_of(c.input(3).shape)) + " values, expected " + std::to_string(k.M) +
           " (one per output channel)");
  const Shape want_mask = {k.N, k.offset_group * KS, k.oH, k.oW};
  if (c.has_input(4) && c.input(4).shape != want_mask)
    c.fail("mask must have shape " + shape_to_string(want_mask) + ", got " + shape_to_string(c.input(4).shape));
  const Shape out = {k.N, k.M, k.oH, k.oW};
  c.output(0) = c.allocate(DataType::Float, out);
  const auto count = static_cast<int64_t>(elements_of(out));
  if (count == 0) return;
  k.x = static_cast<const float*>(x.data);
  k.w = static_cast<const float*>(w.data);
  k.offset = static_cast<const float*>(offset.data);
  k.bias = c.has_input(3) ? static_cast<const float*>(c.input(3).data) : nullptr;
  k.mask = c.has_input(4) ? static_cast<const float*>(c.input(4).data) : nullptr;
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, count);
}

void run_deform_conv(OpContext& c) { run_on_float32(c, deform_conv_f32); }

}  // namespace

void add_deform_conv_ops(std::vector<OpDef>& t) { t.push_back({"DeformConv", refuse_deform_conv, run_deform_conv}); }

}  // namespace onnxscope::cuda
