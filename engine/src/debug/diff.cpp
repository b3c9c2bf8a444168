#include "onnxscope/diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <immintrin.h>
#include <set>

#include "core/cpu_features.h"
#include "core/graph_util.h"
#include "cpu/thread_pool.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/reduce.h"

namespace onnxscope {
namespace {

// Position of a value on the number line of format t, so the ULP distance of
// two values is the difference of their positions. The value is first
// rounded to t (exact for values of t itself).
int64_t ordered_position(DataType t, double v) {
  auto order = [](int64_t bits, int width) {
    const int64_t sign = int64_t{1} << (width - 1);
    return (bits & sign) ? -(bits & (sign - 1)) : bits;  // sign-magnitude -> two's complement order
  };
  switch (t) {
    case DataType::Float: {
      const float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return order(b, 32);
    }
    case DataType::Double: {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return (b >> 63) ? -static_cast<int64_t>(b & ~(uint64_t{1} << 63)) : static_cast<int64_t>(b);
    }
    case DataType::Float16: return order(float_to_half(static_cast<float>(v)), 16);
    case DataType::BFloat16: return order(float_to_bfloat16(static_cast<float>(v)), 16);
    default: return 0;
  }
}

bool ulp_type(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Float16 || t == DataType::BFloat16;
}

// Of two ULP types, the one with the coarser grid (ULPs across types are
// counted there).
DataType coarser(DataType a, DataType b) {
  auto rank = [](DataType t) {
    switch (t) {
      case DataType::Double: return 4;
      case DataType::Float: return 3;
      case DataType::Float16: return 2;
      default: return 1;  // bfloat16: 8 bits of mantissa
    }
  };
  return rank(a) <= rank(b) ? a : b;
}

enum class NumberKind { Real, Integer, Other };
NumberKind number_kind(DataType t) {
  const DTypeInfo& i = dtype_info(t);
  if (i.is_float && !i.is_complex) return NumberKind::Real;
  if (i.is_integer && t != DataType::Bool) return NumberKind::Integer;
  return NumberKind::Other;
}

void note(NonFiniteMismatch& m, uint64_t i) {
  if (m.count++ == 0) m.first = i;
}

std::string join_kinds(DataType a, DataType b) {
  return std::string(dtype_name(b)) + " vs " + std::string(dtype_name(a));
}

}  // namespace

DiffTolerance default_tolerance() {
  DiffTolerance t;
  t.by_dtype[DataType::Float16] = {4e-3, 1e-3};
  t.by_dtype[DataType::BFloat16] = {3e-2, 1e-2};
  return t;
}

ToleranceRule DiffTolerance::rule_for(const std::string& tensor, DataType a, DataType b) const {
  if (auto it = by_tensor.find(tensor); !tensor.empty() && it != by_tensor.end()) return it->second;
  auto of = [&](DataType t) {
    auto it = by_dtype.find(t);
    return it != by_dtype.end() ? it->second : ToleranceRule{rtol, atol};
  };
  const ToleranceRule ra = of(a), rb = of(b);
  ToleranceRule r{std::max(ra.rtol, rb.rtol), std::max(ra.atol, rb.atol)};
  // --quant-steps: N steps of a quantized tensor (and the float rounding of N
  // steps of a dequantized one) are within tolerance.
  if (auto it = quant_step.find(tensor); quant_steps > 0 && !tensor.empty() && it != quant_step.end())
    r.atol = std::max(r.atol, static_cast<double>(quant_steps) * it->second * (1 + 1e-6));
  return r;
}

std::string DiffTolerance::describe() const {
  auto g = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  std::string s = max_ulp >= 0 ? "max " + std::to_string(max_ulp) + " ULP (float types), else rtol " + g(rtol) + ", atol " + g(atol)
                               : "rtol " + g(rtol) + ", atol " + g(atol);
  for (const auto& [t, r] : by_dtype)
    s += "; " + std::string(dtype_name(t)) + ": rtol " + g(r.rtol) + ", atol " + g(r.atol);
  for (const auto& [n, r] : by_tensor) s += "; '" + n + "': rtol " + g(r.rtol) + ", atol " + g(r.atol);
  return s;
}

std::string format_value(double v, DataType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  int digits = 9;
  switch (t) {
    case DataType::Double: digits = 17; break;
    case DataType::Float16: digits = 5; break;
    case DataType::BFloat16: digits = 4; break;
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float8E8M0: digits = 3; break;
    default:
      if (number_kind(t) == NumberKind::Integer) digits = 20;  // every digit of an int64
      break;
  }
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

std::string nonfinite_mismatch_text(const TensorDiff& d) {
  std::string s;
  auto add = [&](const NonFiniteMismatch& m, const char* who, const char* what) {
    if (!m.count) return;
    if (!s.empty()) s += "; ";
    s += who + std::to_string(m.count) + what + " (first at flat index " + std::to_string(m.first) + ")";
  };
  add(d.inf_only_a, "A holds ", " inf where B is finite");
  add(d.inf_only_b, "B holds ", " inf where A is finite");
  add(d.nan_only_a, "A holds ", " NaN where B holds a number");
  add(d.nan_only_b, "B holds ", " NaN where A holds a number");
  add(d.inf_opposite, "", d.inf_opposite.count == 1 ? " infinity of opposite sign in A and B" : " infinities of opposite sign in A and B");
  return s;
}

std::string nonfinite_counts_text(const TensorDiff& d) {
  std::string s;
  if (d.nan_a || d.nan_b) s += "NaN A=" + std::to_string(d.nan_a) + " B=" + std::to_string(d.nan_b);
  if (d.inf_a || d.inf_b) s += (s.empty() ? "" : ", ") + std::string("inf A=") + std::to_string(d.inf_a) + " B=" + std::to_string(d.inf_b);
  return s;
}

namespace {
// Folds one part (a block of elements, a sequence item, a map's keys or
// values) into the whole.
void fold(TensorDiff& total, const TensorDiff& d, bool first_part) {
  total.elements += d.elements;
  total.out_of_tolerance += d.out_of_tolerance;
  total.nan_a += d.nan_a;
  total.nan_b += d.nan_b;
  total.inf_a += d.inf_a;
  total.inf_b += d.inf_b;
  auto merge = [](NonFiniteMismatch& t, const NonFiniteMismatch& p) {
    if (!p.count) return;
    if (!t.count) t.first = p.first;
    t.count += p.count;
  };
  merge(total.nan_only_a, d.nan_only_a);
  merge(total.nan_only_b, d.nan_only_b);
  merge(total.inf_only_a, d.inf_only_a);
  merge(total.inf_only_b, d.inf_only_b);
  merge(total.inf_opposite, d.inf_opposite);
  total.max_abs = std::max(total.max_abs, d.max_abs);
  total.max_rel = std::max(total.max_rel, d.max_rel);
  total.max_ulp = std::max(total.max_ulp, d.max_ulp);
  if (first_part || d.worst_violation > total.worst_violation) {
    total.worst_violation = d.worst_violation;
    total.worst_index = d.worst_index;
    total.worst_a = d.worst_a;
    total.worst_b = d.worst_b;
    total.dtype_a = d.dtype_a;
    total.dtype_b = d.dtype_b;
    total.rule = d.rule;
  }
}
}  // namespace

namespace {

// The statistics of a chunk of finite float pairs, kept in locals (the
// general loop below keeps them in the TensorDiff, through memory, and
// branches on every kind of value): the same numbers as that loop gives.
struct FiniteChunk {
  uint64_t out_of_tolerance = 0, max_ulp = 0, worst_k = 0;
  double max_abs = 0, max_rel = 0, sum_abs = 0, sum_sq = 0, dot = 0, na = 0, nb = 0;
  double worst = -INFINITY;
  bool has_worst = false;
};

// ulp_of(k, x, y): the distance of pair k on the grid, in steps.
template <class UlpOf>
FiniteChunk finite_chunk(const double* xs, const double* ys, uint64_t n, bool track_ulp, bool by_ulp, int64_t max_ulp,
                         const ToleranceRule& rule, double worst_so_far, bool first_is_worst, UlpOf ulp_of) {
  FiniteChunk c;
  c.worst = worst_so_far;
  uint64_t oot = 0, mu = 0;
  double max_abs = 0, max_rel = 0, sum_abs = 0, sum_sq = 0, dot = 0, na = 0, nb = 0, worst = worst_so_far;
  const double atol = rule.atol, rtol = rule.rtol;
  for (uint64_t k = 0; k < n; ++k) {
    const double x = xs[k], y = ys[k];
    const double abs_err = std::fabs(x - y);
    if (x != 0) max_rel = std::max(max_rel, abs_err / std::fabs(x));
    const uint64_t ulp = (track_ulp || by_ulp) && abs_err != 0 ? ulp_of(k, x, y) : 0;
    if (track_ulp) mu = std::max(mu, ulp);
    double violation;
    bool bad;
    if (by_ulp) {
      violation = static_cast<double>(ulp) - static_cast<double>(max_ulp);
      bad = ulp > static_cast<uint64_t>(max_ulp);
    } else {
      violation = abs_err - (atol + rtol * std::fabs(x));
      bad = violation > 0;
    }
    sum_abs += abs_err;
    sum_sq += abs_err * abs_err;
    dot += x * y;
    na += x * x;
    nb += y * y;
    oot += bad;
    max_abs = std::max(max_abs, abs_err);
    if (violation > worst || (k == 0 && first_is_worst)) {
      worst = violation;
      c.worst_k = k;
      c.has_worst = true;
    }
  }
  c.out_of_tolerance = oot;
  c.max_ulp = mu;
  c.max_abs = max_abs;
  c.max_rel = max_rel;
  c.sum_abs = sum_abs;
  c.sum_sq = sum_sq;
  c.dot = dot;
  c.na = na;
  c.nb = nb;
  c.worst = worst;
  return c;
}

// The float16 grid positions of n finite values (ordered_position's), by the
// F16C instructions where the CPU has them: rounding to nearest even, as
// float_to_half rounds every finite float.
__attribute__((target("avx2,f16c"))) void half_positions_f16c(const double* v, uint64_t n, int32_t* out) {
  uint64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const __m128 f = _mm256_cvtpd_ps(_mm256_loadu_pd(v + k));
    const __m128i h = _mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    alignas(16) uint16_t bits[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(bits), h);
    for (int j = 0; j < 4; ++j) out[k + j] = (bits[j] & 0x8000) ? -(bits[j] & 0x7fff) : bits[j];
  }
  for (; k < n; ++k) out[k] = static_cast<int32_t>(ordered_position(DataType::Float16, v[k]));
}

bool all_finite(const double* v, uint64_t n) {
  bool ok = true;
  for (uint64_t k = 0; k < n; ++k) ok &= std::isfinite(v[k]);
  return ok;
}

}  // namespace

TensorDiff diff_tensors(const Tensor& a, const Tensor& b, const DiffTolerance& tol, const std::string& name) {
  TensorDiff d;
  d.dtype_a = a.dtype();
  d.dtype_b = b.dtype();
  const NumberKind ka = number_kind(a.dtype()), kb = number_kind(b.dtype());
  if (a.dtype() != b.dtype() && (ka != kb || ka == NumberKind::Other)) {
    d.comparable = false;
    d.problem = "dtype " + join_kinds(a.dtype(), b.dtype());
    return d;
  }
  if (a.shape() != b.shape()) {
    d.comparable = false;
    d.problem = "shape " + shape_to_string(b.shape()) + " vs " + shape_to_string(a.shape());
    return d;
  }
  d.rule = tol.rule_for(name, a.dtype(), b.dtype());
  if (auto it = tol.quant_step.find(name); !name.empty() && it != tol.quant_step.end()) d.quant_step = it->second;
  d.elements = a.element_count();
  d.worst_violation = -INFINITY;
  if (a.is_string()) {
    for (uint64_t i = 0; i < d.elements; ++i)
      if (a.strings()[i] != b.strings()[i] && d.out_of_tolerance++ == 0) {
        d.worst_index = i;
        d.worst_violation = INFINITY;
      }
    if (d.worst_violation < 0) d.worst_violation = 0;
    return d;
  }
  const bool integers = ka == NumberKind::Integer && kb == NumberKind::Integer;
  const bool by_ulp = tol.max_ulp >= 0 && ulp_type(a.dtype()) && ulp_type(b.dtype());
  const DataType ulp_grid = coarser(a.dtype(), b.dtype());
  const bool track_ulp = ulp_type(a.dtype()) && ulp_type(b.dtype());
  // The elements in fixed blocks shared out to the threads, each block's
  // statistics folded in block order: the same numbers at any thread count.
  struct Part {
    TensorDiff d;
    double sum_abs = 0, sum_sq = 0, dot = 0, na = 0, nb = 0;
  };
  constexpr uint64_t kBlock = uint64_t{1} << 15;
  const uint64_t blocks = (d.elements + kBlock - 1) / kBlock;
  std::vector<Part> parts(static_cast<size_t>(blocks));
  auto scan = [&](uint64_t begin, uint64_t end, Part& part) {
    TensorDiff& p = part.d;
    p.dtype_a = d.dtype_a;
    p.dtype_b = d.dtype_b;
    p.rule = d.rule;
    p.max_abs = p.max_rel = 0;
    p.worst_violation = -INFINITY;
    // Decoded a chunk at a time: one type dispatch per chunk, not per element.
    constexpr uint64_t kChunk = 2048;
    double xs[kChunk], ys[kChunk];
    int64_t ia[kChunk], ib[kChunk];
    int32_t hx[kChunk], hy[kChunk];
    for (uint64_t c0 = begin; c0 < end; c0 += kChunk) {
      const uint64_t n = std::min<uint64_t>(kChunk, end - c0);
      a.elements_as_double(c0, n, xs);
      b.elements_as_double(c0, n, ys);
      if (integers) {
        a.elements_as_int64(c0, n, ia);
        b.elements_as_int64(c0, n, ib);
      } else if (all_finite(xs, n) && all_finite(ys, n)) {
        auto fold_chunk = [&](const FiniteChunk& c) {
          p.out_of_tolerance += c.out_of_tolerance;
          p.max_ulp = std::max(p.max_ulp, c.max_ulp);
          p.max_abs = std::max(p.max_abs, c.max_abs);
          p.max_rel = std::max(p.max_rel, c.max_rel);
          part.sum_abs += c.sum_abs;
          part.sum_sq += c.sum_sq;
          part.dot += c.dot;
          part.na += c.na;
          part.nb += c.nb;
          if (c.has_worst) {
            p.worst_violation = c.worst;
            p.worst_index = c0 + c.worst_k;
            p.worst_a = xs[c.worst_k];
            p.worst_b = ys[c.worst_k];
          }
        };
        auto order = [](int64_t bits, int width) {
          const int64_t sign = int64_t{1} << (width - 1);
          return (bits & sign) ? -(bits & (sign - 1)) : bits;
        };
        auto distance = [](int64_t u, int64_t v) { return static_cast<uint64_t>(std::llabs(u - v)); };
        if (ulp_grid == DataType::Float) {
          auto position = [&](double v) {
            const float f = static_cast<float>(v);
            uint32_t bits;
            std::memcpy(&bits, &f, 4);
            return order(bits, 32);
          };
          fold_chunk(finite_chunk(xs, ys, n, track_ulp, by_ulp, tol.max_ulp, d.rule, p.worst_violation, c0 == begin,
                                  [&](uint64_t, double x, double y) { return distance(position(x), position(y)); }));
        } else if (ulp_grid == DataType::Float16 && (track_ulp || by_ulp) && cpu_has_f16c()) {
          half_positions_f16c(xs, n, hx);
          half_positions_f16c(ys, n, hy);
          fold_chunk(finite_chunk(xs, ys, n, track_ulp, by_ulp, tol.max_ulp, d.rule, p.worst_violation, c0 == begin,
                                  [&](uint64_t k, double, double) { return distance(hx[k], hy[k]); }));
        } else {
          fold_chunk(finite_chunk(xs, ys, n, track_ulp, by_ulp, tol.max_ulp, d.rule, p.worst_violation, c0 == begin,
                                  [&](uint64_t, double x, double y) {
                                    return distance(ordered_position(ulp_grid, x), ordered_position(ulp_grid, y));
                                  }));
        }
        continue;
      }
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t i = c0 + k;
        const double x = xs[k], y = ys[k];
        const bool nan_x = std::isnan(x), nan_y = std::isnan(y), inf_x = std::isinf(x), inf_y = std::isinf(y);
        p.nan_a += nan_x;
        p.nan_b += nan_y;
        p.inf_a += inf_x;
        p.inf_b += inf_y;
        bool bad = false;
        double abs_err = 0, violation = 0;
        if (nan_x || nan_y) {
          if (nan_x && nan_y) {
            violation = -INFINITY;
          } else {
            note(nan_x ? p.nan_only_a : p.nan_only_b, i);
            bad = true;
          }
        } else if (inf_x || inf_y) {
          if (x == y) {
            violation = -INFINITY;
          } else {
            note(inf_x && inf_y ? p.inf_opposite : inf_x ? p.inf_only_a : p.inf_only_b, i);
            bad = true;
          }
        } else {
          if (integers) {
            // Exactly, through 128 bits: int64 values past 2^53 differ in double too.
            const __int128 diff = static_cast<__int128>(ia[k]) - ib[k];
            abs_err = static_cast<double>(diff < 0 ? -diff : diff);
          } else {
            abs_err = std::fabs(x - y);
          }
          if (x != 0) p.max_rel = std::max(p.max_rel, abs_err / std::fabs(x));
          const uint64_t ulp = (track_ulp || by_ulp) && abs_err != 0
                                   ? static_cast<uint64_t>(std::llabs(ordered_position(ulp_grid, x) - ordered_position(ulp_grid, y)))
                                   : 0;
          if (track_ulp) p.max_ulp = std::max(p.max_ulp, ulp);
          if (by_ulp) {
            violation = static_cast<double>(ulp) - static_cast<double>(tol.max_ulp);
            bad = ulp > static_cast<uint64_t>(tol.max_ulp);
          } else {
            violation = abs_err - (d.rule.atol + d.rule.rtol * std::fabs(x));
            bad = violation > 0;
          }
          part.sum_abs += abs_err;
          part.sum_sq += abs_err * abs_err;
          part.dot += x * y;
          part.na += x * x;
          part.nb += y * y;
        }
        if (bad) {
          ++p.out_of_tolerance;
          if (!(nan_x || nan_y || inf_x || inf_y)) p.max_abs = std::max(p.max_abs, abs_err);
          else {
            p.max_abs = p.max_rel = INFINITY;
            violation = INFINITY;
          }
        } else if (!std::isinf(p.max_abs)) {
          p.max_abs = std::max(p.max_abs, abs_err);
        }
        if (violation > p.worst_violation || i == begin) {
          p.worst_violation = violation;
          p.worst_index = i;
          p.worst_a = x;
          p.worst_b = y;
        }
      }
    }
  };
  cpu::parallel_for(static_cast<int64_t>(blocks), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      const uint64_t begin = static_cast<uint64_t>(k) * kBlock;
      scan(begin, std::min(d.elements, begin + kBlock), parts[static_cast<size_t>(k)]);
    }
  });
  double sum_abs = 0, sum_sq = 0, dot = 0, na = 0, nb = 0;
  const uint64_t elements = d.elements;
  for (size_t k = 0; k < parts.size(); ++k) {
    fold(d, parts[k].d, k == 0);
    sum_abs += parts[k].sum_abs;
    sum_sq += parts[k].sum_sq;
    dot += parts[k].dot;
    na += parts[k].na;
    nb += parts[k].nb;
  }
  d.elements = elements;
  if (d.elements) {
    d.mean_abs = sum_abs / static_cast<double>(d.elements);
    d.rmse = std::sqrt(sum_sq / static_cast<double>(d.elements));
  } else {
    d.worst_violation = 0;
  }
  d.cosine = (na > 0 && nb > 0) ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  return d;
}


