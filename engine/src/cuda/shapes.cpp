#include "cuda/shapes.h"

#include <algorithm>
#include <stdexcept>

namespace onnxscope::cuda {

namespace {

// A product that wraps would let a view claim more elements than its buffer
// holds (a Reshape to [2^62+1, 4] of 4 elements): overflow is an error; a 0
// dim makes 0 whatever the others are.
int64_t product(const Shape& s, size_t from, size_t to) {
  for (size_t i = from; i < to && i < s.size(); ++i)
    if (s[i] == 0) return 0;
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i)
    if (__builtin_mul_overflow(p, s[i], &p))
      throw std::invalid_argument("the shape " + shape_to_string(s) + " has more elements than fit in 64 bits");
  return p;
}

int64_t product(const Shape& s) { return product(s, 0, s.size()); }

int64_t axis_in(int64_t a, int64_t rank, const char* what) {
  if (a < -rank || a >= rank)
    throw std::invalid_argument(std::string(what) + " axis " + std::to_string(a) + " is outside [" +
                                std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
  return a < 0 ? a + rank : a;
}

}  // namespace

std::optional<Broadcast> broadcast(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  if (rank > static_cast<size_t>(kMaxRank)) return std::nullopt;
  Broadcast r;
  r.rank = static_cast<int>(rank);
  int64_t sa = 1, sb = 1;
  for (size_t i = rank; i-- > 0;) {
    const size_t from_end = rank - 1 - i;
    const int64_t da = from_end < a.size() ? a[a.size() - 1 - from_end] : 1;
    const int64_t db = from_end < b.size() ? b[b.size() - 1 - from_end] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    r.out[i] = da == 1 ? db : da;
    r.a_stride[i] = da == 1 ? 0 : sa;
    r.b_stride[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  r.count = 1;
  for (size_t i = 0; i < rank; ++i) r.count *= r.out[i];
  return r;
}

Shape broadcast_shape(const Broadcast& b) { return Shape(b.out.begin(), b.out.begin() + b.rank); }

Shape reshape_shape(const Shape& in, std::span<const int64_t> target, bool allowzero) {
  Shape out(target.begin(), target.end());
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("Reshape: more than one -1 in the target shape");
      infer = static_cast<int>(i);
    } else if (out[i] == 0 && !allowzero) {
      if (i >= in.size()) throw std::invalid_argument("Reshape: a 0 at position " + std::to_string(i) + " has no input dim to copy");
      out[i] = in[i];
    } else if (out[i] < 0) {
      throw std::invalid_argument("Reshape: negative target dim " + std::to_string(out[i]));
    }
  }
  const int64_t total = product(in);
  if (infer >= 0) {
    int64_t known = 1;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer && __builtin_mul_overflow(known, out[i], &known))
        throw std::invalid_argument("Reshape: the target shape " + shape_to_string(out) + " overflows");
    if (known == 0 || total % known != 0)
      throw std::invalid_argument("Reshape: cannot infer the -1 dim of " + shape_to_string(out) + " from " + shape_to_string(in));
    out[static_cast<size_t>(infer)] = total / known;
  }
  if (product(out) != total)
    throw std::invalid_argument("Reshape: " + shape_to_string(in) + " has " + std::to_string(total) + " elements, target " +
                                shape_to_string(out) + " has " + std::to_string(product(out)));
  return out;
}

Shape squeeze_shape(const Shape& in, std::span<const int64_t> axes) {
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : axes) {
      const int64_t i = axis_in(a, rank, "Squeeze");
      if (in[static_cast<size_t>(i)] != 1)
        throw std::invalid_argument("Squeeze: dim " + std::to_string(i) + " of " + shape_to_string(in) + " is not 1");
      drop[static_cast<size_t>(i)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return out;
}

Shape unsqueeze_shape(const Shape& in, std::span<const int64_t> axes) {
  const auto rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> added(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    const int64_t i = axis_in(a, rank, "Unsqueeze");
    if (added[static_cast<size_t>(i)]) throw std::invalid_argument("Unsqueeze: axis " + std::to_string(a) + " given twice");
    added[static_cast<size_t>(i)] = true;
  }
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < added.size(); ++i) out.push_back(added[i] ? 1 : in[next++]);
  return out;
}

Shape flatten_shape(const Shape& in, int64_t axis) {
  const auto rank = static_cast<int64_t>(in.size());
  if (axis < -rank || axis > rank)
    throw std::invalid_argument("Flatten: axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank) + ", " +
                                std::to_string(rank) + "]");
  const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  return {product(in, 0, a), product(in, a, in.size())};
}

std::optional<MatMulPlan> matmul_plan(const Shape& a, const Shape& b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  if (b[b.size() - 2] != p.k) return std::nullopt;
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  if (b_batch.empty() || product(b_batch) == 1) {
    p.batch = product(a_batch);
    p.a_stride = p.m * p.k;
    p.b_stride = 0;
    p.out = a_batch;
  } else if (a_batch == b_batch) {
    p.batch = product(a_batch);
    p.a_stride = p.m * p.k;
    p.b_stride = p.k * p.n;
    p.out = a_batch;
  } else {
    return std::nullopt;
  }
  if (b_batch.size() > a_batch.size()) return std::nullopt;  // B's extra leading 1s would add output dims
  p.out.push_back(p.m);
  p.out.push_back(p.n);
  return p;
}

}  // namespace onnxscope::cuda

