// The shape-rule table, the helpers every rule shares, and the rules for
// elementwise, constant-producing and other small operators.
#include "shape_inference/shape_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace onnxscope::shape_rules {

// --- folded values ------------------------------------------------------------

SymInt SymInt::of_dim(const Dim& d) {
  if (d.is_known()) return of(d.value);
  return SymInt{std::nullopt, d.param};
}

Dim SymInt::to_dim() const {
  if (num) return *num >= 0 ? Dim::known(*num) : Dim{};
  return sym.empty() ? Dim{} : Dim::symbolic(sym);
}

std::optional<std::vector<int64_t>> Folded::numbers() const {
  std::vector<int64_t> v;
  v.reserve(elems.size());
  for (const auto& e : elems) {
    if (!e.num) return std::nullopt;
    v.push_back(*e.num);
  }
  return v;
}

namespace {
// Small, dense, readable: external or truncated data is left alone.
bool readable_small(const Tensor& t) {
  if (t.empty() || t.is_string() || t.rank() > 1 || t.element_count() > kMaxFoldElems) return false;
  if (is_packed_dtype(t.dtype())) return false;
  if (t.element_count() == 0) return true;
  auto bytes = storage_bytes(t.dtype(), t.element_count());
  return bytes && t.buffer() && t.raw() && t.buffer()->size() >= *bytes;
}
}  // namespace

std::optional<Folded> fold_tensor(const Tensor& t) {
  const auto& info = dtype_info(t.dtype());
  if (!info.is_integer || t.dtype() == DataType::Bool || !readable_small(t)) return std::nullopt;
  Folded f;
  f.scalar = t.rank() == 0;
  for (uint64_t i = 0; i < t.element_count(); ++i) f.elems.push_back(SymInt::of(t.element_as_int64(i)));
  return f;
}

std::optional<std::vector<double>> reals_of_tensor(const Tensor& t) {
  const auto& info = dtype_info(t.dtype());
  if (!(info.is_float || info.is_integer) || info.is_complex || !readable_small(t)) return std::nullopt;
  std::vector<double> v;
  for (uint64_t i = 0; i < t.element_count(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

// --- RuleIO accessors ---------------------------------------------------------

const std::vector<Dim>* RuleIO::shape(size_t i) const {
  if (i >= in.size() || !in[i].type || !in[i].type->is_tensor() || !in[i].type->shape) return nullptr;
  return &*in[i].type->shape;
}

std::optional<std::vector<int64_t>> RuleIO::ints_in(size_t i) const {
  const Folded* v = value(i);
  return v ? v->numbers() : std::nullopt;
}

int64_t RuleIO::attr_i(std::string_view name, int64_t def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::Int ? a->i : def;
}
float RuleIO::attr_f(std::string_view name, float def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::Float ? a->f : def;
}
std::string RuleIO::attr_s(std::string_view name, std::string def) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::String ? a->s : def;
}
std::optional<std::vector<int64_t>> RuleIO::attr_ints(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a || a->type != AttrType::Ints) return std::nullopt;
  return a->ints;
}
std::optional<std::vector<float>> RuleIO::attr_floats(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a || a->type != AttrType::Floats) return std::nullopt;
  return a->floats;
}

// --- dim arithmetic -----------------------------------------------------------

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

Dim dim_mul(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) {
    int64_t r;
    if (__builtin_mul_overflow(a.value, b.value, &r) || r < 0) return {};
    return Dim::known(r);
  }
  if (a == Dim::known(1)) return b;
  if (b == Dim::known(1)) return a;
  if (a == Dim::known(0) || b == Dim::known(0)) return Dim::known(0);
  return {};
}

Dim dim_product(std::span<const Dim> dims) {
  Dim p = Dim::known(1);
  for (const auto& d : dims) p = dim_mul(p, d);
  return p;
}

Dim dim_add(const Dim& a, int64_t v) {
  if (v == 0) return a;
  int64_t r;
  if (!a.is_known() || __builtin_add_overflow(a.value, v, &r) || r < 0) return {};
  return Dim::known(r);
}

