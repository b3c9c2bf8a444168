// Reference kernels of the ai.onnx.ml domain (LabelEncoder, TreeEnsemble,
// ArrayFeatureExtractor, Binarizer) and of ai.onnx.preview.training (Adagrad,
// Adam, Momentum). Part of the text_random_ml family.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/text_random_ml_parts.h"

namespace onnxscope::ref {
namespace {

constexpr size_t kNotFound = static_cast<size_t>(-1);

Tensor scalar_string(std::string s) { return Tensor::from_strings({}, {std::move(s)}); }
template <typename T>
Tensor scalar_of(DataType t, T v) {
  Tensor s = Tensor::zeros(t, {});
  store<T>(s, 0, v);
  return s;
}
template <typename T, typename V>
Tensor vector_of(DataType t, const std::vector<V>& vs) {
  Tensor s = Tensor::zeros(t, {static_cast<int64_t>(vs.size())});
  for (size_t i = 0; i < vs.size(); ++i) store<T>(s, i, static_cast<T>(vs[i]));
  return s;
}

// Copies element `from` of `src` into element `to` of `dst` (same type; strings too).
void copy_element(const Tensor& src, uint64_t from, Tensor& dst, uint64_t to, uint64_t elem_bytes, StringBudget& budget) {
  if (src.is_string()) {
    budget.add(src.strings()[from]);
    dst.mutable_strings()[to] = src.strings()[from];
  }
  else std::memcpy(dst.mutable_raw() + to * elem_bytes, src.raw() + from * elem_bytes, elem_bytes);
}

uint64_t element_bytes(DataType t) { return t == DataType::String ? 0 : storage_bytes(t, 1).value_or(0); }

// An empty output tensor of type t and shape s (strings: that many empty strings).
Tensor& allocate_any(KernelContext& ctx, size_t i, DataType t, Shape s) {
  if (t != DataType::String) return ctx.allocate_output(i, t, std::move(s));
  const uint64_t n = checked_element_count(s).value_or(0);
  ctx.set_output(i, Tensor::from_strings(std::move(s), std::vector<std::string>(n)));
  return ctx.output(i).tensor();
}

// --- LabelEncoder ---------------------------------------------------------------

// Opset 1: strings to their index in classes_strings, or int64 indices to strings.
void LabelEncoderV1(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<std::string> classes = ctx.attr_strings("classes_strings");
  if (x.is_string()) {
    std::map<std::string, int64_t> index;
    for (size_t i = classes.size(); i-- > 0;) index[classes[i]] = static_cast<int64_t>(i);  // first occurrence wins
    const int64_t fallback = ctx.attr_int("default_int64", -1);
    Tensor& y = ctx.allocate_output(0, DataType::Int64, x.shape());
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(x.strings()[i]);
      store<int64_t>(y, i, it == index.end() ? fallback : it->second);
    }
  } else if (x.dtype() == DataType::Int64) {
    const std::string fallback = ctx.attr_string("default_string", "_Unused");
    std::vector<std::string> out(x.element_count());
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const int64_t v = load<int64_t>(x, i);
      out[i] = v >= 0 && v < static_cast<int64_t>(classes.size()) ? classes[static_cast<size_t>(v)] : fallback;
    }
    ctx.set_output(0, Tensor::from_strings(x.shape(), std::move(out)));
  } else {
    ctx.fail("input must be string or int64, got " + std::string(dtype_name(x.dtype())));
  }
}

bool is_float_key(DataType t) { return t == DataType::Float || t == DataType::Double; }

