// Element-indexed gather and scatter on the device (kernels/scatter.h):
// GatherElements, ScatterElements (and Scatter, its opset 9 name) and
// ScatterND. Indices stay on the device and are checked there, as Gather's.
// A scatter copies data to the output, then writes each update: plain
// stores for any fixed-width type, reductions (add, mul, max, min) on
// float32, atomically on the GPU. Duplicate indices without a reduction are
// undefined by the spec; on the GPU any one of the updates may win.
// OneHot: each output element picks the off or on value by its index
// (kernels/movement.h OneHotKernel), the depth read on the host.
// TensorScatter: the cache copied, then the update's rows written at the
// write indices, which stay on the device (so a decoding loop's runs can be
// captured) and are checked there. MaxUnpool: each input element claims its
// output place (the last one in order winning, as in the reference), then
// each place takes its winner's value or 0.
#include <cmath>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_indexed(const Graph& g, const Node& n, std::initializer_list<DataType> index_types) {
  if (auto r = refuse_movable(g, n)) return r;
  if (auto r = require_types(g, n, index_types, 1, 1)) return r;
  if (const Attribute* a = n.attribute("reduction"); a && a->s != "none") {
    if (a->s != "add" && a->s != "mul" && a->s != "max" && a->s != "min") return std::nullopt;  // the run names it
    if (declared_type(g, n.inputs[0]) != DataType::Float)
      return n.op_type + " reduction '" + a->s + "' on the CUDA engine takes float32 data";
  }
  return std::nullopt;
}

std::optional<std::string> refuse_elements(const Graph& g, const Node& n) {
  return refuse_indexed(g, n, {DataType::Int64, DataType::Int32});
}

std::optional<std::string> refuse_scatter_nd(const Graph& g, const Node& n) {
  return refuse_indexed(g, n, {DataType::Int64});
}

// The reduction, checked against the opset as the reference checks it.
ScatterOp reduction(const OpContext& c) {
  if (c.node().op_type == "Scatter") return ScatterOp::None;
  const std::string r = c.attr_string("reduction", "none");
  if (r == "none") return ScatterOp::None;
  if (c.opset() < 16)
    c.fail("attribute 'reduction' needs opset 16 or later, the model imports opset " + std::to_string(c.opset()));
  if (r == "add") return ScatterOp::Add;
  if (r == "mul") return ScatterOp::Mul;
  if (r == "max" || r == "min") {
    if (c.opset() < 18)
      c.fail("reduction '" + r + "' needs opset 18 or later, the model imports opset " + std::to_string(c.opset()));
    return r == "max" ? ScatterOp::Max : ScatterOp::Min;
  }
  c.fail("reduction must be one of none, add, mul, max, min; got '" + r + "'");
}

void require_index_type(const OpContext& c, const DeviceTensor& idx, bool int32_too) {
  if (idx.dtype == DataType::Int64 || (int32_too && idx.dtype == DataType::Int32)) return;
  c.fail("indices of type " + std::string(dtype_name(idx.dtype)) + (int32_too ? " (int64 or int32)" : " (int64)"));
}

// ElementTarget for indices `idx` into data of `shape` along `axis`, after
// the spec's shape rules (indices of data's rank, no larger off the axis).
ElementTarget element_target(const OpContext& c, const Shape& shape, const DeviceTensor& idx) {
  const size_t rank = shape.size();
  if (rank == 0) c.fail("data must have rank >= 1");
  if (rank > static_cast<size_t>(kKernelRank)) c.fail("more than 8 dims");
  if (idx.shape.size() != rank)
    c.fail("indices must have the same rank as data (" + std::to_string(rank) + "), got shape " +
           shape_to_string(idx.shape));
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", 0), rank));
  for (size_t d = 0; d < rank; ++d)
    if (d != axis && idx.shape[d] > shape[d])
      c.fail("indices shape " + shape_to_string(idx.shape) + " exceeds data shape " + shape_to_string(shape) +
             " on axis " + std::to_string(d));
  ElementTarget t{};
  t.rank = static_cast<int>(rank);
  t.axis = static_cast<int>(axis);
  t.axis_dim = shape[axis];
  const auto stride = contiguous_strides(shape);
  for (size_t d = 0; d < rank; ++d) {
    t.idx_dims[d] = idx.shape[d];
    t.stride[d] = stride[d];
  }
  t.indices = idx.data;
  t.indices32 = idx.dtype == DataType::Int32;
  return t;
}

