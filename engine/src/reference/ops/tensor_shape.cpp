// Reference kernels: shape and data movement: Identity, Constant, ConstantOfShape, Cast, CastLike, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile, Pad, Range, EyeLike, Trilu, DepthToSpace, SpaceToDepth, BitCast, CenterCropPad, Col2Im.
//
// This file holds the shape-only ops and the plain data movement; Cast,
// CastLike and BitCast live in tensor_shape_cast.cpp, padding, generators and
// block rearrangements in tensor_shape_layout.cpp. Data movement never looks
// at values: elements are copied by ElementMover / gather_by_tables
// (tensor_shape_parts.h), so every element type works, strings and the packed
// 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "core/slice_range.h"
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/tensor_shape_parts.h"

namespace onnxscope::ref {
namespace {

// Offsets k * stride for k in [0, n): an unchanged dimension in gather_by_tables.
std::vector<int64_t> ramp(int64_t n, int64_t stride) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = k * stride;
  return v;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// An axis in [-rank, rank) made non-negative; fails otherwise (also for rank 0).
int64_t checked_axis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// --- Identity, Constant, ConstantOfShape, Shape, Size -----------------------------

void Identity(KernelContext& ctx) {
  // Tensors, sequences and optionals alike: the value is passed on unchanged.
  const Value* v = ctx.input_value(0);
  if (!v) ctx.fail("input 0 is required but missing");
  ctx.set_output(0, *v);
}

void densify_sparse(KernelContext& ctx, const SparseTensor& sp) {
  const Tensor& values = sp.values;
  const Tensor& indices = sp.indices;
  const int64_t rank = static_cast<int64_t>(sp.dims.size());
  auto count = checked_element_count(sp.dims);
  if (!count) ctx.fail("sparse_value has an invalid dense shape " + shape_to_string(sp.dims));
  if (values.rank() != 1) ctx.fail("sparse_value values must be 1-D, got " + shape_to_string(values.shape()));
  const int64_t nnz = values.shape()[0];
  if (!dtype_info(indices.dtype()).is_integer && nnz > 0) ctx.fail("sparse_value indices must be integers");
  Tensor& y = ctx.allocate_output(0, values.dtype(), sp.dims);
  ElementMover move(values, y, &ctx);
  const auto strides = strides_of(sp.dims);
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t linear = 0;
    if (indices.rank() == 1 && indices.shape()[0] == nnz) {
      linear = indices.element_as_int64(static_cast<uint64_t>(k));
      if (linear < 0 || static_cast<uint64_t>(linear) >= *count)
        ctx.fail("sparse_value index " + std::to_string(linear) + " is out of range for " + std::to_string(*count) +
                 " elements");
    } else if (indices.rank() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank) {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t c = indices.element_as_int64(static_cast<uint64_t>(k * rank + d));
        if (c < 0 || c >= sp.dims[static_cast<size_t>(d)])
          ctx.fail("sparse_value index " + std::to_string(c) + " is out of range for dimension " + std::to_string(d) +
                   " of " + shape_to_string(sp.dims));
        linear += c * strides[static_cast<size_t>(d)];
      }
    } else {
      ctx.fail("sparse_value indices of shape " + shape_to_string(indices.shape()) + " do not match " +
               std::to_string(nnz) + " values of a rank-" + std::to_string(rank) + " tensor");
    }
    move(static_cast<uint64_t>(linear), static_cast<uint64_t>(k));
  }
}