Dim dim_merge(const Dim& a, const Dim& b) {
  if (a.is_known()) return a;
  if (b.is_known()) return b;
  return a.is_symbolic() ? a : b;
}

Dim dim_from_real(double v) {
  if (!(v >= 0 && v < 9.0e18)) return {};
  return Dim::known(static_cast<int64_t>(std::floor(v)));
}

std::optional<std::vector<Dim>> unknown_dims(int64_t rank) {
  if (rank < 0 || rank > kMaxRank) return std::nullopt;
  return std::vector<Dim>(static_cast<size_t>(rank));
}

std::vector<Dim> known_dims(std::span<const int64_t> v) {
  std::vector<Dim> out;
  out.reserve(v.size());
  for (int64_t x : v) out.push_back(x >= 0 ? Dim::known(x) : Dim{});
  return out;
}

std::optional<std::vector<Dim>> broadcast_shapes(std::span<const std::vector<Dim>* const> shapes) {
  size_t rank = 0;
  for (const auto* s : shapes) rank = std::max(rank, s->size());
  std::vector<Dim> out(rank);
  std::vector<const Dim*> col;
  for (size_t i = 0; i < rank; ++i) {
    // Dims of this output position, right-aligned; missing leading dims are 1.
    col.clear();
    for (const auto* s : shapes)
      if (i + s->size() >= rank) col.push_back(&(*s)[i + s->size() - rank]);
    int64_t big = -1;  // a known dim > 1 decides the result
    std::vector<const Dim*> others;
    for (const Dim* d : col) {
      if (d->is_known()) {
        if (d->value == 1) continue;
        if (big >= 0 && big != d->value) return std::nullopt;
        big = d->value;
      } else {
        others.push_back(d);
      }
    }
    if (big >= 0) {
      out[i] = Dim::known(big);
    } else if (others.empty()) {
      out[i] = Dim::known(1);
    } else {
      // Symbolic or unknown dims: one of them, or all the same symbol, survives.
      bool same = others.front()->is_symbolic();
      for (const Dim* d : others) same = same && *d == *others.front();
      out[i] = (others.size() == 1 || same) ? *others.front() : Dim{};
    }
  }
  return out;
}

// --- elementwise ---------------------------------------------------------------

void rule_same_as_input0(RuleIO& io) {
  if (const auto* s = io.shape(0)) io.set(0, *s);
}

void rule_identity(RuleIO& io) {
  rule_same_as_input0(io);
  if (const Folded* v = io.value(0)) io.set_value(0, *v);
}

void rule_cast(RuleIO& io) {
  rule_same_as_input0(io);
  // Integer-to-integer casts keep shape values (Shape -> Cast(int32) -> ...).
  int64_t to = io.attr_i("to", 0);
  const Folded* v = io.value(0);
  if (v && (to == static_cast<int64_t>(DataType::Int64) || to == static_cast<int64_t>(DataType::Int32)))
    io.set_value(0, *v);
}

void rule_prelu(RuleIO& io) { rule_same_as_input0(io); }  // slope broadcasts to X

namespace {
// Add/Sub/Mul/Div on folded elements; symbols survive identities only.
SymInt fold_arith(std::string_view op, const SymInt& a, const SymInt& b) {
  if (a.num && b.num) {
    int64_t x = *a.num, y = *b.num, r = 0;
    bool ovf = false;
    if (op == "Add") ovf = __builtin_add_overflow(x, y, &r);
    else if (op == "Sub") ovf = __builtin_sub_overflow(x, y, &r);
    else if (op == "Mul") ovf = __builtin_mul_overflow(x, y, &r);
    else if (op == "Div") {
      if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) return {};
      r = x / y;  // integer tensors divide with truncation
    }
    return ovf ? SymInt{} : SymInt::of(r);
  }
  const bool b0 = b.num == 0, b1 = b.num == 1;
  if ((op == "Add" || op == "Sub") && b0) return a;
  if (op == "Add" && a.num == 0) return b;
  if ((op == "Mul" || op == "Div") && b1) return a;
  if (op == "Mul" && a.num == 1) return b;
  if (op == "Mul" && (b0 || a.num == 0)) return SymInt::of(0);
  if (a.is_sym() && a == b) {
    if (op == "Sub") return SymInt::of(0);
    if (op == "Div") return SymInt::of(1);
  }
  return {};
}
}  // namespace

