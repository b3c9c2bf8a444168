#include "onnxscope/conformance/compare.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace onnxscope::conformance {
namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Multi-index of a flat position, for messages: "[1,0,3]".
std::string index_text(const Shape& shape, uint64_t flat) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? static_cast<int64_t>(flat % static_cast<uint64_t>(shape[d])) : 0;
    flat = shape[d] ? flat / static_cast<uint64_t>(shape[d]) : 0;
  }
  return shape_to_string(idx);
}

std::optional<std::string> compare_tensors(const Tensor& e, const Tensor& a, const Tolerance& tol) {
  if (e.dtype() != a.dtype())
    return "dtype " + std::string(dtype_name(a.dtype())) + ", expected " + std::string(dtype_name(e.dtype()));
  if (e.shape() != a.shape()) return "shape " + shape_to_string(a.shape()) + ", expected " + shape_to_string(e.shape());
  const uint64_t n = e.element_count();
  if (e.is_string()) {
    for (uint64_t i = 0; i < n; ++i)
      if (e.strings()[i] != a.strings()[i])
        return "string at " + index_text(e.shape(), i) + " is \"" + a.strings()[i] + "\", expected \"" + e.strings()[i] + "\"";
    return std::nullopt;
  }
  const bool is_float = dtype_info(e.dtype()).is_float;
  const bool is_complex = dtype_info(e.dtype()).is_complex;
  uint64_t bad = 0, worst_i = 0;
  double worst_excess = -1, worst_a = 0, worst_e = 0;
  const uint64_t parts = is_complex ? 2 : 1;
  for (uint64_t i = 0; i < n * parts; ++i) {
    double av, ev;
    if (is_complex) {
      // Compare real and imaginary parts as separate numbers.
      const bool dbl = e.dtype() == DataType::Complex128;
      const size_t w = dbl ? 8 : 4;
      if (dbl) {
        std::memcpy(&av, a.raw() + i * w, w);
        std::memcpy(&ev, e.raw() + i * w, w);
      } else {
        float af, ef;
        std::memcpy(&af, a.raw() + i * w, w);
        std::memcpy(&ef, e.raw() + i * w, w);
        av = af;
        ev = ef;
      }
    } else if (is_float) {
      av = a.element_as_double(i);
      ev = e.element_as_double(i);
    } else {
      // Integers compare exactly (through int64 so uint64 keeps its bits).
      int64_t ai = a.element_as_int64(i), ei = e.element_as_int64(i);
      if (ai != ei) {
        if (bad++ == 0) {
          worst_i = i;
          worst_a = static_cast<double>(ai);
          worst_e = static_cast<double>(ei);
        }
      }
      continue;
    }
    if (std::isnan(av) && std::isnan(ev)) continue;
    if (av == ev) continue;  // equal infinities included
    const double excess = std::fabs(av - ev) - (tol.atol + tol.rtol * std::fabs(ev));
    if (excess > 0 || std::isnan(excess) || std::isnan(av) != std::isnan(ev)) {
      ++bad;
      const double score = std::isnan(excess) ? INFINITY : excess;
      if (score > worst_excess) {
        worst_excess = score;
        worst_i = i / parts;
        worst_a = av;
        worst_e = ev;
      }
    }
  }
  if (!bad) return std::nullopt;
  return std::to_string(bad) + " of " + std::to_string(n) + " elements differ; worst at " +
         index_text(e.shape(), worst_i) + ": " + fmt(worst_a) + ", expected " + fmt(worst_e) +
         (is_float ? " (|diff| " + fmt(std::fabs(worst_a - worst_e)) + ", rtol " + fmt(tol.rtol) + ", atol " + fmt(tol.atol) + ")" : "");
}

}  // namespace

std::optional<std::string> compare_values(const Value& e, const Value& a, const Tolerance& tol) {
  if (e.kind() != a.kind()) return "got " + a.describe() + ", expected " + e.describe();
  switch (e.kind()) {
    case Value::Kind::None: return std::nullopt;
    case Value::Kind::Tensor: return compare_tensors(e.tensor(), a.tensor(), tol);
    case Value::Kind::Map: {
      if (auto d = compare_tensors(e.map_keys(), a.map_keys(), tol)) return "map keys: " + *d;
      if (auto d = compare_tensors(e.map_values(), a.map_values(), tol)) return "map values: " + *d;
      return std::nullopt;
    }
    case Value::Kind::Sequence: {
      if (e.items().size() != a.items().size())
        return "sequence of " + std::to_string(a.items().size()) + " items, expected " + std::to_string(e.items().size());
      for (size_t i = 0; i < e.items().size(); ++i)
        if (auto d = compare_values(e.items()[i], a.items()[i], tol)) return "item " + std::to_string(i) + ": " + *d;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace onnxscope::conformance
