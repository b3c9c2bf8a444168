// Resize (opset 10 to 19+) and Upsample on the device. The host plans the
// geometry from the attributes and the roi/scales/sizes inputs it reads
// (core/resize_plan.h, the reference kernel's own planning) and uploads
// the per-axis tables; nearest is one gather of any fixed-width type,
// linear and cubic (float32; float16 / bfloat16 through it, rounded once)
// one launch per axis that changes, as the
// reference resizes one axis after another (each pass rounded to float32
// here, where the reference keeps double).
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/resize_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

bool resize_reads_on_host(const Node&, size_t i) { return i >= 1; }

std::string mode_of(const Node& n) {
  const Attribute* m = n.attribute("mode");
  return m ? m->s : std::string("nearest");
}

// The extrapolation value as the element type holds it (the reference's
// saturating store), for the element types placement lets through.
bool fill_known(DataType t) {
  switch (t) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64:
      return true;
    default:
      return false;
  }
}

template <class I>
uint64_t saturated_bits(double v) {
  if (std::isnan(v)) v = 0;
  v = std::nearbyint(v);
  I r;
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) r = std::numeric_limits<I>::lowest();
  else if (v >= static_cast<double>(std::numeric_limits<I>::max())) r = std::numeric_limits<I>::max();
  else r = static_cast<I>(v);
  uint64_t bits = 0;
  std::memcpy(&bits, &r, sizeof(I));
  return bits;
}