void rule_broadcast(RuleIO& io) {
  // Before opset 7 B broadcast to A's shape (broadcast=1) or matched it.
  static constexpr std::string_view kLegacy[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or",
                                                 "Xor", "Equal", "Greater", "Less"};
  if (io.opset < 7 && std::find(std::begin(kLegacy), std::end(kLegacy), io.node.op_type) != std::end(kLegacy)) {
    rule_same_as_input0(io);
    return;
  }
  std::vector<const std::vector<Dim>*> shapes;
  for (size_t i = 0; i < io.num_inputs(); ++i) {
    if (!io.has(i)) continue;
    const auto* s = io.shape(i);
    if (!s) return;
    shapes.push_back(s);
  }
  if (shapes.empty()) return;
  auto out = broadcast_shapes(shapes);
  if (!out) return io.fail("input shapes cannot be broadcast together");
  io.set(0, std::move(*out));
}


namespace {
// Elementwise fold of two folded inputs with scalar/size-1 broadcasting.
template <typename F>
void fold_binary(RuleIO& io, size_t ia, size_t ib, F f) {
  const Folded* a = io.value(ia);
  const Folded* b = io.value(ib);
  if (!a || !b) return;
  size_t n = a->elems.size(), m = b->elems.size();
  if (n != m && n != 1 && m != 1) return;
  Folded r;
  r.scalar = a->scalar && b->scalar;
  size_t len = (n == 0 || m == 0) ? 0 : std::max(n, m);
  for (size_t i = 0; i < len; ++i) r.elems.push_back(f(a->elems[n == 1 ? 0 : i], b->elems[m == 1 ? 0 : i]));
  io.set_value(0, std::move(r));
}
}  // namespace

// Equal on shape values, folded to 0/1: torch's Expand exports compare a
// shape with -1, and a dimension is never negative.
void rule_equal(RuleIO& io) {
  rule_broadcast(io);
  fold_binary(io, 0, 1, [](const SymInt& a, const SymInt& b) {
    if (a.num && b.num) return SymInt::of(*a.num == *b.num);
    if (a.is_sym() && b.is_sym() && a.sym == b.sym) return SymInt::of(1);
    if ((a.is_sym() && b.num && *b.num < 0) || (b.is_sym() && a.num && *a.num < 0)) return SymInt::of(0);
    return SymInt{};
  });
}

void rule_where(RuleIO& io) {
  rule_broadcast(io);
  const Folded* c = io.value(0);
  const Folded* x = io.value(1);
  const Folded* y = io.value(2);
  if (!c || !x || !y) return;
  size_t len = std::max({c->elems.size(), x->elems.size(), y->elems.size()});
  for (const Folded* f : {c, x, y})
    if (f->elems.size() != len && f->elems.size() != 1) return;
  // Per element: the condition picks X or Y; unknown conditions keep agreeing values.
  Folded picked;
  picked.scalar = c->scalar && x->scalar && y->scalar;
  for (size_t i = 0; i < len; ++i) {
    const SymInt& ci = c->elems[c->elems.size() == 1 ? 0 : i];
    const SymInt& xi = x->elems[x->elems.size() == 1 ? 0 : i];
    const SymInt& yi = y->elems[y->elems.size() == 1 ? 0 : i];
    picked.elems.push_back(!ci.num ? (xi == yi ? xi : SymInt{}) : (*ci.num ? xi : yi));
  }
  io.set_value(0, std::move(picked));
}

// --- constants and generators ---------------------------------------------------

