// Helpers shared by the reference's tensor kernels (and a few elsewhere):
// type-agnostic element copying (ElementMover, ElementCopier, gather_by_tables;
// strings, packed sub-byte types and every fixed-width type), index reading
// and bounds checks, axis checks, and the scatter reductions.
#pragma once

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/grid_sample_math.h"
#include "core/nms_math.h"
#include "core/range_plan.h"
#include "core/resize_plan.h"
#include "core/roi_align_math.h"
#include "core/slice_range.h"
#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "onnxscope/kernel.h"
#include "onnxscope/tensor.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref {

                                                           // DepthToSpace, SpaceToDepth, CenterCropPad, Col2Im

// Copies single elements from `src` into `dst` (same element type) by index,
// whatever the type: strings are assigned, packed sub-byte types move their
// bit patterns, everything else moves its bytes.
class ElementMover {
 public:
  // With `ctx`, the text of string copies is held to its tensor limit.
  ElementMover(const Tensor& src, Tensor& dst, const KernelContext* ctx = nullptr)
      : type_(src.dtype()),
        strings_(src.is_string()),
        packed_(is_packed_dtype(src.dtype())),
        bits_(dtype_info(src.dtype()).bits),
        budget_(ctx) {
    if (strings_) {
      src_strings_ = &src.strings();
      dst_strings_ = &dst.mutable_strings();
    } else {
      width_ = static_cast<size_t>(storage_bytes(type_, 1).value_or(1));
      src_ = src.raw();
      dst_ = dst.mutable_raw();
    }
  }
  // Whole bytes per element (not strings, not packed sub-byte codes): the
  // element size and the two buffers, for copies of many elements at a time.
  bool whole_bytes() const { return !strings_ && !packed_; }
  size_t width() const { return width_; }
  const std::byte* src() const { return src_; }
  std::byte* dst() const { return dst_; }

  // dst[to] = src[from]
  void operator()(uint64_t to, uint64_t from) {
    if (strings_) {
      budget_.add((*src_strings_)[from]);
      (*dst_strings_)[to] = (*src_strings_)[from];
    }
    else if (packed_) move_packed(to, from);
    else std::memcpy(dst_ + to * width_, src_ + from * width_, width_);
  }

 private:
  // 4- and 2-bit codes inline (int4 weights are large); 6-bit ones through the general helpers.
  void move_packed(uint64_t to, uint64_t from) {
    const auto* s = reinterpret_cast<const uint8_t*>(src_);
    auto* d = reinterpret_cast<uint8_t*>(dst_);
    if (bits_ == 4 || bits_ == 2) {
      const unsigned per_byte = 8 / bits_, mask = (1u << bits_) - 1;
      const unsigned v = (s[from / per_byte] >> ((from % per_byte) * bits_)) & mask;
      const unsigned sh = static_cast<unsigned>(to % per_byte) * bits_;
      d[to / per_byte] = static_cast<uint8_t>((d[to / per_byte] & ~(mask << sh)) | (v << sh));
    } else {
      set_packed_element_bits(type_, dst_, to, packed_element_bits(type_, src_, from));
    }
  }

  DataType type_;
  bool strings_, packed_;
  unsigned bits_;
  StringBudget budget_;
  size_t width_ = 0;
  const std::byte* src_ = nullptr;
  std::byte* dst_ = nullptr;
  const std::vector<std::string>* src_strings_ = nullptr;
  std::vector<std::string>* dst_strings_ = nullptr;
};

// The same elements under another shape of equal element count, sharing the
// storage (strings are copied).
inline Tensor reshaped_view(const Tensor& t, Shape shape) {
  if (t.is_string()) return Tensor::from_strings(std::move(shape), t.strings());
  if (!t.buffer() || t.element_count() == 0) return Tensor::zeros(t.dtype(), std::move(shape));
  return Tensor::from_buffer(t.dtype(), std::move(shape), t.buffer());
}

