#include "onnxscope/reduce.h"

#include <fstream>
#include <set>

#include "core/graph_util.h"
#include "onnxscope/proto_io.h"

namespace onnxscope {

TypeInfo type_of_value(const Value& v) {
  TypeInfo t;
  if (v.is_tensor()) {
    std::vector<Dim> dims;
    for (int64_t d : v.tensor().shape()) dims.push_back(Dim::known(d));
    t = TypeInfo::tensor(v.tensor().dtype(), dims);
  } else if (v.is_sequence()) {
    t.kind = TypeInfo::Kind::Sequence;
  } else if (v.is_map()) {
    t.kind = TypeInfo::Kind::Map;
  } else {
    t.kind = TypeInfo::Kind::Optional;
  }
  return t;
}

std::shared_ptr<Model> piece_model(const Model& from, std::string producer, std::string source) {
  auto m = std::make_shared<Model>();
  m->ir_version = from.ir_version;
  m->opset_imports = from.opset_imports;
  m->functions = from.functions;
  m->producer_name = std::move(producer);
  m->source = std::move(source);
  return m;
}

namespace {

struct Piece {
  std::shared_ptr<Model> model;
  NamedValues feeds;
};

// The nodes `keep` (indices into the main graph, in order) as a model whose
// inputs are the values they read from outside, and whose outputs are the
// last node's outputs. Initializers stay initializers.
std::optional<Piece> cut(const Model& m, const std::vector<size_t>& keep, const Capture& a) {
  Piece p;
  p.model = piece_model(m, "onnxscope reduce", m.source + " [reduced]");
  Model& s = *p.model;
  s.graph.name = m.graph.name + "_reduced";
  std::set<std::string> produced;
  for (size_t i : keep)
    for (const auto& o : m.graph.nodes[i].outputs) produced.insert(o);
  std::set<std::string> inits;
  for (const auto& init : m.graph.initializers) inits.insert(init.name);
  detail::FreeNames free;
  std::set<std::string> seen;
  auto need = [&](const std::string& name) -> bool {
    if (name.empty() || produced.count(name) || !seen.insert(name).second) return true;
    if (inits.count(name)) {
      s.graph.initializers.push_back(*m.graph.initializer(name));
      return true;
    }
    auto it = a.values.find(name);
    if (it == a.values.end()) return false;
    s.graph.inputs.push_back({name, type_of_value(it->second), {}});
    p.feeds.emplace_back(name, it->second);
    return true;
  };
  for (size_t i : keep) {
    const Node& n = m.graph.nodes[i];
    for (const auto& in : n.inputs)
      if (!need(in)) return std::nullopt;
    for (const auto& attr : n.attributes) {
      if (attr.g)
        for (const auto& f : free.of(*attr.g))
          if (!need(f)) return std::nullopt;
      for (const auto& g : attr.graphs)
        if (g)
          for (const auto& f : free.of(*g))
            if (!need(f)) return std::nullopt;
    }
    s.graph.nodes.push_back(n);
  }
  for (const auto& o : m.graph.nodes[keep.back()].outputs)
    if (!o.empty()) {
      auto it = a.values.find(o);
      s.graph.outputs.push_back({o, it != a.values.end() ? type_of_value(it->second) : TypeInfo{}, {}});
    }
  return p;
}

// Runs the piece in engine B; the worst output difference against A's capture.
std::optional<TensorDiff> check(const Piece& p, const Capture& a, Engine& b, const DiffTolerance& tol) {
  try {
    NamedValues outs = b.prepare(p.model)->run(p.feeds);
    TensorDiff worst;
    bool any = false;
    for (const auto& [name, v] : outs) {
      auto it = a.values.find(name);
      if (it == a.values.end()) continue;
      TensorDiff d = diff_values(it->second, v, tol);
      if (!any || !d.within() || d.max_abs > worst.max_abs) worst = d;
      any = true;
      if (!d.within()) return d;
    }
    return any ? std::optional<TensorDiff>(worst) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_folder(const Piece& p, const Capture& a, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir / "test_data_set_0");
  save_model(*p.model, dir / "model.onnx");
  for (size_t k = 0; k < p.feeds.size(); ++k) {
    if (!p.feeds[k].second.is_tensor()) continue;
    std::ofstream(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"), std::ios::binary)
        << tensor_to_proto_bytes(p.feeds[k].second.tensor(), p.feeds[k].first);
  }
  for (size_t k = 0; k < p.model->graph.outputs.size(); ++k) {
    const auto& name = p.model->graph.outputs[k].name;
    const Value& v = a.values.at(name);
    if (!v.is_tensor()) continue;
    std::ofstream(dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb"), std::ios::binary)
        << tensor_to_proto_bytes(v.tensor(), name);
  }
}

}  // namespace

ReduceResult reduce_divergence(const Model& model, const Capture& a, Engine& engine_b, const DiffTolerance& tol,
                               const DiffReport& report, const std::filesystem::path& out_dir) {
  ReduceResult r;
  auto finish = [&](const std::vector<size_t>& keep, const Piece& p, const TensorDiff& d, std::string how) {
    r.reproduced = true;
    r.diff = d;
    r.how = std::move(how);
    for (size_t i : keep) r.nodes.push_back(model.graph.nodes[i].label(i));
    write_folder(p, a, out_dir);
    return r;
  };
  // 1. The node that introduces the most error, alone.
  for (size_t bi : report.blame_order) {
    const NodeDiff& nd = report.nodes[bi];
    if (!nd.introduced || nd.introduced->within()) break;
    std::vector<size_t> keep{nd.node_index};
    if (auto p = cut(model, keep, a))
      if (auto d = check(*p, a, engine_b, tol); d && !d->within()) return finish(keep, *p, *d, "single node (top blame)");
    break;
  }
  if (!report.first_divergence) return r;
  // 2. Growing windows of the first divergent node's ancestors: error that
  //    only builds up over several nodes needs all of them to show.
  const size_t last = report.nodes[*report.first_divergence].node_index;
  std::set<std::string> wanted;
  for (const auto& in : model.graph.nodes[last].inputs) wanted.insert(in);
  for (size_t width = 2; width <= last + 1; width *= 2) {
    const size_t first = last + 1 - std::min(width, last + 1);
    // Keep only ancestors of `last` inside the window.
    std::vector<size_t> keep{last};
    std::set<std::string> reads(wanted);
    for (size_t i = last; i-- > first;) {
      bool feeds_it = false;
      for (const auto& o : model.graph.nodes[i].outputs) feeds_it = feeds_it || reads.count(o);
      if (!feeds_it) continue;
      keep.insert(keep.begin(), i);
      for (const auto& in : model.graph.nodes[i].inputs) reads.insert(in);
    }
    if (auto p = cut(model, keep, a))
      if (auto d = check(*p, a, engine_b, tol); d && !d->within())
        return finish(keep, *p, *d, "window of " + std::to_string(keep.size()) + " nodes ending at the first divergence");
    if (width > last) break;
  }
  return r;
}

}  // namespace onnxscope
