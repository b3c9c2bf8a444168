// Data movement: the view ops (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity: a new shape over the same memory) and, by one strided-copy
// kernel, Transpose, Slice, Concat, Split, Expand and Tile; Gather with its
// indices read and checked on the device (kernels/movement.h), and
// GatherND likewise; Compress as a Gather of the places its condition (read
// on the host) keeps. Any fixed-width type.
#include <algorithm>
#include <climits>
#include <numeric>

#include "core/slice_range.h"
#include "cuda/ops/op_table.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

bool movable(DataType t) {
  if (t == DataType::Undefined || t == DataType::String || is_packed_dtype(t)) return false;
  const uint32_t bits = dtype_info(t).bits;
  return bits == 8 || bits == 16 || bits == 32 || bits == 64;
}

std::optional<std::string> refuse_movable(const Graph& g, const Node& n) {
  if (n.inputs.empty() || !movable(declared_type(g, n.inputs[0])))
    return "the CUDA " + n.op_type + " takes tensors of a known fixed-width type";
  return std::nullopt;
}

std::vector<int64_t> host_ints(const OpContext& c, size_t k) {
  const Tensor* t = c.host(k);
  std::vector<int64_t> v;
  if (!t) return v;
  if (t->dtype() == DataType::Int64) {
    v.assign(t->data<int64_t>(), t->data<int64_t>() + t->element_count());
  } else if (t->dtype() == DataType::Int32) {
    for (uint64_t i = 0; i < t->element_count(); ++i) v.push_back(t->data<int32_t>()[i]);
  } else {
    c.fail("input " + std::to_string(k) + " should be int64, not " + std::string(dtype_name(t->dtype())));
  }
  return v;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> r(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) r[i - 1] = r[i] * s[i];
  return r;
}

int64_t normalize_axis(const OpContext& c, int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) c.fail("axis " + std::to_string(axis) + " is outside [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "]");
  return axis < 0 ? axis + r : axis;
}

namespace {

template <class T>
void copy_as(OpContext& c, const CopyPlan& p, const void* x, void* y) {
  StridedCopyKernel<T> k{};
  k.rank = static_cast<int>(p.dims.size());
  for (size_t d = 0; d < p.dims.size(); ++d) {
    k.dims[d] = p.dims[d];
    k.in_stride[d] = p.in_stride[d];
    k.out_stride[d] = p.out_stride[d];
  }
  k.in_base = p.in_base;
  k.out_base = p.out_base;
  k.x = static_cast<const T*>(x);
  k.y = static_cast<T*>(y);
  int64_t n = 1;
  for (int64_t d : p.dims) n *= d;
  launch(c.rt(), k, n);
}

}  // namespace

void strided_copy(OpContext& c, DataType dtype, const StridedCopy& s, const void* x, void* y) {
  const CopyPlan p = plan_copy(s.dims, s.in_stride, s.out_stride, s.in_base, s.out_base,
                               static_cast<int>(dtype_info(dtype).bits / 8), reinterpret_cast<uintptr_t>(x),
                               reinterpret_cast<uintptr_t>(y));
  if (p.dims.size() > static_cast<size_t>(kKernelRank)) c.fail("more than 8 dims");
  switch (p.unit) {
    case 1: copy_as<uint8_t>(c, p, x, y); break;
    case 2: copy_as<uint16_t>(c, p, x, y); break;
    case 4: copy_as<uint32_t>(c, p, x, y); break;
    case 8: copy_as<uint64_t>(c, p, x, y); break;
    default: copy_as<Bytes16>(c, p, x, y); break;
  }
}

void broadcast_into(OpContext& c, const DeviceTensor& x, const Shape& out, void* y) {
  const Shape shapes[2] = {x.shape, out};
  auto plan = broadcast_plan(shapes);
  if (!plan || plan->out != out) c.fail(shape_to_string(x.shape) + " does not broadcast to " + shape_to_string(out));
  StridedCopy p;
  for (int d = 0; d < plan->rank; ++d) {
    p.dims.push_back(plan->dims[static_cast<size_t>(d)]);
    p.in_stride.push_back(plan->strides[0][static_cast<size_t>(d)]);
  }
  p.out_stride = contiguous_strides(Shape(p.dims.begin(), p.dims.end()));
  strided_copy(c, x.dtype, p, x.data, y);
}

