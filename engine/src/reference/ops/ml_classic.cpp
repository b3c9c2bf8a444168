// Reference kernels of the classic ai.onnx.ml preprocessing operators:
// CastMap, CategoryMapper, DictVectorizer, FeatureVectorizer, Imputer,
// Normalizer, OneHotEncoder, Scaler, ZipMap. The model operators (linear,
// SVM, tree ensembles) are in ml_classic_models.cpp.
//
// Where the spec leaves a detail open these kernels follow onnxruntime, the
// implementation these operators were written for (each such place says so).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml_classic_parts.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

// --- helpers shared with ml_classic_models.cpp ------------------------------------

bool ml_numeric_input(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Int64 || t == DataType::Int32;
}

std::vector<double> ml_input_values(const KernelContext& ctx, const Tensor& x) {
  if (!ml_numeric_input(x.dtype()))
    ctx.fail("input must be float, double, int64 or int32, got " + std::string(dtype_name(x.dtype())));
  return real_values(x);
}

MlRows ml_rows(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() == 1) return {1, x.shape()[0]};
  if (x.rank() == 2) return {x.shape()[0], x.shape()[1]};
  ctx.fail("input must be 1-D [C] or 2-D [N, C], got " + shape_to_string(x.shape()));
}

namespace {

// A string output of empty strings, its element count bounded like any other output.
Tensor& allocate_strings(KernelContext& ctx, size_t i, Shape s) {
  const auto count = checked_element_count(s);
  if (!count || *count > ctx.max_tensor_bytes() / sizeof(std::string))
    ctx.fail("string output of shape " + shape_to_string(s) + " is too large");
  const uint64_t n = *count;
  ctx.set_output(i, Tensor::from_strings(std::move(s), std::vector<std::string>(n)));
  return ctx.output(i).tensor();
}

// --- CastMap (1) ----------------------------------------------------------------------
// map(int64 -> string | float) to a [1, K] tensor of the values in ascending key
// order (DENSE: K = map size; SPARSE: K = max_map, the key is the column).
// The output is [1, K] as in onnxruntime (the spec gives no rank).

// The numbers a string value stands for (the whole string must parse).
double parse_number(const KernelContext& ctx, const std::string& s) {
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0') ctx.fail("map value '" + s + "' is not a number");
  return v;
}

void CastMap(KernelContext& ctx) {
  const Value* in = ctx.input_value(0);
  if (in == nullptr || !in->is_map()) ctx.fail("input must be a map(int64, string|float)");
  const Tensor& keys = in->map_keys();
  const Tensor& vals = in->map_values();
  if (keys.dtype() != DataType::Int64) ctx.fail("map keys must be int64");
  if (vals.dtype() != DataType::String && vals.dtype() != DataType::Float)
    ctx.fail("map values must be string or float, got " + std::string(dtype_name(vals.dtype())));
  const std::string cast_to = ctx.attr_string("cast_to", "TO_FLOAT");
  const std::string form = ctx.attr_string("map_form", "DENSE");
  if (cast_to != "TO_FLOAT" && cast_to != "TO_STRING" && cast_to != "TO_INT64")
    ctx.fail("cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got '" + cast_to + "'");
  if (form != "DENSE" && form != "SPARSE") ctx.fail("map_form must be DENSE or SPARSE, got '" + form + "'");

  // Entry order by ascending key (a later duplicate key replaces an earlier one).
  std::map<int64_t, uint64_t> order;
  for (uint64_t i = 0; i < keys.element_count(); ++i) order[load<int64_t>(keys, i)] = i;

  const bool sparse = form == "SPARSE";
  int64_t width = static_cast<int64_t>(order.size());
  if (sparse) {
    width = ctx.attr_int("max_map", 1);
    if (width < 0) ctx.fail("max_map must be >= 0");
    for (const auto& [k, i] : order)
      if (k < 0 || k >= width)
        ctx.fail("map key " + std::to_string(k) + " is outside [0, max_map) = [0, " + std::to_string(width) + ")");
  }
  // Output column of each entry, in key order.
  std::vector<std::pair<int64_t, uint64_t>> cols;
  int64_t c = 0;
  for (const auto& [k, i] : order) cols.emplace_back(sparse ? k : c++, i);

  const bool from_string = vals.is_string();
  if (cast_to == "TO_STRING") {
    // Floats print like C's "%f"; columns no key fills hold "0.f" (onnxruntime's pad value).
    Tensor& y = allocate_strings(ctx, 0, {1, width});
    std::fill(y.mutable_strings().begin(), y.mutable_strings().end(), std::string("0.f"));
    StringBudget budget(&ctx);
    for (const auto& [col, i] : cols) {
      if (from_string) {
        budget.add(vals.strings()[i]);
        y.mutable_strings()[col] = vals.strings()[i];
      } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%f", static_cast<double>(load<float>(vals, i)));
        y.mutable_strings()[col] = buf;
      }
    }
  } else {
    const bool to_float = cast_to == "TO_FLOAT";
    Tensor& y = ctx.allocate_output(0, to_float ? DataType::Float : DataType::Int64, {1, width});
    for (const auto& [col, i] : cols) {
      const double v = from_string ? parse_number(ctx, vals.strings()[i]) : static_cast<double>(load<float>(vals, i));
      if (to_float) {
        store<float>(y, col, static_cast<float>(v));
      } else {
        if (!(v > -9.3e18 && v < 9.3e18)) ctx.fail("map value does not fit in int64");
        store<int64_t>(y, col, static_cast<int64_t>(v));  // truncates toward zero
      }
    }
  }
}

