// ConvTranspose on the runtime's transposed convolution (cuDNN's backward
// data on the GPU), float32 (float16 / bfloat16 through it, rounded once),
// 1 to 3 spatial dims. The output geometry
// (pads, auto_pad, output_shape, output_padding) follows the reference.
// Where the pads fit cuDNN's one symmetric pad, one call writes the output;
// otherwise the whole unpadded result is made and the output window copied
// out of it (zeros where the window reaches past it). Bias by one epilogue.
#include <climits>

#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_conv_transpose(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("ConvTranspose takes X and W");
  if (auto r = require_one_real_type(g, n, 0, 3)) return r;
  return refuse_spatial_rank(g, n);
}

// Python's floor division (pads from output_shape may be negative).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

struct Geometry {
  std::vector<int64_t> kernel, stride, dilation, out_pad, pad_begin, pad_end, full, out;
};

// One attribute list of `r` values (default `dflt` each), each in [lo, INT_MAX].
std::vector<int64_t> attr_list(const OpContext& c, const char* name, size_t r, int64_t dflt, int64_t lo) {
  std::vector<int64_t> v = c.attr_ints(name);
  if (v.empty()) v.assign(r, dflt);
  if (v.size() != r) c.fail(std::string(name) + " has " + std::to_string(v.size()) + " values for " + std::to_string(r) + " spatial dims");
  for (int64_t x : v)
    if (x < lo || x > INT_MAX) c.fail(std::string(name) + " value " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", 2^31)");
  return v;
}

Geometry geometry(const OpContext& c, const Shape& x, const Shape& w) {
  const size_t r = x.size() - 2;
  Geometry g;
  g.kernel.assign(w.begin() + 2, w.end());
  if (const auto ks = c.attr_ints("kernel_shape"); !ks.empty() && ks != g.kernel)
    c.fail("kernel_shape disagrees with W " + shape_to_string(w));
  g.stride = attr_list(c, "strides", r, 1, 1);
  g.dilation = attr_list(c, "dilations", r, 1, 1);
  g.out_pad = attr_list(c, "output_padding", r, 0, 0);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    c.fail("unknown auto_pad '" + auto_pad + "'");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pads = c.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * r, 0);
  if (pads.size() != 2 * r) c.fail("pads has " + std::to_string(pads.size()) + " values, not " + std::to_string(2 * r));
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != r) c.fail("output_shape does not have one value per spatial dim");
  for (size_t d = 0; d < r; ++d) {
    if (g.out_pad[d] >= g.stride[d] && g.out_pad[d] >= g.dilation[d])
      c.fail("output_padding must be smaller than the stride or the dilation");
    if (g.kernel[d] <= 0 || g.kernel[d] > INT_MAX) c.fail("the kernel size " + std::to_string(g.kernel[d]) + " is outside [1, 2^31)");
    if (x[d + 2] > INT_MAX) c.fail("the input size " + std::to_string(x[d + 2]) + " is beyond 2^31");
    const int64_t span = (g.kernel[d] - 1) * g.dilation[d] + 1;
    g.full.push_back(g.stride[d] * (x[d + 2] - 1) + span);  // reached by some input, output padding aside
    const int64_t extent = g.full[d] + g.out_pad[d];
    int64_t begin = 0, end = 0, out = 0;
    if (!out_shape.empty() || same) {  // pads follow from the output size asked for
      out = !out_shape.empty() ? out_shape[d] : x[d + 2] * g.stride[d];
      if (out < 0 || out > INT_MAX) c.fail("the output size " + std::to_string(out) + " is outside [0, 2^31)");
      const int64_t total = extent - out, half = floor_div(total, 2);
      begin = auto_pad == "SAME_UPPER" ? half : total - half;
      end = total - begin;
    } else {
      if (auto_pad != "VALID") {
        begin = pads[d];
        end = pads[r + d];
      }
      if (begin < 0 || end < 0 || begin > INT_MAX || end > INT_MAX) c.fail("pads must be in [0, 2^31)");
      out = extent - begin - end;
    }
    if (out < 0) c.fail("the output size of spatial dim " + std::to_string(d) + " is negative");
    g.pad_begin.push_back(begin);
    g.pad_end.push_back(end);
    g.out.push_back(out);
  }
  return g;
}