namespace {

// --- views ---

bool view_reads_on_host(const Node& n, size_t i) {
  return i == 1 && (n.op_type == "Reshape" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze");
}

std::optional<std::string> refuse_view(const Graph& g, const Node& n) {
  if (n.inputs.empty() || declared_type(g, n.inputs[0]) == DataType::Undefined || declared_type(g, n.inputs[0]) == DataType::String)
    return "the CUDA " + n.op_type + " takes tensors of a known type";
  if (n.op_type == "Unsqueeze" && n.inputs.size() < 2 && !n.attribute("axes")) return std::string("Unsqueeze without axes");
  return std::nullopt;
}

void run_view(OpContext& c) {
  const std::string& op = c.node().op_type;
  const DeviceTensor& x = c.input(0);
  Shape shape;
  try {
    if (op == "Identity") {
      shape = x.shape;
    } else if (op == "Reshape") {
      shape = reshape_shape(x.shape, host_ints(c, 1), c.attr_int("allowzero", 0) != 0);
    } else if (op == "Flatten") {
      shape = flatten_shape(x.shape, c.attr_int("axis", 1));
    } else {
      const std::vector<int64_t> axes = c.opset() >= 13 ? host_ints(c, 1) : c.attr_ints("axes");
      shape = op == "Squeeze" ? squeeze_shape(x.shape, axes) : unsqueeze_shape(x.shape, axes);
    }
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
  c.output(0) = x;  // the same device memory under another shape
  c.output(0).shape = std::move(shape);
}

// --- BitCast (opset 26): the same bytes read as another type of the same width ---

std::optional<DataType> bitcast_target(const Node& n) {
  const Attribute* to = n.attribute("to");
  if (!to || to->i <= 0 || to->i > INT32_MAX || !is_known_dtype(static_cast<int32_t>(to->i))) return std::nullopt;
  return static_cast<DataType>(to->i);
}

std::optional<std::string> refuse_bitcast(const Graph& g, const Node& n) {
  const DataType from = declared_type(g, n.inputs.empty() ? std::string() : n.inputs[0]);
  const auto to = bitcast_target(n);
  if (from == DataType::Undefined || from == DataType::String || !to || *to == DataType::String ||
      dtype_info(from).bits != dtype_info(*to).bits)
    return std::string("the CUDA BitCast takes a known non-string type to another of its width");
  return std::nullopt;
}

void run_bitcast(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto to = bitcast_target(c.node());
  if (!to || *to == DataType::String || dtype_info(x.dtype).bits != dtype_info(*to).bits)
    c.fail("BitCast from " + std::string(dtype_name(x.dtype)) + " to a type of another width");
  c.output(0) = x;  // the same device memory under another type
  c.output(0).half_copy = nullptr;  // (its half copy held the old type's values)
  c.output(0).half_storage.reset();
  c.output(0).dtype = *to;
}

// --- Dropout in inference: y is x (a view), the mask all kept ---

// Whether the node is in inference: is_test before opset 7; from opset 12 a
// training_mode input, which the device takes only as a constant false.
std::optional<std::string> refuse_dropout(const Graph& g, const Node& n, int64_t opset) {
  if (opset < 7 && (!n.attribute("is_test") || n.attribute("is_test")->i == 0))
    return std::string("Dropout in training (is_test = 0) draws random numbers on the CPU engine");
  if (opset >= 12 && n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Initializer* t = g.initializer(n.inputs[2]);
    if (!t || t->value.dtype() != DataType::Bool || t->value.element_count() != 1 || t->value.data<uint8_t>()[0] != 0)
      return std::string("Dropout with a training_mode that is not a constant false draws random numbers on the CPU engine");
  }
  const DataType t = declared_type(g, n.inputs.empty() ? std::string() : n.inputs[0]);
  if (t != DataType::Float && t != DataType::Float16 && t != DataType::BFloat16 && t != DataType::Double)
    return std::string("the CUDA Dropout takes float16, bfloat16, float or double");
  return std::nullopt;
}

// Used only without an opset (refuse_in_opset takes the model's): the spec's
// newest form, in which no Dropout trains without a training_mode input.
std::optional<std::string> refuse_dropout_node(const Graph& g, const Node& n) { return refuse_dropout(g, n, INT64_MAX); }

bool dropout_reads_on_host(const Node&, size_t i) { return i == 1 || i == 2; }

void run_dropout(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  double ratio = 0.5;
  if (c.opset() < 12) {
    ratio = c.attr_float("ratio", 0.5f);
  } else if (const Tensor* r = c.host(1)) {
    if (r->element_count() != 1 || !dtype_info(r->dtype()).is_float) c.fail("ratio must be a float scalar");
    ratio = r->element_as_double(0);
  }
  if (!(ratio >= 0.0 && ratio <= 1.0)) c.fail("ratio must be in [0, 1], got " + std::to_string(ratio));
  if (c.opset() >= 12)
    if (const Tensor* t = c.host(2))
      if (t->element_count() != 1 || t->dtype() != DataType::Bool || t->data<uint8_t>()[0] != 0)
        c.fail("training_mode must be a constant false on the device");
  c.output(0) = x;  // nothing dropped in inference
  if (!c.wants_output(1)) return;
  // The mask: bool from opset 10, x's type (ones) before.
  FillKernel k{};
  if (c.opset() >= 10) {
    c.output(1) = c.allocate(DataType::Bool, x.shape);
    k.width = 1;
    k.bits = 1;
  } else {
    c.output(1) = c.allocate(x.dtype, x.shape);
    k.width = static_cast<int>(dtype_info(x.dtype).bits / 8);
    k.bits = x.dtype == DataType::Float ? 0x3f800000u : x.dtype == DataType::Double ? 0x3ff0000000000000u
             : x.dtype == DataType::Float16 ? 0x3c00u : 0x3f80u;  // 1 in each type
  }
  k.y = c.output(1).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

// --- Transpose ---

void run_transpose(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  }
  if (perm.size() != rank) c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = normalize_axis(c, p, rank);
    if (seen[static_cast<size_t>(p)]) c.fail("perm repeats axis " + std::to_string(p));
    seen[static_cast<size_t>(p)] = true;
  }
  const auto in_stride = contiguous_strides(x.shape);
  StridedCopy p;
  Shape out;
  for (size_t d = 0; d < rank; ++d) {
    out.push_back(x.shape[static_cast<size_t>(perm[d])]);
    p.in_stride.push_back(in_stride[static_cast<size_t>(perm[d])]);
  }
  p.dims = out;
  p.out_stride = contiguous_strides(out);
  c.output(0) = c.allocate(x.dtype, out);
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

// --- Slice ---

bool slice_reads_on_host(const Node&, size_t i) { return i >= 1; }

void run_slice(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = host_ints(c, 1);
    ends = host_ints(c, 2);
    axes = host_ints(c, 3);
    steps = host_ints(c, 4);
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> begin(rank, 0), step(rank, 1);
  Shape out = x.shape;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const auto a = static_cast<size_t>(normalize_axis(c, axes[i], rank));
    if (seen[a]) c.fail("axis " + std::to_string(a) + " is sliced twice");
    seen[a] = true;
    const int64_t dim = x.shape[a], st = steps[i];
    if (st == 0) c.fail("a step is 0");
    const SliceRange r = slice_range(dim, starts[i], ends[i], st);
    begin[a] = r.count ? r.start : 0;
    out[a] = r.count;
    // With one element or none the step is never taken (and stride * INT64_MIN
    // would overflow); with two or more |step| < dim, so stride * step fits.
    step[a] = r.count > 1 ? st : 1;
  }
  const auto stride = contiguous_strides(x.shape);
  StridedCopy p;
  p.dims = out;
  p.out_stride = contiguous_strides(out);
  for (size_t d = 0; d < rank; ++d) {
    p.in_stride.push_back(stride[d] * step[d]);
    p.in_base += begin[d] * stride[d];
  }
  c.output(0) = c.allocate(x.dtype, out);
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

// --- Concat / Split ---

std::optional<std::string> refuse_concat(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  const DataType t = declared_type(g, n.inputs[0]);
  for (const auto& in : n.inputs)
    if (declared_type(g, in) != t) return std::string("the inputs of Concat differ in type");
  return std::nullopt;
}

void run_concat(OpContext& c) {
  const DeviceTensor& first = c.input(0);
  const size_t rank = first.shape.size();
  if (rank == 0) c.fail("scalars cannot be concatenated");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", 0), rank));
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t k = 0; k < c.input_count(); ++k) {
    const Shape& s = c.input(k).shape;
    if (s.size() != rank) c.fail("input " + std::to_string(k) + " has rank " + std::to_string(s.size()) + ", not " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d)
      if (d != axis && s[d] != first.shape[d]) c.fail("input " + std::to_string(k) + " is " + shape_to_string(s) + ", against " + shape_to_string(first.shape));
    out[axis] += s[axis];
  }
  c.output(0) = c.allocate(first.dtype, out);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out[d];
  for (size_t d = axis + 1; d < rank; ++d) inner *= out[d];
  int64_t offset = 0;
  for (size_t k = 0; k < c.input_count(); ++k) {
    const DeviceTensor& in = c.input(k);
    const int64_t block = in.shape[axis] * inner;
    StridedCopy p;  // [outer, block] into [outer, total] at the input's offset
    p.dims = {outer, block};
    p.in_stride = {block, 1};
    p.out_stride = {out[axis] * inner, 1};
    p.out_base = offset * inner;
    if (block) strided_copy(c, in.dtype, p, in.data, c.output(0).data);
    offset += in.shape[axis];
  }
}

bool split_reads_on_host(const Node&, size_t i) { return i == 1; }

void run_split(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const size_t rank = x.shape.size();
  if (rank == 0) c.fail("a scalar cannot be split");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", 0), rank));
  const size_t outputs = c.node().outputs.size();
  std::vector<int64_t> sizes = c.opset() >= 13 ? host_ints(c, 1) : c.attr_ints("split");
  const int64_t dim = x.shape[axis];
  if (sizes.empty()) {
    const auto parts = static_cast<int64_t>(c.opset() >= 18 && c.node().attribute("num_outputs") ? c.attr_int("num_outputs", 1) : static_cast<int64_t>(outputs));
    if (parts <= 0) c.fail("num_outputs is " + std::to_string(parts));
    // Before the sizes are listed: num_outputs is an attribute, 2^62 of them once mutated.
    if (parts != static_cast<int64_t>(outputs))
      c.fail("num_outputs is " + std::to_string(parts) + " but the node has " + std::to_string(outputs) + " outputs");
    const int64_t each = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= each) sizes.push_back(std::max<int64_t>(0, std::min(each, left)));
    if (c.opset() < 18 && dim % parts) c.fail("dim " + std::to_string(dim) + " does not split into " + std::to_string(parts) + " equal parts");
  }
  if (sizes.size() != outputs) c.fail(std::to_string(sizes.size()) + " split sizes for " + std::to_string(outputs) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("a split size is negative");
    if (s > dim - total) c.fail("split sizes " + shape_to_string(sizes) + " add up to more than the dim " + std::to_string(dim));
    total += s;
  }
  if (total != dim) c.fail("split sizes add up to " + std::to_string(total) + ", not the dim " + std::to_string(dim));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  int64_t offset = 0;
  for (size_t k = 0; k < outputs; ++k) {
    Shape s = x.shape;
    s[axis] = sizes[k];
    if (c.wants_output(k)) {
      c.output(k) = c.allocate(x.dtype, s);
      StridedCopy p;
      p.dims = {outer, sizes[k] * inner};
      p.in_stride = {dim * inner, 1};
      p.out_stride = {sizes[k] * inner, 1};
      p.in_base = offset * inner;
      strided_copy(c, x.dtype, p, x.data, c.output(k).data);
    }
    offset += sizes[k];
  }
}

// --- Expand ---

bool expand_reads_on_host(const Node&, size_t i) { return i == 1; }

void run_expand(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const std::vector<int64_t> target = host_ints(c, 1);
  for (int64_t d : target)
    if (d < 0) c.fail("the shape has a negative dim " + std::to_string(d));
  const Shape shapes[2] = {x.shape, Shape(target.begin(), target.end())};
  auto plan = broadcast_plan(shapes);  // both ways: a dim of 1 in the target keeps x's
  if (!plan) c.fail(shape_to_string(x.shape) + " does not expand to " + shape_to_string(shapes[1]));
  c.output(0) = c.allocate(x.dtype, plan->out);
  broadcast_into(c, x, plan->out, c.output(0).data);
}

// --- Tile ---

bool tile_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_tile(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  if (n.inputs.size() != 2) return std::string("Tile-1 (tiles and axis inputs)");
  return std::nullopt;
}

// One strided copy: a repeated dim d becomes two, the repeat (input stride
// 0, output stride a block of the input's extent) and the input's own.
void run_tile(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const std::vector<int64_t> repeats = host_ints(c, 1);
  const size_t rank = x.shape.size();
  if (repeats.size() != rank)
    c.fail("repeats has " + std::to_string(repeats.size()) + " entries for an input of rank " + std::to_string(rank));
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) c.fail("repeats must not be negative: " + shape_to_string(repeats));
    if (__builtin_mul_overflow(x.shape[d], repeats[d], &out[d])) c.fail("the output shape overflows");
  }
  c.output(0) = c.allocate(x.dtype, out);
  if (elements_of(out) == 0) return;
  const auto in_stride = contiguous_strides(x.shape), out_stride = contiguous_strides(out);
  StridedCopy p;
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] > 1) {
      p.dims.push_back(repeats[d]);
      p.in_stride.push_back(0);
      p.out_stride.push_back(x.shape[d] * out_stride[d]);
    }
    p.dims.push_back(x.shape[d]);
    p.in_stride.push_back(in_stride[d]);
    p.out_stride.push_back(out_stride[d]);
  }
  if (p.dims.size() > static_cast<size_t>(kKernelRank))
    c.fail("rank " + std::to_string(rank) + " with " + std::to_string(p.dims.size() - rank) +
           " repeated dims is more than the copy kernel's 8 dims");
  strided_copy(c, x.dtype, p, x.data, c.output(0).data);
}

