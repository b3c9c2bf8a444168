// Reference kernels, indexing family, second part: NonZero, Unique, TopK,
// ArgMax, ArgMin, CumSum, CumProd.
//
// Ordering of floats follows numpy's sort: NaN sorts after every number and
// NaNs are equal to each other (TopK puts NaN first when largest=1, Unique
// collapses NaNs, ArgMax and ArgMin both pick NaN like numpy does).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/indexing_parts.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {
namespace {

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
template <typename T>
bool value_equiv(const T& a, const T& b) {
  return !value_less(a, b) && !value_less(b, a);
}

bool wanted(const KernelContext& ctx, size_t i) { return i < ctx.output_count() && ctx.output_wanted(i); }

// --- NonZero -------------------------------------------------------------------------

void NonZero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<uint64_t> hits;  // flat positions of non-zero elements, row-major
  if (x.is_string()) {
    for (uint64_t i = 0; i < x.element_count(); ++i)
      if (!x.strings()[i].empty()) hits.push_back(i);  // numpy: a string is "non-zero" when not empty
  } else {
    dispatch<kAllFixed | kComplex>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      using C = compute_t<S>;
      for (uint64_t i = 0; i < x.element_count(); ++i)
        if (get<S>(x, i) != C(0)) hits.push_back(i);  // NaN counts as non-zero
    });
  }
  // Scalars give shape [0, N] (the spec's deviation from numpy's [1, N]).
  const int64_t r = x.rank();
  const int64_t n = static_cast<int64_t>(hits.size());
  Tensor& y = ctx.allocate_output(0, DataType::Int64, {r, n});
  const std::vector<int64_t> strides = strides_of(x.shape());
  for (int64_t j = 0; j < n; ++j) {
    uint64_t rest = hits[j];
    for (int64_t d = 0; d < r; ++d) {
      store<int64_t>(y, static_cast<uint64_t>(d * n + j), static_cast<int64_t>(rest / strides[d]));
      rest %= strides[d];
    }
  }
}

// --- Unique ----------------------------------------------------------------------------

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

// --- TopK ------------------------------------------------------------------------------

void TopK(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t v = ctx.opset_version();
  // k is an attribute in opset 1, the second input from 10; largest/sorted from 11.
  int64_t k = 0;
  if (v < 10) {
    if (!ctx.has_attr("k")) ctx.fail("attribute 'k' is required before opset 10");
    k = ctx.attr_int("k", 0);
  } else {
    k = scalar_int(ctx, ctx.input(1), "K");
  }
  const bool largest = v < 11 || ctx.attr_int("largest", 1) != 0;
  // sorted=0 leaves the order unspecified; the sorted order is always returned.
  if (x.rank() < 1) ctx.fail("X must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank());
  const int64_t dim = x.shape()[axis];
  if (k < 0 || k > dim)
    ctx.fail("k = " + std::to_string(k) + " must be in [0, " + std::to_string(dim) + "], the size of axis " +
             std::to_string(axis));
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  Tensor& values = ctx.allocate_output(0, x.dtype(), out_shape);
  Tensor& indices = ctx.allocate_output(1, DataType::Int64, out_shape);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(x.shape(), 0, a), inner = dims_product(x.shape(), a + 1, x.shape().size());
  const uint64_t d = static_cast<uint64_t>(dim), uk = static_cast<uint64_t>(k);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    std::vector<std::pair<C, int64_t>> line(d);
    // Ties keep the lower index first, whichever direction (like a stable argsort).
    auto before = [&](const std::pair<C, int64_t>& p, const std::pair<C, int64_t>& q) {
      const bool p_first = largest ? value_less(q.first, p.first) : value_less(p.first, q.first);
      const bool q_first = largest ? value_less(p.first, q.first) : value_less(q.first, p.first);
      if (p_first != q_first) return p_first;
      return p.second < q.second;
    };
    for (uint64_t o = 0; o < outer; ++o) {
      for (uint64_t i = 0; i < inner; ++i) {
        for (uint64_t j = 0; j < d; ++j) line[j] = {get<S>(x, (o * d + j) * inner + i), static_cast<int64_t>(j)};
        std::partial_sort(line.begin(), line.begin() + static_cast<int64_t>(uk), line.end(), before);
        for (uint64_t j = 0; j < uk; ++j) {
          const uint64_t dst = (o * uk + j) * inner + i;
          // Copy the original element so its exact bits survive (e.g. -0.0, NaN payloads).
          store<S>(values, dst, load<S>(x, (o * d + static_cast<uint64_t>(line[j].second)) * inner + i));
          store<int64_t>(indices, dst, line[j].second);
        }
      }
    }
  });
}