// Key of element i of a numeric tensor for the lookup table: integers by value,
// floats by the bits of their double value. Since opset 4 every NaN is one
// key and -0 equals 0 (value comparison); before, floats compare bitwise.
uint64_t numeric_key(const Tensor& t, uint64_t i, bool nan_matches_nan) {
  switch (t.dtype()) {
    case DataType::Int16: return static_cast<uint64_t>(static_cast<int64_t>(load<int16_t>(t, i)));
    case DataType::Int32: return static_cast<uint64_t>(static_cast<int64_t>(load<int32_t>(t, i)));
    case DataType::Int64: return static_cast<uint64_t>(load<int64_t>(t, i));
    default: break;
  }
  double d = t.dtype() == DataType::Float ? static_cast<double>(load<float>(t, i)) : load<double>(t, i);
  if (nan_matches_nan) {
    if (std::isnan(d)) d = std::numeric_limits<double>::quiet_NaN();
    if (d == 0.0) d = 0.0;
  }
  return std::bit_cast<uint64_t>(d);
}

// Opset 2+: keys_* / values_* (and since 4, keys_tensor / values_tensor / default_tensor).
void LabelEncoder(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool v4 = ctx.opset_version() >= 4;

  // Keys and values as tensors, whichever attribute gave them.
  Tensor keys, values;
  int key_sources = 0, value_sources = 0;
  if (ctx.has_attr("keys_strings")) ++key_sources, keys = Tensor::from_strings({static_cast<int64_t>(ctx.attr_strings("keys_strings").size())}, ctx.attr_strings("keys_strings"));
  if (ctx.has_attr("keys_int64s")) ++key_sources, keys = vector_of<int64_t>(DataType::Int64, ctx.attr_ints("keys_int64s"));
  if (ctx.has_attr("keys_floats")) ++key_sources, keys = vector_of<float>(DataType::Float, ctx.attr_floats("keys_floats"));
  if (v4 && ctx.has_attr("keys_tensor")) ++key_sources, keys = *ctx.attr_tensor("keys_tensor");
  if (ctx.has_attr("values_strings")) ++value_sources, values = Tensor::from_strings({static_cast<int64_t>(ctx.attr_strings("values_strings").size())}, ctx.attr_strings("values_strings"));
  if (ctx.has_attr("values_int64s")) ++value_sources, values = vector_of<int64_t>(DataType::Int64, ctx.attr_ints("values_int64s"));
  if (ctx.has_attr("values_floats")) ++value_sources, values = vector_of<float>(DataType::Float, ctx.attr_floats("values_floats"));
  if (v4 && ctx.has_attr("values_tensor")) ++value_sources, values = *ctx.attr_tensor("values_tensor");
  if (key_sources != 1) ctx.fail("exactly one keys_* attribute must be given");
  if (value_sources != 1) ctx.fail("exactly one values_* attribute must be given");
  if (keys.element_count() != values.element_count())
    ctx.fail("keys and values must have the same length (" + std::to_string(keys.element_count()) + " vs " +
             std::to_string(values.element_count()) + ")");
  static constexpr DataType kAllowed[] = {DataType::String, DataType::Int64, DataType::Float,
                                          DataType::Int32, DataType::Int16, DataType::Double};
  auto allowed = [&](DataType t) { return std::find(std::begin(kAllowed), std::end(kAllowed), t) != std::end(kAllowed); };
  if (!allowed(keys.dtype()) || !allowed(values.dtype())) ctx.fail("keys and values must be string, int16/32/64, float or double");
  if (x.dtype() != keys.dtype())
    ctx.fail("input type " + std::string(dtype_name(x.dtype())) + " does not match the keys' type " + std::string(dtype_name(keys.dtype())));

  // The default: default_tensor, else the default_* attribute matching the values' type.
  const DataType vt = values.dtype();
  Tensor fallback;
  if (const Tensor* d = v4 ? ctx.attr_tensor("default_tensor") : nullptr) {
    if (d->dtype() != vt || d->element_count() != 1) ctx.fail("default_tensor must hold one value of the values' type");
    fallback = *d;
  } else if (vt == DataType::String) {
    fallback = scalar_string(ctx.attr_string("default_string", "_Unused"));
  } else if (vt == DataType::Float) {
    fallback = scalar_of<float>(vt, ctx.attr_float("default_float", -0.0f));
  } else if (vt == DataType::Double) {
    fallback = scalar_of<double>(vt, -0.0);
  } else if (vt == DataType::Int64) {
    fallback = scalar_of<int64_t>(vt, ctx.attr_int("default_int64", -1));
  } else if (vt == DataType::Int32) {
    fallback = scalar_of<int32_t>(vt, -1);
  } else {
    fallback = scalar_of<int16_t>(vt, -1);
  }

  // Position of each input element's key in keys (the last duplicate wins), or kNotFound.
  std::vector<size_t> pos(x.element_count(), kNotFound);
  if (x.is_string()) {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < keys.element_count(); ++i) index[keys.strings()[i]] = i;
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(x.strings()[i]);
      if (it != index.end()) pos[i] = it->second;
    }
  } else {
    const bool nan_matches = v4 && is_float_key(x.dtype());
    std::map<uint64_t, size_t> index;
    for (size_t i = 0; i < keys.element_count(); ++i) index[numeric_key(keys, i, nan_matches)] = i;
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(numeric_key(x, i, nan_matches));
      if (it != index.end()) pos[i] = it->second;
    }
  }

  Tensor& y = allocate_any(ctx, 0, vt, x.shape());
  const uint64_t eb = element_bytes(vt);
  StringBudget budget(&ctx);
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    if (pos[i] == kNotFound) copy_element(fallback, 0, y, i, eb, budget);
    else copy_element(values, pos[i], y, i, eb, budget);
  }
}