TensorDiff diff_values(const Value& a, const Value& b, const DiffTolerance& tol, const std::string& name) {
  if (a.kind() != b.kind()) {
    TensorDiff d;
    d.comparable = false;
    d.problem = b.describe() + " vs " + a.describe();
    return d;
  }
  if (a.is_tensor()) return diff_tensors(a.tensor(), b.tensor(), tol, name);
  if (a.is_sequence()) {
    TensorDiff total;
    if (a.items().size() != b.items().size()) {
      total.comparable = false;
      total.problem = "sequence of " + std::to_string(b.items().size()) + " items vs " + std::to_string(a.items().size());
      return total;
    }
    // The worst item stands for the sequence.
    for (size_t i = 0; i < a.items().size(); ++i) {
      TensorDiff d = diff_values(a.items()[i], b.items()[i], tol, name);
      if (!d.comparable) {
        d.problem = "item " + std::to_string(i) + ": " + d.problem;
        return d;
      }
      fold(total, d, i == 0);
    }
    return total;
  }
  if (a.is_map()) {
    TensorDiff k = diff_tensors(a.map_keys(), b.map_keys(), tol, name);
    if (!k.within()) return k;
    return diff_tensors(a.map_values(), b.map_values(), tol, name);
  }
  return TensorDiff{};  // both none
}

