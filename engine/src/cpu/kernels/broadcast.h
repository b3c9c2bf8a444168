// Numpy-style broadcasting of up to three inputs as rows: the output is
// viewed as `rows` x `inner` after merging axes that broadcast the same way,
// and each input gets, per row, a start offset and an inner step (1, or 0
// when it repeats one value along the row). Kernels then run a tight inner
// loop per row and split rows across the thread pool.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "onnxscope/tensor.h"

namespace onnxscope::cpu {

struct BroadcastRows {
  static constexpr size_t kMax = 3;
  Shape out;                           // broadcast output shape
  size_t inputs = 0;
  int64_t inner = 1, rows = 1;
  std::array<int64_t, kMax> step{};    // inner step of each input: 1 or 0
  // Merged outer axes (outermost first) and each input's stride along them.
  std::vector<int64_t> outer_dims;
  std::vector<std::array<int64_t, kMax>> outer_strides;

  // f(r, offsets) for rows r0 .. r1-1, the offsets stepped like an odometer
  // (one division per dim for r0, none after: rows may be only 16 elements).
  template <class F>
  void for_each_row(int64_t r0, int64_t r1, F&& f) const {
    if (r0 >= r1) return;
    std::array<int64_t, kMax> off = row_offsets(r0);
    const size_t nd = outer_dims.size();
    std::vector<int64_t> idx(nd);
    for (size_t d = nd, rest = static_cast<size_t>(r0); d-- > 0;) {
      idx[d] = static_cast<int64_t>(rest % static_cast<size_t>(outer_dims[d]));
      rest /= static_cast<size_t>(outer_dims[d]);
    }
    for (int64_t r = r0; r < r1; ++r) {
      f(r, off);
      for (size_t d = nd; d-- > 0;) {
        for (size_t k = 0; k < inputs; ++k) off[k] += outer_strides[d][k];
        if (++idx[d] < outer_dims[d]) break;
        for (size_t k = 0; k < inputs; ++k) off[k] -= outer_strides[d][k] * outer_dims[d];
        idx[d] = 0;
      }
    }
  }

  // Offsets of row r in each input.
  std::array<int64_t, kMax> row_offsets(int64_t r) const {
    std::array<int64_t, kMax> off{};
    for (size_t d = outer_dims.size(); d-- > 0;) {
      const int64_t i = r % outer_dims[d];
      r /= outer_dims[d];
      for (size_t k = 0; k < inputs; ++k) off[k] += i * outer_strides[d][k];
    }
    return off;
  }
};

// nullopt when the shapes do not broadcast or there are more than kMax.
inline std::optional<BroadcastRows> broadcast_rows(const std::vector<const Shape*>& shapes) {
  BroadcastRows b;
  b.inputs = shapes.size();
  if (b.inputs == 0 || b.inputs > BroadcastRows::kMax) return std::nullopt;
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  b.out.assign(rank, 1);
  std::vector<std::array<int64_t, BroadcastRows::kMax>> dims(rank);  // per axis, each input's dim (1 if missing)
  for (size_t k = 0; k < b.inputs; ++k) {
    const Shape& s = *shapes[k];
    for (size_t d = 0; d < rank; ++d) {
      const int64_t v = d < rank - s.size() ? 1 : s[d - (rank - s.size())];
      dims[d][k] = v;
      if (v != 1) {
        if (b.out[d] != 1 && b.out[d] != v) return std::nullopt;
        b.out[d] = v;
      }
    }
  }
  // Each input's contiguous stride per axis (0 where it broadcasts).
  std::vector<std::array<int64_t, BroadcastRows::kMax>> stride(rank);
  for (size_t k = 0; k < b.inputs; ++k) {
    int64_t s = 1;
    for (size_t d = rank; d-- > 0;) {
      stride[d][k] = dims[d][k] == 1 ? 0 : s;
      s *= dims[d][k];
    }
  }
  // Merge axes (innermost first) while every input is contiguous across them.
  std::vector<int64_t> mdims;
  std::vector<std::array<int64_t, BroadcastRows::kMax>> mstride;
  for (size_t d = rank; d-- > 0;) {
    if (b.out[d] == 1) continue;
    if (!mdims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < b.inputs; ++k) {
        const bool both_zero = stride[d][k] == 0 && mstride.back()[k] == 0;
        const bool contiguous = mstride.back()[k] != 0 && stride[d][k] == mstride.back()[k] * mdims.back();
        merge = merge && (both_zero || contiguous);
      }
      if (merge) {
        mdims.back() *= b.out[d];
        continue;
      }
    }
    mdims.push_back(b.out[d]);
    mstride.push_back(stride[d]);
  }
  if (mdims.empty()) return b;  // a scalar output: one row of one element
  b.inner = mdims.front();
  for (size_t k = 0; k < b.inputs; ++k) b.step[k] = mstride.front()[k] == 0 ? 0 : 1;
  for (size_t i = mdims.size(); i-- > 1;) {  // outermost first
    b.outer_dims.push_back(mdims[i]);
    b.outer_strides.push_back(mstride[i]);
    b.rows *= mdims[i];
  }
  return b;
}

}  // namespace onnxscope::cpu