void run_gather_elements(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& idx = c.input(1);
  require_index_type(c, idx, true);
  const ElementTarget target = element_target(c, x.shape, idx);
  c.output(0) = c.allocate(x.dtype, idx.shape);
  const auto n = static_cast<int64_t>(elements_of(idx.shape));
  if (n == 0) return;
  const FaultLog::Site site = c.fault_site();
  with_element_width(x.dtype, [&](auto w) {
    using T = decltype(w);
    const GatherElementsKernel<T> k{target, static_cast<const T*>(x.data), static_cast<T*>(c.output(0).data),
                                    site.record, site.id};
    launch(c.rt(), k, n);
  });
}

// The output as a copy of data, then kernel `k` over n updates.
template <class T>
void scatter(OpContext& c, ScatterKernel<T> k, const DeviceTensor& data, const DeviceTensor& updates, int64_t n) {
  c.output(0) = c.allocate(data.dtype, data.shape);
  const uint64_t bytes = bytes_of(data.dtype, data.shape);
  if (bytes) c.rt().copy(c.output(0).data, data.data, bytes);
  if (n == 0) return;
  const FaultLog::Site site = c.fault_site();
  k.updates = static_cast<const T*>(updates.data);
  k.y = static_cast<T*>(c.output(0).data);
  k.fault = site.record;
  k.site = site.id;
  launch(c.rt(), k, n);
}

// Plain stores move elements by width; reductions compute in float32.
template <class Fill>
void scatter_any(OpContext& c, ScatterOp op, const DeviceTensor& data, const DeviceTensor& updates, int64_t n,
                 Fill fill) {
  if (updates.dtype != data.dtype)
    c.fail("updates of type " + std::string(dtype_name(updates.dtype)) + " differ from data of type " +
           std::string(dtype_name(data.dtype)));
  if (op != ScatterOp::None) {
    if (data.dtype != DataType::Float) c.fail("a reduction on the CUDA engine takes float32 data");
    ScatterKernel<float> k{};
    k.op = op;
    fill(k);
    scatter(c, k, data, updates, n);
    return;
  }
  with_element_width(data.dtype, [&](auto w) {
    ScatterKernel<decltype(w)> k{};
    k.op = op;
    fill(k);
    scatter(c, k, data, updates, n);
  });
}

void run_scatter_elements(OpContext& c) {
  const DeviceTensor& data = c.input(0);
  const DeviceTensor& idx = c.input(1);
  const DeviceTensor& updates = c.input(2);
  require_index_type(c, idx, true);
  const ScatterOp op = reduction(c);
  if (updates.shape != idx.shape)
    c.fail("updates shape " + shape_to_string(updates.shape) + " must equal indices shape " +
           shape_to_string(idx.shape));
  const ElementTarget target = element_target(c, data.shape, idx);
  scatter_any(c, op, data, updates, static_cast<int64_t>(elements_of(idx.shape)), [&](auto& k) {
    k.nd = false;
    k.target = target;
  });
}