// gather_by_tables without padding, for whole-byte elements: each run of the
// innermost output dimension is one loop of fixed-width copies, runs spread
// over the thread pool (a copy is the same whoever makes it).
template <typename W>
void copy_run(const std::byte* src, std::byte* dst, int64_t base, const std::vector<int64_t>& inner, uint64_t at) {
  for (size_t k = 0; k < inner.size(); ++k) {
    W v;
    std::memcpy(&v, src + static_cast<size_t>(base + inner[k]) * sizeof(W), sizeof(W));
    std::memcpy(dst + (at + k) * sizeof(W), &v, sizeof(W));
  }
}
inline void gather_rows(const ElementMover& move, const std::vector<std::vector<int64_t>>& table, uint64_t n) {
  const size_t rank = table.size();
  const std::vector<int64_t>& inner = table.back();
  const auto runs = static_cast<int64_t>(n / inner.size());
  const size_t width = move.width();
  // A run read in order (a kept last axis: Transpose's [B, S, H, D] -> [B, H,
  // S, D], Slice along another axis) is one copy: element by element through
  // the table it ran at 1-2 ns an element.
  bool contiguous = true;
  for (size_t k = 1; k < inner.size() && contiguous; ++k) contiguous = inner[k] == inner[0] + static_cast<int64_t>(k);
  cpu::parallel_for(runs, std::max<int64_t>(1, 16384 / static_cast<int64_t>(inner.size())), [&](int64_t lo, int64_t hi) {
    poll_deadline();
    std::vector<int64_t> counter(rank, 0);  // the odometer over the outer dims, at run lo
    for (int64_t r = lo, d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      const auto size = static_cast<int64_t>(table[static_cast<size_t>(d)].size());
      counter[static_cast<size_t>(d)] = r % size;
      r /= size;
    }
    for (int64_t r = lo; r < hi; ++r) {
      int64_t base = 0;
      for (size_t d = 0; d + 1 < rank; ++d) base += table[d][static_cast<size_t>(counter[d])];
      const uint64_t at = static_cast<uint64_t>(r) * inner.size();
      if (contiguous) std::memcpy(move.dst() + at * width, move.src() + static_cast<size_t>(base + inner[0]) * width, inner.size() * width);
      else switch (width) {
        case 1: copy_run<uint8_t>(move.src(), move.dst(), base, inner, at); break;
        case 2: copy_run<uint16_t>(move.src(), move.dst(), base, inner, at); break;
        case 4: copy_run<uint32_t>(move.src(), move.dst(), base, inner, at); break;
        case 8: copy_run<uint64_t>(move.src(), move.dst(), base, inner, at); break;
        default:
          for (size_t k = 0; k < inner.size(); ++k)
            std::memcpy(move.dst() + (at + k) * width, move.src() + static_cast<size_t>(base + inner[k]) * width, width);
      }
      for (size_t d = rank - 1; d-- > 0;) {
        if (++counter[d] < static_cast<int64_t>(table[d].size())) break;
        counter[d] = 0;
      }
    }
  });
}

// Fills `dst` (already allocated) by walking its elements in row-major order.
// For output dimension d at index k, table[d][k] is the offset (in elements)
// that coordinate adds to the source position, or negative when that
// coordinate lies outside the source: then the element is copied from element
// 0 of `fill` (same element type), or left zero when `fill` is null.
inline void gather_by_tables(const KernelContext& ctx, const Tensor& src, Tensor& dst,
                             const std::vector<std::vector<int64_t>>& table, const Tensor* fill = nullptr) {
  const uint64_t n = dst.element_count();
  if (n == 0) return;
  ElementMover move(src, dst, &ctx);
  std::optional<ElementMover> fill_move;
  if (fill) fill_move.emplace(*fill, dst, &ctx);
  const size_t rank = table.size();
  if (rank > 0 && !fill && move.whole_bytes() && table.back().size() > 0 &&
      std::all_of(table.begin(), table.end(), [](const auto& t) { return std::all_of(t.begin(), t.end(), [](int64_t o) { return o >= 0; }); })) {
    gather_rows(move, table, n);
    return;
  }
  std::vector<int64_t> counter(rank, 0);
  for (uint64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t o = table[d][static_cast<size_t>(counter[d])];
      if (o < 0) outside = true;
      offset += o;
    }
    if (!outside) move(i, static_cast<uint64_t>(offset));
    else if (fill_move) (*fill_move)(i, 0);
    // Odometer increment over the output shape.
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < static_cast<int64_t>(table[d].size())) break;
      counter[d] = 0;
    }
  }
}

// Copies elements from one tensor to another of the same element type without
// interpreting them. The kind of storage is decided once, not per element.
class ElementCopier {
 public:
  ElementCopier(const KernelContext& ctx, const Tensor& src, Tensor& dst) : src_(src), dst_(dst), budget_(&ctx) {
    if (src.dtype() != dst.dtype()) ctx.fail("internal: copying between different element types");
    type_ = src.dtype();
    if (src.is_string()) {
      kind_ = Kind::String;
    } else if (is_packed_dtype(type_)) {
      kind_ = Kind::Packed;
    } else {
      auto w = storage_bytes(type_, 1);
      if (!w) ctx.fail("does not support element type " + std::string(dtype_name(type_)));
      width_ = *w;
    }
    // mutable_raw() may copy shared storage; do it once, up front.
    dst_raw_ = kind_ == Kind::String ? nullptr : dst.mutable_raw();
  }
  // dst[di] = src[si]
  void operator()(uint64_t di, uint64_t si) {
    switch (kind_) {
      case Kind::String:
        budget_.add(src_.strings()[si]);
        dst_.mutable_strings()[di] = src_.strings()[si];
        break;
      case Kind::Packed: set_packed_element_bits(type_, dst_raw_, di, packed_element_bits(type_, src_.raw(), si)); break;
      case Kind::Fixed: std::memcpy(dst_raw_ + di * width_, src_.raw() + si * width_, width_); break;
    }
  }
  // dst[di .. di+n) = src[si .. si+n)
  void block(uint64_t di, uint64_t si, uint64_t n) {
    if (kind_ == Kind::Fixed) {
      if (n) std::memcpy(dst_raw_ + di * width_, src_.raw() + si * width_, n * width_);
      return;
    }
    for (uint64_t j = 0; j < n; ++j) (*this)(di + j, si + j);
  }

