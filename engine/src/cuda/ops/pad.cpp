// Pad on the device, any fixed-width type. Constant mode: the output is
// filled with the constant (zeroed, or the value broadcast from a scalar),
// then the part of the input that survives (negative pads crop) is copied
// into place by the strided-copy kernel. Edge, wrap and reflect: one kernel
// mapping each output element to its input element (kernels/movement.h
// PadMapKernel). pads, axes and constant_value are read on the host.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/pad_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

bool pad_reads_on_host(const Node&, size_t i) { return i >= 1; }

std::optional<std::string> refuse_pad(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  if (const Attribute* m = n.attribute("mode"); m && m->s != "constant") {
    if (m->s != "edge" && m->s != "wrap" && m->s != "reflect") return "Pad mode '" + m->s + "'";
    const TypeInfo* t = g.type_of(n.inputs[0]);
    if (!g.initializer(n.inputs[0]) && (!t || !t->shape || t->shape->size() > static_cast<size_t>(kKernelRank)))
      return "the CUDA Pad in " + m->s + " mode takes ranks up to " + std::to_string(kKernelRank) + " (or the rank is unknown)";
  }
  // Before opset 11 the constant is a float attribute: float32 data only here.
  if (const Attribute* v = n.attribute("value"); v && v->f != 0.f && declared_type(g, n.inputs[0]) != DataType::Float)
    return std::string("Pad's float 'value' on non-float32 data");
  return std::nullopt;
}

void run_pad(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> pads, axes;
  bool axes_given = false;
  Tensor fill;  // empty: zeros
  if (c.opset() < 11) {
    const char* name = c.opset() < 2 ? "paddings" : "pads";
    if (!c.node().attribute(name)) c.fail(std::string("required attribute '") + name + "' is missing");
    pads = c.attr_ints(name);
    if (const float v = c.attr_float("value", 0.f); v != 0.f || std::signbit(v)) {
      if (x.dtype != DataType::Float) c.fail("a float 'value' on " + std::string(dtype_name(x.dtype)) + " data");
      fill = Tensor::zeros(DataType::Float, {});
      fill.mutable_data<float>()[0] = v;
    }
  } else {
    pads = host_ints(c, 1);
    if (const Tensor* cv = c.host(2); cv && cv->element_count() > 0) {
      if (cv->dtype() != x.dtype) c.fail("constant_value must have the element type of data");
      if (cv->element_count() != 1) c.fail("constant_value must hold one element");
      fill = *cv;
    }
    axes_given = c.opset() >= 18 && c.host(3);
    if (axes_given) axes = host_ints(c, 3);
  }
  if (!axes_given)
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  std::vector<bool> seen(rank, false);
  for (auto& a : axes) {
    a = normalize_axis(c, a, rank);
    if (seen[static_cast<size_t>(a)]) c.fail("axis " + std::to_string(a) + " appears twice");
    seen[static_cast<size_t>(a)] = true;
  }
  if (pads.size() != 2 * axes.size())
    c.fail("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * axes.size()));
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[axes.size() + i];
  }
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (__builtin_add_overflow(x.shape[d], begin[d], &out[d]) || __builtin_add_overflow(out[d], end[d], &out[d]))
      c.fail("pads " + shape_to_string(pads) + " overflow");
    if (out[d] < 0) c.fail("pads " + shape_to_string(pads) + " remove more than dimension " + std::to_string(d) + " holds");
  }
  const std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant") {
    if (mode == "wrap" && c.opset() < 19) c.fail("unsupported mode 'wrap'");
    if (mode != "edge" && mode != "wrap" && mode != "reflect") c.fail("unsupported mode '" + mode + "'");
    for (size_t d = 0; d < rank; ++d)
      if (out[d] > 0 && pad::kept(x.shape[d], begin[d], end[d]) <= 0)
        c.fail(x.shape[d] == 0 ? "cannot " + mode + "-pad dimension " + std::to_string(d) + " of size 0"
                               : "cannot " + mode + "-pad dimension " + std::to_string(d) + ": its negative pads remove all " +
                                     std::to_string(x.shape[d]) + " of its elements");
  }
  c.output(0) = c.allocate(x.dtype, out);
  const uint64_t bytes = bytes_of(x.dtype, out);
  if (bytes == 0) return;
  if (mode != "constant") {
    if (rank > static_cast<size_t>(kKernelRank)) c.fail("more than " + std::to_string(kKernelRank) + " dims");
    PadMapKernel k{};
    k.mode = mode == "edge" ? 1 : mode == "wrap" ? 2 : 3;
    k.rank = static_cast<int>(rank);
    k.width = static_cast<int>(dtype_info(x.dtype).bits / 8);
    const auto in_stride = contiguous_strides(x.shape);
    // Negative pads crop first and the mode pads from what is left (the
    // reference's pad.cpp says why): the kernel reads the kept part, a view
    // of X starting past the elements cropped at each start.
    int64_t skip = 0;
    for (size_t d = 0; d < rank; ++d) {
      k.out[d] = out[d];
      const int64_t n = pad::kept(x.shape[d], begin[d], end[d]);
      k.in[d] = n;
      skip += pad::cut_at_start(x.shape[d], begin[d]) * in_stride[d];
      // The kernel computes k - begin: a begin near 2^63 would overflow, so
      // it is first brought to an equivalent one (edge: clamped to [0, out];
      // wrap and reflect: modulo their period).
      const int64_t b = std::max<int64_t>(begin[d], 0);
      auto mod = [](int64_t a, int64_t m) { return m <= 0 ? 0 : (a % m + m) % m; };
      k.begin[d] = k.mode == 1 ? std::min<int64_t>(b, out[d]) : k.mode == 2 ? mod(b, n) : mod(b, 2 * (n - 1));
      k.in_stride[d] = in_stride[d];
    }
    k.x = static_cast<const std::byte*>(x.data) + skip * k.width;
    k.y = c.output(0).data;
    launch(c.rt(), k, static_cast<int64_t>(elements_of(out)));
    return;
  }
  // The border (all of it, then the interior is written over).
  const bool grows = std::any_of(begin.begin(), begin.end(), [](int64_t p) { return p > 0; }) ||
                     std::any_of(end.begin(), end.end(), [](int64_t p) { return p > 0; });
  if (grows) {
    bool zero = fill.element_count() == 0;
    if (!zero) {
      zero = true;
      for (uint64_t i = 0; i < fill.byte_size(); ++i) zero = zero && fill.raw()[i] == std::byte{0};
    }
    if (zero) c.rt().zero(c.output(0).data, bytes);
    else broadcast_into(c, c.upload(fill), out, c.output(0).data);
  }
  // The input's surviving block.
  StridedCopy p;
  const auto in_stride = contiguous_strides(x.shape), out_stride = contiguous_strides(out);
  // What a negative pad removes, at most the whole dim (never -INT64_MIN).
  auto removed = [](int64_t pad, int64_t dim) { return pad >= 0 ? 0 : pad < -dim ? dim : -pad; };
  for (size_t d = 0; d < rank; ++d) {
    const int64_t skip = removed(begin[d], x.shape[d]);
    const int64_t len = x.shape[d] - skip - removed(end[d], x.shape[d]);
    if (len <= 0) return;  // nothing of the input survives
    p.dims.push_back(len);
    p.in_stride.push_back(in_stride[d]);
    p.out_stride.push_back(out_stride[d]);
    p.in_base += skip * in_stride[d];
    p.out_base += std::max<int64_t>(0, begin[d]) * out_stride[d];
  }
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

