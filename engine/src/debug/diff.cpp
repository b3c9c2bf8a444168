#include "onnxscope/diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/graph_util.h"
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
  double sum_abs = 0, sum_sq = 0, dot = 0, na = 0, nb = 0;
  // Decoded a chunk at a time: one type dispatch per chunk, not per element.
  constexpr uint64_t kChunk = 2048;
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kChunk, d.elements));
  std::vector<double> xs(chunk), ys(chunk);
  std::vector<int64_t> ia(integers ? chunk : 0), ib(integers ? chunk : 0);
  for (uint64_t i = 0, k = chunk; i < d.elements; ++i, ++k) {
    if (k == chunk) {
      const uint64_t n = std::min<uint64_t>(chunk, d.elements - i);
      a.elements_as_double(i, n, xs.data());
      b.elements_as_double(i, n, ys.data());
      if (integers) {
        a.elements_as_int64(i, n, ia.data());
        b.elements_as_int64(i, n, ib.data());
      }
      k = 0;
    }
    const double x = xs[k], y = ys[k];
    const bool nan_x = std::isnan(x), nan_y = std::isnan(y), inf_x = std::isinf(x), inf_y = std::isinf(y);
    d.nan_a += nan_x;
    d.nan_b += nan_y;
    d.inf_a += inf_x;
    d.inf_b += inf_y;
    bool bad = false;
    double abs_err = 0, violation = 0;
    if (nan_x || nan_y) {
      if (nan_x && nan_y) {
        violation = -INFINITY;
      } else {
        note(nan_x ? d.nan_only_a : d.nan_only_b, i);
        bad = true;
      }
    } else if (inf_x || inf_y) {
      if (x == y) {
        violation = -INFINITY;
      } else {
        note(inf_x && inf_y ? d.inf_opposite : inf_x ? d.inf_only_a : d.inf_only_b, i);
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
      if (x != 0) d.max_rel = std::max(d.max_rel, abs_err / std::fabs(x));
      if (track_ulp && abs_err != 0)
        d.max_ulp = std::max(d.max_ulp, static_cast<uint64_t>(std::llabs(ordered_position(ulp_grid, x) -
                                                                         ordered_position(ulp_grid, y))));
      if (by_ulp) {
        const uint64_t ulp =
            abs_err == 0 ? 0 : static_cast<uint64_t>(std::llabs(ordered_position(ulp_grid, x) - ordered_position(ulp_grid, y)));
        violation = static_cast<double>(ulp) - static_cast<double>(tol.max_ulp);
        bad = ulp > static_cast<uint64_t>(tol.max_ulp);
      } else {
        violation = abs_err - (d.rule.atol + d.rule.rtol * std::fabs(x));
        bad = violation > 0;
      }
      sum_abs += abs_err;
      sum_sq += abs_err * abs_err;
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
    if (bad) {
      ++d.out_of_tolerance;
      if (!(nan_x || nan_y || inf_x || inf_y)) d.max_abs = std::max(d.max_abs, abs_err);
      else {
        d.max_abs = d.max_rel = INFINITY;
        violation = INFINITY;
      }
    } else if (!std::isinf(d.max_abs)) {
      d.max_abs = std::max(d.max_abs, abs_err);
    }
    if (violation > d.worst_violation || i == 0) {
      d.worst_violation = violation;
      d.worst_index = i;
      d.worst_a = x;
      d.worst_b = y;
    }
  }
  if (d.elements) {
    d.mean_abs = sum_abs / static_cast<double>(d.elements);
    d.rmse = std::sqrt(sum_sq / static_cast<double>(d.elements));
  } else {
    d.worst_violation = 0;
  }
  d.cosine = (na > 0 && nb > 0) ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  return d;
}

namespace {
// Folds one part (a sequence item, a map's keys or values) into the whole.
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