 private:
  enum class Kind { Fixed, Packed, String };
  const Tensor& src_;
  Tensor& dst_;
  DataType type_ = DataType::Undefined;
  Kind kind_ = Kind::Fixed;
  uint64_t width_ = 0;
  std::byte* dst_raw_ = nullptr;
  StringBudget budget_;
};

// Output `i` as an exact copy of `src` (any element type).
inline Tensor& copy_to_output(KernelContext& ctx, size_t i, const Tensor& src) {
  Tensor& out = ctx.allocate_output(i, src.dtype(), src.shape());
  if (src.is_string()) out.mutable_strings() = src.strings();
  else if (src.byte_size()) std::memcpy(out.mutable_raw(), src.raw(), src.byte_size());
  return out;
}

// Product of dims [from, to).
inline uint64_t dims_product(const Shape& s, size_t from, size_t to) {
  uint64_t p = 1;
  for (size_t d = from; d < to && d < s.size(); ++d) p *= static_cast<uint64_t>(s[d]);
  return p;
}

// All values of an index tensor (any rank) as int64; `what` names it in messages.
// Only int32/int64 unless `any_numeric` (then floats truncate, as OneHot asks).
inline std::vector<int64_t> index_values(const KernelContext& ctx, const Tensor& t, const char* what,
                                         bool any_numeric = false) {
  const auto& info = dtype_info(t.dtype());
  const bool ok = any_numeric ? (info.is_integer || (info.is_float && !info.is_complex))
                              : (t.dtype() == DataType::Int32 || t.dtype() == DataType::Int64);
  if (!ok) ctx.fail(std::string(what) + " must be " + (any_numeric ? "numeric" : "int32 or int64") + ", got " +
                    std::string(dtype_name(t.dtype())));
  std::vector<int64_t> v(t.element_count());
  if (t.dtype() == DataType::Int64) {
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = load<int64_t>(t, i);
  } else if (t.dtype() == DataType::Int32) {
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = load<int32_t>(t, i);
  } else if (info.is_float) {
    // Cast to int64 truncating toward zero; NaN has no integer value.
    for (uint64_t i = 0; i < v.size(); ++i) {
      const double d = t.element_as_double(i);
      if (std::isnan(d)) ctx.fail(std::string(what) + " contains NaN");
      v[i] = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d);
    }
  } else if (t.dtype() == DataType::Uint64) {
    for (uint64_t i = 0; i < v.size(); ++i)  // huge values stay out of range instead of turning negative
      v[i] = static_cast<int64_t>(std::min<uint64_t>(load<uint64_t>(t, i), INT64_MAX));
  } else {
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = t.element_as_int64(i);
  }
  return v;
}

// Maps index `k` into [0, dim): negative values count from the end; anything
// outside [-dim, dim) fails naming the value, the axis and its size.
inline int64_t wrap_index(const KernelContext& ctx, int64_t k, int64_t dim, int64_t axis, const char* what = "index") {
  if (k < -dim || k >= dim)
    ctx.fail(std::string(what) + " " + std::to_string(k) + " is out of bounds for axis " + std::to_string(axis) +
             " of size " + std::to_string(dim) + " (valid range [" + std::to_string(-dim) + ", " +
             std::to_string(dim - 1) + "])");
  return k < 0 ? k + dim : k;
}

// A single integer from a scalar or one-element tensor.
inline int64_t scalar_int(const KernelContext& ctx, const Tensor& t, const char* what, bool any_numeric = false) {
  if (t.element_count() != 1 || t.rank() > 1)
    ctx.fail(std::string(what) + " must be a scalar or a one-element 1-D tensor, got shape " +
             shape_to_string(t.shape()));
  return index_values(ctx, t, what, any_numeric)[0];
}

// Row-major multi-index counter over a shape.
class Odometer {
 public:
  explicit Odometer(const Shape& shape) : shape_(shape), idx_(shape.size(), 0) {}
  const std::vector<int64_t>& index() const { return idx_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++idx_[d] < shape_[d]) return;
      idx_[d] = 0;
    }
  }

 private:
  Shape shape_;
  std::vector<int64_t> idx_;
};

