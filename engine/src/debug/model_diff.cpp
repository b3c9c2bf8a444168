// diff A --against B (onnxscope/model_diff.h): inputs for B, B's values under
// A's names, the comparison along A's data nodes, and blame by re-running the
// piece of B that computes each paired value on A's values.
#include "onnxscope/model_diff.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>

#include "cpu/kernels/kernels.h"
#include "debug/graph_match_index.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inputs.h"
#include "onnxscope/proto_io.h"

namespace onnxscope {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& message) {
  Diagnostic d;
  d.code = "models-do-not-pair";
  d.where.file = file;
  d.message = message;
  throw Error(d);
}

std::vector<std::string> real_inputs(const Model& m) {
  std::vector<std::string> out;
  for (const auto& in : m.graph.inputs)
    if (!m.graph.initializer(in.name)) out.push_back(in.name);
  return out;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool float_type(DataType t) {
  return t == DataType::Float || t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Double;
}

Tensor as_type(const Tensor& t, DataType to) {
  if (t.dtype() == to || !float_type(t.dtype()) || !float_type(to)) return t;
  Tensor out = Tensor::zeros(to, t.shape());
  if (t.dtype() == DataType::Float && to == DataType::Float16) {  // the Cast kernel's conversion: float_to_half's bits
    cpu::half_cast(t.raw(), out.mutable_raw(), static_cast<int64_t>(t.element_count()), true);
    return out;
  }
  // Through the float formats' own conversions: a value rounds once, to `to`.
  std::vector<double> v(t.element_count());
  t.elements_as_double(0, v.size(), v.data());
  std::byte* p = out.mutable_raw();
  for (size_t i = 0; i < v.size(); ++i) {
    switch (to) {
      case DataType::Float: reinterpret_cast<float*>(p)[i] = static_cast<float>(v[i]); break;
      case DataType::Double: reinterpret_cast<double*>(p)[i] = v[i]; break;
      case DataType::Float16: reinterpret_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v[i])); break;
      default: reinterpret_cast<uint16_t*>(p)[i] = float_to_bfloat16(static_cast<float>(v[i])); break;
    }
  }
  return out;
}

}  // namespace

NamedValues inputs_for_other(const Model& a, const Model& b, const NamedValues& a_inputs) {
  const auto ia = real_inputs(a), ib = real_inputs(b);
  if (ia.size() != ib.size())
    fail(b.source, "takes " + std::to_string(ib.size()) + " input(s) (" + join(ib) + ") where " + a.source + " takes " +
                       std::to_string(ia.size()) + " (" + join(ia) + "): the two models cannot be fed the same inputs");
  const std::set<std::string> sa(ia.begin(), ia.end()), sb(ib.begin(), ib.end());
  const bool by_name = sa == sb;
  InputSpec spec;
  spec.dump_must_cover = true;
  spec.cast_inputs = true;
  for (size_t k = 0; k < ia.size(); ++k) {
    const std::string& from = ia[k];
    const std::string& to = by_name ? from : ib[k];
    auto it = std::find_if(a_inputs.begin(), a_inputs.end(), [&](const auto& nv) { return nv.first == from; });
    if (it == a_inputs.end() || !it->second.is_tensor()) fail(a.source, "input '" + from + "' has no tensor value to give B");
    spec.from_dump[to] = it->second.tensor();
  }
  try {
    return make_inputs(b, spec);
  } catch (const Error& e) {
    fail(b.source, std::string("cannot take ") + a.source + "'s inputs" + (by_name ? "" : " (paired by position)") + ": " +
                       e.diagnostic().message);
  }
}

Capture capture_in_a_names(const GraphMatch& m, const Capture& b) {
  Capture c;
  c.source = b.source;
  for (const auto& [ta, tb] : m.b_of) {
    if (auto it = b.values.find(tb); it != b.values.end()) c.values[ta] = it->second;
    if (auto it = b.kernel_of.find(tb); it != b.kernel_of.end()) c.kernel_of[ta] = it->second;
  }
  return c;
}

std::map<std::string, double> quantization_steps_against(const Model& a, const Model& b, const GraphMatch& m) {
  std::map<std::string, double> steps = quantization_steps(a);
  const match::GraphIndex B(b, nullptr);
  std::map<std::string, double> by_root;  // B's quantized tensors are aliases of a float value: its step
  for (const auto& [name, step] : quantization_steps(b))
    if (B.is_data(name)) by_root.emplace(B.root_of(name), step);
  for (const auto& [ta, tb] : m.b_of)
    if (auto it = by_root.find(tb); it != by_root.end()) steps.emplace(ta, it->second);
  return steps;
}