void rule_arith_fold(RuleIO& io) {
  rule_broadcast(io);
  const std::string& op = io.node.op_type;
  fold_binary(io, 0, 1, [&op](const SymInt& a, const SymInt& b) { return fold_arith(op, a, b); });
}

void rule_constant(RuleIO& io) {
  for (const auto& a : io.node.attributes) {
    if (a.name == "value" && !a.t.empty()) {
      io.set(0, known_dims(a.t.shape()));
      if (auto f = fold_tensor(a.t)) io.set_value(0, std::move(*f));
    } else if (a.name == "sparse_value") {
      io.set(0, known_dims(a.sparse.dims));
    } else if (a.name == "value_float" || a.name == "value_string") {
      io.set(0, {});
    } else if (a.name == "value_int") {
      io.set(0, {});
      io.set_value(0, Folded{{SymInt::of(a.i)}, true});
    } else if (a.name == "value_floats" || a.name == "value_strings") {
      io.set(0, {Dim::known(static_cast<int64_t>(a.name == "value_floats" ? a.floats.size() : a.strings.size()))});
    } else if (a.name == "value_ints") {
      io.set(0, {Dim::known(static_cast<int64_t>(a.ints.size()))});
      if (a.ints.size() <= kMaxFoldElems) {
        Folded f;
        for (int64_t v : a.ints) f.elems.push_back(SymInt::of(v));
        io.set_value(0, std::move(f));
      }
    }
  }
}

void rule_constant_of_shape(RuleIO& io) {
  std::vector<Dim> dims;
  if (const Folded* v = io.value(0)) {
    for (const auto& e : v->elems) {
      if (e.num && *e.num < 0) return io.fail("negative dimension in shape input");
      dims.push_back(e.to_dim());
    }
  } else if (const auto* s = io.shape(0); s && s->size() == 1 && unknown_dims((*s)[0].value)) {
    dims = *unknown_dims((*s)[0].value);  // rank known, dims not
  } else {
    return;
  }
  // A small integer fill is itself a foldable value.
  const Attribute* value = io.attr("value");
  if (value && dims.size() <= 1) {
    auto fill = fold_tensor(value->t);
    int64_t count = dims.empty() ? 1 : dims[0].value;
    if (fill && fill->elems.size() == 1 && count >= 0 && static_cast<size_t>(count) <= kMaxFoldElems)
      io.set_value(0, Folded{std::vector<SymInt>(static_cast<size_t>(count), fill->elems[0]), dims.empty()});
  }
  io.set(0, std::move(dims));
}

void rule_dropout(RuleIO& io) {
  if (const auto* s = io.shape(0)) {
    io.set(0, *s);
    io.set(1, *s);  // mask
  }
}

void rule_range(RuleIO& io) {
  auto a = io.ints_in(0), b = io.ints_in(1), c = io.ints_in(2);
  if (a && b && c && a->size() == 1 && b->size() == 1 && c->size() == 1) {
    int64_t start = (*a)[0], limit = (*b)[0], delta = (*c)[0];
    if (delta == 0) return io.fail("Range delta is zero");
    double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    Dim count = dim_from_real(std::max(n, 0.0));
    io.set(0, {count});
    if (!count.is_known()) return;
    if (static_cast<size_t>(count.value) <= kMaxFoldElems) {
      Folded f;
      for (int64_t i = 0, v = start; i < count.value; ++i) {
        f.elems.push_back(SymInt::of(v));
        if (__builtin_add_overflow(v, delta, &v)) return;  // no fold
      }
      io.set_value(0, std::move(f));
    }
    return;
  }
  const auto *ra = io.reals(0), *rb = io.reals(1), *rc = io.reals(2);
  if (ra && rb && rc && ra->size() == 1 && rb->size() == 1 && rc->size() == 1 && (*rc)[0] != 0) {
    double n = std::ceil(((*rb)[0] - (*ra)[0]) / (*rc)[0]);
    io.set(0, {dim_from_real(std::max(n, 0.0))});
    return;
  }
  io.set(0, {Dim{}});  // always 1-D
}

