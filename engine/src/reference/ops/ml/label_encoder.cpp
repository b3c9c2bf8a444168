// Reference kernels: ai.onnx.ml LabelEncoder (opset 1, and opsets 2 to 4).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

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

}  // namespace

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

}  // namespace onnxscope::ref