// --- Gather ---

// The indices stay on the device (they are often a model input, such as an
// embedding's token ids): the kernel checks them as it reads them.
std::optional<std::string> refuse_gather(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  return require_types(g, n, {DataType::Int64, DataType::Int32}, 1, 1);
}

// A Gather or GatherND kernel from x into output 0 over n items, its
// faults reported at the node's site.
template <template <class> class Kernel, class T>
void launch_gather(OpContext& c, Kernel<T> k, const DeviceTensor& x, int64_t n) {
  k.x = static_cast<const T*>(x.data);
  k.y = static_cast<T*>(c.output(0).data);
  const FaultLog::Site site = c.fault_site();
  k.fault = site.record;
  k.site = site.id;
  launch(c.rt(), k, n);
}

void run_gather(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& idx = c.input(1);
  if (idx.dtype != DataType::Int64 && idx.dtype != DataType::Int32)
    c.fail("indices of type " + std::string(dtype_name(idx.dtype)) + " (int64 or int32)");
  const size_t rank = x.shape.size();
  if (rank == 0) c.fail("a scalar cannot be gathered from");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", 0), rank));
  const int64_t dim = x.shape[axis];
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  c.output(0) = c.allocate(x.dtype, out);
  const int64_t n = static_cast<int64_t>(elements_of(out));
  if (n == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const auto count = static_cast<int64_t>(elements_of(idx.shape));
  with_element_width(x.dtype, [&](auto w) {
    GatherKernel<decltype(w)> k{dim, count, inner};
    k.indices = idx.data;
    k.indices32 = idx.dtype == DataType::Int32;
    launch_gather(c, k, x, n);
  });
}

// --- Compress ---

// The condition is read on the host (it sets the output's size, and is
// short: one flag per place along the axis); the places it keeps become
// Gather's indices, uploaded once per run.
bool compress_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_compress(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("Compress takes input and condition");
  if (auto r = refuse_movable(g, n)) return r;
  return require_types(g, n, {DataType::Bool}, 1, 1);
}

void run_compress(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const Tensor* cond = c.host(1);
  if (!cond || cond->dtype() != DataType::Bool) c.fail("condition must be a bool tensor");
  if (cond->shape().size() != 1) c.fail("condition must be 1-D, got shape " + shape_to_string(cond->shape()));
  // Without an axis the input is flattened first.
  const bool has_axis = c.node().attribute("axis") != nullptr;
  if (has_axis && x.shape.empty()) c.fail("input must have rank >= 1 when axis is given");
  const Shape view = has_axis ? x.shape : Shape{static_cast<int64_t>(elements_of(x.shape))};
  const auto axis = static_cast<size_t>(has_axis ? normalize_axis(c, c.attr_int("axis", 0), x.shape.size()) : 0);
  const int64_t dim = view[axis];
  std::vector<int64_t> kept;
  const auto* flags = reinterpret_cast<const uint8_t*>(cond->raw());
  for (uint64_t i = 0; i < cond->element_count(); ++i) {
    if (!flags[i]) continue;
    if (static_cast<int64_t>(i) >= dim)
      c.fail("condition is true at position " + std::to_string(i) + ", beyond the size " + std::to_string(dim) + " of axis " +
             std::to_string(axis));
    kept.push_back(static_cast<int64_t>(i));
  }
  Shape out = view;
  out[axis] = static_cast<int64_t>(kept.size());
  c.output(0) = c.allocate(x.dtype, out);
  const auto n = static_cast<int64_t>(elements_of(out));
  if (n == 0) return;
  Tensor places = Tensor::zeros(DataType::Int64, {static_cast<int64_t>(kept.size())});
  std::copy(kept.begin(), kept.end(), places.mutable_data<int64_t>());
  const DeviceTensor idx = c.upload(places);
  int64_t inner = 1;
  for (size_t d = axis + 1; d < view.size(); ++d) inner *= view[d];
  with_element_width(x.dtype, [&](auto w) {
    GatherKernel<decltype(w)> k{dim, static_cast<int64_t>(kept.size()), inner};
    k.indices = idx.data;
    k.indices32 = false;
    launch_gather(c, k, x, n);
  });
}

// --- GatherND ---

std::optional<std::string> refuse_gather_nd(const Graph& g, const Node& n) {
  if (auto r = refuse_movable(g, n)) return r;
  return require_types(g, n, {DataType::Int64}, 1, 1);
}

void run_gather_nd(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& idx = c.input(1);
  if (idx.dtype != DataType::Int64) c.fail("indices of type " + std::string(dtype_name(idx.dtype)) + " (int64)");
  const auto r = static_cast<int64_t>(x.shape.size()), q = static_cast<int64_t>(idx.shape.size());
  const int64_t b = c.attr_int("batch_dims", 0);
  if (r < 1 || q < 1) c.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    c.fail("batch_dims " + std::to_string(b) + " is outside [0, " + std::to_string(std::min(q, r)) + ")");
  for (int64_t d = 0; d < b; ++d)
    if (x.shape[static_cast<size_t>(d)] != idx.shape[static_cast<size_t>(d)])
      c.fail("the first batch_dims dims of data " + shape_to_string(x.shape) + " and indices " +
             shape_to_string(idx.shape) + " differ");
  const int64_t k = idx.shape.back();
  if (k < 1 || k > r - b)
    c.fail("indices.shape[-1] = " + std::to_string(k) + " is outside [1, rank(data) - batch_dims] = [1, " +
           std::to_string(r - b) + "]");
  if (k > kKernelRank) c.fail("index tuples longer than " + std::to_string(kKernelRank));
  const auto ub = static_cast<size_t>(b), uk = static_cast<size_t>(k);
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(ub + uk), x.shape.end());
  c.output(0) = c.allocate(x.dtype, out);
  const auto n = static_cast<int64_t>(elements_of(out));
  if (n == 0) return;
  auto product = [](const Shape& s, size_t from, size_t to) {
    int64_t p = 1;
    for (size_t d = from; d < to; ++d) p *= s[d];
    return p;
  };
  with_element_width(x.dtype, [&](auto w) {
    GatherNDKernel<decltype(w)> k{};
    k.k = static_cast<int>(uk);
    for (size_t d = 0; d < uk; ++d) {
      k.dims[d] = x.shape[ub + d];
      k.stride[d] = product(x.shape, ub + d + 1, x.shape.size());
    }
    k.tuples = product(idx.shape, ub, idx.shape.size() - 1);
    k.slice = product(x.shape, ub + uk, x.shape.size());
    k.batch_block = product(x.shape, ub, x.shape.size());
    k.indices = static_cast<const int64_t*>(idx.data);
    launch_gather(c, k, x, n);
  });
}

}  // namespace