// --- ArrayFeatureExtractor (1) ------------------------------------------------------
// Gathers the given indices along the last axis; a 1-D input gives a [1, K] output
// (as onnxruntime does; the spec leaves the rank open).
void ArrayFeatureExtractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const DataType t = x.dtype();
  if (t != DataType::Float && t != DataType::Double && t != DataType::Int64 && t != DataType::Int32 && t != DataType::String)
    ctx.fail("does not support element type " + std::string(dtype_name(t)));
  if (idx.dtype() != DataType::Int64) ctx.fail("indices must be int64");
  if (x.rank() < 1) ctx.fail("input must have rank >= 1");
  const int64_t last = x.shape().back();
  std::vector<int64_t> indices(idx.element_count());
  for (uint64_t i = 0; i < idx.element_count(); ++i) {
    indices[i] = load<int64_t>(idx, i);
    if (indices[i] < 0 || indices[i] >= last)
      ctx.fail("index " + std::to_string(indices[i]) + " is out of range for a last axis of size " + std::to_string(last));
  }
  const auto k = static_cast<int64_t>(indices.size());
  Shape out_shape = x.rank() == 1 ? Shape{1, k} : Shape(x.shape().begin(), x.shape().end() - 1);
  if (x.rank() > 1) out_shape.push_back(k);
  const uint64_t rows = last == 0 ? 0 : x.element_count() / static_cast<uint64_t>(last);
  Tensor& y = allocate_any(ctx, 0, t, out_shape);
  const uint64_t eb = element_bytes(t);
  StringBudget budget(&ctx);
  for (uint64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      copy_element(x, r * static_cast<uint64_t>(last) + static_cast<uint64_t>(indices[static_cast<size_t>(j)]), y,
                   r * static_cast<uint64_t>(k) + static_cast<uint64_t>(j), eb, budget);
}

// --- Binarizer (1) -----------------------------------------------------------------
void Binarizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double threshold = ctx.attr_float("threshold", 0.0f);
  if (x.dtype() != DataType::Float && x.dtype() != DataType::Double && x.dtype() != DataType::Int64 && x.dtype() != DataType::Int32)
    ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats | kSignedInts>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i)
      put<S>(y, i, static_cast<compute_t<S>>(static_cast<double>(get<S>(x, i)) > threshold ? 1 : 0));
  });
}

// --- TreeEnsemble (5) --------------------------------------------------------------

enum class NodeMode : uint8_t { LEQ = 0, LT = 1, GTE = 2, GT = 3, EQ = 4, NEQ = 5, MEMBER = 6 };

