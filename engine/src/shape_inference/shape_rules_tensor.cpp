// Shape rules of tensor-manipulation operators (Reshape, Slice, Gather, ...)
// and the folding of small integer values through them, so exported
// Shape -> Gather -> Concat -> Reshape chains give known shapes.
#include <algorithm>
#include <limits>

#include "core/slice_range.h"
#include "shape_inference/shape_rules.h"

namespace onnxscope::shape_rules {
namespace {

int64_t rank_of(const std::vector<Dim>& s) { return static_cast<int64_t>(s.size()); }

// Axes from an attribute (before `input_from_opset`) or from input `idx`.
// nullopt: not given; `unknown` set when given but not foldable.
std::optional<std::vector<int64_t>> axes_arg(const RuleIO& io, int64_t input_from_opset, size_t idx, bool& unknown) {
  unknown = false;
  if (io.opset < input_from_opset) return io.attr_ints("axes");
  if (!io.has(idx)) return std::nullopt;
  auto v = io.ints_in(idx);
  if (!v) unknown = true;
  return v;
}

// Normalizes and de-duplicates axes against `rank`; nullopt if any is invalid.
std::optional<std::vector<int64_t>> norm_axes(std::span<const int64_t> axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    auto n = normalize_axis(a, rank);
    if (!n || std::find(out.begin(), out.end(), *n) != out.end()) return std::nullopt;
    out.push_back(*n);
  }
  return out;
}

Folded slice_folded(const Folded& v, int64_t start, int64_t end) {
  Folded out;
  for (int64_t i = start; i < end; ++i) out.elems.push_back(v.elems[static_cast<size_t>(i)]);
  return out;
}

}  // namespace

void rule_shape(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return io.set(0, {Dim{}});
  int64_t r = rank_of(*x);
  // start/end (opset 15) clamp like Python slicing.
  auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  int64_t start = clamp(io.attr_i("start", 0));
  int64_t end = clamp(io.attr_i("end", r));
  int64_t len = std::max<int64_t>(0, end - start);
  io.set(0, {Dim::known(len)});
  if (static_cast<size_t>(len) > kMaxFoldElems) return;
  Folded f;
  for (int64_t i = start; i < start + len; ++i) f.elems.push_back(SymInt::of_dim((*x)[static_cast<size_t>(i)]));
  io.set_value(0, std::move(f));
}

void rule_size(RuleIO& io) {
  io.set(0, {});
  if (const auto* x = io.shape(0)) io.set_value(0, Folded{{SymInt::of_dim(dim_product(*x))}, true});
}

void rule_reshape(RuleIO& io) {
  const auto* x = io.shape(0);
  std::vector<SymInt> target;
  if (io.opset < 5) {
    auto s = io.attr_ints("shape");
    if (!s) return;
    for (int64_t v : *s) target.push_back(SymInt::of(v));
  } else if (const Folded* v = io.value(1)) {
    target = v->elems;
  } else {
    if (const auto* s = io.shape(1); s && s->size() == 1)
      if (auto u = unknown_dims((*s)[0].value)) io.set(0, std::move(*u));  // rank only
    return;
  }
  bool allowzero = io.attr_i("allowzero", 0) != 0;
  std::vector<Dim> out(target.size());
  std::optional<size_t> infer;
  for (size_t i = 0; i < target.size(); ++i) {
    const SymInt& t = target[i];
    if (!t.num) {
      out[i] = t.to_dim();
    } else if (*t.num == 0 && !allowzero) {
      if (x && i < x->size()) out[i] = (*x)[i];  // 0 copies the input dim
      else if (x) return io.fail("shape copies a dimension the input does not have");
    } else if (*t.num == -1) {
      if (infer) return io.fail("shape has more than one -1");
      infer = i;
    } else if (*t.num < -1) {
      return io.fail("negative dimension in shape");
    } else {
      out[i] = Dim::known(*t.num);
    }
  }
  if (infer && x) {
    // Cancel matching symbols and divide numbers: [N,3,4] -> [N,-1] gives 12.
    int64_t in_num = 1, out_num = 1;
    std::vector<std::string> in_syms;
    bool ok = true;
    for (const auto& d : *x) {
      if (d.is_known()) ok = ok && !__builtin_mul_overflow(in_num, d.value, &in_num);
      else if (d.is_symbolic()) in_syms.push_back(d.param);
      else ok = false;
    }
    for (size_t i = 0; i < out.size() && ok; ++i) {
      if (i == *infer) continue;
      const Dim& d = out[i];
      if (d.is_known()) {
        ok = !__builtin_mul_overflow(out_num, d.value, &out_num);
      } else if (d.is_symbolic()) {
        auto it = std::find(in_syms.begin(), in_syms.end(), d.param);
        if (it == in_syms.end()) ok = false;
        else in_syms.erase(it);
      } else {
        ok = false;
      }
    }
    if (ok && out_num != 0) {
      if (in_syms.empty()) {
        if (in_num % out_num != 0) return io.fail("input size is not divisible by the known dims of the new shape");
        out[*infer] = Dim::known(in_num / out_num);
      } else if (in_syms.size() == 1 && in_num == out_num) {
        out[*infer] = Dim::symbolic(in_syms[0]);
      }
    }
  }
  // A folded value reshaped to a scalar or 1-D stays folded.
  if (const Folded* v = io.value(0); v && out.size() <= 1) {
    Dim n = out.empty() ? Dim::known(1) : out[0];
    if (n.is_known() && static_cast<size_t>(n.value) == v->elems.size()) io.set_value(0, Folded{v->elems, out.empty()});
  }
  io.set(0, std::move(out));
}