void rule_quantize(RuleIO& io) { rule_same_as_input0(io); }

void rule_dynamic_quantize(RuleIO& io) {
  rule_same_as_input0(io);
  io.set(1, {});  // scalar scale and zero point
  io.set(2, {});
}

void rule_random(RuleIO& io) {
  if (io.node.op_type == "Multinomial") {
    const auto* s = io.shape(0);
    if (s && s->size() == 2) io.set(0, {(*s)[0], dim_of(io.attr_i("sample_size", 1))});
    return;
  }
  if (auto shape = io.attr_ints("shape")) io.set(0, known_dims(*shape));
}

void rule_nonzero(RuleIO& io) {
  const auto* s = io.shape(0);
  io.set(0, {s ? Dim::known(static_cast<int64_t>(s->size())) : Dim{}, Dim{}});
}

void rule_one_hot(RuleIO& io) {
  const auto* s = io.shape(0);
  if (!s) return;
  int64_t r = static_cast<int64_t>(s->size()) + 1;
  auto axis = normalize_axis(io.attr_i("axis", -1), r);
  if (!axis) return io.fail("axis out of range");
  Dim depth;
  if (auto d = io.ints_in(1); d && d->size() == 1) depth = (*d)[0] >= 0 ? Dim::known((*d)[0]) : Dim{};
  else if (const auto* rd = io.reals(1); rd && rd->size() == 1 && (*rd)[0] >= 0)
    depth = dim_from_real((*rd)[0]);
  std::vector<Dim> out = *s;
  out.insert(out.begin() + *axis, depth);
  io.set(0, std::move(out));
}

void rule_depth_to_space(RuleIO& io) {
  const auto* s = io.shape(0);
  int64_t b = io.attr_i("blocksize", 0);
  if (!s || s->size() != 4 || b <= 0 || b > 65536) return;  // b*b must not overflow
  const Dim& c = (*s)[1];
  Dim oc = c.is_known() && c.value % (b * b) == 0 ? Dim::known(c.value / (b * b)) : Dim{};
  io.set(0, {(*s)[0], oc, dim_mul((*s)[2], Dim::known(b)), dim_mul((*s)[3], Dim::known(b))});
}

void rule_space_to_depth(RuleIO& io) {
  const auto* s = io.shape(0);
  int64_t b = io.attr_i("blocksize", 0);
  if (!s || s->size() != 4 || b <= 0 || b > 65536) return;
  auto div = [b](const Dim& d) { return d.is_known() && d.value % b == 0 ? Dim::known(d.value / b) : Dim{}; };
  io.set(0, {(*s)[0], dim_mul((*s)[1], Dim::known(b * b)), div((*s)[2]), div((*s)[3])});
}

void rule_nms(RuleIO& io) { io.set(0, {Dim{}, Dim::known(3)}); }

void rule_compress(RuleIO& io) {
  const Attribute* axis_attr = io.attr("axis");
  if (!axis_attr) return io.set(0, {Dim{}});  // flattened
  const auto* s = io.shape(0);
  if (!s) return;
  auto axis = normalize_axis(axis_attr->i, static_cast<int64_t>(s->size()));
  if (!axis) return io.fail("axis out of range");
  std::vector<Dim> out = *s;
  out[*axis] = Dim{};
  io.set(0, std::move(out));
}

void rule_det(RuleIO& io) {
  const auto* s = io.shape(0);
  if (s && s->size() >= 2) io.set(0, std::vector<Dim>(s->begin(), s->end() - 2));
}

void rule_neg(RuleIO& io) {
  rule_same_as_input0(io);
  const Folded* v = io.value(0);
  if (!v) return;
  Folded f{{}, v->scalar};
  for (const auto& e : v->elems)
    f.elems.push_back(e.num && *e.num != std::numeric_limits<int64_t>::min() ? SymInt::of(-*e.num) : SymInt{});
  io.set_value(0, std::move(f));
}

void rule_scalar(RuleIO& io) { io.set(0, {}); }