std::vector<double> tensor_attr_values(KernelContext& ctx, const char* name, bool required) {
  const Tensor* t = ctx.attr_tensor(name);
  if (t == nullptr) {
    if (required) ctx.fail(std::string("missing required attribute '") + name + "'");
    return {};
  }
  if (t->is_string()) ctx.fail(std::string("attribute '") + name + "' must be numeric");
  return real_values(*t);
}

// Inverse error function by Newton's method on std::erf (for the PROBIT transform).
double erf_inv(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == -1.0) return -std::numeric_limits<double>::infinity();
  if (y == 1.0) return std::numeric_limits<double>::infinity();
  // Starting point from Giles' single-precision approximation.
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x = w < 5.0 ? y * (1.0 + 0.3 * w) * 0.886 : y * std::sqrt(w) * 0.8;
  for (int k = 0; k < 60; ++k) {
    const double err = std::erf(x) - y;
    const double step = err / (2.0 / std::sqrt(3.14159265358979323846) * std::exp(-x * x));
    x -= step;
    if (std::abs(step) <= 1e-16 * std::max(1.0, std::abs(x))) break;
  }
  return x;
}

void TreeEnsemble(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float && x.dtype() != DataType::Double && x.dtype() != DataType::Float16)
    ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  if (x.rank() != 2) ctx.fail("input must be 2-D [N, F], got " + shape_to_string(x.shape()));
  const int64_t rows = x.shape()[0], features = x.shape()[1];

  const std::vector<int64_t> feature_ids = ctx.attr_ints("nodes_featureids");
  const std::vector<int64_t> true_ids = ctx.attr_ints("nodes_truenodeids");
  const std::vector<int64_t> false_ids = ctx.attr_ints("nodes_falsenodeids");
  const std::vector<int64_t> true_leafs = ctx.attr_ints("nodes_trueleafs");
  const std::vector<int64_t> false_leafs = ctx.attr_ints("nodes_falseleafs");
  const std::vector<int64_t> tracks_true = ctx.attr_ints("nodes_missing_value_tracks_true");
  const std::vector<int64_t> leaf_targets = ctx.attr_ints("leaf_targetids");
  const std::vector<int64_t> roots = ctx.attr_ints("tree_roots");
  const std::vector<double> splits = tensor_attr_values(ctx, "nodes_splits", true);
  const std::vector<double> modes_d = tensor_attr_values(ctx, "nodes_modes", true);
  const std::vector<double> leaf_weights = tensor_attr_values(ctx, "leaf_weights", true);
  const std::vector<double> members = tensor_attr_values(ctx, "membership_values", false);
  const int64_t n_targets = ctx.attr_int("n_targets", 0);
  const int64_t aggregate = ctx.attr_int("aggregate_function", 1);
  const int64_t post = ctx.attr_int("post_transform", 0);

  const size_t n_nodes = feature_ids.size();
  for (size_t len : {true_ids.size(), false_ids.size(), true_leafs.size(), false_leafs.size(), splits.size(), modes_d.size()})
    if (len != n_nodes) ctx.fail("all nodes_* attributes must have the same length");
  if (!tracks_true.empty() && tracks_true.size() != n_nodes) ctx.fail("nodes_missing_value_tracks_true must match the nodes' count");
  if (leaf_targets.size() != leaf_weights.size()) ctx.fail("leaf_targetids and leaf_weights must have the same length");
  if (n_targets < 1) ctx.fail("n_targets must be >= 1");
  if (aggregate < 0 || aggregate > 3) ctx.fail("aggregate_function must be 0..3");
  if (post < 0 || post > 4) ctx.fail("post_transform must be 0..4");
  for (int64_t t : leaf_targets)
    if (t < 0 || t >= n_targets) ctx.fail("leaf_targetids must lie in [0, n_targets)");

  std::vector<NodeMode> modes(n_nodes);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!(modes_d[i] >= 0 && modes_d[i] <= 6)) ctx.fail("nodes_modes must lie in 0..6");
    modes[i] = static_cast<NodeMode>(static_cast<int>(modes_d[i]));
    if (feature_ids[i] < 0 || feature_ids[i] >= features) ctx.fail("nodes_featureids must lie in [0, F)");
    const bool leaf_t = true_leafs[i] != 0, leaf_f = false_leafs[i] != 0;
    const auto bound_t = static_cast<int64_t>(leaf_t ? leaf_weights.size() : n_nodes);
    const auto bound_f = static_cast<int64_t>(leaf_f ? leaf_weights.size() : n_nodes);
    if (true_ids[i] < 0 || true_ids[i] >= bound_t || false_ids[i] < 0 || false_ids[i] >= bound_f)
      ctx.fail("node " + std::to_string(i) + " branches to an index out of range");
  }
  for (int64_t r : roots)
    if (r < 0 || r >= static_cast<int64_t>(n_nodes)) ctx.fail("tree_roots must index nodes");

  // Set members of each BRANCH_MEMBER node, in node order, NaN-delimited.
  std::vector<std::vector<double>> member_sets(n_nodes);
  size_t m = 0;
  for (size_t i = 0; i < n_nodes; ++i) {
    if (modes[i] != NodeMode::MEMBER) continue;
    if (m >= members.size()) ctx.fail("membership_values has fewer sets than there are BRANCH_MEMBER nodes");
    while (m < members.size() && !std::isnan(members[m])) member_sets[i].push_back(members[m++]);
    ++m;  // the NaN delimiter
  }

  std::vector<double> xs = real_values(x);
  // Accumulate in double; the result is rounded to the input type.
  check_work_buffer(ctx, {static_cast<int64_t>(rows), static_cast<int64_t>(n_targets)}, "the output");
  std::vector<double> result(static_cast<size_t>(rows * n_targets));
  std::vector<bool> hit(result.size(), false);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = xs.data() + r * features;
    double* out = result.data() + r * n_targets;
    for (int64_t root : roots) {
      auto node = static_cast<size_t>(root);
      size_t leaf = 0;
      for (size_t steps = 0;; ++steps) {
        if (steps > n_nodes) ctx.fail("tree starting at node " + std::to_string(root) + " has a cycle");
        const double v = row[feature_ids[node]];
        const double s = splits[node];
        bool go_true = false;
        switch (modes[node]) {
          case NodeMode::LEQ: go_true = v <= s; break;
          case NodeMode::LT: go_true = v < s; break;
          case NodeMode::GTE: go_true = v >= s; break;
          case NodeMode::GT: go_true = v > s; break;
          case NodeMode::EQ: go_true = v == s; break;
          case NodeMode::NEQ: go_true = v != s; break;
          case NodeMode::MEMBER:
            go_true = std::find(member_sets[node].begin(), member_sets[node].end(), v) != member_sets[node].end();
            break;
        }
        if (std::isnan(v) && !tracks_true.empty() && tracks_true[node] != 0) go_true = true;
        const int64_t next = go_true ? true_ids[node] : false_ids[node];
        if ((go_true ? true_leafs[node] : false_leafs[node]) != 0) {
          leaf = static_cast<size_t>(next);
          break;
        }
        node = static_cast<size_t>(next);
      }
      const auto t = static_cast<size_t>(leaf_targets[leaf]);
      const double w = leaf_weights[leaf];
      const size_t oi = static_cast<size_t>(r * n_targets) + t;
      switch (aggregate) {
        case 0:  // AVERAGE
        case 1:  // SUM
          out[t] += w;
          break;
        case 2: out[t] = hit[oi] ? std::min(out[t], w) : w; break;  // MIN
        default: out[t] = hit[oi] ? std::max(out[t], w) : w; break;  // MAX
      }
      hit[oi] = true;
    }
    if (aggregate == 0 && !roots.empty())
      for (int64_t t = 0; t < n_targets; ++t) out[t] /= static_cast<double>(roots.size());
    // A target that no leaf reached stays 0 under MIN / MAX too (as with SUM,
    // and as onnxruntime does; onnx's Python reference leaves the type's max/lowest).
    // Post transform over the targets of the row.
    if (post == 1 || post == 3) {  // SOFTMAX, SOFTMAX_ZERO (zeros stay zero)
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t t = 0; t < n_targets; ++t)
        if (post == 1 || out[t] != 0.0) top = std::max(top, out[t]);
      double sum = 0;
      for (int64_t t = 0; t < n_targets; ++t) {
        if (post == 3 && out[t] == 0.0) continue;
        out[t] = std::exp(out[t] - top);
        sum += out[t];
      }
      for (int64_t t = 0; t < n_targets; ++t)
        if (!(post == 3 && out[t] == 0.0)) out[t] /= sum;
    } else if (post == 2) {  // LOGISTIC
      for (int64_t t = 0; t < n_targets; ++t) out[t] = 1.0 / (1.0 + std::exp(-out[t]));
    } else if (post == 4) {  // PROBIT
      for (int64_t t = 0; t < n_targets; ++t) out[t] = std::sqrt(2.0) * erf_inv(2.0 * out[t] - 1.0);
    }
  }

  Tensor& y = ctx.allocate_output(0, x.dtype(), {rows, n_targets});
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.element_count(); ++i) put<S>(y, i, static_cast<compute_t<S>>(result[i]));
  });
}