void run_scatter_nd(OpContext& c) {
  const DeviceTensor& data = c.input(0);
  const DeviceTensor& idx = c.input(1);
  const DeviceTensor& updates = c.input(2);
  require_index_type(c, idx, false);
  const ScatterOp op = reduction(c);
  const size_t r = data.shape.size(), q = idx.shape.size();
  if (r < 1 || q < 1) c.fail("data and indices must have rank >= 1");
  const int64_t k = idx.shape.back();
  if (k < 0 || k > static_cast<int64_t>(r))
    c.fail("indices.shape[-1] = " + std::to_string(k) + " must be in [0, rank(data) = " + std::to_string(r) + "]");
  if (k > kKernelRank) c.fail("index tuples longer than " + std::to_string(kKernelRank));
  const auto uk = static_cast<size_t>(k);
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(uk), data.shape.end());
  if (updates.shape != want)
    c.fail("updates shape " + shape_to_string(updates.shape) + " must be indices.shape[:-1] ++ data.shape[k:] = " +
           shape_to_string(want));
  const auto stride = contiguous_strides(data.shape);
  int64_t slice = 1;
  for (size_t d = uk; d < r; ++d) slice *= data.shape[d];
  scatter_any(c, op, data, updates, static_cast<int64_t>(elements_of(want)), [&](auto& kern) {
    kern.nd = true;
    kern.k = static_cast<int>(k);
    for (size_t d = 0; d < uk; ++d) {
      kern.nd_dims[d] = data.shape[d];
      kern.nd_stride[d] = stride[d];
    }
    kern.slice = slice == 0 ? 1 : slice;  // no updates then (want has a 0 dim)
    kern.nd_indices = static_cast<const int64_t*>(idx.data);
  });
}

std::optional<std::string> refuse_one_hot(const Graph& g, const Node& n) {
  if (n.inputs.size() != 3) return std::string("OneHot takes indices, depth and values");
  const DataType idx = declared_type(g, n.inputs[0]), depth = declared_type(g, n.inputs[1]);
  if (!fixed_width_integer(idx)) return std::string("the CUDA OneHot takes integer indices of 8 bits or more");
  if (!dtype_info(depth).is_integer && !dtype_info(depth).is_float) return std::string("OneHot's depth must be numeric");
  if (!movable(declared_type(g, n.inputs[2]))) return std::string("the CUDA OneHot takes values of a fixed width");
  return std::nullopt;
}

bool one_hot_reads_on_host(const Node&, size_t i) { return i == 1; }

void run_one_hot(OpContext& c) {
  const DeviceTensor& indices = c.input(0);
  const DeviceTensor& values = c.input(2);
  const Tensor* depth_t = c.host(1);
  if (!depth_t || depth_t->element_count() != 1 || depth_t->shape().size() > 1)
    c.fail("depth must be a scalar or a one-element 1-D tensor");
  int64_t depth = 0;
  if (dtype_info(depth_t->dtype()).is_float) {  // truncated, as the reference casts it
    const double d = depth_t->element_as_double(0);
    if (std::isnan(d)) c.fail("depth contains NaN");
    depth = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d);
  } else {
    depth = depth_t->element_as_int64(0);
  }
  if (depth < 0) c.fail("depth must be non-negative, got " + std::to_string(depth));
  if (values.shape.size() != 1 || values.shape[0] != 2)
    c.fail("values must be a 1-D tensor of two elements [off_value, on_value], got shape " + shape_to_string(values.shape));
  if (!fixed_width_integer(indices.dtype)) c.fail("indices must be of an integer type of 8 bits or more");
  const auto r = static_cast<int64_t>(indices.shape.size());
  int64_t axis = c.attr_int("axis", -1);
  if (axis < -r - 1 || axis > r)
    c.fail("axis " + std::to_string(axis) + " is out of range [" + std::to_string(-r - 1) + ", " + std::to_string(r) + "]");
  if (axis < 0) axis += r + 1;
  Shape out(indices.shape.begin(), indices.shape.begin() + axis);
  out.push_back(depth);
  out.insert(out.end(), indices.shape.begin() + axis, indices.shape.end());
  c.output(0) = c.allocate(values.dtype, out);
  const auto count = static_cast<int64_t>(elements_of(out));
  if (count == 0) return;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis); d < indices.shape.size(); ++d) inner *= indices.shape[d];
  OneHotKernel k{};
  k.depth = depth;
  k.inner = inner;
  k.wrap = c.opset() >= 11;  // negative indices count from the end from opset 11
  k.index_type = int_type(indices.dtype);
  k.width = static_cast<int>(dtype_info(values.dtype).bits / 8);
  k.indices = indices.data;
  k.values = values.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, count);
}

