// Reference kernels: indexing and search: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TensorScatter, OneHot, NonZero, Compress, ReverseSequence, Unique, TopK, ArgMax, ArgMin, CumSum, CumProd.
//
// This file holds the data-movement half (gathers, scatters, OneHot, Compress,
// ReverseSequence); indexing_search.cpp holds NonZero, Unique, TopK, ArgMax,
// ArgMin, CumSum and CumProd. Data movement copies elements without
// interpreting them, so it works for every element type, strings and packed
// sub-byte types included. Every index is bounds-checked; negative indices
// count from the end where the spec allows them.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/indexing_parts.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {
namespace {

Shape concat_shapes(std::initializer_list<std::pair<const Shape*, std::pair<size_t, size_t>>> parts) {
  Shape out;
  for (const auto& [s, range] : parts)
    for (size_t d = range.first; d < range.second && d < s->size(); ++d) out.push_back((*s)[d]);
  return out;
}

std::string dtype_str(const Tensor& t) { return std::string(dtype_name(t.dtype())); }

void require_same_type(const KernelContext& ctx, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  if (a.dtype() != b.dtype())
    ctx.fail(std::string(an) + " and " + bn + " must have the same element type, got " + dtype_str(a) + " and " +
             dtype_str(b));
}

// --- Gather ------------------------------------------------------------------

void Gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), data.rank());
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  for (int64_t& k : idx) k = wrap_index(ctx, k, dim, axis);

  // output shape: data[:axis] ++ indices.shape ++ data[axis+1:]
  const size_t r = data.shape().size(), a = static_cast<size_t>(axis);
  Shape out_shape = concat_shapes({{&data.shape(), {0, a}}, {&ind.shape(), {0, ind.shape().size()}},
                                   {&data.shape(), {a + 1, r}}});
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  const uint64_t outer = dims_product(data.shape(), 0, a), inner = dims_product(data.shape(), a + 1, r);
  const uint64_t n = idx.size();
  ElementCopier copy(ctx, data, out);
  for (uint64_t o = 0; o < outer; ++o)
    for (uint64_t j = 0; j < n; ++j)
      copy.block((o * n + j) * inner, (o * static_cast<uint64_t>(dim) + static_cast<uint64_t>(idx[j])) * inner, inner);
}

// --- GatherElements / ScatterElements -------------------------------------------

// For each element of `ind` (same rank as data), the flat offset into data it
// addresses: its own position on every axis but `axis`, its value on `axis`.
std::vector<uint64_t> element_targets(const KernelContext& ctx, const Shape& data_shape, const Tensor& ind,
                                      int64_t axis) {
  const size_t r = data_shape.size();
  if (ind.shape().size() != r)
    ctx.fail("indices must have the same rank as data (" + std::to_string(r) + "), got shape " +
             shape_to_string(ind.shape()));
  for (size_t d = 0; d < r; ++d)
    if (static_cast<int64_t>(d) != axis && ind.shape()[d] > data_shape[d])
      ctx.fail("indices shape " + shape_to_string(ind.shape()) + " exceeds data shape " + shape_to_string(data_shape) +
               " on axis " + std::to_string(d));
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  const std::vector<int64_t> strides = strides_of(data_shape);
  std::vector<uint64_t> targets(idx.size());
  Odometer pos(ind.shape());
  for (uint64_t i = 0; i < idx.size(); ++i, pos.next()) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d)
      off += (static_cast<int64_t>(d) == axis ? wrap_index(ctx, idx[i], data_shape[d], axis) : pos.index()[d]) *
             strides[d];
    targets[i] = static_cast<uint64_t>(off);
  }
  return targets;
}

void GatherElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), data.rank());
  const std::vector<uint64_t> targets = element_targets(ctx, data.shape(), ind, axis);
  Tensor& out = ctx.allocate_output(0, data.dtype(), ind.shape());
  ElementCopier copy(ctx, data, out);
  for (uint64_t i = 0; i < targets.size(); ++i) copy(i, targets[i]);
}

// --- scatter reductions ----------------------------------------------------------

