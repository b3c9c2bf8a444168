// Shared pieces of the tensor_shape family (tensor_shape*.cpp): the register
// functions of its parts and the type-agnostic element copying every
// data-movement kernel uses (any element type: strings, fixed-width, packed).
#pragma once

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "onnxscope/kernel.h"
#include "onnxscope/tensor.h"

namespace onnxscope::ref {

void register_tensor_shape_cast_ops(KernelRegistry& r);    // tensor_shape_cast.cpp: Cast, CastLike, BitCast
void register_tensor_shape_layout_ops(KernelRegistry& r);  // tensor_shape_layout.cpp: Pad, Range, EyeLike, Trilu,
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
      switch (width) {
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

}  // namespace onnxscope::ref