namespace onnxscope::cuda {

std::optional<BroadcastPlan> broadcast_plan(std::span<const Shape> inputs) {
  if (inputs.empty() || inputs.size() > 4) return std::nullopt;
  size_t rank = 0;
  for (const Shape& s : inputs) rank = std::max(rank, s.size());
  BroadcastPlan p;
  p.out.assign(rank, 1);
  // Right-aligned dims of each input.
  std::vector<std::vector<int64_t>> dims(inputs.size(), std::vector<int64_t>(rank, 1));
  for (size_t k = 0; k < inputs.size(); ++k)
    for (size_t i = 0; i < inputs[k].size(); ++i) dims[k][rank - inputs[k].size() + i] = inputs[k][i];
  for (size_t d = 0; d < rank; ++d) {
    int64_t o = 1;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int64_t v = dims[k][d];
      if (v == 1) continue;
      if (o != 1 && o != v) return std::nullopt;
      o = v;
    }
    p.out[d] = o;
  }
  // Dims from a model (an Expand's target, inputs with a zero dim) can
  // multiply past int64 in the merged sizes and strides below. An empty
  // output reads nothing: one dim of 0.
  if (std::find(p.out.begin(), p.out.end(), 0) != p.out.end()) {
    p.rank = 1;
    return p;
  }
  const auto count = checked_element_count(p.out);
  if (!count || *count > static_cast<uint64_t>(INT64_MAX))
    throw std::length_error("the broadcast shape " + shape_to_string(p.out) + " has more elements than int64 can count");
  // Merge: keep dims of the output other than 1, fusing a dim into the
  // previous kept one when each input is full in both or repeats in both.
  std::vector<int64_t> merged;
  std::vector<std::vector<bool>> full(inputs.size());
  for (size_t d = 0; d < rank; ++d) {
    if (p.out[d] == 1) continue;
    bool same = !merged.empty();
    for (size_t k = 0; k < inputs.size() && same; ++k) same = full[k].back() == (dims[k][d] != 1);
    if (same) {
      merged.back() *= p.out[d];
    } else {
      merged.push_back(p.out[d]);
      for (size_t k = 0; k < inputs.size(); ++k) full[k].push_back(dims[k][d] != 1);
    }
  }
  if (merged.size() > static_cast<size_t>(kMaxRank)) return std::nullopt;
  p.rank = static_cast<int>(merged.size());
  for (size_t d = 0; d < merged.size(); ++d) p.dims[d] = merged[d];
  for (size_t k = 0; k < inputs.size(); ++k) {
    int64_t s = 1;
    for (size_t d = merged.size(); d-- > 0;) {
      p.strides[k][d] = full[k][d] ? s : 0;
      if (full[k][d]) s *= merged[d];
    }
  }
  return p;
}

CopyPlan plan_copy(std::span<const int64_t> dims, std::span<const int64_t> in_stride, std::span<const int64_t> out_stride,
                   int64_t in_base, int64_t out_base, int width, uintptr_t x, uintptr_t y) {
  CopyPlan p;
  p.in_base = in_base;
  p.out_base = out_base;
  p.unit = width;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!p.dims.empty() && p.in_stride.back() == in_stride[d] * dims[d] && p.out_stride.back() == out_stride[d] * dims[d]) {
      // The outer dim steps over exactly the inner one on both sides: one dim.
      p.dims.back() *= dims[d];
      p.in_stride.back() = in_stride[d];
      p.out_stride.back() = out_stride[d];
      continue;
    }
    p.dims.push_back(dims[d]);
    p.in_stride.push_back(in_stride[d]);
    p.out_stride.push_back(out_stride[d]);
  }
  if (p.dims.empty() || p.in_stride.back() != 1 || p.out_stride.back() != 1) return p;
  // Units of f elements: f divides the inner size, every other stride and
  // both bases, and both addresses sit on a multiple of the unit.
  for (int f = 16 / width; f > 1; f /= 2) {
    const auto unit = static_cast<uintptr_t>(width * f);
    bool fits = p.dims.back() % f == 0 && p.in_base % f == 0 && p.out_base % f == 0 && x % unit == 0 && y % unit == 0;
    for (size_t d = 0; fits && d + 1 < p.dims.size(); ++d) fits = p.in_stride[d] % f == 0 && p.out_stride[d] % f == 0;
    if (!fits) continue;
    p.dims.back() /= f;
    for (size_t d = 0; d + 1 < p.dims.size(); ++d) {
      p.in_stride[d] /= f;
      p.out_stride[d] /= f;
    }
    p.in_base /= f;
    p.out_base /= f;
    p.unit = width * f;
    break;
  }
  return p;
}

}  // namespace onnxscope::cuda