std::optional<std::string> refuse_tensor_scatter(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("TensorScatter takes past_cache and update");
  if (!movable(declared_type(g, n.inputs[0]))) return std::string("the CUDA TensorScatter takes a cache of a fixed width");
  if (n.inputs.size() > 2 && !n.inputs[2].empty())
    if (auto r = require_types(g, n, {DataType::Int64}, 2, 1)) return r;
  return std::nullopt;
}

void run_tensor_scatter(OpContext& c) {
  const DeviceTensor& past = c.input(0);
  const DeviceTensor& upd = c.input(1);
  const DeviceTensor* write = c.has_input(2) ? &c.input(2) : nullptr;
  const std::string mode = c.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") c.fail("mode must be 'linear' or 'circular', got '" + mode + "'");
  if (upd.dtype != past.dtype)
    c.fail("past_cache and update must have one type, got " + std::string(dtype_name(past.dtype)) + " and " +
           std::string(dtype_name(upd.dtype)));
  const auto r = static_cast<int64_t>(past.shape.size());
  if (r < 2) c.fail("past_cache must have rank >= 2 (batch and sequence axes), got " + shape_to_string(past.shape));
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", -2), past.shape.size()));
  if (axis == 0) c.fail("axis must not be 0, the batch axis");
  if (upd.shape.size() != past.shape.size()) c.fail("update must have the same rank as past_cache");
  for (size_t d = 0; d < past.shape.size(); ++d)
    if (d == axis ? upd.shape[d] > past.shape[d] : upd.shape[d] != past.shape[d])
      c.fail("update shape " + shape_to_string(upd.shape) + " does not fit past_cache shape " + shape_to_string(past.shape) +
             " on axis " + std::to_string(d));
  const int64_t batch = past.shape[0];
  if (write && (write->dtype != DataType::Int64 || write->shape != Shape{batch}))
    c.fail("write_indices must be int64 of shape [" + std::to_string(batch) + "], got " + std::string(dtype_name(write->dtype)) +
           shape_to_string(write->shape));
  c.output(0) = c.allocate(past.dtype, past.shape);
  c.rt().copy(c.output(0).data, past.data, bytes_of(past.dtype, past.shape));
  const auto count = static_cast<int64_t>(elements_of(upd.shape));
  if (count == 0) return;
  TensorScatterKernel k{};
  k.bytes = static_cast<int>(dtype_info(past.dtype).bits / 8);
  k.circular = mode == "circular";
  k.per_batch = static_cast<int64_t>(elements_of(Shape(past.shape.begin() + 1, past.shape.begin() + static_cast<std::ptrdiff_t>(axis))));
  k.max_len = past.shape[axis];
  k.seq_len = upd.shape[axis];
  k.inner = static_cast<int64_t>(elements_of(Shape(past.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, past.shape.end())));
  k.write = write ? static_cast<const int64_t*>(write->data) : nullptr;
  k.update = upd.data;
  k.y = c.output(0).data;
  const FaultLog::Site site = c.fault_site(FaultKind::Write);
  k.fault = site.record;
  k.site = site.id;
  launch(c.rt(), k, count);
}

std::optional<std::string> refuse_max_unpool(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("MaxUnpool takes X and I");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16, DataType::Double}, 0, 1)) return r;
  if (auto r = require_types(g, n, {DataType::Int64}, 1, 1)) return r;
  const TypeInfo* t = g.type_of(n.inputs[0]);
  if (t && t->shape && t->shape->size() > 8) return std::string("the CUDA MaxUnpool takes at most 6 spatial dims");
  return std::nullopt;
}

bool max_unpool_reads_on_host(const Node&, size_t i) { return i == 2; }

// One spatial attribute: k values in [lo, 2^40] (`fill` each when absent), as the reference checks it.
std::vector<int64_t> window_attr(const OpContext& c, const char* name, size_t k, int64_t fill, int64_t lo) {
  std::vector<int64_t> v = c.node().attribute(name) ? c.attr_ints(name) : std::vector<int64_t>(k, fill);
  if (v.empty()) v.assign(k, fill);
  if (v.size() != k) c.fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(k));
  for (int64_t x : v)
    if (x < lo || x > (int64_t{1} << 40)) c.fail(std::string(name) + " values must be in [" + std::to_string(lo) + ", 2^40]");
  return v;
}