void Constant(KernelContext& ctx) {
  static const char* const kForms[] = {"value",        "sparse_value", "value_int",    "value_ints",
                                       "value_float",  "value_floats", "value_string", "value_strings"};
  const char* form = nullptr;
  for (const char* f : kForms) {
    if (!ctx.has_attr(f)) continue;
    if (form) ctx.fail(std::string("exactly one value attribute is allowed, got '") + form + "' and '" + f + "'");
    form = f;
  }
  if (!form) ctx.fail("one of the value attributes must be given");
  const std::string f = form;
  if (f == "value") {
    ctx.set_output(0, Value(*ctx.attr_tensor("value")));
  } else if (f == "sparse_value") {
    const Attribute& a = ctx.required_attr("sparse_value");
    if (a.type != AttrType::SparseTensor) ctx.fail("attribute 'sparse_value' must be a sparse tensor");
    densify_sparse(ctx, a.sparse);
  } else if (f == "value_int") {
    store<int64_t>(ctx.allocate_output(0, DataType::Int64, {}), 0, ctx.attr_int("value_int", 0));
  } else if (f == "value_ints") {
    const auto v = ctx.attr_ints("value_ints");
    Tensor& y = ctx.allocate_output(0, DataType::Int64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) store<int64_t>(y, i, v[i]);
  } else if (f == "value_float") {
    store<float>(ctx.allocate_output(0, DataType::Float, {}), 0, ctx.attr_float("value_float", 0));
  } else if (f == "value_floats") {
    const auto v = ctx.attr_floats("value_floats");
    Tensor& y = ctx.allocate_output(0, DataType::Float, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) store<float>(y, i, v[i]);
  } else if (f == "value_string") {
    ctx.allocate_output(0, DataType::String, {}).mutable_strings()[0] = ctx.attr_string("value_string");
  } else {
    const auto v = ctx.attr_strings("value_strings");
    Tensor& y = ctx.allocate_output(0, DataType::String, {static_cast<int64_t>(v.size())});
    y.mutable_strings() = v;
  }
}

void ConstantOfShape(KernelContext& ctx) {
  const Shape dims = int_values(ctx, ctx.input(0));
  for (int64_t d : dims)
    if (d < 0) ctx.fail("shape " + shape_to_string(dims) + " has a negative dimension");
  const Tensor* value = ctx.attr_tensor("value");
  if (value && value->element_count() != 1)
    ctx.fail("attribute 'value' must hold exactly one element, got " + std::to_string(value->element_count()));
  Tensor& y = ctx.allocate_output(0, value ? value->dtype() : DataType::Float, dims);
  if (!value) return;  // default: float zeros
  ElementMover move(*value, y, &ctx);
  for (uint64_t i = 0; i < y.element_count(); ++i) move(i, 0);
}

void ShapeOp(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  // start/end (opset 15) slice the shape; out-of-range values are clamped.
  auto clamp_index = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp_index(ctx.attr_int("start", 0));
  const int64_t end = clamp_index(ctx.attr_int("end", rank));
  const int64_t n = std::max<int64_t>(0, end - start);
  Tensor& y = ctx.allocate_output(0, DataType::Int64, {n});
  for (int64_t i = 0; i < n; ++i) store<int64_t>(y, static_cast<uint64_t>(i), s[static_cast<size_t>(start + i)]);
}

void Size(KernelContext& ctx) {
  store<int64_t>(ctx.allocate_output(0, DataType::Int64, {}), 0, static_cast<int64_t>(ctx.input(0).element_count()));
}

// --- reshapes: the elements keep their order --------------------------------------

void Reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape target = ctx.opset_version() < 5 ? ctx.attr_ints("shape") : int_values(ctx, ctx.input(1));
  if (ctx.opset_version() < 5 && !ctx.has_attr("shape")) ctx.fail("required attribute 'shape' is missing");
  const bool allowzero = ctx.opset_version() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  Shape out(target.size());
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t d = 0; d < target.size(); ++d) {
    const int64_t v = target[d];
    if (v == -1) {
      if (infer >= 0) ctx.fail("shape " + shape_to_string(target) + " has more than one -1");
      infer = static_cast<int64_t>(d);
      out[d] = 1;
    } else if (v == 0 && !allowzero) {
      // 0 copies the input's dimension.
      if (d >= x.shape().size())
        ctx.fail("shape " + shape_to_string(target) + " copies dimension " + std::to_string(d) + " of an input of rank " +
                 std::to_string(x.rank()));
      out[d] = x.shape()[d];
    } else if (v < 0) {
      ctx.fail("shape " + shape_to_string(target) + " has an invalid dimension " + std::to_string(v));
    } else {
      has_zero = has_zero || v == 0;
      out[d] = v;
    }
  }
  if (allowzero && has_zero && infer >= 0)
    ctx.fail("shape " + shape_to_string(target) + " has both 0 and -1 while allowzero is set");
  auto known = checked_element_count(out);
  if (!known) ctx.fail("shape " + shape_to_string(target) + " overflows");
  const uint64_t count = x.element_count();
  if (infer >= 0) {
    if (*known == 0 || count % *known != 0)
      ctx.fail("cannot reshape " + shape_to_string(x.shape()) + " into " + shape_to_string(target));
    out[static_cast<size_t>(infer)] = static_cast<int64_t>(count / *known);
  } else if (*known != count) {
    ctx.fail("cannot reshape " + shape_to_string(x.shape()) + " (" + std::to_string(count) + " elements) into " +
             shape_to_string(out));
  }
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

void Flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const size_t a = static_cast<size_t>(axis);
  Shape out{product(x.shape(), 0, a), product(x.shape(), a, x.shape().size())};
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

// Axes from the attribute (before opset 13) or the optional input 1 (13 on).
bool axes_of(const KernelContext& ctx, std::vector<int64_t>& axes) {
  if (ctx.opset_version() < 13) {
    if (!ctx.has_attr("axes")) return false;
    axes = ctx.attr_ints("axes");
    return true;
  }
  if (!ctx.has_input(1)) return false;
  axes = int_values(ctx, ctx.input(1));
  return true;
}

void Squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes_of(ctx, axes)) {
    for (int64_t a : axes) {
      const size_t n = static_cast<size_t>(checked_axis(ctx, a, rank));
      if (drop[n]) ctx.fail("axis " + std::to_string(a) + " is given twice");
      if (x.shape()[n] != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape()[n]));
      drop[n] = true;
    }
  } else {
    for (size_t d = 0; d < drop.size(); ++d) drop[d] = x.shape()[d] == 1;
  }
  Shape out;
  for (size_t d = 0; d < drop.size(); ++d)
    if (!drop[d]) out.push_back(x.shape()[d]);
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

void Unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (!axes_of(ctx, axes)) ctx.fail("axes are required");
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    const size_t n = static_cast<size_t>(checked_axis(ctx, a, out_rank));
    if (inserted[n]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    inserted[n] = true;
  }
  Shape out;
  size_t next = 0;
  for (size_t d = 0; d < inserted.size(); ++d) out.push_back(inserted[d] ? 1 : x.shape()[next++]);
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

// --- permutations and copies --------------------------------------------------------

void Transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = rank - 1 - d;  // default: reverse
  if (ctx.has_attr("perm")) perm = ctx.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for an input of rank " + std::to_string(rank));
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    p = checked_axis(ctx, p, rank, "perm entry");
    if (used[static_cast<size_t>(p)]) ctx.fail("perm is not a permutation: " + shape_to_string(ctx.attr_ints("perm")));
    used[static_cast<size_t>(p)] = true;
  }
  const auto strides = strides_of(x.shape());
  Shape out;
  std::vector<std::vector<int64_t>> table;
  for (int64_t p : perm) {
    out.push_back(x.shape()[static_cast<size_t>(p)]);
    table.push_back(ramp(out.back(), strides[static_cast<size_t>(p)]));
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  gather_by_tables(ctx, x, y, table);
}

void Concat(KernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n == 0) ctx.fail("Concat needs at least one input");
  const Tensor& first = ctx.input(0);
  const int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  if (ctx.opset_version() >= 4 && !ctx.has_attr("axis")) ctx.fail("required attribute 'axis' is missing");
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attr_int("axis", 1), rank));
  Shape out = first.shape();
  out[axis] = 0;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& t = ctx.input(k);
    if (t.dtype() != first.dtype()) ctx.fail("all inputs must have the same element type");
    bool ok = t.rank() == rank;
    for (size_t d = 0; ok && d < out.size(); ++d) ok = d == axis || t.shape()[d] == first.shape()[d];
    if (!ok)
      ctx.fail("input " + std::to_string(k) + " of shape " + shape_to_string(t.shape()) +
               " does not match input 0 of shape " + shape_to_string(first.shape()) + " outside axis " +
               std::to_string(axis));
    out[axis] += t.shape()[axis];
  }
  Tensor& y = ctx.allocate_output(0, first.dtype(), out);
  std::vector<ElementMover> movers;
  std::vector<uint64_t> block;  // elements of input k per outer index
  for (size_t k = 0; k < n; ++k) {
    movers.emplace_back(ctx.input(k), y);
    block.push_back(static_cast<uint64_t>(product(ctx.input(k).shape(), axis, out.size())));
  }
  const uint64_t outer = static_cast<uint64_t>(product(out, 0, axis));
  uint64_t pos = 0;
  for (uint64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < n; ++k)
      for (uint64_t j = 0; j < block[k]; ++j) movers[k](pos++, o * block[k] + j);
}