void rule_flatten(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return io.set(0, {Dim{}, Dim{}});
  int64_t r = rank_of(*x);
  int64_t axis = io.attr_i("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) return io.fail("axis out of range");
  std::span<const Dim> all(*x);
  io.set(0, {dim_product(all.first(static_cast<size_t>(axis))), dim_product(all.subspan(static_cast<size_t>(axis)))});
}

void rule_transpose(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  int64_t r = rank_of(*x);
  std::vector<int64_t> perm;
  if (auto p = io.attr_ints("perm")) perm = *p;
  else
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) return io.fail("perm does not match the input rank");
  std::vector<bool> seen(static_cast<size_t>(r), false);
  std::vector<Dim> out;
  for (int64_t p : perm) {
    auto a = normalize_axis(p, r);
    if (!a || seen[static_cast<size_t>(*a)]) return io.fail("perm is not a permutation");
    seen[static_cast<size_t>(*a)] = true;
    out.push_back((*x)[static_cast<size_t>(*a)]);
  }
  io.set(0, std::move(out));
}

void rule_concat(RuleIO& io) {
  const std::vector<Dim>* first = nullptr;
  bool all_known = true;
  for (size_t i = 0; i < io.num_inputs(); ++i) {
    const auto* s = io.shape(i);
    if (!s) all_known = false;
    else if (!first) first = s;
  }
  if (!first) return;
  int64_t r = rank_of(*first);
  auto axis = normalize_axis(io.attr_i("axis", io.opset < 4 ? 1 : 0), r);
  if (!axis) return io.fail("axis out of range");
  std::vector<Dim> out = *first;
  Dim total = Dim::known(0);
  for (size_t i = 0; i < io.num_inputs(); ++i) {
    const auto* s = io.shape(i);
    if (!s) continue;
    if (rank_of(*s) != r) return io.fail("inputs have different ranks");
    for (size_t d = 0; d < s->size(); ++d)
      if (static_cast<int64_t>(d) != *axis) out[d] = dim_merge(out[d], (*s)[d]);
    const Dim& a = (*s)[static_cast<size_t>(*axis)];
    int64_t sum;
    total = total.is_known() && a.is_known() && !__builtin_add_overflow(total.value, a.value, &sum) ? Dim::known(sum) : Dim{};
  }
  // A single input concatenated keeps its (maybe symbolic) size.
  if (io.num_inputs() == 1) total = (*first)[static_cast<size_t>(*axis)];
  out[static_cast<size_t>(*axis)] = all_known ? total : Dim{};
  io.set(0, std::move(out));
  if (r != 1) return;
  Folded f;
  for (size_t i = 0; i < io.num_inputs(); ++i) {
    const Folded* v = io.value(i);
    if (!v) return;
    f.elems.insert(f.elems.end(), v->elems.begin(), v->elems.end());
  }
  if (f.elems.size() <= kMaxFoldElems) io.set_value(0, std::move(f));
}