void run_max_unpool(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& ind = c.input(1);
  const Shape& xs = x.shape;
  if (xs.size() < 3) c.fail("X must have shape [N, C, D1, ...] with at least one spatial dimension, got " + shape_to_string(xs));
  if (xs.size() > 8) c.fail("X has more than 6 spatial dims");
  if (ind.shape != xs) c.fail("I must have the shape of X " + shape_to_string(xs) + ", got " + shape_to_string(ind.shape));
  if (ind.dtype != DataType::Int64) c.fail("I must be int64");
  const size_t k = xs.size() - 2;
  if (!c.node().attribute("kernel_shape")) c.fail("kernel_shape is required");
  const std::vector<int64_t> kernel = window_attr(c, "kernel_shape", k, 1, 1);
  const std::vector<int64_t> strides = window_attr(c, "strides", k, 1, 1);
  const std::vector<int64_t> pads = window_attr(c, "pads", 2 * k, 0, 0);
  Shape inferred{xs[0], xs[1]};
  for (size_t d = 0; d < k; ++d) {
    inferred.push_back((xs[d + 2] - 1) * strides[d] - (pads[d] + pads[k + d]) + kernel[d]);
    if (inferred.back() < 0) c.fail("the inferred output shape is negative");
  }
  Shape out = inferred;
  if (c.host(2)) {
    out = host_ints(c, 2);
    if (out.size() != xs.size()) c.fail("output_shape must have the rank of X");
    for (size_t d = 0; d < out.size(); ++d)
      if (out[d] < inferred[d])
        c.fail("output_shape " + shape_to_string(out) + " is smaller than the inferred shape " + shape_to_string(inferred));
  }
  const auto total = static_cast<int64_t>(elements_of(inferred));
  c.output(0) = c.allocate(x.dtype, out);
  const auto places = static_cast<int64_t>(elements_of(out));  // no places: every index is out of range, and reported
  const DeviceTensor winner = c.allocate(DataType::Int64, out);
  launch(c.rt(), FillKernel{8, ~uint64_t{0}, winner.data}, places);
  UnpoolClaimKernel claim{};
  claim.rank = static_cast<int>(xs.size());
  claim.total = total;
  for (size_t d = xs.size(); d-- > 0;) {
    claim.in_stride[d] = d + 1 == xs.size() ? 1 : claim.in_stride[d + 1] * inferred[d + 1];
    claim.out_stride[d] = d + 1 == xs.size() ? 1 : claim.out_stride[d + 1] * out[d + 1];
  }
  claim.indices = static_cast<const int64_t*>(ind.data);
  claim.winner = static_cast<int64_t*>(winner.data);
  const FaultLog::Site site = c.fault_site(FaultKind::Flat);
  claim.fault = site.record;
  claim.site = site.id;
  launch(c.rt(), claim, static_cast<int64_t>(elements_of(xs)));
  launch(c.rt(), UnpoolWriteKernel{static_cast<int>(dtype_info(x.dtype).bits / 8), static_cast<const int64_t*>(winner.data), x.data,
                                   c.output(0).data},
         places);
}

}  // namespace

void add_scatter_ops(std::vector<OpDef>& t) {
  t.push_back({"MaxUnpool", refuse_max_unpool, run_max_unpool, OpBackend::Kernel, max_unpool_reads_on_host});
  t.push_back({"TensorScatter", refuse_tensor_scatter, run_tensor_scatter});
  t.push_back({"GatherElements", refuse_elements, run_gather_elements});
  t.push_back({"ScatterElements", refuse_elements, run_scatter_elements});
  t.push_back({"Scatter", refuse_elements, run_scatter_elements});
  t.push_back({"ScatterND", refuse_scatter_nd, run_scatter_nd});
  t.push_back({"OneHot", refuse_one_hot, run_one_hot, OpBackend::Kernel, one_hot_reads_on_host});
}

}  // namespace onnxscope::cuda