// --- ai.onnx.preview.training ----------------------------------------------------
// Inputs R, T, then `groups` lists of n tensors (X..., G..., ...); outputs are
// `outs` lists of n tensors. Each update is computed in double per element
// with numpy broadcasting of the n-th tensors of the lists, and rounded to X's type.

struct Optimizer {
  double r = 0;
  int64_t t = 0;
  size_t n = 0;
};

Optimizer optimizer_inputs(KernelContext& ctx, size_t groups, size_t outs) {
  const size_t count = ctx.input_count();
  if (count < 2 + groups || (count - 2) % groups != 0)
    ctx.fail("expects R, T and " + std::to_string(groups) + " equally long lists of tensors");
  Optimizer o;
  o.n = (count - 2) / groups;
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (r.element_count() != 1 || (r.dtype() != DataType::Float && r.dtype() != DataType::Double))
    ctx.fail("R must be a float or double scalar");
  if (t.element_count() != 1 || t.dtype() != DataType::Int64) ctx.fail("T must be an int64 scalar");
  o.r = r.element_as_double(0);
  o.t = load<int64_t>(t, 0);
  if (ctx.output_count() > outs * o.n) ctx.fail("too many outputs");
  return o;
}

// Runs update(values_in, values_out) per element over inputs 2 + g*n + i.
template <size_t G, size_t O, typename Update>
void optimizer_apply(KernelContext& ctx, const Optimizer& o, Update update) {
  for (size_t i = 0; i < o.n; ++i) {
    const Tensor* in[G];
    const Shape* shapes[G];
    for (size_t g = 0; g < G; ++g) {
      in[g] = &ctx.input(2 + g * o.n + i);
      shapes[g] = &in[g]->shape();
      if (in[g]->dtype() != in[0]->dtype()) ctx.fail("X, G and the state tensors must have the same type");
    }
    const DataType type = in[0]->dtype();
    if (type != DataType::Float && type != DataType::Double) ctx.fail("tensors must be float or double");
    const Shape out_shape = broadcast_shapes(ctx, shapes);
    Tensor out[O];
    for (size_t k = 0; k < O; ++k) out[k] = Tensor::zeros(type, out_shape);
    BroadcastIndex bi(out_shape, shapes);
    double vin[G], vout[O];
    for (uint64_t e = 0; e < out[0].element_count(); ++e, bi.next()) {
      for (size_t g = 0; g < G; ++g)
        vin[g] = type == DataType::Float ? static_cast<double>(load<float>(*in[g], bi.offsets()[g])) : load<double>(*in[g], bi.offsets()[g]);
      update(vin, vout);
      for (size_t k = 0; k < O; ++k) {
        if (type == DataType::Float) store<float>(out[k], e, static_cast<float>(vout[k]));
        else store<double>(out[k], e, vout[k]);
      }
    }
    for (size_t k = 0; k < O; ++k)
      if (k * o.n + i < ctx.output_count()) ctx.set_output(k * o.n + i, std::move(out[k]));
  }
}

