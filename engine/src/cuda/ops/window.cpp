#include "cuda/ops/window.h"

namespace onnxscope::cuda {

Window window_of(const OpContext& c, const Shape& x_shape, std::vector<int64_t> kernel, bool ceil_mode) {
  if (x_shape.size() < 3 || x_shape.size() > 5) c.fail("the input " + shape_to_string(x_shape) + " should have 1 to 3 spatial dims");
  Window w;
  w.rank = static_cast<int>(x_shape.size()) - 2;
  const auto r = static_cast<size_t>(w.rank);
  w.in.assign(x_shape.begin() + 2, x_shape.end());
  if (kernel.empty()) kernel = c.attr_ints("kernel_shape");
  if (kernel.size() != r) c.fail("kernel_shape has " + std::to_string(kernel.size()) + " dims for " + std::to_string(r) + " spatial dims");
  w.kernel = kernel;
  w.stride = c.attr_ints("strides");
  w.dilation = c.attr_ints("dilations");
  if (w.stride.empty()) w.stride.assign(r, 1);
  if (w.dilation.empty()) w.dilation.assign(r, 1);
  if (w.stride.size() != r || w.dilation.size() != r) c.fail("strides or dilations do not have one entry per spatial dim");
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = c.attr_ints("pads");
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  // Attributes from a model may be near 2^63: every step is checked.
  auto add = [&](int64_t a, int64_t b) {
    int64_t v;
    if (__builtin_add_overflow(a, b, &v)) c.fail("the window's extent overflows (kernel_shape, strides, dilations or pads too large)");
    return v;
  };
  auto mul = [&](int64_t a, int64_t b) {
    int64_t v;
    if (__builtin_mul_overflow(a, b, &v)) c.fail("the window's extent overflows (kernel_shape, strides, dilations or pads too large)");
    return v;
  };
  for (size_t d = 0; d < r; ++d) {
    if (w.kernel[d] <= 0 || w.stride[d] <= 0 || w.dilation[d] <= 0) c.fail("kernel, strides and dilations must be positive");
    const int64_t span = add(mul(w.kernel[d] - 1, w.dilation[d]), 1);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t target = add(w.in[d], w.stride[d] - 1) / w.stride[d];
      const int64_t total = std::max<int64_t>(0, add(mul(target - 1, w.stride[d]), span) - w.in[d]);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
    } else if (auto_pad == "NOTSET") {
      if (!pads.empty()) {
        if (pads.size() != 2 * r) c.fail("pads has " + std::to_string(pads.size()) + " entries, not " + std::to_string(2 * r));
        w.pad_begin[d] = pads[d];
        w.pad_end[d] = pads[d + r];
        if (w.pad_begin[d] < 0 || w.pad_end[d] < 0) c.fail("negative pads");
      }
    } else if (auto_pad != "VALID") {
      c.fail("unknown auto_pad '" + auto_pad + "'");
    }
    const int64_t padded = add(add(w.in[d], w.pad_begin[d]), w.pad_end[d]);
    const int64_t room = padded - span;
    if (room < 0) c.fail("the window (" + std::to_string(span) + ") is larger than the padded input (" + std::to_string(padded) + ")");
    int64_t out = room / w.stride[d] + 1;
    if (ceil_mode && auto_pad == "NOTSET") {
      out = add(room, w.stride[d] - 1) / w.stride[d] + 1;
      if (mul(out - 1, w.stride[d]) >= w.in[d] + w.pad_begin[d]) --out;  // the last window starts in the input
    }
    w.out.push_back(out);
  }
  return w;
}

std::optional<std::string> refuse_spatial_rank(const Graph& g, const Node& n) {
  const TypeInfo* t = n.inputs.empty() ? nullptr : g.type_of(n.inputs[0]);
  const size_t rank = t && t->shape ? t->shape->size() : 0;
  if (rank < 3 || rank > 5) return "the CUDA " + n.op_type + " takes 1 to 3 spatial dims (or the rank is unknown)";
  return std::nullopt;
}

}  // namespace onnxscope::cuda