uint64_t fill_bits(DataType t, double v) {
  switch (t) {
    case DataType::Float: return float_to_bits(static_cast<float>(v));
    case DataType::Double: {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    case DataType::Float16: return float_to_half(static_cast<float>(v));
    case DataType::BFloat16: return float_to_bfloat16(static_cast<float>(v));
    case DataType::Int8: return saturated_bits<int8_t>(v);
    case DataType::Int16: return saturated_bits<int16_t>(v);
    case DataType::Int32: return saturated_bits<int32_t>(v);
    case DataType::Int64: return saturated_bits<int64_t>(v);
    case DataType::Uint8: return saturated_bits<uint8_t>(v);
    case DataType::Uint16: return saturated_bits<uint16_t>(v);
    case DataType::Uint32: return saturated_bits<uint32_t>(v);
    case DataType::Uint64: return saturated_bits<uint64_t>(v);
    default: return 0;
  }
}

std::optional<std::string> refuse_resize(const Graph& g, const Node& n) {
  const DataType t = n.inputs.empty() ? DataType::Undefined : declared_type(g, n.inputs[0]);
  const std::string mode = mode_of(n);
  if (mode == "nearest") {
    if (!movable(t)) return "the CUDA " + n.op_type + " (nearest) takes tensors of a known fixed-width type";
    const Attribute* c = n.attribute("coordinate_transformation_mode");
    if (c && c->s == "tf_crop_and_resize" && !fill_known(t))
      return "the CUDA " + n.op_type + " has no extrapolation value for " + std::string(dtype_name(t));
    return std::nullopt;
  }
  if (t != DataType::Float && t != DataType::Float16 && t != DataType::BFloat16)
    return "the CUDA " + n.op_type + " (" + mode + ") takes float32, float16 or bfloat16";
  return std::nullopt;
}

// A float input read on the host, as doubles ("roi", "scales").
std::vector<double> host_reals(const OpContext& c, size_t k, const char* what) {
  const Tensor* t = c.host(k);
  std::vector<double> v;
  if (!t) return v;
  if (!dtype_info(t->dtype()).is_float || dtype_info(t->dtype()).is_complex) c.fail(std::string(what) + " must be a float tensor");
  if (t->shape().size() > 1) c.fail(std::string(what) + " must be 1-D");
  for (uint64_t i = 0; i < t->element_count(); ++i) v.push_back(t->element_as_double(i));
  return v;
}

resize::Spec spec_of(const OpContext& c, const Shape& x) {
  const Node& n = c.node();
  try {
    if (n.op_type == "Upsample") {
      std::vector<double> scales;
      if (c.opset() >= 9) {
        scales = host_reals(c, 1, "scales");
      } else if (c.opset() >= 7) {
        if (const Attribute* a = n.attribute("scales"))
          for (float f : a->floats) scales.push_back(f);
      } else {
        if (x.size() != 4) c.fail("Upsample-1 needs a 4-D input");
        scales = {1.0, 1.0, c.attr_float("height_scale", 1.f), c.attr_float("width_scale", 1.f)};
      }
      return resize::upsample_spec(c.attr_string("mode", "nearest"), scales, x);
    }
    resize::Request r = resize::request_of(n, c.opset());
    if (r.opset < 11) {  // X, scales
      r.scales = host_reals(c, 1, "scales");
    } else {  // X, roi, scales, sizes
      r.roi = host_reals(c, 1, "roi");
      r.scales = host_reals(c, 2, "scales");
      if (c.host(3)) r.sizes = host_ints(c, 3);
    }
    return resize::resize_spec(r, x);
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
}

template <class T>
DeviceTensor upload_values(OpContext& c, DataType t, const std::vector<T>& v) {
  Tensor h = Tensor::zeros(t, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(h.mutable_raw(), v.data(), v.size() * sizeof(T));
  return c.upload(h);
}

void resize_nearest(OpContext& c, const resize::Spec& sp, const DeviceTensor& x, DeviceTensor& y) {
  const size_t rank = x.shape.size();
  if (rank > static_cast<size_t>(kKernelRank)) c.fail("more than 8 dims");
  std::vector<int64_t> picks;
  std::vector<int64_t> offsets;
  for (size_t d = 0; d < rank; ++d) {
    offsets.push_back(static_cast<int64_t>(picks.size()));
    const std::vector<int64_t> p = resize::nearest_picks(sp, d, x.shape[d], sp.out[d]);
    picks.insert(picks.end(), p.begin(), p.end());
  }
  const DeviceTensor table = upload_values(c, DataType::Int64, picks);
  const std::vector<int64_t> strides = contiguous_strides(x.shape);
  const uint64_t fill = fill_bits(x.dtype, sp.extrapolation);
  with_element_width(x.dtype, [&](auto w) {
    using T = decltype(w);
    ResizeNearestKernel<T> k{};
    k.rank = static_cast<int>(rank);
    for (size_t d = 0; d < rank; ++d) {
      k.out[d] = sp.out[d];
      k.in_stride[d] = strides[d];
      k.pick_offset[d] = offsets[d];
    }
    k.picks = static_cast<const int64_t*>(table.data);
    k.fill = static_cast<T>(fill);
    k.x = static_cast<const T*>(x.data);
    k.y = static_cast<T*>(y.data);
    launch(c.rt(), k, static_cast<int64_t>(elements_of(y.shape)));
  });
}

void resize_separable(OpContext& c, const resize::Spec& sp, const DeviceTensor& x, DeviceTensor& y) {
  const size_t rank = x.shape.size();
  std::vector<size_t> passes;
  for (size_t d = 0; d < rank; ++d)
    if (!resize::axis_unchanged(sp, d, x.shape[d])) passes.push_back(d);
  if (passes.empty()) {  // nothing resized: the input as it is
    c.rt().copy(y.data, x.data, bytes_of(x.dtype, x.shape));
    return;
  }
  Shape cur = x.shape;
  DeviceTensor from = x;
  for (size_t p = 0; p < passes.size(); ++p) {
    const size_t d = passes[p];
    const resize::AxisTaps t = resize::plan_axis(sp, d, cur[d], sp.out[d]);
    std::vector<float> weights(t.w.begin(), t.w.end());
    std::vector<uint8_t> outside(t.outside.begin(), t.outside.end());
    const DeviceTensor idx = upload_values(c, DataType::Int64, t.idx);
    const DeviceTensor w = upload_values(c, DataType::Float, weights);
    const DeviceTensor out_flags = upload_values(c, DataType::Uint8, outside);
    Shape next = cur;
    next[d] = sp.out[d];
    DeviceTensor to = p + 1 == passes.size() ? y : c.allocate(DataType::Float, next);
    int64_t inner = 1;
    for (size_t e = d + 1; e < rank; ++e) inner *= cur[e];
    const ResizeAxisKernel k{cur[d],
                             sp.out[d],
                             inner,
                             t.n,
                             static_cast<const int64_t*>(idx.data),
                             static_cast<const float*>(w.data),
                             static_cast<const uint8_t*>(out_flags.data),
                             static_cast<float>(sp.extrapolation),
                             static_cast<const float*>(from.data),
                             static_cast<float*>(to.data)};
    launch(c.rt(), k, static_cast<int64_t>(elements_of(next)));
    from = to;
    cur = next;
  }
}

void resize(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const resize::Spec sp = spec_of(c, x.shape);
  for (int64_t d : sp.out)
    if (d < 0) c.fail("the output shape " + shape_to_string(sp.out) + " is negative");
  c.output(0) = c.allocate(x.dtype, sp.out);
  if (elements_of(sp.out) == 0) return;
  if (elements_of(x.shape) == 0) c.fail("cannot resize an empty input to a non-empty output");
  try {
    if (sp.mode == "nearest") resize_nearest(c, sp, x, c.output(0));
    else resize_separable(c, sp, x, c.output(0));
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
}

// Nearest moves any fixed-width type as it is; linear and cubic interpolate
// float16 / bfloat16 in float32 (run_on_float32) and round once.
void run_resize(OpContext& c) {
  const DataType t = c.input(0).dtype;
  if (mode_of(c.node()) != "nearest" && (t == DataType::Float16 || t == DataType::BFloat16)) run_on_float32(c, resize);
  else resize(c);
}

}  // namespace

void add_resize_ops(std::vector<OpDef>& t) {
  t.push_back({"Resize", refuse_resize, run_resize, OpBackend::Kernel, resize_reads_on_host});
  t.push_back({"Upsample", refuse_resize, run_resize, OpBackend::Kernel, resize_reads_on_host});
}

}  // namespace onnxscope::cuda
