// bisect-passes (onnxscope/bisect_passes.h): a binary search over the number
// of graph rewrites the cpu engine makes, against the reference's outputs.
#include "onnxscope/bisect_passes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace onnxscope {
namespace {

CpuOptions with_budget(const EngineSettings& s, int64_t budget) {
  CpuOptions o = cpu_options(s);
  o.rewrite_budget = budget;
  return o;
}

OutputCheck check(const NamedValues& got, const NamedValues& want, const DiffTolerance& tol) {
  OutputCheck c;
  bool first = true;
  for (const auto& [name, v] : want) {
    const std::string& key = name;  // (clang before 16 captures no structured binding: the fuzz build's)
    auto it = std::find_if(got.begin(), got.end(), [&](const auto& nv) { return nv.first == key; });
    if (it == got.end()) continue;
    TensorDiff d = diff_values(v, it->second, tol, name);
    const double violation = d.comparable ? d.worst_violation : INFINITY;
    if (first || violation > (c.diff.comparable ? c.diff.worst_violation : INFINITY)) {
      c.output = name;
      c.diff = d;
      first = false;
    }
    c.within = c.within && d.within();
  }
  return c;
}

std::string node_text(const Node& n) { return "'" + n.name + "' (" + n.op_type + ")"; }

// A node as the graph holds it: its operator, name, inputs and outputs.
std::string signature(const Node& n) {
  std::string s = n.domain + "::" + n.op_type + " " + n.name + " <";
  for (const auto& i : n.inputs) s += i + ",";
  s += "> <";
  for (const auto& o : n.outputs) s += o + ",";
  return s + ">";
}

}  // namespace

BisectResult bisect_passes(std::shared_ptr<const Model> model, const NamedValues& inputs, const BisectOptions& opt) {
  BisectResult r;
  EngineSettings ref_settings = opt.settings;
  const NamedValues want = make_engine("reference", ref_settings)->prepare(model)->run(inputs);
  r.sites = optimize_for_cpu(*model, with_budget(opt.settings, -1)).rewrites;
  std::map<int64_t, OutputCheck> seen;
  auto run = [&](int64_t budget) -> const OutputCheck& {
    if (auto it = seen.find(budget); it != seen.end()) return it->second;
    EngineSettings s = opt.settings;
    s.rewrite_budget = budget;
    const NamedValues got = make_engine("cpu", s)->prepare(model)->run(inputs);
    ++r.runs;
    OutputCheck c = check(got, want, opt.tolerance);
    if (opt.progress)
      opt.progress("  " + std::to_string(budget) + " of " + std::to_string(r.sites.size()) + " rewrites: " +
                   (c.within ? "within tolerance" : "out of tolerance") + " (worst output '" + c.output + "', max|A-B| " +
                   format_value(c.diff.max_abs, c.diff.dtype_a) + ")");
    return seen.emplace(budget, std::move(c)).first->second;
  };
  const auto n = static_cast<int64_t>(r.sites.size());
  r.all = run(n);
  r.none = run(0);
  if (r.all.within || !r.none.within) return r;  // nothing to find, or not a rewrite's doing
  // Invariant: lo rewrites stay within, hi leave it.
  int64_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (run(mid).within ? lo : hi) = mid;
  }
  r.culprit = static_cast<size_t>(hi - 1);
  r.before = run(lo);
  r.after = run(hi);
  r.model_before = optimize_for_cpu(*model, with_budget(opt.settings, lo)).model;
  r.model_after = optimize_for_cpu(*model, with_budget(opt.settings, hi)).model;
  std::multiset<std::string> before, after;
  for (const Node& x : r.model_before->graph.nodes) before.insert(signature(x));
  for (const Node& x : r.model_after->graph.nodes) after.insert(signature(x));
  std::set<std::string> original;
  for (const Node& x : r.model_before->graph.nodes)
    if (!after.count(signature(x))) r.removed.push_back(node_text(x));
  for (const Node& x : r.model_after->graph.nodes) {
    if (before.count(signature(x))) continue;
    r.added.push_back(node_text(x));
    bool from_meta = false;
    for (const auto& kv : x.metadata)
      if (kv.key == "onnxscope.fused_from") {
        from_meta = true;
        for (size_t p = 0; p <= kv.value.size();) {
          size_t q = kv.value.find(';', p);
          if (q == std::string::npos) q = kv.value.size();
          if (q > p) original.insert(kv.value.substr(p, q - p));
          p = q + 1;
        }
      }
    if (!from_meta) original.insert(x.name);
  }
  // The model's own nodes among them, in the model's order.
  for (size_t i = 0; i < model->graph.nodes.size(); ++i) {
    const Node& x = model->graph.nodes[i];
    if (original.count(x.label(i))) r.original.push_back("'" + x.label(i) + "' (" + x.op_type + ")");
  }
  return r;
}

}  // namespace onnxscope