// --- ArgMax / ArgMin ---------------------------------------------------------------------

template <bool Max>
void arg_extreme(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.opset_version() >= 12 && ctx.attr_int("select_last_index", 0) != 0;
  if (x.rank() == 0) {  // a scalar: the only element is at index 0 (axis 0, as numpy's argmax takes it)
    if (const int64_t a = ctx.attr_int("axis", 0); a != 0) ctx.fail("axis " + std::to_string(a) + " of a scalar");
    ctx.allocate_output(0, DataType::Int64, {});
    return;
  }
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank());
  const int64_t dim = x.shape()[axis];
  if (dim == 0) ctx.fail("cannot take the arg-extreme over axis " + std::to_string(axis) + " of size 0");
  Shape out_shape = x.shape();
  if (keepdims) out_shape[axis] = 1;
  else out_shape.erase(out_shape.begin() + axis);
  Tensor& y = ctx.allocate_output(0, DataType::Int64, out_shape);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(x.shape(), 0, a), inner = dims_product(x.shape(), a + 1, x.shape().size());
  const uint64_t d = static_cast<uint64_t>(dim);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for (uint64_t o = 0; o < outer; ++o) {
      for (uint64_t i = 0; i < inner; ++i) {
        C best = get<S>(x, o * d * inner + i);
        uint64_t best_j = 0;
        for (uint64_t j = 1; j < d; ++j) {
          const C cur = get<S>(x, (o * d + j) * inner + i);
          bool better = false, tie = false;
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(best)) {
              tie = std::isnan(cur);  // numpy: the first NaN wins for both argmax and argmin
            } else if (std::isnan(cur)) {
              better = true;
            } else {
              better = Max ? cur > best : cur < best;
              tie = cur == best;
            }
          } else {
            better = Max ? cur > best : cur < best;
            tie = cur == best;
          }
          if (better || (tie && last)) {
            best = cur;
            best_j = j;
          }
        }
        store<int64_t>(y, o * inner + i, static_cast<int64_t>(best_j));
      }
    }
  });
}

void ArgMax(KernelContext& ctx) { arg_extreme<true>(ctx); }
void ArgMin(KernelContext& ctx) { arg_extreme<false>(ctx); }

// --- CumSum / CumProd -----------------------------------------------------------------------

template <bool Prod>
void cumulative(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("x must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, scalar_int(ctx, ctx.input(1), "axis"), x.rank());
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(x.shape(), 0, a), inner = dims_product(x.shape(), a + 1, x.shape().size());
  const uint64_t d = static_cast<uint64_t>(x.shape()[axis]);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    // Floats accumulate in double (rounded once on store); integers in uint64,
    // which wraps exactly like the element type does once truncated.
    using Acc = std::conditional_t<std::is_floating_point_v<C>, double, uint64_t>;
    for (uint64_t o = 0; o < outer; ++o) {
      for (uint64_t i = 0; i < inner; ++i) {
        Acc acc = Prod ? Acc(1) : Acc(0);
        for (uint64_t step = 0; step < d; ++step) {
          const uint64_t j = reverse ? d - 1 - step : step;
          const uint64_t off = (o * d + j) * inner + i;
          const Acc v = static_cast<Acc>(get<S>(x, off));
          if (exclusive) put<S>(y, off, static_cast<C>(acc));
          acc = Prod ? Acc(acc * v) : Acc(acc + v);
          if (!exclusive) put<S>(y, off, static_cast<C>(acc));
        }
      }
    }
  });
}

void CumSum(KernelContext& ctx) { cumulative<false>(ctx); }
void CumProd(KernelContext& ctx) { cumulative<true>(ctx); }

}  // namespace

void register_indexing_search_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{"", op, since, until, "reference", fn, nullptr});
  };
  add("NonZero", NonZero, 9);
  add("Unique", Unique, 11);
  add("TopK", TopK, 1);  // k: attribute before 10, input from 10; largest/sorted from 11
  add("ArgMax", ArgMax, 1);  // select_last_index from 12
  add("ArgMin", ArgMin, 1);
  add("CumSum", CumSum, 11);
  add("CumProd", CumProd, 26);
}

}  // namespace onnxscope::ref
