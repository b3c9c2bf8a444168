#include "core/partition.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/graph_util.h"

namespace onnxscope {

bool reads_shape_only(const Node& n, size_t input) {
  return input == 0 && n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size");
}

namespace {

bool has_subgraph(const Node& n) {
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

// Shapes, indices and counts: int64 or int32 (what shape arithmetic makes).
bool integer_value(const Graph& g, const std::string& v) {
  const TypeInfo* t = g.type_of(v);
  return t && t->is_tensor() && (t->elem == DataType::Int64 || t->elem == DataType::Int32);
}

struct Read {
  size_t node, input;
};

}  // namespace

PartitionPlan partition(const Graph& g, const PlacementRules& rules, int64_t opset) {
  const size_t count = g.nodes.size();
  PartitionPlan plan;
  plan.nodes.resize(count);
  detail::FreeNames free_names;

  // 1. What the device can run. A Gradient node differentiates the graph
  // around it, which only the whole model on one engine has.
  bool gradient = false;
  for (const Node& n : g.nodes) gradient = gradient || (n.op_type == "Gradient" && n.domain == "ai.onnx.preview.training");
  for (size_t i = 0; i < count; ++i) {
    const Node& n = g.nodes[i];
    NodePlace& p = plan.nodes[i];
    if (gradient) {
      p = {Side::Host, "the model has a Gradient node, which needs the whole graph on the CPU engine"};
    } else if (has_subgraph(n)) {
      p = {Side::Host, "it has a subgraph (control flow runs on the CPU engine)"};
    } else if (n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size")) {
      p = {Side::Host, "its result comes from a shape, which the host knows"};
    } else if (auto why = rules.refuse ? rules.refuse(g, n, opset) : std::optional<std::string>{}) {
      p = {Side::Host, *why};
    } else {
      p = {Side::Device, {}};
    }
  }

  // Who reads what; which values are graph outputs; who made each value.
  std::unordered_map<std::string, std::vector<Read>> readers;
  std::unordered_map<std::string, size_t> producer;
  std::unordered_set<std::string> graph_outputs;
  std::vector<std::set<std::string>> captures(count);
  for (size_t i = 0; i < count; ++i) {
    const Node& n = g.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!n.inputs[k].empty()) readers[n.inputs[k]].push_back({i, k});
    for (const auto& a : n.attributes) {
      if (a.g) captures[i].insert(free_names.of(*a.g).begin(), free_names.of(*a.g).end());
      for (const auto& sg : a.graphs)
        if (sg) captures[i].insert(free_names.of(*sg).begin(), free_names.of(*sg).end());
    }
    for (const auto& o : n.outputs)
      if (!o.empty()) producer[o] = i;
  }
  for (const auto& o : g.outputs) graph_outputs.insert(o.name);
  auto host_read = [&](const Read& r, const std::vector<bool>& moved) {
    const Node& n = g.nodes[r.node];
    if (reads_shape_only(n, r.input)) return true;  // no copy: as good as a host read
    if (plan.nodes[r.node].side == Side::Host || moved[r.node]) return true;
    return rules.reads_on_host && rules.reads_on_host(n, r.input);
  };

  // 2. Shape arithmetic stays on the host. Backward: a device node all of
  // whose results are read on the host (by host nodes, as host arguments of
  // device kernels, or by nodes already moved), and are no graph output.
  std::vector<bool> moved(count, false);
  for (size_t i = count; i-- > 0;) {
    if (plan.nodes[i].side != Side::Device) continue;
    bool all_host = true, any = false;
    for (const auto& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      if (graph_outputs.count(o) || !integer_value(g, o)) all_host = false;
      auto it = readers.find(o);
      if (it == readers.end()) continue;
      for (const Read& r : it->second) {
        any = true;
        if (!host_read(r, moved)) all_host = false;
      }
    }
    moved[i] = any && all_host;
  }
  // Forward: only where every input is on the host already (or read for its
  // shape only); moving a node whose input is a real device tensor saves no copy.
  for (size_t i = 0; i < count; ++i) {
    if (!moved[i]) continue;
    const Node& n = g.nodes[i];
    for (size_t k = 0; k < n.inputs.size() && moved[i]; ++k) {
      if (n.inputs[k].empty() || reads_shape_only(n, k)) continue;
      auto p = producer.find(n.inputs[k]);
      if (p != producer.end() && plan.nodes[p->second].side == Side::Device && !moved[p->second]) moved[i] = false;
    }
  }
  for (size_t i = 0; i < count; ++i)
    if (moved[i]) plan.nodes[i] = {Side::Host, "shape arithmetic: its results are read on the host only"};

  // 3. Copies, walking the nodes in order.
  std::unordered_set<std::string> on_host, on_device;
  for (const auto& in : g.inputs) on_host.insert(in.name);
  for (const auto& init : g.initializers) on_host.insert(init.name);
  auto need = [&](const std::string& v, Side where, size_t before) {
    auto& have = where == Side::Host ? on_host : on_device;
    if (have.count(v)) return;
    const bool initializer = g.initializer(v) != nullptr && !producer.count(v);
    plan.copies.push_back({v, where, before, initializer && where == Side::Device});
    have.insert(v);
  };
  for (size_t i = 0; i < count; ++i) {
    const Node& n = g.nodes[i];
    const Side side = plan.nodes[i].side;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k].empty() || reads_shape_only(n, k)) continue;
      const bool on_host_read = side == Side::Host || (rules.reads_on_host && rules.reads_on_host(n, k));
      need(n.inputs[k], on_host_read ? Side::Host : Side::Device, i);
    }
    for (const auto& v : captures[i]) need(v, Side::Host, i);
    for (const auto& o : n.outputs)
      if (!o.empty()) (side == Side::Host ? on_host : on_device).insert(o);
  }
  for (const auto& o : g.outputs) need(o.name, Side::Host, count);
  // Prepare-time uploads first: they are not part of a run.
  std::stable_partition(plan.copies.begin(), plan.copies.end(), [](const Copy& c) { return c.at_prepare; });

  // 4. Segments.
  for (size_t i = 0; i < count; ++i) {
    if (plan.segments.empty() || plan.segments.back().side != plan.nodes[i].side)
      plan.segments.push_back({plan.nodes[i].side, i, i});
    plan.segments.back().end = i + 1;
  }
  return plan;
}

std::string describe(const Graph& g, const PartitionPlan& plan) {
  std::ostringstream out;
  auto side_name = [](Side s) { return s == Side::Host ? "host" : "device"; };
  for (const Copy& c : plan.copies)
    if (c.at_prepare) out << "upload  '" << c.value << "' once, when the model is prepared\n";
  size_t next_copy = 0;
  auto copies_before = [&](size_t node) {
    for (; next_copy < plan.copies.size(); ++next_copy) {
      const Copy& c = plan.copies[next_copy];
      if (c.at_prepare) continue;
      if (c.before > node) break;
      out << "copy    '" << c.value << "' to the " << side_name(c.to) << "\n";
    }
  };
  for (const Segment& s : plan.segments) {
    for (size_t i = s.begin; i < s.end; ++i) {
      copies_before(i);
      const Node& n = g.nodes[i];
      out << (s.side == Side::Host ? "host    " : "device  ") << n.label(i) << " (" << n.op_type << ")";
      if (!plan.nodes[i].reason.empty()) out << ": " << plan.nodes[i].reason;
      out << "\n";
    }
  }
  copies_before(g.nodes.size());
  return out.str();
}

}  // namespace onnxscope
