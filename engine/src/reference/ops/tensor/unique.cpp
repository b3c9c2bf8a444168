// Reference kernel: Unique.
//
// Ordering of floats follows numpy's sort: NaN sorts after every number and
// NaNs are equal to each other (TopK puts NaN first when largest=1, Unique
// collapses NaNs, ArgMax and ArgMin both pick NaN like numpy does).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

bool wanted(const KernelContext& ctx, size_t i) { return i < ctx.output_count() && ctx.output_wanted(i); }

// The input viewed as [outer, n, inner]: n slices along the axis (n elements
// when flattened). Slices compare lexicographically over their (outer, inner)
// elements, as numpy.unique(axis=...) does.
template <typename T>
void unique_impl(KernelContext& ctx, const Tensor& x, const std::vector<T>& vals, const Shape& view, size_t axis) {
  const uint64_t outer = dims_product(view, 0, axis), n = static_cast<uint64_t>(view[axis]);
  const uint64_t inner = dims_product(view, axis + 1, view.size());
  auto at = [&](uint64_t s, uint64_t o, uint64_t i) -> const T& { return vals[(o * n + s) * inner + i]; };
  auto slice_less = [&](uint64_t a, uint64_t b) {
    for (uint64_t o = 0; o < outer; ++o)
      for (uint64_t i = 0; i < inner; ++i) {
        if (value_less(at(a, o, i), at(b, o, i))) return true;
        if (value_less(at(b, o, i), at(a, o, i))) return false;
      }
    return false;
  };
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::stable_sort(order.begin(), order.end(), slice_less);  // stable: the first occurrence leads each group

  // Groups of equal slices, in sorted order.
  std::vector<uint64_t> first, counts;
  std::vector<int64_t> inverse(n);
  for (uint64_t j = 0; j < n; ++j) {
    if (j == 0 || slice_less(order[j - 1], order[j])) {
      first.push_back(order[j]);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[order[j]] = static_cast<int64_t>(first.size() - 1);
  }
  const uint64_t groups = first.size();
  // sorted=0: groups in order of first occurrence instead.
  if (ctx.attr_int("sorted", 1) == 0) {
    std::vector<uint64_t> by_first(groups), new_pos(groups);
    std::iota(by_first.begin(), by_first.end(), uint64_t{0});
    std::sort(by_first.begin(), by_first.end(), [&](uint64_t a, uint64_t b) { return first[a] < first[b]; });
    std::vector<uint64_t> f2(groups), c2(groups);
    for (uint64_t g = 0; g < groups; ++g) {
      f2[g] = first[by_first[g]];
      c2[g] = counts[by_first[g]];
      new_pos[by_first[g]] = g;
    }
    first.swap(f2);
    counts.swap(c2);
    for (int64_t& v : inverse) v = static_cast<int64_t>(new_pos[static_cast<uint64_t>(v)]);
  }

  Shape y_shape = view;
  y_shape[axis] = static_cast<int64_t>(groups);
  Tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
  ElementCopier copy(ctx, x, y);
  for (uint64_t o = 0; o < outer; ++o)
    for (uint64_t g = 0; g < groups; ++g) copy.block((o * groups + g) * inner, (o * n + first[g]) * inner, inner);
  const int64_t gs = static_cast<int64_t>(groups);
  if (wanted(ctx, 1)) {
    Tensor& t = ctx.allocate_output(1, DataType::Int64, {gs});
    for (uint64_t g = 0; g < groups; ++g) store<int64_t>(t, g, static_cast<int64_t>(first[g]));
  }
  if (wanted(ctx, 2)) {
    Tensor& t = ctx.allocate_output(2, DataType::Int64, {static_cast<int64_t>(n)});
    for (uint64_t j = 0; j < n; ++j) store<int64_t>(t, j, inverse[j]);
  }
  if (wanted(ctx, 3)) {
    Tensor& t = ctx.allocate_output(3, DataType::Int64, {gs});
    for (uint64_t g = 0; g < groups; ++g) store<int64_t>(t, g, static_cast<int64_t>(counts[g]));
  }
}

}  // namespace

void Unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  // Without an axis the input is flattened.
  const bool has_axis = ctx.has_attr("axis");
  if (has_axis && x.rank() < 1) ctx.fail("input must have rank >= 1 when axis is given");
  const Shape view = has_axis ? x.shape() : Shape{static_cast<int64_t>(x.element_count())};
  const size_t axis = has_axis ? static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank())) : 0;
  if (x.is_string()) {
    unique_impl(ctx, x, x.strings(), view, axis);
    return;
  }
  dispatch<kAllFixed | kComplex>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    using V = std::conditional_t<std::is_same_v<C, bool>, uint8_t, C>;  // no std::vector<bool> proxies
    std::vector<V> vals(x.element_count());
    for (uint64_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<V>(get<S>(x, i));
    unique_impl(ctx, x, vals, view, axis);
  });
}

}  // namespace onnxscope::ref