// --- CenterCropPad (opset 18): each listed axis cropped or padded (with
// zeros) to its new size about the centre, an odd difference leaving the
// extra element at the end; the shape read on the host. ---

bool crop_pad_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_center_crop_pad(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("CenterCropPad takes input_data and shape");
  return refuse_movable(g, n);
}

void run_center_crop_pad(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const size_t rank = x.shape.size();
  const std::vector<int64_t> shape = host_ints(c, 1);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (!c.node().attribute("axes"))
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  std::vector<bool> seen(rank, false);
  for (int64_t& a : axes) {
    a = normalize_axis(c, a, rank);
    if (seen[static_cast<size_t>(a)]) c.fail("axes lists axis " + std::to_string(a) + " more than once");
    seen[static_cast<size_t>(a)] = true;
  }
  if (shape.size() != axes.size())
    c.fail("shape has " + std::to_string(shape.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  Shape out = x.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0) c.fail("shape " + shape_to_string(shape) + " has a negative dimension");
    out[static_cast<size_t>(axes[i])] = shape[i];
  }
  c.output(0) = c.allocate(x.dtype, out);
  const uint64_t bytes = bytes_of(x.dtype, out);
  if (bytes == 0) return;
  bool grows = false;
  for (size_t d = 0; d < rank; ++d) grows = grows || out[d] > x.shape[d];
  if (grows) c.rt().zero(c.output(0).data, bytes);
  StridedCopy p;
  const auto in_stride = contiguous_strides(x.shape), out_stride = contiguous_strides(out);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = x.shape[d];
    const int64_t shift = n >= out[d] ? (n - out[d]) / 2 : -((out[d] - n) / 2);  // output k reads input k + shift
    const int64_t first = std::max<int64_t>(0, -shift), last = std::min<int64_t>(out[d], n - shift);
    if (last <= first) return;  // nothing of the input survives
    p.dims.push_back(last - first);
    p.in_stride.push_back(in_stride[d]);
    p.out_stride.push_back(out_stride[d]);
    p.in_base += (first + shift) * in_stride[d];
    p.out_base += first * out_stride[d];
  }
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

}  // namespace

void add_pad_ops(std::vector<OpDef>& t) {
  t.push_back({"Pad", refuse_pad, run_pad, OpBackend::Kernel, pad_reads_on_host});
  t.push_back({"CenterCropPad", refuse_center_crop_pad, run_center_crop_pad, OpBackend::Kernel, crop_pad_reads_on_host});
}

}  // namespace onnxscope::cuda