enum class Reduction { None, Add, Mul, Max, Min };

Reduction parse_reduction(const KernelContext& ctx) {
  const std::string r = ctx.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  const int64_t v = ctx.opset_version();
  if (v < 16) ctx.fail("attribute 'reduction' needs opset 16 or later, the model imports opset " + std::to_string(v));
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max" || r == "min") {
    if (v < 18) ctx.fail("reduction '" + r + "' needs opset 18 or later, the model imports opset " + std::to_string(v));
    return r == "max" ? Reduction::Max : Reduction::Min;
  }
  ctx.fail("reduction must be one of none, add, mul, max, min; got '" + r + "'");
}

// f(a, b) for one reduction. Integers wrap (computed in uint64, then truncated);
// bool follows numpy (add/max = or, mul/min = and); max/min propagate NaN.
template <typename C>
C combine(const KernelContext& ctx, Reduction red, C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return (red == Reduction::Add || red == Reduction::Max) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<C>) {
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (red) {
      case Reduction::Add: return static_cast<C>(ua + ub);
      case Reduction::Mul: return static_cast<C>(ua * ub);
      case Reduction::Max: return std::max(a, b);
      default: return std::min(a, b);
    }
  } else if constexpr (std::is_floating_point_v<C>) {
    switch (red) {
      case Reduction::Add: return a + b;
      case Reduction::Mul: return a * b;
      default:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
        return red == Reduction::Max ? std::max(a, b) : std::min(a, b);
    }
  } else {  // complex
    if (red == Reduction::Add) return a + b;
    if (red == Reduction::Mul) return a * b;
    ctx.fail("reduction max/min is not defined for complex numbers");
  }
}

// out[o] = updates[u] (or f(out[o], updates[u])) for each (o, u), in order, so
// duplicate indices without a reduction keep the last update.
void scatter_apply(KernelContext& ctx, const Tensor& updates, Tensor& out,
                   const std::vector<std::pair<uint64_t, uint64_t>>& pairs, Reduction red) {
  if (red == Reduction::None) {
    ElementCopier copy(ctx, updates, out);
    for (auto [o, u] : pairs) copy(o, u);
    return;
  }
  dispatch<kNumeric | kBool | kComplex>(ctx, out.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (auto [o, u] : pairs) put<S>(out, o, combine(ctx, red, get<S>(out, o), get<S>(updates, u)));
  });
}

void scatter_elements(KernelContext& ctx, bool has_reduction) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  const Reduction red = has_reduction ? parse_reduction(ctx) : Reduction::None;
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  require_same_type(ctx, data, "data", upd, "updates");
  if (upd.shape() != ind.shape())
    ctx.fail("updates shape " + shape_to_string(upd.shape()) + " must equal indices shape " +
             shape_to_string(ind.shape()));
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), data.rank());
  const std::vector<uint64_t> targets = element_targets(ctx, data.shape(), ind, axis);
  std::vector<std::pair<uint64_t, uint64_t>> pairs(targets.size());
  for (uint64_t i = 0; i < targets.size(); ++i) pairs[i] = {targets[i], i};
  Tensor& out = copy_to_output(ctx, 0, data);
  scatter_apply(ctx, upd, out, pairs, red);
}

void ScatterElements(KernelContext& ctx) { scatter_elements(ctx, true); }
void Scatter(KernelContext& ctx) { scatter_elements(ctx, false); }  // deprecated alias, no reduction

// --- GatherND / ScatterND ---------------------------------------------------------

