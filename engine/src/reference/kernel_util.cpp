#include "reference/kernel_util.h"

#include <algorithm>
#include <cstring>

namespace onnxscope::ref {

Shape broadcast_shapes(const KernelContext& ctx, std::span<const Shape* const> shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    const size_t off = rank - s->size();
    for (size_t d = 0; d < s->size(); ++d) {
      int64_t dim = (*s)[d];
      int64_t& o = out[off + d];
      if (dim == o || dim == 1) continue;
      if (o == 1) {
        o = dim;
        continue;
      }
      std::string all;
      for (const Shape* x : shapes) all += (all.empty() ? "" : " and ") + shape_to_string(*x);
      ctx.fail("shapes " + all + " cannot be broadcast together (dimension " + std::to_string(off + d) + ")");
    }
  }
  return out;
}

Shape broadcast_shapes(const KernelContext& ctx, const Shape& a, const Shape& b) {
  const Shape* both[] = {&a, &b};
  return broadcast_shapes(ctx, both);
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

BroadcastIndex::BroadcastIndex(const Shape& out, std::span<const Shape* const> inputs)
    : out_(out), counter_(out.size(), 0), offsets_(inputs.size(), 0) {
  for (const Shape* in : inputs) {
    std::vector<int64_t> st(out.size(), 0);
    auto own = strides_of(*in);
    const size_t off = out.size() - in->size();
    for (size_t d = 0; d < in->size(); ++d) st[off + d] = (*in)[d] == 1 ? 0 : own[d];
    in_strides_.push_back(std::move(st));
  }
}

void BroadcastIndex::next() {
  // Odometer increment over the output shape, updating each input offset.
  for (size_t d = out_.size(); d-- > 0;) {
    if (++counter_[d] < out_[d]) {
      for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += static_cast<uint64_t>(in_strides_[k][d]);
      return;
    }
    for (size_t k = 0; k < offsets_.size(); ++k)
      offsets_[k] -= static_cast<uint64_t>(in_strides_[k][d] * (out_[d] - 1));
    counter_[d] = 0;
  }
}

BroadcastRows::BroadcastRows(const Shape& out, std::span<const Shape* const> inputs) : out_(out) {
  length_ = out.empty() ? 1 : static_cast<uint64_t>(out.back());
  for (const Shape* in : inputs) {
    std::vector<int64_t> st(out.size(), 0);
    auto own = strides_of(*in);
    const size_t off = out.size() - in->size();
    for (size_t d = 0; d < in->size(); ++d) st[off + d] = (*in)[d] == 1 ? 0 : own[d];
    steps_.push_back(out.empty() ? 0 : static_cast<uint64_t>(st.back()));
    strides_.push_back(std::move(st));
  }
}

void BroadcastRows::row(uint64_t r, uint64_t* offsets) const {
  for (size_t k = 0; k < strides_.size(); ++k) offsets[k] = 0;
  for (size_t d = out_.size() > 0 ? out_.size() - 1 : 0; d-- > 0;) {
    const auto extent = static_cast<uint64_t>(out_[d]);
    const uint64_t i = r % extent;
    r /= extent;
    for (size_t k = 0; k < strides_.size(); ++k) offsets[k] += i * static_cast<uint64_t>(strides_[k][d]);
  }
}

std::optional<BroadcastBlock> BroadcastBlock::of(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return std::nullopt;
  const size_t off = out.size() - in.size();
  size_t lo = out.size(), hi = 0;
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) {
      lo = std::min(lo, off + d);
      hi = off + d + 1;
    }
  BroadcastBlock b;
  if (lo == out.size()) {
    // Every dim 1: the one element for every output, at step 0 (as period 1
    // at step 1 it made runs of one element: Div by a scalar ran 8x slower
    // than by a bias row).
    for (int64_t d : out) b.inner *= static_cast<uint64_t>(d);
    if (b.inner == 0) b.inner = 1;
    return b;
  }
  for (size_t d = lo; d < hi; ++d) {
    if (in[d - off] != out[d]) return std::nullopt;
    b.period *= static_cast<uint64_t>(out[d]);
  }
  for (size_t d = hi; d < out.size(); ++d) b.inner *= static_cast<uint64_t>(out[d]);
  return b;
}

int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  // Strictly inside the rank: a scalar has no axis (an axis 0 of a rank-0
  // tensor indexed its empty shape).
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> int_values(const KernelContext& ctx, const Tensor& t) {
  if (t.rank() > 1) ctx.fail("expected a 1-D integer tensor, got shape " + shape_to_string(t.shape()));
  if (!dtype_info(t.dtype()).is_integer)
    ctx.fail("expected an integer tensor, got " + std::string(dtype_name(t.dtype())));
  std::vector<int64_t> v(t.element_count());
  for (uint64_t i = 0; i < t.element_count(); ++i) v[i] = t.element_as_int64(i);
  return v;
}

std::vector<double> real_values(const Tensor& t) {
  const uint64_t n = t.element_count();
  std::vector<double> v(n);
  if (n > 0 && t.dtype() == DataType::Float) {  // the common case without a call per element
    const std::byte* p = t.raw();
    for (uint64_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, p + i * sizeof(float), sizeof f);
      v[i] = static_cast<double>(f);
    }
  } else if (n > 0 && t.dtype() == DataType::Double) {
    std::memcpy(v.data(), t.raw(), n * sizeof(double));
  } else if (n > 0 && widen_integers(t, v.data())) {
    // 8-, 32- and 64-bit integers: one typed loop (quantized operators read their 8-bit tensors so)
  } else {
    for (uint64_t i = 0; i < n; ++i) v[i] = t.element_as_double(i);
  }
  return v;
}

}  // namespace onnxscope::ref