// --- CategoryMapper (1) ------------------------------------------------------------------
// strings -> int64 (default_int64) or int64 -> strings (default_string), by the
// pairs (cats_strings[i], cats_int64s[i]); for a repeated key the last pair wins.
void CategoryMapper(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<std::string> strs = ctx.attr_strings("cats_strings");
  const std::vector<int64_t> ints = ctx.attr_ints("cats_int64s");
  if (strs.size() != ints.size())
    ctx.fail("cats_strings and cats_int64s must have the same length (" + std::to_string(strs.size()) + " vs " +
             std::to_string(ints.size()) + ")");
  if (x.is_string()) {
    std::map<std::string, int64_t> index;
    for (size_t i = 0; i < strs.size(); ++i) index[strs[i]] = ints[i];
    const int64_t fallback = ctx.attr_int("default_int64", -1);
    Tensor& y = ctx.allocate_output(0, DataType::Int64, x.shape());
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(x.strings()[i]);
      store<int64_t>(y, i, it == index.end() ? fallback : it->second);
    }
  } else if (x.dtype() == DataType::Int64) {
    std::map<int64_t, std::string> index;
    for (size_t i = 0; i < ints.size(); ++i) index[ints[i]] = strs[i];
    const std::string fallback = ctx.attr_string("default_string", "_Unused");
    Tensor& y = allocate_strings(ctx, 0, x.shape());
    StringBudget budget(&ctx);
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(load<int64_t>(x, i));
      const std::string& s = it == index.end() ? fallback : it->second;
      budget.add(s);
      y.mutable_strings()[i] = s;
    }
  } else {
    ctx.fail("input must be string or int64, got " + std::string(dtype_name(x.dtype())));
  }
}