void GatherND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t r = data.rank(), q = ind.rank();
  const int64_t b = ctx.attr_int("batch_dims", 0);
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r))
    ctx.fail("batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices))) = [0, " +
             std::to_string(std::min(q, r)) + ")");
  for (int64_t d = 0; d < b; ++d)
    if (data.shape()[d] != ind.shape()[d])
      ctx.fail("the first batch_dims dimensions of data " + shape_to_string(data.shape()) + " and indices " +
               shape_to_string(ind.shape()) + " must be equal");
  const int64_t k = ind.shape()[q - 1];
  if (k < 1 || k > r - b)
    ctx.fail("indices.shape[-1] = " + std::to_string(k) + " must be in [1, rank(data) - batch_dims] = [1, " +
             std::to_string(r - b) + "]");
  const size_t ub = static_cast<size_t>(b), uk = static_cast<size_t>(k);
  Shape out_shape = concat_shapes({{&ind.shape(), {0, static_cast<size_t>(q - 1)}},
                                   {&data.shape(), {ub + uk, static_cast<size_t>(r)}}});
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  const std::vector<int64_t> strides = strides_of(data.shape());
  const uint64_t batches = dims_product(data.shape(), 0, ub);
  const uint64_t tuples = dims_product(ind.shape(), ub, static_cast<size_t>(q - 1));  // per batch
  const uint64_t batch_block = dims_product(data.shape(), ub, static_cast<size_t>(r));
  const uint64_t slice = dims_product(data.shape(), ub + uk, static_cast<size_t>(r));
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  ElementCopier copy(ctx, data, out);
  for (uint64_t bi = 0; bi < batches; ++bi) {
    for (uint64_t t = 0; t < tuples; ++t) {
      const uint64_t tuple = bi * tuples + t;
      int64_t off = 0;
      for (size_t j = 0; j < uk; ++j)
        off += wrap_index(ctx, idx[tuple * uk + j], data.shape()[ub + j], static_cast<int64_t>(ub + j)) *
               strides[ub + j];
      copy.block(tuple * slice, bi * batch_block + static_cast<uint64_t>(off), slice);
    }
  }
}

void ScatterND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  const Reduction red = parse_reduction(ctx);
  const int64_t r = data.rank(), q = ind.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  require_same_type(ctx, data, "data", upd, "updates");
  const int64_t k = ind.shape()[q - 1];
  if (k > r)
    ctx.fail("indices.shape[-1] = " + std::to_string(k) + " must not exceed rank(data) = " + std::to_string(r));
  const size_t uk = static_cast<size_t>(k);
  const Shape want = concat_shapes({{&ind.shape(), {0, static_cast<size_t>(q - 1)}},
                                    {&data.shape(), {uk, static_cast<size_t>(r)}}});
  if (upd.shape() != want)
    ctx.fail("updates shape " + shape_to_string(upd.shape()) + " must be indices.shape[:-1] ++ data.shape[k:] = " +
             shape_to_string(want));
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  const std::vector<int64_t> strides = strides_of(data.shape());
  const uint64_t tuples = dims_product(ind.shape(), 0, static_cast<size_t>(q - 1));
  const uint64_t slice = dims_product(data.shape(), uk, static_cast<size_t>(r));
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  pairs.reserve(tuples * slice);
  for (uint64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (size_t j = 0; j < uk; ++j)
      off += wrap_index(ctx, idx[t * uk + j], data.shape()[j], static_cast<int64_t>(j)) * strides[j];
    for (uint64_t s = 0; s < slice; ++s) pairs.emplace_back(static_cast<uint64_t>(off) + s, t * slice + s);
  }
  Tensor& out = copy_to_output(ctx, 0, data);
  scatter_apply(ctx, upd, out, pairs, red);
}

// --- TensorScatter ------------------------------------------------------------------

