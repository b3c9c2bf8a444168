#include "onnxscope/diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/graph_util.h"

namespace onnxscope {
namespace {

// Position of a float on the number line of its format, so the ULP distance
// of two values is the difference of their positions.
int64_t ordered_bits(DataType t, const std::byte* p, uint64_t i) {
  auto order = [](int64_t bits, int width) {
    const int64_t sign = int64_t{1} << (width - 1);
    return (bits & sign) ? -(bits & (sign - 1)) : bits;  // sign-magnitude -> two's complement order
  };
  switch (t) {
    case DataType::Float: {
      uint32_t b;
      std::memcpy(&b, p + i * 4, 4);
      return order(b, 32);
    }
    case DataType::Double: {
      uint64_t b;
      std::memcpy(&b, p + i * 8, 8);
      return (b >> 63) ? -static_cast<int64_t>(b & ~(uint64_t{1} << 63)) : static_cast<int64_t>(b);
    }
    case DataType::Float16:
    case DataType::BFloat16: {
      uint16_t b;
      std::memcpy(&b, p + i * 2, 2);
      return order(b, 16);
    }
    default: return 0;
  }
}

}  // namespace

TensorDiff diff_tensors(const Tensor& a, const Tensor& b, const DiffTolerance& tol) {
  TensorDiff d;
  if (a.dtype() != b.dtype()) {
    d.comparable = false;
    d.problem = "dtype " + std::string(dtype_name(b.dtype())) + " vs " + std::string(dtype_name(a.dtype()));
    return d;
  }
  if (a.shape() != b.shape()) {
    d.comparable = false;
    d.problem = "shape " + shape_to_string(b.shape()) + " vs " + shape_to_string(a.shape());
    return d;
  }
  d.elements = a.element_count();
  if (a.is_string()) {
    for (uint64_t i = 0; i < d.elements; ++i)
      if (a.strings()[i] != b.strings()[i]) {
        if (d.out_of_tolerance++ == 0) d.worst_index = i;
      }
    return d;
  }
  const bool is_float = dtype_info(a.dtype()).is_float;
  const bool ulp_types = a.dtype() == DataType::Float || a.dtype() == DataType::Double ||
                         a.dtype() == DataType::Float16 || a.dtype() == DataType::BFloat16;
  double sum_abs = 0, sum_sq = 0, dot = 0, na = 0, nb = 0;
  for (uint64_t i = 0; i < d.elements; ++i) {
    const double x = a.element_as_double(i), y = b.element_as_double(i);
    d.nan_a += std::isnan(x);
    d.nan_b += std::isnan(y);
    d.inf_a += std::isinf(x);
    d.inf_b += std::isinf(y);
    bool bad = false;
    double abs_err = 0;
    if (std::isnan(x) || std::isnan(y)) {
      bad = std::isnan(x) != std::isnan(y);
      abs_err = bad ? INFINITY : 0;
    } else if (x == y) {
      abs_err = 0;
    } else {
      abs_err = std::fabs(x - y);
      const double rel = abs_err / std::max(std::fabs(x), 1e-30);
      d.max_rel = std::max(d.max_rel, rel);
      if (tol.max_ulp >= 0 && ulp_types) {
        const uint64_t ulp = static_cast<uint64_t>(
            std::llabs(ordered_bits(a.dtype(), a.raw(), i) - ordered_bits(b.dtype(), b.raw(), i)));
        d.max_ulp = std::max(d.max_ulp, ulp);
        bad = ulp > static_cast<uint64_t>(tol.max_ulp);
      } else {
        bad = abs_err > tol.atol + tol.rtol * std::fabs(x);
      }
    }
    if (ulp_types && tol.max_ulp < 0 && x != y && !std::isnan(x) && !std::isnan(y))
      d.max_ulp = std::max(d.max_ulp, static_cast<uint64_t>(std::llabs(ordered_bits(a.dtype(), a.raw(), i) -
                                                                        ordered_bits(b.dtype(), b.raw(), i))));
    if (bad) ++d.out_of_tolerance;
    if (abs_err > d.max_abs || (std::isinf(abs_err) && !std::isinf(d.max_abs))) {
      d.max_abs = abs_err;
      d.worst_index = i;
      d.worst_a = x;
      d.worst_b = y;
    }
    if (std::isfinite(abs_err)) {
      sum_abs += abs_err;
      sum_sq += abs_err * abs_err;
    }
    if (std::isfinite(x) && std::isfinite(y)) {
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
  }
  if (d.elements) {
    d.mean_abs = sum_abs / static_cast<double>(d.elements);
    d.rmse = std::sqrt(sum_sq / static_cast<double>(d.elements));
  }
  d.cosine = (na > 0 && nb > 0) ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  (void)is_float;
  return d;
}

TensorDiff diff_values(const Value& a, const Value& b, const DiffTolerance& tol) {
  if (a.kind() != b.kind()) {
    TensorDiff d;
    d.comparable = false;
    d.problem = b.describe() + " vs " + a.describe();
    return d;
  }
  if (a.is_tensor()) return diff_tensors(a.tensor(), b.tensor(), tol);
  if (a.is_sequence()) {
    TensorDiff total;
    if (a.items().size() != b.items().size()) {
      total.comparable = false;
      total.problem = "sequence lengths differ";
      return total;
    }
    // The worst item stands for the sequence.
    for (size_t i = 0; i < a.items().size(); ++i) {
      TensorDiff d = diff_values(a.items()[i], b.items()[i], tol);
      if (!d.comparable) return d;
      total.elements += d.elements;
      total.out_of_tolerance += d.out_of_tolerance;
      if (d.max_abs >= total.max_abs) {
        total.max_abs = d.max_abs;
        total.worst_a = d.worst_a;
        total.worst_b = d.worst_b;
      }
      total.max_rel = std::max(total.max_rel, d.max_rel);
    }
    return total;
  }
  if (a.is_map()) {
    TensorDiff k = diff_tensors(a.map_keys(), b.map_keys(), tol);
    if (!k.within()) return k;
    return diff_tensors(a.map_values(), b.map_values(), tol);
  }
  return TensorDiff{};  // both none
}

namespace {
struct CaptureObserver : Observer {
  Capture* out;
  void on_node(const NodeEvent& e) override {
    if (e.graph_path != "main") return;  // subgraph internals are reported through their node
    for (size_t k = 0; k < e.outputs.size() && k < e.node->outputs.size(); ++k) {
      if (e.node->outputs[k].empty()) continue;
      out->values[e.node->outputs[k]] = e.outputs[k];
      out->kernel_of[e.node->outputs[k]] = std::string(e.kernel);
    }
  }
};
}  // namespace

Capture capture_run(Engine& engine, std::shared_ptr<const Model> model, const NamedValues& inputs) {
  Capture c;
  c.source = std::string(engine.name());
  for (const auto& init : model->graph.initializers) c.values[init.name] = Value(init.value);
  for (const auto& [name, v] : inputs) c.values[name] = v;
  CaptureObserver obs;
  obs.out = &c;
  RunOptions ro;
  ro.observer = &obs;
  ro.capture_original = true;
  ro.observe_subgraphs = false;
  auto prepared = engine.prepare(model);
  NamedValues outs = prepared->run(inputs, ro);
  for (auto& [name, v] : outs) c.values[name] = std::move(v);
  return c;
}

DiffReport diff_captures(const Model& model, const Capture& a, const Capture& b, const DiffTolerance& tol) {
  DiffReport r;
  r.a = a.source;
  r.b = b.source;
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    const Node& n = model.graph.nodes[i];
    NodeDiff nd;
    nd.node_index = i;
    nd.node = n.label(i);
    nd.op_type = n.op_type;
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      auto ia = a.values.find(o), ib = b.values.find(o);
      if (ia == a.values.end() || ib == b.values.end()) continue;
      TensorDiff d = diff_values(ia->second, ib->second, tol);
      nd.diverges = nd.diverges || !d.within();
      nd.total_score = std::max(nd.total_score, d.comparable ? d.max_abs : INFINITY);
      nd.outputs.emplace_back(o, std::move(d));
    }
    if (nd.diverges && !r.first_divergence) r.first_divergence = r.nodes.size();
    r.nodes.push_back(std::move(nd));
  }
  return r;
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
    const Node& n = model.graph.nodes[nd.node_index];
    // A one-node model fed with A's values: whatever differs now is this node's own doing.
    auto single = std::make_shared<Model>();
    single->ir_version = model.ir_version;
    single->opset_imports = model.opset_imports;
    single->functions = model.functions;
    single->source = model.source + " [node " + nd.node + "]";
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
        TensorDiff d = diff_values(ia->second, v, tol);
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