namespace {
struct CaptureObserver : Observer {
  Capture* out;
  // --fail-fast: each node's outputs checked against this capture as they come.
  const Capture* against = nullptr;
  const DiffTolerance* tol = nullptr;
  bool stop = false;
  void on_node(const NodeEvent& e) override {
    if (e.graph_path != "main") return;  // subgraph internals are reported through their node
    for (size_t k = 0; k < e.outputs.size() && k < e.node->outputs.size(); ++k) {
      const std::string& name = e.node->outputs[k];
      if (name.empty()) continue;
      out->values[name] = e.outputs[k];
      out->kernel_of[name] = std::string(e.kernel);
      if (against)
        if (auto it = against->values.find(name); it != against->values.end())
          stop = stop || !diff_values(it->second, e.outputs[k], *tol, name).within();
    }
  }
  bool should_stop() override { return stop; }
};

Capture capture(Engine& engine, const std::shared_ptr<const Model>& model, const NamedValues& inputs,
                const Capture* against, const DiffTolerance* tol) {
  Capture c;
  c.source = std::string(engine.name());
  for (const auto& init : model->graph.initializers) c.values[init.name] = Value(init.value);
  for (const auto& [name, v] : inputs) c.values[name] = v;
  CaptureObserver obs;
  obs.out = &c;
  obs.against = against;
  obs.tol = tol;
  RunOptions ro;
  ro.observer = &obs;
  ro.capture_original = true;
  ro.observe_subgraphs = false;
  auto prepared = engine.prepare(model);
  try {
    NamedValues outs = prepared->run(inputs, ro);
    for (auto& [name, v] : outs) c.values[name] = std::move(v);
  } catch (const Error&) {
    if (!obs.stop) throw;  // the run was stopped on purpose: what it captured stands
  }
  return c;
}
}  // namespace