void TensorScatter(KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& upd = ctx.input(1);
  const Tensor* write = ctx.optional_input(2);
  const std::string mode = ctx.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be 'linear' or 'circular', got '" + mode + "'");
  const bool circular = mode == "circular";
  require_same_type(ctx, past, "past_cache", upd, "update");
  const int64_t r = past.rank();
  if (r < 2) ctx.fail("past_cache must have rank >= 2 (batch and sequence axes), got " + shape_to_string(past.shape()));
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -2), r);
  if (axis == 0) ctx.fail("axis must not be 0, the batch axis");
  if (upd.rank() != r) ctx.fail("update must have the same rank as past_cache");
  for (int64_t d = 0; d < r; ++d) {
    const bool ok = d == axis ? upd.shape()[d] <= past.shape()[d] : upd.shape()[d] == past.shape()[d];
    if (!ok)
      ctx.fail("update shape " + shape_to_string(upd.shape()) + " does not fit past_cache shape " +
               shape_to_string(past.shape()) + " on axis " + std::to_string(d));
  }
  const int64_t batch = past.shape()[0], max_len = past.shape()[axis], seq_len = upd.shape()[axis];
  std::vector<int64_t> w(static_cast<size_t>(batch), 0);
  if (write) {
    if (write->rank() != 1 || write->shape()[0] != batch)
      ctx.fail("write_indices must have shape [" + std::to_string(batch) + "], got " + shape_to_string(write->shape()));
    w = index_values(ctx, *write, "write_indices");
  }
  if (!circular)
    for (size_t b = 0; b < w.size(); ++b)
      if (w[b] < 0 || w[b] > max_len - seq_len)
        ctx.fail("write_indices[" + std::to_string(b) + "] = " + std::to_string(w[b]) + " with sequence length " +
                 std::to_string(seq_len) + " does not fit max_sequence_length " + std::to_string(max_len) +
                 " (linear mode)");

  Tensor& out = copy_to_output(ctx, 0, past);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(past.shape(), 0, a);
  const uint64_t per_batch = dims_product(past.shape(), 1, a);  // prefix positions per batch entry
  const uint64_t inner = dims_product(past.shape(), a + 1, static_cast<size_t>(r));
  ElementCopier copy(ctx, upd, out);
  for (uint64_t o = 0; o < outer; ++o) {
    const int64_t start = w[o / per_batch];
    for (int64_t s = 0; s < seq_len; ++s) {
      // Circular: (start + s) mod max_len as Python's modulo (never negative), without forming start + s.
      int64_t c = circular ? (((start % max_len) + max_len) % max_len + s) % max_len : start + s;
      copy.block((o * static_cast<uint64_t>(max_len) + static_cast<uint64_t>(c)) * inner,
                 (o * static_cast<uint64_t>(seq_len) + static_cast<uint64_t>(s)) * inner, inner);
    }
  }
}

// --- OneHot -----------------------------------------------------------------------

void OneHot(KernelContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const Tensor& depth_t = ctx.input(1);
  const Tensor& values = ctx.input(2);
  const int64_t depth = scalar_int(ctx, depth_t, "depth", true);  // non-integer depth is cast to int64
  if (depth < 0) ctx.fail("depth must be non-negative, got " + std::to_string(depth));
  if (values.rank() != 1 || values.element_count() != 2)
    ctx.fail("values must be a 1-D tensor of two elements [off_value, on_value], got shape " +
             shape_to_string(values.shape()));
  const int64_t r = ind.rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -r - 1 || axis > r)
    ctx.fail("axis " + std::to_string(axis) + " is out of range [" + std::to_string(-r - 1) + ", " + std::to_string(r) +
             "]");
  if (axis < 0) axis += r + 1;
  // Opset 11 made indices in [-depth, -1] count from the end; before, they are off.
  const bool wrap_negative = ctx.opset_version() >= 11;
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices", true);
  const size_t a = static_cast<size_t>(axis);
  Shape out_shape(ind.shape().begin(), ind.shape().begin() + axis);
  out_shape.push_back(depth);
  out_shape.insert(out_shape.end(), ind.shape().begin() + axis, ind.shape().end());
  Tensor& out = ctx.allocate_output(0, values.dtype(), out_shape);
  ElementCopier copy(ctx, values, out);
  for (uint64_t i = 0; i < out.element_count(); ++i) copy(i, 0);  // off_value everywhere
  const uint64_t outer = dims_product(ind.shape(), 0, a), inner = dims_product(ind.shape(), a, ind.shape().size());
  for (uint64_t o = 0; o < outer; ++o) {
    for (uint64_t i = 0; i < inner; ++i) {
      int64_t k = idx[o * inner + i];
      if (wrap_negative && k < 0 && k >= -depth) k += depth;
      if (k < 0 || k >= depth) continue;  // out of range: all off_value, as the spec says
      copy((o * static_cast<uint64_t>(depth) + static_cast<uint64_t>(k)) * inner + i, 1);
    }
  }
}