void rule_unique(RuleIO& io) {
  // How many values are unique is data-dependent.
  for (size_t k = 1; k < io.num_outputs(); ++k) io.set(k, {Dim{}});
  const Attribute* axis_attr = io.attr("axis");
  if (!axis_attr) return io.set(0, {Dim{}});
  const auto* x = io.shape(0);
  if (!x) return;
  auto axis = normalize_axis(axis_attr->i, static_cast<int64_t>(x->size()));
  if (!axis) return io.fail("axis out of range");
  std::vector<Dim> out = *x;
  out[static_cast<size_t>(*axis)] = Dim{};
  io.set(0, std::move(out));
}

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: per-element loss
// shaped like the target, or a scalar when reduced; log_prob like the scores.
void rule_loss(RuleIO& io) {
  if (io.attr_s("reduction", "mean") != "none") io.set(0, {});
  else if (const auto* t = io.shape(1)) io.set(0, *t);
  if (const auto* x = io.shape(0)) io.set(1, *x);
}

void rule_window(RuleIO& io) {
  auto n = io.ints_in(0);
  io.set(0, {n && n->size() == 1 && (*n)[0] >= 0 ? Dim::known((*n)[0]) : Dim{}});
}

void rule_mel_weight_matrix(RuleIO& io) {
  auto bins = io.ints_in(0), dft = io.ints_in(1);
  Dim rows = dft && dft->size() == 1 && (*dft)[0] >= 0 ? Dim::known((*dft)[0] / 2 + 1) : Dim{};
  Dim cols = bins && bins->size() == 1 && (*bins)[0] >= 0 ? Dim::known((*bins)[0]) : Dim{};
  io.set(0, {rows, cols});
}

void rule_bitcast(RuleIO& io) {
  // Same-width reinterpretation keeps the shape; other widths are not handled.
  const TypeInfo* t = io.has(0) ? io.in[0].type : nullptr;
  int64_t to = io.attr_i("to", 0);
  if (!t || !t->is_tensor() || !is_known_dtype(static_cast<int32_t>(to))) return;
  if (dtype_info(t->elem).bits == dtype_info(static_cast<DataType>(to)).bits) rule_same_as_input0(io);
}

void rule_affine_grid(RuleIO& io) {
  auto size = io.ints_in(1);
  if (!size || (size->size() != 4 && size->size() != 5)) return;
  std::vector<int64_t> dims = {(*size)[0]};
  dims.insert(dims.end(), size->begin() + 2, size->end());
  dims.push_back(static_cast<int64_t>(size->size()) - 2);  // one coordinate per spatial dim
  io.set(0, known_dims(dims));
}

void rule_col2im(RuleIO& io) {
  const auto* x = io.shape(0);
  auto image = io.ints_in(1);
  auto block = io.ints_in(2);
  if (!x || x->size() != 3 || !image) return;
  Dim c;
  if (block && (*x)[1].is_known()) {
    int64_t b = 1;
    for (int64_t v : *block)
      if (__builtin_mul_overflow(b, v, &b)) b = 0;
    if (b > 0 && (*x)[1].value % b == 0) c = Dim::known((*x)[1].value / b);
  }
  std::vector<Dim> out = {(*x)[0], c};
  for (int64_t v : *image) out.push_back(v >= 0 ? Dim::known(v) : Dim{});
  io.set(0, std::move(out));
}

// --- the table -----------------------------------------------------------------