// --- DictVectorizer (1) ------------------------------------------------------------------
// A map's values placed at their keys' positions in the vocabulary, as a 1-D
// tensor of the vocabulary's length (the spec's "output 1-D tensor"; onnxruntime
// returns [1, V]). Keys outside the vocabulary are ignored, as in both onnx's
// Python reference and onnxruntime. A sequence of maps gives one row per map.
void DictVectorizer(KernelContext& ctx) {
  const Value* in = ctx.input_value(0);
  if (in == nullptr || (!in->is_map() && !in->is_sequence())) ctx.fail("input must be a map");
  const bool has_int = ctx.has_attr("int64_vocabulary"), has_str = ctx.has_attr("string_vocabulary");
  if (has_int == has_str) ctx.fail("exactly one of int64_vocabulary and string_vocabulary must be given");
  std::map<int64_t, int64_t> int_pos;
  std::map<std::string, int64_t> str_pos;
  int64_t vocab = 0;
  if (has_int) {
    const std::vector<int64_t> v = ctx.attr_ints("int64_vocabulary");
    vocab = static_cast<int64_t>(v.size());
    for (size_t i = v.size(); i-- > 0;) int_pos[v[i]] = static_cast<int64_t>(i);  // first occurrence wins
  } else {
    const std::vector<std::string> v = ctx.attr_strings("string_vocabulary");
    vocab = static_cast<int64_t>(v.size());
    for (size_t i = v.size(); i-- > 0;) str_pos[v[i]] = static_cast<int64_t>(i);
  }

  std::vector<const Value*> maps;
  if (in->is_map()) {
    maps.push_back(in);
  } else {
    for (const Value& item : in->items()) {
      if (!item.is_map()) ctx.fail("input sequence must hold maps");
      maps.push_back(&item);
    }
    if (maps.empty()) ctx.fail("input sequence of maps is empty: the value type is unknown");
  }
  const DataType vt = maps.front()->map_values().dtype();
  if (vt != DataType::Int64 && vt != DataType::Float && vt != DataType::Double && vt != DataType::String)
    ctx.fail("map values must be int64, float, double or string, got " + std::string(dtype_name(vt)));
  const auto rows = static_cast<int64_t>(maps.size());
  Shape out_shape = in->is_map() ? Shape{vocab} : Shape{rows, vocab};
  Tensor& y = vt == DataType::String ? allocate_strings(ctx, 0, out_shape) : ctx.allocate_output(0, vt, out_shape);
  const uint64_t eb = vt == DataType::String ? 0 : storage_bytes(vt, 1).value_or(0);
  StringBudget budget(&ctx);
  for (int64_t r = 0; r < rows; ++r) {
    const Tensor& keys = maps[r]->map_keys();
    const Tensor& vals = maps[r]->map_values();
    if (vals.dtype() != vt) ctx.fail("all maps must have the same value type");
    if (keys.is_string() != has_str)
      ctx.fail(std::string("map keys must be ") + (has_str ? "strings (string_vocabulary)" : "int64 (int64_vocabulary)"));
    for (uint64_t i = 0; i < keys.element_count(); ++i) {
      int64_t col = -1;
      if (has_str) {
        const auto it = str_pos.find(keys.strings()[i]);
        if (it != str_pos.end()) col = it->second;
      } else {
        const auto it = int_pos.find(load<int64_t>(keys, i));
        if (it != int_pos.end()) col = it->second;
      }
      if (col < 0) continue;
      const uint64_t o = static_cast<uint64_t>(r * vocab + col);
      if (vt == DataType::String) {
        budget.add(vals.strings()[i]);
        y.mutable_strings()[o] = vals.strings()[i];
      }
      else std::memcpy(y.mutable_raw() + o * eb, vals.raw() + i * eb, eb);
    }
  }
}