// --- Compress -----------------------------------------------------------------------

void Compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DataType::Bool) ctx.fail("condition must be bool, got " + dtype_str(cond));
  if (cond.rank() != 1) ctx.fail("condition must be 1-D, got shape " + shape_to_string(cond.shape()));
  // Without an axis the input is flattened first.
  const bool has_axis = ctx.has_attr("axis");
  Shape view = has_axis ? x.shape() : Shape{static_cast<int64_t>(x.element_count())};
  if (has_axis && x.rank() < 1) ctx.fail("input must have rank >= 1 when axis is given");
  const int64_t axis = has_axis ? normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank()) : 0;
  const int64_t dim = view[axis];
  std::vector<uint64_t> selected;
  for (uint64_t i = 0; i < cond.element_count(); ++i) {
    if (!load<bool>(cond, i)) continue;
    if (static_cast<int64_t>(i) >= dim)
      ctx.fail("condition is true at position " + std::to_string(i) + ", beyond the size " + std::to_string(dim) +
               " of axis " + std::to_string(axis));
    selected.push_back(i);
  }
  Shape out_shape = view;
  out_shape[axis] = static_cast<int64_t>(selected.size());
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(view, 0, a), inner = dims_product(view, a + 1, view.size());
  ElementCopier copy(ctx, x, out);
  for (uint64_t o = 0; o < outer; ++o)
    for (uint64_t j = 0; j < selected.size(); ++j)
      copy.block((o * selected.size() + j) * inner, (o * static_cast<uint64_t>(dim) + selected[j]) * inner, inner);
}

// --- ReverseSequence ----------------------------------------------------------------

void ReverseSequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& lens_t = ctx.input(1);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got shape " + shape_to_string(x.shape()));
  const int64_t batch_axis = ctx.attr_int("batch_axis", 1), time_axis = ctx.attr_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order, got batch_axis=" + std::to_string(batch_axis) +
             ", time_axis=" + std::to_string(time_axis));
  const int64_t batch = x.shape()[batch_axis], time = x.shape()[time_axis];
  if (lens_t.rank() != 1 || lens_t.shape()[0] != batch)
    ctx.fail("sequence_lens must have shape [" + std::to_string(batch) + "], got " + shape_to_string(lens_t.shape()));
  const std::vector<int64_t> lens = index_values(ctx, lens_t, "sequence_lens");
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > time)
      ctx.fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " is outside [0, " +
               std::to_string(time) + "]");
  Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
  const int64_t time_stride = strides_of(x.shape())[time_axis];
  ElementCopier copy(ctx, x, out);
  Odometer pos(x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i, pos.next()) {
    const int64_t b = pos.index()[batch_axis], t = pos.index()[time_axis];
    const int64_t len = lens[b];
    // Within the first len steps, time t reads from step len - 1 - t.
    const int64_t src = t < len ? static_cast<int64_t>(i) + (len - 1 - 2 * t) * time_stride : static_cast<int64_t>(i);
    copy(i, static_cast<uint64_t>(src));
  }
}

}  // namespace

void register_indexing_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{"", op, since, until, "reference", fn, nullptr});
  };
  add("Gather", Gather, 1);
  add("GatherElements", GatherElements, 11);
  add("GatherND", GatherND, 11);  // batch_dims from 12; absent (0) before
  add("Scatter", Scatter, 9);     // deprecated in 11 in favour of ScatterElements
  add("ScatterElements", ScatterElements, 11);  // reduction from 16 (add, mul), 18 (max, min)
  add("ScatterND", ScatterND, 11);              // likewise
  add("TensorScatter", TensorScatter, 24);
  add("OneHot", OneHot, 9);  // negative indices wrap from 11
  add("Compress", Compress, 9);
  add("ReverseSequence", ReverseSequence, 10);
  register_indexing_search_ops(r);
}

}  // namespace onnxscope::ref