namespace {
struct Entry {
  std::string_view op;
  ShapeRule rule;
};

constexpr Entry kRules[] = {
    // unary elementwise, activations and other shape-preserving ops
    {"Abs", rule_same_as_input0}, {"Acos", rule_same_as_input0}, {"Acosh", rule_same_as_input0},
    {"Asin", rule_same_as_input0}, {"Asinh", rule_same_as_input0}, {"Atan", rule_same_as_input0},
    {"Atanh", rule_same_as_input0}, {"Ceil", rule_same_as_input0}, {"Cos", rule_same_as_input0},
    {"Cosh", rule_same_as_input0}, {"Erf", rule_same_as_input0}, {"Exp", rule_same_as_input0},
    {"Floor", rule_same_as_input0}, {"Log", rule_same_as_input0}, {"Neg", rule_neg},
    {"Not", rule_same_as_input0}, {"Reciprocal", rule_same_as_input0}, {"Round", rule_same_as_input0},
    {"Sigmoid", rule_same_as_input0}, {"Sign", rule_same_as_input0}, {"Sin", rule_same_as_input0},
    {"Sinh", rule_same_as_input0}, {"Sqrt", rule_same_as_input0}, {"Tan", rule_same_as_input0},
    {"Tanh", rule_same_as_input0}, {"IsNaN", rule_same_as_input0}, {"IsInf", rule_same_as_input0},
    {"Relu", rule_same_as_input0}, {"LeakyRelu", rule_same_as_input0}, {"Elu", rule_same_as_input0},
    {"Selu", rule_same_as_input0}, {"Celu", rule_same_as_input0}, {"Gelu", rule_same_as_input0},
    {"HardSigmoid", rule_same_as_input0}, {"HardSwish", rule_same_as_input0}, {"Mish", rule_same_as_input0},
    {"Softplus", rule_same_as_input0}, {"Softsign", rule_same_as_input0}, {"Swish", rule_same_as_input0},
    {"ThresholdedRelu", rule_same_as_input0}, {"Shrink", rule_same_as_input0}, {"Clip", rule_same_as_input0},
    {"BitwiseNot", rule_same_as_input0}, {"Softmax", rule_same_as_input0}, {"LogSoftmax", rule_same_as_input0},
    {"Hardmax", rule_same_as_input0}, {"LRN", rule_same_as_input0}, {"LpNormalization", rule_same_as_input0},
    {"MeanVarianceNormalization", rule_same_as_input0}, {"InstanceNormalization", rule_same_as_input0},
    {"GroupNormalization", rule_same_as_input0}, {"RMSNormalization", rule_same_as_input0},
    {"CumSum", rule_same_as_input0}, {"Trilu", rule_same_as_input0}, {"ReverseSequence", rule_same_as_input0},
    {"EyeLike", rule_same_as_input0}, {"RandomNormalLike", rule_same_as_input0},
    {"RandomUniformLike", rule_same_as_input0}, {"Bernoulli", rule_same_as_input0},
    {"Scatter", rule_same_as_input0}, {"ScatterElements", rule_same_as_input0},
    {"ScatterND", rule_same_as_input0}, {"CastLike", rule_same_as_input0}, {"CumProd", rule_same_as_input0},
    {"RotaryEmbedding", rule_same_as_input0}, {"TensorScatter", rule_same_as_input0},
    {"RegexFullMatch", rule_same_as_input0}, {"StringConcat", rule_broadcast},
    {"OptionalHasElement", rule_scalar}, {"SequenceLength", rule_scalar}, {"Unique", rule_unique}, {"BitCast", rule_bitcast},
    {"NegativeLogLikelihoodLoss", rule_loss}, {"SoftmaxCrossEntropyLoss", rule_loss},
    {"HannWindow", rule_window}, {"HammingWindow", rule_window}, {"BlackmanWindow", rule_window},
    {"MelWeightMatrix", rule_mel_weight_matrix}, {"AffineGrid", rule_affine_grid}, {"Col2Im", rule_col2im},
    {"Identity", rule_identity}, {"Cast", rule_cast}, {"Dropout", rule_dropout},
    {"QuantizeLinear", rule_quantize}, {"DequantizeLinear", rule_quantize},
    {"DynamicQuantizeLinear", rule_dynamic_quantize},
    // broadcasting
    {"Add", rule_arith_fold}, {"Sub", rule_arith_fold}, {"Mul", rule_arith_fold}, {"Div", rule_arith_fold},
    {"Pow", rule_broadcast}, {"Max", rule_broadcast}, {"Min", rule_broadcast}, {"Sum", rule_broadcast},
    {"Mean", rule_broadcast}, {"Where", rule_where}, {"Equal", rule_equal}, {"Less", rule_broadcast},
    {"Greater", rule_broadcast}, {"LessOrEqual", rule_broadcast}, {"GreaterOrEqual", rule_broadcast},
    {"And", rule_broadcast}, {"Or", rule_broadcast}, {"Xor", rule_broadcast}, {"BitShift", rule_broadcast},
    {"Mod", rule_broadcast}, {"BitwiseAnd", rule_broadcast}, {"BitwiseOr", rule_broadcast},
    {"BitwiseXor", rule_broadcast}, {"PRelu", rule_prelu},
    // constants, generators, misc
    {"Constant", rule_constant}, {"ConstantOfShape", rule_constant_of_shape}, {"Range", rule_range},
    {"RandomNormal", rule_random}, {"RandomUniform", rule_random}, {"Multinomial", rule_random},
    {"NonZero", rule_nonzero}, {"OneHot", rule_one_hot}, {"DepthToSpace", rule_depth_to_space},
    {"SpaceToDepth", rule_space_to_depth}, {"NonMaxSuppression", rule_nms}, {"Compress", rule_compress},
    {"Det", rule_det},
    // NN
    {"Conv", rule_conv}, {"DeformConv", rule_conv}, {"ConvInteger", rule_conv_integer}, {"QLinearConv", rule_qlinear_conv},
    {"ConvTranspose", rule_conv_transpose}, {"MaxPool", rule_pool}, {"AveragePool", rule_pool},
    {"LpPool", rule_pool}, {"MaxUnpool", rule_max_unpool}, {"GlobalAveragePool", rule_global_pool},
    {"GlobalMaxPool", rule_global_pool}, {"GlobalLpPool", rule_global_pool},
    {"BatchNormalization", rule_batch_norm}, {"LayerNormalization", rule_layer_norm}, {"Gemm", rule_gemm},
    {"MatMul", rule_matmul}, {"MatMulInteger", rule_matmul}, {"QLinearMatMul", rule_qlinear_matmul},
    {"Resize", rule_resize}, {"Upsample", rule_upsample}, {"Einsum", rule_einsum}, {"RNN", rule_rnn},
    {"GRU", rule_rnn}, {"LSTM", rule_rnn}, {"GridSample", rule_grid_sample}, {"RoiAlign", rule_roi_align},
    {"MaxRoiPool", rule_max_roi_pool}, {"TopK", rule_topk},
    // shape manipulation
    {"Shape", rule_shape}, {"Size", rule_size}, {"Reshape", rule_reshape}, {"Flatten", rule_flatten},
    {"Transpose", rule_transpose}, {"Concat", rule_concat}, {"Split", rule_split}, {"Squeeze", rule_squeeze},
    {"Unsqueeze", rule_unsqueeze}, {"Gather", rule_gather}, {"GatherElements", rule_gather_elements},
    {"GatherND", rule_gather_nd}, {"Slice", rule_slice}, {"Expand", rule_expand}, {"Tile", rule_tile},
    {"Pad", rule_pad}, {"CenterCropPad", rule_center_crop_pad},
    {"ReduceL1", rule_reduce}, {"ReduceL2", rule_reduce}, {"ReduceLogSum", rule_reduce},
    {"ReduceLogSumExp", rule_reduce}, {"ReduceMax", rule_reduce}, {"ReduceMean", rule_reduce},
    {"ReduceMin", rule_reduce}, {"ReduceProd", rule_reduce}, {"ReduceSum", rule_reduce},
    {"ReduceSumSquare", rule_reduce}, {"ArgMax", rule_arg_reduce}, {"ArgMin", rule_arg_reduce},
};
}  // namespace

ShapeRule find_rule(std::string_view op_type) {
  static const std::unordered_map<std::string_view, ShapeRule> table = [] {
    std::unordered_map<std::string_view, ShapeRule> t;
    for (const auto& e : kRules) t.emplace(e.op, e.rule);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace onnxscope::shape_rules