DiffReport diff_against(const Model& a, const GraphMatch& m, const Capture& ca, const Capture& cb_in_a_names,
                        const DiffTolerance& tol) {
  const match::GraphIndex index(a, &ca);
  std::vector<DiffStep> steps;
  for (size_t i = 0; i < a.graph.nodes.size(); ++i) {
    if (!index.data_node[i]) continue;
    const Node& n = a.graph.nodes[i];
    steps.push_back({n.label(i), n.op_type, i, n.outputs});
  }
  DiffReport r = diff_steps(steps, ca, cb_in_a_names, tol);
  std::set<std::string> region, unmatched;
  for (const auto& n : m.region_a) region.insert(n.node);
  for (const auto& n : m.unmatched_a) unmatched.insert(n.node);
  for (NodeDiff& nd : r.nodes) {
    for (const auto& [name, d] : nd.outputs)
      if (auto it = m.b_of.find(name); it != m.b_of.end()) nd.partners.emplace_back(name, it->second);
    if (nd.outputs.empty()) nd.unpaired = region.count(nd.node) ? "in a rewritten region" : unmatched.count(nd.node) ? "unmatched" : "";
  }
  return r;
}

namespace {

// The piece of B that computes the partners of one A node's outputs, fed
// with A's values (converted to B's float types).
struct BPiece {
  std::shared_ptr<Model> model;
  NamedValues feeds;
  std::map<std::string, std::string> targets;  // B tensor -> A tensor
};

std::optional<BPiece> b_piece(const Model& b, const match::GraphIndex& B, const std::map<std::string, std::string>& a_of,
                              const NodeDiff& nd, const Capture& ca, const Capture& cb, size_t max_nodes) {
  BPiece piece;
  for (const auto& [ta, tb] : nd.partners) piece.targets.emplace(tb, ta);
  // Walk back from the partners to paired values (fed with A's) and constants.
  std::set<int> nodes;
  std::set<std::string> seen, boundary, initializers;
  std::vector<std::string> stack;
  for (const auto& [tb, ta] : piece.targets) stack.push_back(tb);
  while (!stack.empty()) {
    const std::string t = stack.back();
    stack.pop_back();
    if (t.empty() || !seen.insert(t).second) continue;
    if (auto it = a_of.find(t); !piece.targets.count(t) && it != a_of.end() && ca.values.count(it->second)) {
      boundary.insert(t);
      continue;
    }
    if (b.graph.initializer(t)) {
      initializers.insert(t);
      continue;
    }
    auto p = B.producer.find(t);
    if (p == B.producer.end()) return std::nullopt;  // an unpaired input of B: the piece cannot be fed from A
    const Node& n = b.graph.nodes[size_t(p->second)];
    for (const auto& attr : n.attributes)
      if (attr.g || !attr.graphs.empty()) return std::nullopt;  // a subgraph's outer names: not followed
    if (!nodes.insert(p->second).second) continue;
    if (nodes.size() > max_nodes) return std::nullopt;
    for (const auto& in : n.inputs) stack.push_back(in);
  }
  if (nodes.empty()) return std::nullopt;
  piece.model = piece_model(b, "onnxscope diff --against", b.source + " [the piece of B computing node " + nd.node + "'s partner]");
  Model& s = *piece.model;
  s.graph.name = "piece";
  for (const auto& t : boundary) {
    Value v = ca.values.at(a_of.at(t));
    if (v.is_tensor())
      if (auto it = cb.values.find(t); it != cb.values.end() && it->second.is_tensor())
        v = Value(as_type(v.tensor(), it->second.tensor().dtype()));
    if (!v.is_tensor() && !v.is_sequence()) return std::nullopt;
    s.graph.inputs.push_back({t, type_of_value(v), {}});
    piece.feeds.emplace_back(t, std::move(v));
  }
  for (const auto& t : initializers) s.graph.initializers.push_back(*b.graph.initializer(t));
  for (int n : nodes) s.graph.nodes.push_back(b.graph.nodes[size_t(n)]);  // std::set: B's order
  for (const auto& [tb, ta] : piece.targets) s.graph.outputs.push_back({tb, {}, {}});
  return piece;
}

// The piece run in B's engine against A's values: the worst output.
std::optional<TensorDiff> run_piece(const BPiece& piece, const Capture& ca, Engine& engine_b, const DiffTolerance& tol) {
  try {
    NamedValues outs = engine_b.prepare(piece.model)->run(piece.feeds);
    std::optional<TensorDiff> worst;
    double worst_score = 0;
    for (const auto& [tb, v] : outs) {
      const std::string& ta = piece.targets.at(tb);
      auto it = ca.values.find(ta);
      if (it == ca.values.end()) continue;
      TensorDiff d = diff_values(it->second, v, tol, ta);
      const double score = d.comparable ? d.max_abs : INFINITY;
      if (!worst || score >= worst_score) {
        worst_score = score;
        worst = d;
      }
    }
    return worst;
  } catch (const std::exception&) {
    return std::nullopt;  // the piece cannot run alone
  }
}

}  // namespace