inline Shape concat_shapes(std::initializer_list<std::pair<const Shape*, std::pair<size_t, size_t>>> parts) {
  Shape out;
  for (const auto& [s, range] : parts)
    for (size_t d = range.first; d < range.second && d < s->size(); ++d) out.push_back((*s)[d]);
  return out;
}

inline std::string dtype_str(const Tensor& t) { return std::string(dtype_name(t.dtype())); }

inline void require_same_type(const KernelContext& ctx, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  if (a.dtype() != b.dtype())
    ctx.fail(std::string(an) + " and " + bn + " must have the same element type, got " + dtype_str(a) + " and " +
             dtype_str(b));
}

// --- GatherElements / ScatterElements -------------------------------------------

// For each element of `ind` (same rank as data), the flat offset into data it
// addresses: its own position on every axis but `axis`, its value on `axis`.
inline std::vector<uint64_t> element_targets(const KernelContext& ctx, const Shape& data_shape, const Tensor& ind,
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

// --- scatter reductions ----------------------------------------------------------

enum class Reduction { None, Add, Mul, Max, Min };

inline Reduction parse_reduction(const KernelContext& ctx) {
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
inline void scatter_apply(KernelContext& ctx, const Tensor& updates, Tensor& out,
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

template <typename T> struct is_complex : std::false_type {};

template <typename T> struct is_complex<std::complex<T>> : std::true_type {};

// Strict weak order on values: numbers ascending, NaN last, complex by (real, imag).
template <typename T>
bool value_less(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a < b;
  } else if constexpr (is_complex<T>::value) {
    if (value_less(a.real(), b.real())) return true;
    if (value_less(b.real(), a.real())) return false;
    return value_less(a.imag(), b.imag());
  } else {
    return a < b;
  }
}

// Stores a real value into element i of a numeric tensor the way numpy's
// saturating cast does: integers are rounded half to even and clamped.
template <typename S> void put_saturated(Tensor& t, uint64_t i, double v) {
  using C = compute_t<S>;
  if constexpr (std::is_integral_v<C>) {
    if (std::isnan(v)) v = 0;
    v = std::nearbyint(v);
    v = std::clamp(v, static_cast<double>(std::numeric_limits<C>::lowest()), static_cast<double>(std::numeric_limits<C>::max()));
    put<S>(t, i, static_cast<C>(v));
  } else {
    put<S>(t, i, static_cast<C>(v));
  }
}

// The element types dispatch<kFloats | kInts> accepts.
inline bool is_real_numeric(DataType t) {
  const DTypeInfo& info = dtype_info(t);
  return (info.is_integer && !is_packed_dtype(t)) || t == DataType::Float || t == DataType::Double ||
         t == DataType::Float16 || t == DataType::BFloat16;
}

// Offsets k * stride for k in [0, n): an unchanged dimension in gather_by_tables.
inline std::vector<int64_t> ramp(int64_t n, int64_t stride) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = k * stride;
  return v;
}

inline int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// An axis in [-rank, rank) made non-negative; fails otherwise (also for rank 0).
inline int64_t checked_axis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Axes from the attribute (before opset 13) or the optional input 1 (13 on).
inline bool axes_of(const KernelContext& ctx, std::vector<int64_t>& axes) {
  if (ctx.opset_version() < 13) {
    if (!ctx.has_attr("axes")) return false;
    axes = ctx.attr_ints("axes");
    return true;
  }
  if (!ctx.has_input(1)) return false;
  axes = int_values(ctx, ctx.input(1));
  return true;
}

inline DataType target_type(const KernelContext& ctx) {
  const Attribute& a = ctx.required_attr("to");
  if (a.type == AttrType::String) {  // Cast-1 names the type
    auto t = dtype_from_name(a.s);
    if (!t || *t == DataType::Undefined) ctx.fail("attribute 'to' names an unknown type '" + a.s + "'");
    return *t;
  }
  const int64_t v = ctx.attr_int("to", 0);
  if (v <= 0 || v > INT32_MAX || !is_known_dtype(static_cast<int32_t>(v)))
    ctx.fail("attribute 'to' is not a known element type: " + std::to_string(v));
  return static_cast<DataType>(v);
}

// Distinct axes made non-negative; all axes of the rank when none are given.
inline std::vector<int64_t> checked_axes(const KernelContext& ctx, std::vector<int64_t> axes, bool given, int64_t rank) {
  if (!given) {
    axes.resize(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = d;
    return axes;
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    a = checked_axis(ctx, a, rank);
    if (seen[static_cast<size_t>(a)]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// a * b, failing instead of overflowing.
inline int64_t mul(const KernelContext& ctx, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail("sizes overflow: " + std::to_string(a) + " * " + std::to_string(b));
  return r;
}

}  // namespace onnxscope::ref