// --- FeatureVectorizer (1) -------------------------------------------------------------------
// Concatenates the inputs' rows into [N, sum(inputdimensions)] floats; input k
// contributes inputdimensions[k] columns, truncated or zero-padded. A 1-D input
// is one row [1, C]; higher ranks are flattened after the first axis (as onnxruntime).
void FeatureVectorizer(KernelContext& ctx) {
  const size_t n_inputs = ctx.input_count();
  const std::vector<int64_t> dims = ctx.attr_ints("inputdimensions");
  if (n_inputs == 0) ctx.fail("needs at least one input");
  if (dims.size() != n_inputs)
    ctx.fail("inputdimensions has " + std::to_string(dims.size()) + " entries for " + std::to_string(n_inputs) + " inputs");
  int64_t total = 0;
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("inputdimensions must be >= 0");
    total += d;
  }
  int64_t rows = -1;
  for (size_t k = 0; k < n_inputs; ++k) {
    const Tensor& x = ctx.input(k);
    if (!ml_numeric_input(x.dtype())) ctx.fail("inputs must be int32, int64, float or double");
    if (x.rank() == 0) ctx.fail("input " + std::to_string(k) + " must have rank >= 1");
    const int64_t n = x.rank() == 1 ? 1 : x.shape()[0];
    if (rows >= 0 && n != rows) ctx.fail("inputs have different batch sizes (" + std::to_string(rows) + " and " + std::to_string(n) + ")");
    rows = n;
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rows, total});
  int64_t col0 = 0;
  for (size_t k = 0; k < n_inputs; ++k) {
    const Tensor& x = ctx.input(k);
    const std::vector<double> v = real_values(x);
    const int64_t width = rows == 0 ? 0 : static_cast<int64_t>(x.element_count()) / rows;
    const int64_t take = std::min(width, dims[k]);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < take; ++c) store<float>(y, r * total + col0 + c, static_cast<float>(v[r * width + c]));
    col0 += dims[k];
  }
}

// --- Imputer (1) ------------------------------------------------------------------------------
// Elements equal to the replaced value (NaN matches NaN) become the imputed
// value of their column (the last axis); one imputed value applies to all columns.
void Imputer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ml_numeric_input(x.dtype()))
    ctx.fail("input must be float, double, int64 or int32, got " + std::string(dtype_name(x.dtype())));
  const bool is_float = x.dtype() == DataType::Float || x.dtype() == DataType::Double;
  if (x.rank() < 1) ctx.fail("input must have rank >= 1");
  const int64_t f = x.shape().back();
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  if (is_float) {
    const std::vector<float> imputed = ctx.attr_floats("imputed_value_floats");
    if (imputed.empty()) ctx.fail("imputed_value_floats must be given for a float input");
    if (imputed.size() != 1 && static_cast<int64_t>(imputed.size()) != f)
      ctx.fail("imputed_value_floats must have 1 or " + std::to_string(f) + " values, has " + std::to_string(imputed.size()));
    const double replaced = ctx.attr_float("replaced_value_float", 0.0f);
    dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        const double v = static_cast<double>(get<S>(x, i));
        const bool hit = std::isnan(replaced) ? std::isnan(v) : v == replaced;
        const double r = imputed.size() == 1 ? imputed[0] : imputed[static_cast<size_t>(static_cast<int64_t>(i) % f)];
        put<S>(y, i, static_cast<compute_t<S>>(hit ? r : v));
      }
    });
  } else {
    const std::vector<int64_t> imputed = ctx.attr_ints("imputed_value_int64s");
    if (imputed.empty()) ctx.fail("imputed_value_int64s must be given for an integer input");
    if (imputed.size() != 1 && static_cast<int64_t>(imputed.size()) != f)
      ctx.fail("imputed_value_int64s must have 1 or " + std::to_string(f) + " values, has " + std::to_string(imputed.size()));
    const int64_t replaced = ctx.attr_int("replaced_value_int64", 0);
    dispatch<kSignedInts>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        const int64_t v = load<S>(x, i);
        const int64_t r = imputed.size() == 1 ? imputed[0] : imputed[static_cast<size_t>(static_cast<int64_t>(i) % f)];
        store<S>(y, i, static_cast<S>(v == replaced ? r : v));  // imputed values must fit the type (spec)
      }
    });
  }
}