void rule_split(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  auto axis = normalize_axis(io.attr_i("axis", 0), rank_of(*x));
  if (!axis) return io.fail("axis out of range");
  size_t n = io.num_outputs();
  std::optional<std::vector<int64_t>> split;
  if (io.opset < 13) split = io.attr_ints("split");
  if (!split && (io.opset >= 13 || io.opset < 2) && io.has(1)) {
    split = io.ints_in(1);
    if (!split) {  // sizes given but not known
      for (size_t i = 0; i < n; ++i) {
        std::vector<Dim> o = *x;
        o[static_cast<size_t>(*axis)] = Dim{};
        io.set(i, std::move(o));
      }
      return;
    }
  }
  const Dim& d = (*x)[static_cast<size_t>(*axis)];
  std::vector<Dim> sizes;
  if (split) {
    if (split->size() != n) return io.fail("split does not match the number of outputs");
    sizes = known_dims(*split);
  } else if (n > 0) {
    int64_t parts = io.attr_i("num_outputs", static_cast<int64_t>(n));
    if (parts != static_cast<int64_t>(n)) return io.fail("num_outputs does not match the outputs");
    if (d.is_known()) {
      if (parts <= 0) return io.fail("num_outputs must be positive");
      int64_t chunk = d.value / parts + (d.value % parts != 0);  // opset 18: the last part may be smaller
      if (io.opset < 18 && d.value % parts != 0) return io.fail("dimension does not split evenly");
      for (int64_t i = 0; i < parts; ++i) sizes.push_back(Dim::known(std::max<int64_t>(0, std::min(chunk, d.value - i * chunk))));
    } else {
      sizes.assign(n, n == 1 ? d : Dim{});
    }
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<Dim> o = *x;
    o[static_cast<size_t>(*axis)] = sizes[i];
    io.set(i, std::move(o));
  }
}

void rule_squeeze(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  bool unknown_axes;
  auto axes = axes_arg(io, 13, 1, unknown_axes);
  if (unknown_axes) return;
  int64_t r = rank_of(*x);
  std::vector<bool> drop(x->size(), false);
  if (axes && !axes->empty()) {
    auto n = norm_axes(*axes, r);
    if (!n) return io.fail("axes out of range or repeated");
    for (int64_t a : *n) {
      const Dim& d = (*x)[static_cast<size_t>(a)];
      if (d.is_known() && d.value != 1) return io.fail("squeezing a dimension that is not 1");
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    // No axes: every 1 goes; an unknown dim might be 1, so the rank is unknown.
    for (size_t i = 0; i < x->size(); ++i) {
      if (!(*x)[i].is_known()) return;
      drop[i] = (*x)[i].value == 1;
    }
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < x->size(); ++i)
    if (!drop[i]) out.push_back((*x)[i]);
  if (const Folded* v = io.value(0); v && out.size() <= 1 && v->elems.size() == 1)
    io.set_value(0, Folded{v->elems, out.empty()});
  io.set(0, std::move(out));
}

void rule_unsqueeze(RuleIO& io) {
  const auto* x = io.shape(0);
  bool unknown_axes;
  auto axes = axes_arg(io, 13, 1, unknown_axes);
  if (!x || unknown_axes || !axes) return;
  int64_t r = rank_of(*x) + static_cast<int64_t>(axes->size());
  auto n = norm_axes(*axes, r);
  if (!n) return io.fail("axes out of range or repeated");
  std::vector<Dim> out(static_cast<size_t>(r));
  std::vector<bool> inserted(static_cast<size_t>(r), false);
  for (int64_t a : *n) {
    inserted[static_cast<size_t>(a)] = true;
    out[static_cast<size_t>(a)] = Dim::known(1);
  }
  size_t src = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!inserted[i]) out[i] = (*x)[src++];
  // A folded scalar unsqueezed to [1] stays folded (Gather -> Unsqueeze -> Concat).
  if (const Folded* v = io.value(0); v && out.size() == 1) io.set_value(0, Folded{v->elems, false});
  io.set(0, std::move(out));
}

void rule_gather(RuleIO& io) {
  const auto* data = io.shape(0);
  const auto* idx = io.shape(1);
  if (!data || !idx) return;
  auto axis = normalize_axis(io.attr_i("axis", 0), rank_of(*data));
  if (!axis) return io.fail("axis out of range");
  std::vector<Dim> out(data->begin(), data->begin() + *axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + *axis + 1, data->end());
  io.set(0, std::move(out));
  const Folded* v = io.value(0);
  auto ids = io.ints_in(1);
  if (!v || v->scalar || !ids || *axis != 0) return;
  Folded f;
  f.scalar = io.value(1)->scalar;
  int64_t len = static_cast<int64_t>(v->elems.size());
  for (int64_t i : *ids) {
    if (i < 0) i += len;
    if (i < 0 || i >= len) return io.fail("gather index out of range");
    f.elems.push_back(v->elems[static_cast<size_t>(i)]);
  }
  io.set_value(0, std::move(f));
}

void rule_gather_elements(RuleIO& io) {
  if (const auto* idx = io.shape(1)) io.set(0, *idx);
}

