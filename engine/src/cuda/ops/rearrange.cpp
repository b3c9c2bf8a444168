// DepthToSpace and SpaceToDepth (DCR and CRD): each one strided copy of
// the input, its channels split into the block's offsets; Trilu: a masked
// copy; ReverseSequence: a gather whose sequence lengths are read and
// checked on the device. Any fixed-width type. Col2Im (float32, float16,
// bfloat16): the image and block shapes read on the host, each output
// element summing the column entries that land on it.
#include <climits>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_block(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  const Attribute* b = n.attribute("blocksize");
  if (!b || b->i <= 0) return n.op_type + " without a positive blocksize";
  if (const Attribute* m = n.attribute("mode"); m && m->s != "DCR" && m->s != "CRD") return "mode '" + m->s + "'";
  return std::nullopt;
}

// a * b, failing rather than overflowing (blocksize is the model's to choose).
int64_t mul(const OpContext& c, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) c.fail("sizes overflow: " + std::to_string(a) + " * " + std::to_string(b));
  return r;
}

// The blocksize, the mode and the dims of the 4-D input.
struct Block {
  int64_t b;
  bool crd;
  int64_t N, C, H, W;
};
Block block_of(const OpContext& c, const DeviceTensor& x) {
  if (x.shape.size() != 4) c.fail("the input " + shape_to_string(x.shape) + " is not 4-D");
  return {c.attr_int("blocksize", 0), c.attr_string("mode", "DCR") == "CRD", x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
}

// y [N, C / b^2, H * b, W * b] from x [N, C, H, W]: output (n, c, h, i, w, j)
// reads channel (i * b + j) * C/b^2 + c (DCR) or c * b^2 + i * b + j (CRD).
void run_depth_to_space(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto [b, crd, N, C, H, W] = block_of(c, x);
  const int64_t bb = mul(c, b, b);
  if (C % bb != 0) c.fail(std::to_string(C) + " channels are not divisible by blocksize^2 = " + std::to_string(bb));
  const int64_t co = C / bb, hw = H * W;
  c.output(0) = c.allocate(x.dtype, {N, co, mul(c, H, b), mul(c, W, b)});
  if (elements_of(c.output(0).shape) == 0) return;
  StridedCopy p;
  p.dims = {N, co, H, b, W, b};
  p.in_stride = {C * hw, crd ? b * b * hw : hw, W, crd ? b * hw : b * co * hw, 1, crd ? hw : co * hw};
  p.out_stride = contiguous_strides(Shape(p.dims.begin(), p.dims.end()));
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

// y [N, C * b^2, H / b, W / b] from x [N, C, H, W]: output channel
// (i * b + j) * C + c (DCR) or c * b^2 + i * b + j (CRD) of (oh, ow) reads
// x[n, c, oh * b + i, ow * b + j].
void run_space_to_depth(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto [b, crd, N, C, H, W] = block_of(c, x);
  if (H % b != 0 || W % b != 0) c.fail("the spatial size of " + shape_to_string(x.shape) + " is not divisible by blocksize " + std::to_string(b));
  const int64_t hw = H * W;
  c.output(0) = c.allocate(x.dtype, {N, mul(c, C, mul(c, b, b)), H / b, W / b});
  if (elements_of(c.output(0).shape) == 0) return;
  StridedCopy p;
  if (crd) {
    p.dims = {N, C, b, b, H / b, W / b};
    p.in_stride = {C * hw, hw, W, 1, b * W, b};
  } else {
    p.dims = {N, b, b, C, H / b, W / b};
    p.in_stride = {C * hw, W, 1, hw, b * W, b};
  }
  p.out_stride = contiguous_strides(Shape(p.dims.begin(), p.dims.end()));
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

bool trilu_reads_on_host(const Node&, size_t i) { return i == 1; }

void run_trilu(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("the input " + shape_to_string(x.shape) + " is not a matrix");
  int64_t k = 0;
  if (c.host(1)) {
    const std::vector<int64_t> v = host_ints(c, 1);
    if (v.size() != 1) c.fail("k should hold one value, not " + std::to_string(v.size()));
    k = v[0];
  }
  c.output(0) = c.allocate(x.dtype, x.shape);
  const auto n = static_cast<int64_t>(elements_of(x.shape));
  if (n == 0) return;
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  with_element_width(x.dtype, [&](auto w) {
    using T = decltype(w);
    const TriluKernel<T> kernel{c.attr_int("upper", 1) != 0, rows, cols, k, static_cast<const T*>(x.data),
                                static_cast<T*>(c.output(0).data)};
    launch(c.rt(), kernel, n);
  });
}

std::optional<std::string> refuse_reverse_sequence(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  return require_types(g, n, {DataType::Int64, DataType::Int32}, 1, 1);
}

void run_reverse_sequence(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& lens = c.input(1);
  if (x.shape.size() < 2) c.fail("input must have rank >= 2, got shape " + shape_to_string(x.shape));
  const int64_t batch_axis = c.attr_int("batch_axis", 1), time_axis = c.attr_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    c.fail("batch_axis and time_axis must be 0 and 1 in some order, got batch_axis=" + std::to_string(batch_axis) +
           ", time_axis=" + std::to_string(time_axis));
  const int64_t batch = x.shape[static_cast<size_t>(batch_axis)], time = x.shape[static_cast<size_t>(time_axis)];
  if (lens.shape != Shape{batch}) c.fail("sequence_lens must have shape [" + std::to_string(batch) + "], got " + shape_to_string(lens.shape));
  if (lens.dtype != DataType::Int64 && lens.dtype != DataType::Int32) c.fail("sequence_lens must be int32 or int64");
  c.output(0) = c.allocate(x.dtype, x.shape);
  const auto count = static_cast<int64_t>(elements_of(x.shape));
  if (count == 0) return;
  ReverseSequenceKernel k{};
  k.bytes = static_cast<int>(dtype_info(x.dtype).bits / 8);
  k.batch_first = batch_axis == 0;
  k.d1 = x.shape[1];
  k.inner = static_cast<int64_t>(elements_of(Shape(x.shape.begin() + 2, x.shape.end())));
  k.time = time;
  k.lens = lens.data;
  k.lens_wide = lens.dtype == DataType::Int64;
  k.x = x.data;
  k.y = c.output(0).data;
  const FaultLog::Site site = c.fault_site(FaultKind::Length);
  k.fault = site.record;
  k.site = site.id;
  launch(c.rt(), k, count);
}

std::optional<std::string> refuse_col2im(const Graph& g, const Node& n) {
  if (n.inputs.size() != 3) return std::string("Col2Im takes input, image_shape and block_shape");
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1);
}

bool col2im_reads_on_host(const Node&, size_t i) { return i == 1 || i == 2; }

// Checked in the reference's order, with its words (ops/nn/col2im.cpp).
void run_col2im(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const std::vector<int64_t> image = host_ints(c, 1), block = host_ints(c, 2);
  const size_t nd = image.size();
  if (nd == 0 || block.size() != nd) c.fail("image_shape and block_shape must have the same, non-zero length");
  if (nd > static_cast<size_t>(kCol2ImRank)) c.fail("more than " + std::to_string(kCol2ImRank) + " spatial dims");
  const auto dil = c.node().attribute("dilations") ? c.attr_ints("dilations") : std::vector<int64_t>(nd, 1);
  const auto strides = c.node().attribute("strides") ? c.attr_ints("strides") : std::vector<int64_t>(nd, 1);
  const auto pads = c.node().attribute("pads") ? c.attr_ints("pads") : std::vector<int64_t>(2 * nd, 0);
  if (dil.size() != nd || strides.size() != nd || pads.size() != 2 * nd)
    c.fail("dilations, strides and pads must match the " + std::to_string(nd) + " spatial dimensions");
  if (x.shape.size() != 3) c.fail("input must be 3-D [N, C * prod(block_shape), L], got " + shape_to_string(x.shape));
  Col2ImKernel k{};
  k.type = static_cast<ElemType>(x.dtype);
  k.nd = static_cast<int>(nd);
  Shape kernel_dims, block_dims;
  for (size_t i = 0; i < nd; ++i) {
    if (image[i] <= 0 || block[i] <= 0 || dil[i] <= 0 || strides[i] <= 0 || pads[i] < 0 || pads[nd + i] < 0)
      c.fail("image_shape, block_shape, dilations and strides must be positive and pads not negative");
    if (image[i] > INT32_MAX || block[i] > INT32_MAX || dil[i] > INT32_MAX || strides[i] > INT32_MAX || pads[i] > INT32_MAX ||
        pads[nd + i] > INT32_MAX)
      c.fail("Col2Im sizes beyond 2^31 are not supported");
    const int64_t room = image[i] + pads[i] + pads[nd + i] - dil[i] * (block[i] - 1) - 1;
    if (room < 0) c.fail("the blocks do not fit the padded image");
    k.image[i] = image[i], k.block[i] = block[i], k.nblocks[i] = room / strides[i] + 1;
    k.stride[i] = strides[i], k.dilation[i] = dil[i], k.pad[i] = pads[i];
    kernel_dims.push_back(block[i]);
    block_dims.push_back(k.nblocks[i]);
  }
  k.kernel = static_cast<int64_t>(elements_of(kernel_dims));
  k.blocks = static_cast<int64_t>(elements_of(block_dims));
  if (x.shape[1] % k.kernel != 0)
    c.fail("input dimension 1 (" + std::to_string(x.shape[1]) + ") is not divisible by prod(block_shape)");
  if (x.shape[2] != k.blocks)
    c.fail("input dimension 2 is " + std::to_string(x.shape[2]) + ", expected " + std::to_string(k.blocks) + " blocks");
  Shape out{x.shape[0], x.shape[1] / k.kernel};
  out.insert(out.end(), image.begin(), image.end());
  k.image_size = static_cast<int64_t>(elements_of(Shape(image.begin(), image.end())));
  c.output(0) = c.allocate(x.dtype, out);
  k.x = x.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(out)));
}

}  // namespace

void add_rearrange_ops(std::vector<OpDef>& t) {
  t.push_back({"Col2Im", refuse_col2im, run_col2im, OpBackend::Kernel, col2im_reads_on_host});
  t.push_back({"ReverseSequence", refuse_reverse_sequence, run_reverse_sequence});
  t.push_back({"DepthToSpace", refuse_block, run_depth_to_space});
  t.push_back({"SpaceToDepth", refuse_block, run_space_to_depth});
  t.push_back({"Trilu", refuse_movable, run_trilu, OpBackend::Kernel, trilu_reads_on_host});
}

}  // namespace onnxscope::cuda