// --- Normalizer (1) ------------------------------------------------------------------------------
// Per row of [N, C] (a 1-D input is one row), in double, rounded to float:
// MAX: x / max(x); L1: x / sum(|x|); L2: x / sqrt(sum(x^2)) (the spec's
// sqrt(x^2 / sum(x^2)) with the sign of x kept). A zero divisor leaves the row as is.
// MAX divides by the largest value, not the largest magnitude (the spec and
// onnxruntime; onnx's Python reference uses max |x|).
void Normalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string norm = ctx.attr_string("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") ctx.fail("norm must be MAX, L1 or L2, got '" + norm + "'");
  const std::vector<double> v = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = v.data() + r * rc.cols;
    double div = 0;
    if (norm == "MAX") {
      div = rc.cols > 0 ? *std::max_element(row, row + rc.cols) : 0.0;
    } else if (norm == "L1") {
      for (int64_t c = 0; c < rc.cols; ++c) div += std::abs(row[c]);
    } else {
      for (int64_t c = 0; c < rc.cols; ++c) div += row[c] * row[c];
      div = std::sqrt(div);
    }
    for (int64_t c = 0; c < rc.cols; ++c)
      store<float>(y, r * rc.cols + c, static_cast<float>(div == 0 ? row[c] : row[c] / div));
  }
}

// --- OneHotEncoder (1) ---------------------------------------------------------------------------
// Output shape: the input's shape plus a last axis of the category count.
// Numeric inputs are cast to int64 (truncation) before the lookup.
void OneHotEncoder(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool has_int = ctx.has_attr("cats_int64s"), has_str = ctx.has_attr("cats_strings");
  if (has_int == has_str) ctx.fail("exactly one of cats_int64s and cats_strings must be given");
  const bool zeros = ctx.attr_int("zeros", 1) != 0;
  std::map<int64_t, int64_t> int_pos;
  std::map<std::string, int64_t> str_pos;
  int64_t n_cats = 0;
  if (has_int) {
    const std::vector<int64_t> c = ctx.attr_ints("cats_int64s");
    n_cats = static_cast<int64_t>(c.size());
    for (size_t i = c.size(); i-- > 0;) int_pos[c[i]] = static_cast<int64_t>(i);
  } else {
    const std::vector<std::string> c = ctx.attr_strings("cats_strings");
    n_cats = static_cast<int64_t>(c.size());
    for (size_t i = c.size(); i-- > 0;) str_pos[c[i]] = static_cast<int64_t>(i);
  }
  if (x.is_string() != has_str)
    ctx.fail(has_str ? "cats_strings needs a string input" : "cats_int64s needs a numeric input");
  std::vector<double> v;
  if (!x.is_string()) v = ml_input_values(ctx, x);
  Shape out_shape = x.shape();
  out_shape.push_back(n_cats);
  Tensor& y = ctx.allocate_output(0, DataType::Float, out_shape);
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    int64_t pos = -1;
    if (has_str) {
      const auto it = str_pos.find(x.strings()[i]);
      if (it != str_pos.end()) pos = it->second;
    } else if (std::isfinite(v[i]) && std::abs(v[i]) < 9.2e18) {
      const auto it = int_pos.find(static_cast<int64_t>(v[i]));
      if (it != int_pos.end()) pos = it->second;
    }
    if (pos >= 0) store<float>(y, i * static_cast<uint64_t>(n_cats) + static_cast<uint64_t>(pos), 1.0f);
    else if (!zeros) ctx.fail("input element " + std::to_string(i) + " is not one of the categories (zeros=0)");
  }
}

// --- Scaler (1) ----------------------------------------------------------------------------------
// Y = (X - offset) * scale as float; offset and scale have one value for all
// elements or one per column (the last axis), and the same length (spec).
void Scaler(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<float> offset = ctx.attr_floats("offset");
  const std::vector<float> scale = ctx.attr_floats("scale");
  if (offset.empty() || scale.empty()) ctx.fail("offset and scale must be given");
  if (offset.size() != scale.size())
    ctx.fail("offset and scale must have the same length (" + std::to_string(offset.size()) + " vs " + std::to_string(scale.size()) + ")");
  const std::vector<double> v = ml_input_values(ctx, x);
  const int64_t f = x.rank() == 0 ? 1 : x.shape().back();
  if (offset.size() != 1 && static_cast<int64_t>(offset.size()) != f)
    ctx.fail("offset and scale must have 1 or " + std::to_string(f) + " values, have " + std::to_string(offset.size()));
  Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
  for (uint64_t i = 0; i < v.size(); ++i) {
    const size_t k = offset.size() == 1 ? 0 : static_cast<size_t>(static_cast<int64_t>(i) % f);
    store<float>(y, i, static_cast<float>((v[i] - offset[k]) * scale[k]));
  }
}

