// Shared pieces of the indexing family (indexing.cpp, indexing_search.cpp):
// type-agnostic element copying (strings, packed sub-byte types and every
// fixed-width type), index reading and bounds checks, and the registration
// function of the second file.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

void register_indexing_search_ops(KernelRegistry& r);  // indexing_search.cpp

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

}  // namespace onnxscope::ref