bool blame_against(const Model& a, const Model& b, const GraphMatch& m, const Capture& ca, const Capture& cb, Engine& engine_b,
                   const DiffTolerance& tol, DiffReport& report, size_t max_nodes, const std::function<bool()>& should_stop) {
  const match::GraphIndex B(b, &cb);
  std::map<std::string, std::string> a_of;  // B root -> A root
  for (const auto& p : m.pairs) a_of[p.b] = p.a;
  bool complete = true;
  for (NodeDiff& nd : report.nodes) {
    if (should_stop && should_stop()) {
      complete = false;
      break;
    }
    if (nd.partners.empty() || nd.node_index >= a.graph.nodes.size()) continue;
    auto piece = b_piece(b, B, a_of, nd, ca, cb, max_nodes);
    if (!piece) continue;
    if (auto d = run_piece(*piece, ca, engine_b, tol)) {
      nd.introduced = *d;
      nd.introduced_score = d->comparable ? d->max_abs : INFINITY;
    }
  }
  report.blame_order.clear();
  for (size_t i = 0; i < report.nodes.size(); ++i)
    if (report.nodes[i].introduced) report.blame_order.push_back(i);
  std::stable_sort(report.blame_order.begin(), report.blame_order.end(), [&](size_t x, size_t y) {
    return report.nodes[x].introduced_score > report.nodes[y].introduced_score;
  });
  return complete;
}

ReduceResult reduce_against(const Model& a, const Model& b, const GraphMatch& m, const Capture& ca, const Capture& cb,
                            Engine& engine_b, const DiffTolerance& tol, const DiffReport& report,
                            const std::filesystem::path& out_dir) {
  ReduceResult r;
  const match::GraphIndex B(b, &cb);
  std::map<std::string, std::string> a_of;
  for (const auto& p : m.pairs) a_of[p.b] = p.a;
  // The most-blamed node's piece, then the first divergent node's.
  std::vector<std::pair<size_t, std::string>> tries;
  if (!report.blame_order.empty()) tries.emplace_back(report.blame_order.front(), "the piece of B for the node that introduces the most error");
  if (report.first_divergence) tries.emplace_back(*report.first_divergence, "the piece of B for the first divergent node");
  for (const auto& [index, how] : tries) {
    const NodeDiff& nd = report.nodes[index];
    auto piece = b_piece(b, B, a_of, nd, ca, cb, 64);
    if (!piece) continue;
    auto d = run_piece(*piece, ca, engine_b, tol);
    if (!d || d->within()) continue;
    namespace fs = std::filesystem;
    fs::create_directories(out_dir / "test_data_set_0");
    save_model(*piece->model, out_dir / "model.onnx");
    for (size_t k = 0; k < piece->feeds.size(); ++k)
      if (piece->feeds[k].second.is_tensor())
        std::ofstream(out_dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"), std::ios::binary)
            << tensor_to_proto_bytes(piece->feeds[k].second.tensor(), piece->feeds[k].first);
    // Expected: A's values, in the type B's piece gives them.
    const NamedValues outs = engine_b.prepare(piece->model)->run(piece->feeds);
    for (size_t k = 0; k < piece->model->graph.outputs.size(); ++k) {
      const std::string& tb = piece->model->graph.outputs[k].name;
      const Value& va = ca.values.at(piece->targets.at(tb));
      auto got = std::find_if(outs.begin(), outs.end(), [&](const auto& nv) { return nv.first == tb; });
      if (!va.is_tensor() || got == outs.end() || !got->second.is_tensor()) continue;
      std::ofstream(out_dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb"), std::ios::binary)
          << tensor_to_proto_bytes(as_type(va.tensor(), got->second.tensor().dtype()), tb);
    }
    r.reproduced = true;
    r.diff = *d;
    r.how = how + " (" + nd.node + "), fed A's values, expected A's outputs";
    for (const Node& n : piece->model->graph.nodes) r.nodes.push_back(n.name.empty() ? n.op_type : n.name);
    return r;
  }
  return r;
}

}  // namespace onnxscope