// --- ZipMap (1) ----------------------------------------------------------------------------------
// One map per row of [N, C] (a 1-D input is one row), keys = the class labels.
// Map entries are in ascending key order and a repeated label keeps the last
// column, as in onnxruntime (maps are unordered; this fixes one order).
void ZipMap(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float) ctx.fail("input must be float, got " + std::string(dtype_name(x.dtype())));
  const bool has_int = ctx.has_attr("classlabels_int64s"), has_str = ctx.has_attr("classlabels_strings");
  if (has_int == has_str) ctx.fail("exactly one of classlabels_int64s and classlabels_strings must be given");
  const MlRows rc = ml_rows(ctx, x);
  const std::vector<int64_t> ilabels = ctx.attr_ints("classlabels_int64s");
  const std::vector<std::string> slabels = ctx.attr_strings("classlabels_strings");
  const auto n_labels = static_cast<int64_t>(has_int ? ilabels.size() : slabels.size());
  if (n_labels != rc.cols)
    ctx.fail("input has " + std::to_string(rc.cols) + " columns but there are " + std::to_string(n_labels) + " class labels");
  // Column of each map entry, in key order.
  std::vector<int64_t> cols;
  if (has_int) {
    std::map<int64_t, int64_t> m;
    for (int64_t c = 0; c < n_labels; ++c) m[ilabels[c]] = c;
    for (const auto& [k, c] : m) cols.push_back(c);
  } else {
    std::map<std::string, int64_t> m;
    for (int64_t c = 0; c < n_labels; ++c) m[slabels[c]] = c;
    for (const auto& [k, c] : m) cols.push_back(c);
  }
  const auto n = static_cast<int64_t>(cols.size());
  Tensor keys;
  if (has_int) {
    keys = Tensor::zeros(DataType::Int64, {n});
    for (int64_t i = 0; i < n; ++i) store<int64_t>(keys, i, ilabels[cols[i]]);
  } else {
    std::vector<std::string> k;
    for (int64_t c : cols) k.push_back(slabels[c]);
    keys = Tensor::from_strings({n}, std::move(k));
  }
  std::vector<Value> items;
  for (int64_t r = 0; r < rc.rows; ++r) {
    Tensor vals = Tensor::zeros(DataType::Float, {n});
    for (int64_t i = 0; i < n; ++i) store<float>(vals, i, load<float>(x, r * rc.cols + cols[i]));
    items.push_back(Value::map(keys, std::move(vals)));
  }
  TypeInfo elem;
  elem.kind = TypeInfo::Kind::Map;
  elem.map_key = has_int ? DataType::Int64 : DataType::String;
  elem.inner = std::make_shared<TypeInfo>(TypeInfo::tensor(DataType::Float));
  ctx.set_output(0, Value::sequence(std::move(items), std::move(elem)));
}

}  // namespace

void register_ml_classic_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{"ai.onnx.ml", op, since, until, "reference", fn, nullptr});
  };
  add("CastMap", CastMap, 1);
  add("CategoryMapper", CategoryMapper, 1);
  add("DictVectorizer", DictVectorizer, 1);
  add("FeatureVectorizer", FeatureVectorizer, 1);
  add("Imputer", Imputer, 1);
  add("Normalizer", Normalizer, 1);
  add("OneHotEncoder", OneHotEncoder, 1);
  add("Scaler", Scaler, 1);
  add("ZipMap", ZipMap, 1);
  register_ml_classic_models_ops(r);
}

}  // namespace onnxscope::ref