void add_movement_ops(std::vector<OpDef>& t) {
  for (const char* name : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    t.push_back({name, refuse_view, run_view, OpBackend::View, view_reads_on_host});
  t.push_back({"BitCast", refuse_bitcast, run_bitcast, OpBackend::View});
  t.push_back({"Dropout", refuse_dropout_node, run_dropout, OpBackend::View, dropout_reads_on_host, "", refuse_dropout});
  t.push_back({"Transpose", refuse_movable, run_transpose});
  t.push_back({"Slice", refuse_movable, run_slice, OpBackend::Kernel, slice_reads_on_host});
  t.push_back({"Concat", refuse_concat, run_concat});
  t.push_back({"Split", refuse_movable, run_split, OpBackend::Kernel, split_reads_on_host});
  t.push_back({"Expand", refuse_movable, run_expand, OpBackend::Kernel, expand_reads_on_host});
  t.push_back({"Tile", refuse_tile, run_tile, OpBackend::Kernel, tile_reads_on_host});
  t.push_back({"Gather", refuse_gather, run_gather});
  t.push_back({"Compress", refuse_compress, run_compress, OpBackend::Kernel, compress_reads_on_host});
  t.push_back({"GatherND", refuse_gather_nd, run_gather_nd});
}

}  // namespace onnxscope::cuda