void Adagrad(KernelContext& ctx) {
  const Optimizer o = optimizer_inputs(ctx, 3, 2);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f), decay = ctx.attr_float("decay_factor", 0.0f),
               eps = ctx.attr_float("epsilon", 1e-6f);
  const double r = o.r / (1.0 + static_cast<double>(o.t) * decay);
  optimizer_apply<3, 2>(ctx, o, [&](const double* v, double* out) {
    const double x = v[0], g = norm * x + v[1], h = v[2] + g * g;
    out[0] = x - r * g / (std::sqrt(h) + eps);
    out[1] = h;
  });
}

void Adam(KernelContext& ctx) {
  const Optimizer o = optimizer_inputs(ctx, 4, 3);
  const double alpha = ctx.attr_float("alpha", 0.9f), beta = ctx.attr_float("beta", 0.999f),
               eps = ctx.attr_float("epsilon", 1e-6f), norm = ctx.attr_float("norm_coefficient", 0.0f),
               norm_post = ctx.attr_float("norm_coefficient_post", 0.0f);
  const double t = static_cast<double>(o.t);
  const double r = o.t > 0 ? o.r * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t)) : o.r;
  optimizer_apply<4, 3>(ctx, o, [&](const double* v, double* out) {
    const double x = v[0], g = norm * x + v[1];
    const double vn = alpha * v[2] + (1.0 - alpha) * g;
    const double hn = beta * v[3] + (1.0 - beta) * g * g;
    out[0] = (1.0 - norm_post) * (x - r * vn / (std::sqrt(hn) + eps));
    out[1] = vn;
    out[2] = hn;
  });
}