Capture capture_run(Engine& engine, std::shared_ptr<const Model> model, const NamedValues& inputs) {
  return capture(engine, model, inputs, nullptr, nullptr);
}

Capture capture_run_until_divergence(Engine& engine, std::shared_ptr<const Model> model, const NamedValues& inputs,
                                     const Capture& a, const DiffTolerance& tol) {
  return capture(engine, model, inputs, &a, &tol);
}

size_t DiffReport::diverging() const {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [](const NodeDiff& n) { return n.diverges; }));
}

size_t DiffReport::types_differ() const {
  size_t k = 0;
  for (const auto& n : nodes)
    for (const auto& [name, d] : n.outputs) k += d.comparable && d.types_differ();
  return k;
}

DiffReport diff_steps(const std::vector<DiffStep>& steps, const Capture& a, const Capture& b, const DiffTolerance& tol,
                      bool fail_fast) {
  DiffReport r;
  r.a = a.source;
  r.b = b.source;
  for (const DiffStep& step : steps) {
    if (fail_fast && r.first_divergence) {
      r.stopped_early = true;
      break;
    }
    NodeDiff nd;
    nd.node_index = step.index;
    nd.node = step.node;
    nd.op_type = step.op_type;
    for (const auto& o : step.outputs) {
      if (o.empty()) continue;
      auto ia = a.values.find(o), ib = b.values.find(o);
      const bool in_a = ia != a.values.end(), in_b = ib != b.values.end();
      if (!in_a || !in_b) {
        if (in_a) nd.only_in_a.push_back(o);
        if (in_b) nd.only_in_b.push_back(o);
        continue;
      }
      TensorDiff d = diff_values(ia->second, ib->second, tol, o);
      nd.diverges = nd.diverges || !d.within();
      nd.total_score = std::max(nd.total_score, d.comparable ? d.max_abs : INFINITY);
      // A Constant's inf (a mask's fill value) is in the model file, not made by a run.
      if (d.comparable && d.any_nonfinite() && !r.first_nonfinite && step.op_type != "Constant")
        r.first_nonfinite = r.nodes.size();
      nd.outputs.emplace_back(o, std::move(d));
    }
    if (nd.diverges && !r.first_divergence) r.first_divergence = r.nodes.size();
    r.nodes.push_back(std::move(nd));
  }
  return r;
}