void conv_transpose_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& w = c.input(1);
  if (x.shape.size() < 3 || x.shape.size() > 5) c.fail("the input " + shape_to_string(x.shape) + " should have 1 to 3 spatial dims");
  if (w.shape.size() != x.shape.size()) c.fail("W " + shape_to_string(w.shape) + " and X " + shape_to_string(x.shape) + " differ in rank");
  const int64_t groups = c.attr_int("group", 1);
  const int64_t n = x.shape[0], ch = x.shape[1];
  if (groups <= 0 || ch % groups != 0 || w.shape[0] != ch)
    c.fail("X has " + std::to_string(ch) + " channels, W " + shape_to_string(w.shape) + ", group " + std::to_string(groups));
  const int64_t k = w.shape[1] * groups;
  const Geometry g = geometry(c, x.shape, w.shape);
  const int rank = static_cast<int>(x.shape.size()) - 2;
  Shape out = {n, k};
  out.insert(out.end(), g.out.begin(), g.out.end());
  c.output(0) = c.allocate(DataType::Float, out);
  const uint64_t count = elements_of(out);
  if (count == 0) return;
  DeviceTensor& y = c.output(0);
  const DeviceTensor* bias = c.has_input(2) ? &c.input(2) : nullptr;
  if (bias && elements_of(bias->shape) != static_cast<uint64_t>(k))
    c.fail("the bias " + shape_to_string(bias->shape) + " does not have " + std::to_string(k) + " elements");
  const int64_t inner = static_cast<int64_t>(count / static_cast<uint64_t>(n * k));

  ConvArgs a;
  a.transposed = true;
  a.rank = rank;
  a.n = n;
  a.c = ch;
  a.k = k;
  a.groups = groups;
  // cuDNN takes one pad per dim, and an output at most stride - 1 past the
  // forward geometry's: out + 2 * pad - span must floor to (in - 1) * stride.
  bool direct = elements_of(x.shape) != 0;
  for (size_t d = 0; d < g.out.size(); ++d) {
    const int64_t slack = g.out_pad[d] + g.pad_begin[d] - g.pad_end[d];
    direct = direct && g.pad_begin[d] >= 0 && slack >= 0 && slack < g.stride[d];
  }
  for (int d = 0; d < rank; ++d) {
    const auto s = static_cast<size_t>(d);
    a.in[d] = x.shape[s + 2];
    a.kernel[d] = g.kernel[s];
    a.stride[d] = g.stride[s];
    a.dilation[d] = g.dilation[s];
    a.out[d] = direct ? g.out[s] : g.full[s];
    a.pad[d] = direct ? g.pad_begin[s] : 0;
  }
  a.x = static_cast<const float*>(x.data);
  a.w = static_cast<const float*>(w.data);
  a.w_half = c.half_constant(1);
  if (direct) {
    a.y = static_cast<float*>(y.data);
    c.rt().conv(a, c.mode());
  } else {
    c.rt().zero(y.data, bytes_of(DataType::Float, out));
    if (elements_of(x.shape) != 0) {
      Shape fs = {n, k};
      fs.insert(fs.end(), g.full.begin(), g.full.end());
      DeviceTensor full = c.allocate(DataType::Float, fs);
      a.y = static_cast<float*>(full.data);
      c.rt().conv(a, c.mode());
      // y[o] = full[o + pad_begin] where both exist.
      StridedCopy p;
      p.dims = {n, k};
      const std::vector<int64_t> fstride = contiguous_strides(fs), ostride = contiguous_strides(out);
      p.in_stride = {fstride[0], fstride[1]};
      p.out_stride = {ostride[0], ostride[1]};
      bool empty = false;
      for (size_t d = 0; d < g.out.size(); ++d) {
        const int64_t from = std::max<int64_t>(0, g.pad_begin[d]), to = std::min(g.full[d], g.pad_begin[d] + g.out[d]);
        empty = empty || to <= from;
        p.dims.push_back(std::max<int64_t>(0, to - from));
        p.in_stride.push_back(fstride[d + 2]);
        p.out_stride.push_back(ostride[d + 2]);
        p.in_base += from * fstride[d + 2];
        p.out_base += (from - g.pad_begin[d]) * ostride[d + 2];
      }
      if (!empty) strided_copy(c, DataType::Float, p, full.data, y.data);
    }
  }
  if (bias) apply_epilogue(c, y, bias, inner, k, {});
}

void run_conv_transpose(OpContext& c) { run_on_float32(c, conv_transpose_f32); }

}  // namespace

void add_conv_transpose_ops(std::vector<OpDef>& t) {
  t.push_back({"ConvTranspose", refuse_conv_transpose, run_conv_transpose, OpBackend::Conv});
}

}  // namespace onnxscope::cuda