void rule_gather_nd(RuleIO& io) {
  const auto* data = io.shape(0);
  const auto* idx = io.shape(1);
  if (!data || !idx || idx->empty()) return;
  int64_t b = io.attr_i("batch_dims", 0);
  const Dim& last = idx->back();
  if (!last.is_known()) return;
  if (b < 0 || b > rank_of(*data) || last.value > rank_of(*data) - b)
    return io.fail("index depth exceeds the data rank");
  std::vector<Dim> out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), data->begin() + b + last.value, data->end());
  io.set(0, std::move(out));
}

void rule_slice(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  int64_t r = rank_of(*x);
  std::optional<std::vector<SymInt>> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
  auto elems = [](std::optional<std::vector<int64_t>> v) -> std::optional<std::vector<SymInt>> {
    if (!v) return std::nullopt;
    std::vector<SymInt> e;
    for (int64_t i : *v) e.push_back(SymInt::of(i));
    return e;
  };
  bool axes_unknown = false, steps_unknown = false;
  if (io.opset < 10) {
    starts = elems(io.attr_ints("starts"));
    ends = elems(io.attr_ints("ends"));
    axes = io.attr_ints("axes");
  } else {
    if (const Folded* v = io.value(1)) starts = v->elems;
    if (const Folded* v = io.value(2)) ends = v->elems;
    if (io.has(3)) axes_unknown = !(axes = io.ints_in(3));
    if (io.has(4)) steps_unknown = !(steps = io.ints_in(4));
  }
  std::vector<Dim> out = *x;
  if (axes_unknown) return io.set(0, std::vector<Dim>(x->size()));  // rank only
  if (!axes) {
    // Default axes are 0..n-1 with n the length of starts, known even when its values are not.
    std::optional<size_t> n;
    if (starts) n = starts->size();
    else if (ends) n = ends->size();
    else if (const auto* ss = io.shape(1); io.opset >= 10 && ss && ss->size() == 1 && (*ss)[0].is_known())
      n = static_cast<size_t>((*ss)[0].value);
    if (!n) return io.set(0, std::vector<Dim>(x->size()));
    if (*n > x->size()) return io.fail("more starts than input dimensions");
    axes.emplace();
    for (size_t i = 0; i < *n; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  auto nax = norm_axes(*axes, r);
  if (!nax) return io.fail("axes out of range or repeated");
  if (!starts || !ends || steps_unknown) {
    for (int64_t a : *nax) out[static_cast<size_t>(a)] = Dim{};
    return io.set(0, std::move(out));
  }
  if (starts->size() != nax->size() || ends->size() != nax->size() || (steps && steps->size() != nax->size()))
    return io.fail("starts, ends, axes and steps differ in length");
  constexpr int64_t kBig = std::numeric_limits<int32_t>::max();  // "to the end" in exports
  std::optional<std::pair<int64_t, int64_t>> range0;  // for folding axis 0 of a 1-D value
  for (size_t i = 0; i < nax->size(); ++i) {
    size_t a = static_cast<size_t>((*nax)[i]);
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) return io.fail("slice step is zero");
    const SymInt &st = (*starts)[i], &en = (*ends)[i];
    const Dim& d = (*x)[a];
    if (!d.is_known()) {
      // x[0:end] with step 1 keeps a symbolic dim when end reaches past it.
      bool whole = st.num == 0 && step == 1 && ((en.num && *en.num >= kBig) || (en.is_sym() && en.sym == d.param));
      out[a] = whole ? d : Dim{};
      continue;
    }
    if (!st.num || !en.num) {
      out[a] = Dim{};
      continue;
    }
    const SliceRange r = slice_range(d.value, *st.num, *en.num, step);
    const int64_t s = r.start, len = r.count;
    out[a] = Dim::known(len);
    if (a == 0 && step == 1) range0 = {s, s + len};
  }
  io.set(0, std::move(out));
  const Folded* v = io.value(0);
  if (v && !v->scalar && range0 && nax->size() == 1) io.set_value(0, slice_folded(*v, range0->first, range0->second));
}

void rule_expand(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  std::vector<Dim> target;
  if (const Folded* v = io.value(1)) {
    for (const auto& e : v->elems) target.push_back(e.to_dim());
  } else {
    if (const auto* s = io.shape(1); s && s->size() == 1)
      if (auto u = unknown_dims(std::max<int64_t>(static_cast<int64_t>(x->size()), (*s)[0].value))) io.set(0, std::move(*u));
    return;
  }
  const std::vector<Dim>* both[] = {x, &target};
  auto out = broadcast_shapes(both);
  if (!out) return io.fail("shape cannot be broadcast to the input");
  io.set(0, std::move(*out));
}

void rule_tile(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  const Folded* reps = io.value(1);
  if (!reps) return io.set(0, std::vector<Dim>(x->size()));
  if (reps->elems.size() != x->size()) return io.fail("repeats do not match the input rank");
  std::vector<Dim> out;
  for (size_t i = 0; i < x->size(); ++i) out.push_back(dim_mul((*x)[i], reps->elems[i].to_dim()));
  io.set(0, std::move(out));
}

void rule_pad(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  int64_t r = rank_of(*x);
  std::optional<std::vector<int64_t>> pads;
  if (io.opset < 2) pads = io.attr_ints("paddings");
  else if (io.opset < 11) pads = io.attr_ints("pads");
  else pads = io.ints_in(1);
  std::vector<int64_t> axes;
  if (io.opset >= 18 && io.has(3)) {
    auto a = io.ints_in(3);
    auto n = a ? norm_axes(*a, r) : std::nullopt;
    if (!n) return io.set(0, std::vector<Dim>(x->size()));
    axes = *n;
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (!pads) return io.set(0, std::vector<Dim>(x->size()));
  size_t n = axes.size();
  if (pads->size() != 2 * n) return io.fail("pads do not match the rank or axes");
  std::vector<Dim> out = *x;
  for (size_t i = 0; i < n; ++i) {
    Dim& d = out[static_cast<size_t>(axes[i])];
    int64_t total;
    d = __builtin_add_overflow((*pads)[i], (*pads)[i + n], &total) ? Dim{} : dim_add(d, total);
  }
  io.set(0, std::move(out));
}

void rule_reduce(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  bool keep = io.attr_i("keepdims", 1) != 0;
  int64_t axes_input_opset = io.node.op_type == "ReduceSum" ? 13 : 18;
  bool unknown_axes;
  auto axes = axes_arg(io, axes_input_opset, 1, unknown_axes);
  if (unknown_axes) {
    if (keep) io.set(0, std::vector<Dim>(x->size()));  // rank kept, dims not known
    return;
  }
  int64_t r = rank_of(*x);
  std::vector<bool> reduce(x->size(), true);
  if (!axes || axes->empty()) {
    if (io.opset >= axes_input_opset && io.attr_i("noop_with_empty_axes", 0) != 0) {
      io.set(0, *x);
      if (const Folded* v = io.value(0)) io.set_value(0, *v);
      return;
    }
  } else {
    auto n = norm_axes(*axes, r);
    if (!n) return io.fail("axes out of range or repeated");
    reduce.assign(x->size(), false);
    for (int64_t a : *n) reduce[static_cast<size_t>(a)] = true;
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < x->size(); ++i) {
    if (!reduce[i]) out.push_back((*x)[i]);
    else if (keep) out.push_back(Dim::known(1));
  }
  // Sum or product of a folded 1-D shape (numel computations).
  const Folded* v = io.value(0);
  bool sum = io.node.op_type == "ReduceSum", prod = io.node.op_type == "ReduceProd";
  if (v && !v->scalar && (sum || prod) && reduce.size() == 1 && reduce[0]) {
    std::vector<Dim> dims;
    for (const auto& e : v->elems) dims.push_back(e.to_dim());
    SymInt res;
    if (prod) {
      res = SymInt::of_dim(dim_product(dims));
    } else if (auto nums = v->numbers()) {
      int64_t s = 0;
      bool ovf = false;
      for (int64_t e : *nums) ovf = ovf || __builtin_add_overflow(s, e, &s);
      if (!ovf) res = SymInt::of(s);
    }
    io.set_value(0, Folded{{res}, !keep});
  }
  io.set(0, std::move(out));
}

void rule_arg_reduce(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  auto axis = normalize_axis(io.attr_i("axis", 0), rank_of(*x));
  if (!axis) return io.fail("axis out of range");
  std::vector<Dim> out = *x;
  if (io.attr_i("keepdims", 1) != 0) out[static_cast<size_t>(*axis)] = Dim::known(1);
  else out.erase(out.begin() + *axis);
  io.set(0, std::move(out));
}

void rule_center_crop_pad(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  const Folded* v = io.value(1);
  if (!v) return io.set(0, std::vector<Dim>(x->size()));
  std::vector<int64_t> axes;
  if (auto a = io.attr_ints("axes")) {
    auto n = norm_axes(*a, rank_of(*x));
    if (!n) return io.fail("axes out of range or repeated");
    axes = *n;
  } else {
    for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.size() != v->elems.size()) return io.fail("shape does not match the axes");
  std::vector<Dim> out = *x;
  for (size_t i = 0; i < axes.size(); ++i) out[static_cast<size_t>(axes[i])] = v->elems[i].to_dim();
  io.set(0, std::move(out));
}

}  // namespace onnxscope::shape_rules