DiffReport diff_captures(const Model& model, const Capture& a, const Capture& b, const DiffTolerance& tol,
                         bool fail_fast) {
  std::vector<DiffStep> steps;
  steps.reserve(model.graph.nodes.size());
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    const Node& n = model.graph.nodes[i];
    steps.push_back({n.label(i), n.op_type, i, n.outputs});
  }
  return diff_steps(steps, a, b, tol, fail_fast);
}

bool blame_nodes(const Model& model, const Capture& a, Engine& engine_b, const DiffTolerance& tol, DiffReport& report,
                 const std::function<bool()>& should_stop) {
  detail::FreeNames free;
  bool complete_run = true;
  for (NodeDiff& nd : report.nodes) {
    if (should_stop && should_stop()) {
      complete_run = false;
      break;
    }
    if (nd.node_index >= model.graph.nodes.size()) continue;
    const Node& n = model.graph.nodes[nd.node_index];
    // A one-node model fed with A's values: whatever differs now is this node's own doing.
    auto single = piece_model(model, "onnxscope diff", model.source + " [node " + nd.node + "]");
    std::set<std::string> names;
    for (const auto& in : n.inputs)
      if (!in.empty()) names.insert(in);
    for (const auto& attr : n.attributes) {
      if (attr.g)
        for (const auto& f : free.of(*attr.g)) names.insert(f);
      for (const auto& sg : attr.graphs)
        if (sg)
          for (const auto& f : free.of(*sg)) names.insert(f);
    }
    NamedValues feeds;
    bool complete = true;
    for (const auto& name : names) {
      auto it = a.values.find(name);
      if (it == a.values.end()) {
        complete = false;
        break;
      }
      TypeInfo t;
      if (it->second.is_tensor()) {
        // Typed with the value's own shape: an engine that places nodes by
        // rank (cuda) then runs the node where it ran in the whole model.
        std::vector<Dim> dims;
        for (int64_t d : it->second.tensor().shape()) dims.push_back(Dim::known(d));
        t = TypeInfo::tensor(it->second.tensor().dtype(), std::move(dims));
      }
      else if (it->second.is_sequence()) t.kind = TypeInfo::Kind::Sequence;
      else if (it->second.is_none()) t.kind = TypeInfo::Kind::Optional;
      else t.kind = TypeInfo::Kind::Map;
      single->graph.inputs.push_back({name, t, {}});
      feeds.emplace_back(name, it->second);
    }
    if (!complete) continue;
    single->graph.nodes.push_back(n);
    for (const auto& o : n.outputs)
      if (!o.empty()) single->graph.outputs.push_back({o, {}, {}});
    try {
      NamedValues outs = engine_b.prepare(single)->run(feeds);
      TensorDiff worst;
      bool compared = false;
      for (const auto& [name, v] : outs) {
        auto ia = a.values.find(name);
        if (ia == a.values.end()) continue;
        compared = true;
        TensorDiff d = diff_values(ia->second, v, tol, name);
        const double score = d.comparable ? d.max_abs : INFINITY;
        if (score >= nd.introduced_score) {
          nd.introduced_score = score;
          worst = d;
        }
      }
      if (compared) nd.introduced = worst;  // else: no output of A to compare with
    } catch (const std::exception&) {
      // The node cannot run alone (it needs context); it gets no blame score.
    }
  }
  for (size_t i = 0; i < report.nodes.size(); ++i)
    if (report.nodes[i].introduced) report.blame_order.push_back(i);
  std::stable_sort(report.blame_order.begin(), report.blame_order.end(), [&](size_t x, size_t y) {
    return report.nodes[x].introduced_score > report.nodes[y].introduced_score;
  });
  return complete_run;
}

}  // namespace onnxscope