void Split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attr_int("axis", 0), rank));
  const int64_t dim = x.shape()[axis];
  const size_t nout = ctx.output_count();
  std::vector<int64_t> sizes;
  bool given = false;
  const int64_t opset = ctx.opset_version();
  // Sizes come from input 1 from opset 13, from the attribute before (Split-1
  // took either).
  if (opset < 13 && ctx.has_attr("split")) {
    sizes = ctx.attr_ints("split");
    given = true;
  } else if ((opset >= 13 || opset < 2) && ctx.has_input(1)) {
    sizes = int_values(ctx, ctx.input(1));
    given = true;
  }
  if (!given) {
    if (opset >= 18 && ctx.has_attr("num_outputs")) {
      // Chunks of ceil(dim / n); the last one takes what is left.
      const int64_t parts = ctx.attr_int("num_outputs", 0);
      if (parts < 1) ctx.fail("num_outputs must be positive, got " + std::to_string(parts));
      if (static_cast<size_t>(parts) != nout)
        ctx.fail("num_outputs is " + std::to_string(parts) + " but the node has " + std::to_string(nout) + " outputs");
      const int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::clamp<int64_t>(dim - k * chunk, 0, chunk));
    } else {
      if (nout == 0 || dim % static_cast<int64_t>(nout) != 0)
        ctx.fail("dimension " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(nout) + " parts");
      sizes.assign(nout, dim / static_cast<int64_t>(nout));
    }
  } else if (opset >= 18 && ctx.has_attr("num_outputs")) {
    ctx.fail("split and num_outputs cannot both be given");
  }
  if (sizes.size() != nout)
    ctx.fail("split has " + std::to_string(sizes.size()) + " entries but the node has " + std::to_string(nout) +
             " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split sizes must not be negative: " + shape_to_string(sizes));
    // Each size within what is left: a sum that wraps ([2^63-1, 2^63-1, 2, 4] adds up to 4) would read before x.
    if (s > dim - total)
      ctx.fail("split sizes " + shape_to_string(sizes) + " add up to more than dimension " + std::to_string(dim));
    total += s;
  }
  if (total != dim)
    ctx.fail("split sizes " + shape_to_string(sizes) + " do not add up to dimension " + std::to_string(dim));
  const uint64_t outer = static_cast<uint64_t>(product(x.shape(), 0, axis));
  const uint64_t inner = static_cast<uint64_t>(product(x.shape(), axis + 1, x.shape().size()));
  int64_t start = 0;
  for (size_t k = 0; k < nout; ++k) {
    const int64_t size = sizes[k];
    if (ctx.output_wanted(k)) {
      Shape s = x.shape();
      s[axis] = size;
      Tensor& y = ctx.allocate_output(k, x.dtype(), s);
      ElementMover move(x, y, &ctx);
      const uint64_t block = static_cast<uint64_t>(size) * inner;
      uint64_t pos = 0;
      for (uint64_t o = 0; o < outer; ++o) {
        const uint64_t base = (o * static_cast<uint64_t>(dim) + static_cast<uint64_t>(start)) * inner;
        for (uint64_t j = 0; j < block; ++j) move(pos++, base + j);
      }
    }
    start += size;
  }
}

void Slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset_version() < 10) {
    if (!ctx.has_attr("starts") || !ctx.has_attr("ends")) ctx.fail("attributes 'starts' and 'ends' are required");
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    if (ctx.has_attr("axes")) axes = ctx.attr_ints("axes");
  } else {
    starts = int_values(ctx, ctx.input(1));
    ends = int_values(ctx, ctx.input(2));
    if (ctx.has_input(3)) axes = int_values(ctx, ctx.input(3));
    if (ctx.has_input(4)) steps = int_values(ctx, ctx.input(4));
  }
  const size_t n = starts.size();
  if (axes.empty() && !(ctx.opset_version() >= 10 && ctx.has_input(3))) {
    axes.resize(n);
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty() && !(ctx.opset_version() >= 10 && ctx.has_input(4))) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    ctx.fail("starts, ends, axes and steps must have the same length");

  const auto strides = strides_of(x.shape());
  Shape out = x.shape();
  std::vector<std::vector<int64_t>> table;
  for (int64_t d = 0; d < rank; ++d) table.push_back(ramp(out[static_cast<size_t>(d)], strides[static_cast<size_t>(d)]));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>(checked_axis(ctx, axes[i], rank));
    if (seen[a]) ctx.fail("axis " + std::to_string(axes[i]) + " is sliced twice");
    seen[a] = true;
    if (steps[i] == 0) ctx.fail("slice step must not be 0");
    const int64_t step = std::max<int64_t>(steps[i], -INT64_MAX);  // as slice_range takes it
    const SliceRange r = slice_range(x.shape()[a], starts[i], ends[i], step);
    const int64_t s = r.start, len = r.count;
    out[a] = len;
    table[a].resize(static_cast<size_t>(len));
    for (int64_t k = 0; k < len; ++k) table[a][static_cast<size_t>(k)] = (s + k * step) * strides[a];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  gather_by_tables(ctx, x, y, table);
}

void Expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape shape = int_values(ctx, ctx.input(1));
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape " + shape_to_string(shape) + " has a negative dimension");
  const Shape out = broadcast_shapes(ctx, x.shape(), shape);  // bidirectional, like numpy
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  const auto strides = strides_of(x.shape());
  const size_t off = out.size() - x.shape().size();
  std::vector<std::vector<int64_t>> table;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool repeated = d < off || x.shape()[d - off] == 1;
    table.push_back(repeated ? std::vector<int64_t>(static_cast<size_t>(out[d]), 0) : ramp(out[d], strides[d - off]));
  }
  gather_by_tables(ctx, x, y, table);
}

void Tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> repeats;
  if (ctx.opset_version() < 6) {
    // Tile-1: `tiles` copies along the single axis `axis` (both scalar inputs).
    const Tensor& tiles = ctx.input(1);
    const Tensor& axis_t = ctx.input(2);
    if (tiles.element_count() != 1 || axis_t.element_count() != 1) ctx.fail("tiles and axis must be scalars");
    repeats.assign(static_cast<size_t>(rank), 1);
    repeats[static_cast<size_t>(checked_axis(ctx, axis_t.element_as_int64(0), rank))] = tiles.element_as_int64(0);
  } else {
    repeats = int_values(ctx, ctx.input(1));
  }
  if (static_cast<int64_t>(repeats.size()) != rank)
    ctx.fail("repeats has " + std::to_string(repeats.size()) + " entries for an input of rank " + std::to_string(rank));
  Shape out(static_cast<size_t>(rank));
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats must not be negative: " + shape_to_string(repeats));
    if (__builtin_mul_overflow(x.shape()[d], repeats[d], &out[d])) ctx.fail("output shape overflows");
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  // Output coordinate k reads input coordinate k mod dim.
  const auto strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> table(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    for (int64_t k = 0; k < out[d]; ++k) table[d].push_back((k % x.shape()[d]) * strides[d]);
  gather_by_tables(ctx, x, y, table);
}

}  // namespace

void register_tensor_shape_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since = 1) {
    r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr});
  };
  add("Identity", Identity);
  add("Constant", Constant);
  add("ConstantOfShape", ConstantOfShape, 9);
  add("Shape", ShapeOp);
  add("Size", Size);
  add("Reshape", Reshape);
  add("Flatten", Flatten);
  add("Squeeze", Squeeze);
  add("Unsqueeze", Unsqueeze);
  add("Transpose", Transpose);
  add("Concat", Concat);
  add("Split", Split);
  add("Slice", Slice);
  add("Expand", Expand, 8);
  add("Tile", Tile);
  register_tensor_shape_cast_ops(r);
  register_tensor_shape_layout_ops(r);
}

}  // namespace onnxscope::ref