void Momentum(KernelContext& ctx) {
  const Optimizer o = optimizer_inputs(ctx, 3, 2);
  const double alpha = ctx.required_attr("alpha").f, beta = ctx.required_attr("beta").f,
               norm = ctx.required_attr("norm_coefficient").f;
  const std::string mode = ctx.required_attr("mode").s;
  if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be 'standard' or 'nesterov', got '" + mode + "'");
  const bool nesterov = mode == "nesterov";
  const double beta_adj = o.t > 0 ? beta : 1.0;
  optimizer_apply<3, 2>(ctx, o, [&](const double* v, double* out) {
    const double x = v[0], g = norm * x + v[1];
    const double vn = alpha * v[2] + beta_adj * g;
    out[0] = nesterov ? x - o.r * (g + alpha * vn) : x - o.r * vn;
    out[1] = vn;
  });
}

}  // namespace

void register_text_random_ml_ml_ops(KernelRegistry& r) {
  auto add = [&](const char* domain, const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{domain, op, since, until, "reference", fn, nullptr});
  };
  add("ai.onnx.ml", "LabelEncoder", LabelEncoderV1, 1, 1);
  add("ai.onnx.ml", "LabelEncoder", LabelEncoder, 2);
  add("ai.onnx.ml", "ArrayFeatureExtractor", ArrayFeatureExtractor, 1);
  add("ai.onnx.ml", "Binarizer", Binarizer, 1);
  add("ai.onnx.ml", "TreeEnsemble", TreeEnsemble, 5);
  add("ai.onnx.preview.training", "Adagrad", Adagrad, 1);
  add("ai.onnx.preview.training", "Adam", Adam, 1);
  add("ai.onnx.preview.training", "Momentum", Momentum, 1);
}

}  // namespace onnxscope::ref
