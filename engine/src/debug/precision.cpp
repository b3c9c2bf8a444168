// The keep-in-float32 search and the quantized values' own errors
// (onnxscope/precision.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "debug/graph_match_index.h"
#include "onnxscope/diff_report.h"
#include "onnxscope/model_diff.h"
#include "onnxscope/precision.h"

namespace onnxscope {
namespace {

// The graph outputs of `got` against `want`: the worst one, and whether all are within.
bool outputs_within(const NamedValues& want, const NamedValues& got, const DiffTolerance& tol, TensorDiff& worst,
                    std::string& worst_name) {
  bool ok = true, first = true;
  for (const auto& [name, v] : want) {
    const std::string& key = name;  // (clang before 16 captures no structured binding: the fuzz build's)
    auto it = std::find_if(got.begin(), got.end(), [&](const auto& nv) { return nv.first == key; });
    if (it == got.end()) continue;
    TensorDiff d = diff_values(v, it->second, tol, name);
    const double violation = d.comparable ? d.worst_violation : INFINITY;
    if (first || violation > (worst.comparable ? worst.worst_violation : INFINITY)) {
      worst = d;
      worst_name = name;
      first = false;
    }
    ok = ok && d.within();
  }
  return ok;
}

std::string g3(double v) { return short_number(v); }

}  // namespace

PrecisionResult find_mixed_precision(std::shared_ptr<const Model> model, const NamedValues& inputs, Engine& engine,
                                     const PrecisionOptions& opt) {
  PrecisionResult r;
  const Capture fp32 = capture_run(engine, model, inputs);
  ++r.runs;
  NamedValues want;
  for (const auto& o : model->graph.outputs)
    if (auto it = fp32.values.find(o.name); it != fp32.values.end()) want.emplace_back(o.name, it->second);
  r.ranges = node_ranges(*model, fp32, opt.target);
  const char* type = opt.target == DataType::BFloat16 ? "bfloat16" : "float16";
  std::set<std::string> keep;
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    const NodeRange& n = r.ranges[i];
    if ((n.overflow || n.underflow) && !r.first_out_of_range) r.first_out_of_range = i;
    if (n.overflow && keep.insert(n.node).second) {
      r.keep.push_back(n.node);
      r.why.push_back("overflows " + std::string(type) + " (" + std::to_string(n.overflow) + " values, max |x| " + g3(n.max_abs) + ")");
    }
  }
  // Every other node converted: how far the outputs move, and each node's own share (blame).
  // The search runs emulated models (float32 kernels on rounded values) when asked.
  ConvertedWeights weights;  // each constant converted once for all the models below
  auto low = convert_precision(*model, fp32, opt.target, keep, &r.auto_kept, opt.emulate, &weights);
  // A plain run, as the search's (the ranking takes its errors from node_error_model's run).
  const NamedValues got_low = engine.prepare(low)->run(inputs);
  ++r.runs;
  const bool all_low_met = outputs_within(want, got_low, opt.tolerance, r.all_low, r.all_low_output);
  if (opt.progress)
    opt.progress("  " + std::to_string(keep.size()) + " node(s) in float32" + (opt.emulate ? " (emulated)" : "") +
                 ": worst output '" + r.all_low_output + "' max|A-B| " + g3(r.all_low.max_abs) +
                 (all_low_met ? " (meets the tolerance)" : ""));
  // A run of the model as it would be written (real types), with the first n ranked nodes kept too.
  std::vector<std::pair<double, std::string>> ranked;
  auto keep_with = [&](size_t n) {
    std::set<std::string> k = keep;
    for (size_t i = 0; i < n && i < ranked.size(); ++i) k.insert(ranked[i].second);
    return k;
  };
  struct Tried {
    bool ok = false;
    TensorDiff worst;
    std::string worst_name;
    std::shared_ptr<Model> model;  // kept for runs of the real types: the one written may be one of them
  };
  std::map<std::pair<bool, size_t>, Tried> tried;
  auto try_prefix = [&](size_t n, bool real) {
    real = real || !opt.emulate;  // without emulation every run is of the real types
    if (auto it = tried.find({real, n}); it != tried.end()) return it->second.ok;
    const std::set<std::string> k = keep_with(n);
    std::vector<std::string> ignored;
    const bool emulated = !real;
    Tried t;
    t.model = convert_precision(*model, fp32, opt.target, k, &ignored, emulated, &weights);
    t.ok = outputs_within(want, engine.prepare(t.model)->run(inputs), opt.tolerance, t.worst, t.worst_name);
    ++r.runs;
    if (opt.progress)
      opt.progress("  " + std::to_string(k.size()) + " node(s) in float32" + (emulated ? " (emulated)" : "") +
                   ": worst output '" + t.worst_name + "' max|A-B| " + g3(t.worst.max_abs) + (t.ok ? " (meets the tolerance)" : ""));
    if (emulated) t.model.reset();
    const bool ok = t.ok;
    tried[{real, n}] = std::move(t);
    return ok;
  };
  // The ranking: each node's own error (what blame measures: the node alone,
  // on the float32 run's inputs) against its values' scale, largest first.
  // All nodes in one run of node_error_model, not a piece model per node.
  auto rank = [&] {
    std::vector<NodeAlone> alone;
    const auto errors = node_error_model(*model, fp32, opt.target, keep, opt.emulate, &weights, alone);
    const NamedValues outs = engine.prepare(errors)->run(inputs);
    ++r.runs;
    std::map<std::string, const Value*> result;
    for (const auto& [name, v] : outs) result[name] = &v;
    std::map<std::string, double> scale;
    for (const auto& n : r.ranges) scale[n.node] = n.max_abs;
    for (const NodeAlone& na : alone) {
      if (keep.count(na.node) || !scale.count(na.node)) continue;
      double worst = -1;  // the largest error of its outputs; inf where one cannot be compared
      for (const auto& [value, alone_value] : na.outputs) {
        auto a = fp32.values.find(value);
        auto b = result.find(alone_value);
        if (a == fp32.values.end() || b == result.end()) continue;
        const TensorDiff d = diff_values(a->second, *b->second, opt.tolerance, value);
        worst = std::max(worst, d.comparable ? d.max_abs : INFINITY);
      }
      if (worst < 0) continue;
      const double sc = std::isinf(worst) ? INFINITY : worst / std::max(scale[na.node], 1e-30);
      if (sc > 0) ranked.emplace_back(sc, na.node);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  };
  // A short prefix of the ranking, from `from` nodes on, whose nodes kept in
  // float32 make the outputs meet the tolerance: prefixes growing fourfold
  // until one does, then a binary search that stops once the shortest is
  // known to within an eighth (a small set, not always the smallest: each
  // step is a run of the whole model). 0 when even the longest allowed does not.
  const auto limit_of = [&] { return std::min(opt.max_keep > keep.size() ? opt.max_keep - keep.size() : 0, ranked.size()); };
  auto search = [&](size_t from, bool real) -> size_t {
    const size_t limit = limit_of();
    size_t bad = from, good = 0;
    for (size_t n = std::max<size_t>(1, from * 4); from < limit; n = std::min(limit, n * 4)) {
      if (try_prefix(n, real)) {
        good = n;
        break;
      }
      bad = n;
      if (n == limit) break;
    }
    if (!good) return 0;
    while (good - bad > std::max<size_t>(1, good / 8)) {
      const size_t mid = bad + (good - bad) / 2;
      (try_prefix(mid, real) ? good : bad) = mid;
    }
    return good;
  };
  size_t take = 0;
  bool met = all_low_met;
  r.emulated_met = all_low_met;
  if (all_low_met && opt.emulate) met = try_prefix(0, true);  // the emulation's verdict, confirmed as written
  if (!met) {
    rank();
    if (!all_low_met || !opt.emulate) {
      take = search(0, false);
      r.emulated_met = take > 0;
      met = take > 0 && (!opt.emulate || try_prefix(take, true));
    }
    // Emulation and the real types disagree: go on from there with real runs.
    if (!met && opt.emulate) {
      const size_t more = search(take, true);
      if (more) take = more;
      met = more > 0;
    }
    if (!met) take = limit_of();
  }
  for (size_t i = 0; i < take && i < ranked.size(); ++i) {
    keep.insert(ranked[i].second);
    r.keep.push_back(ranked[i].second);
    r.why.push_back(std::isinf(ranked[i].first) ? "its float16 result is not finite on its own"
                                                : "introduces " + g3(ranked[i].first) + " of its values' scale on its own");
  }
  // The model written, run as written (a run of the real types the search made already, or one more).
  if (auto it = tried.find({true, take}); it != tried.end()) {
    r.mixed_model = it->second.model;
    r.mixed = it->second.worst;
    r.mixed_output = it->second.worst_name;
    r.met = it->second.ok;
  } else {
    std::vector<std::string> ignored;
    r.mixed_model = convert_precision(*model, fp32, opt.target, keep, &ignored, false, &weights);
    if (!opt.emulate && take == 0) {
      r.mixed = r.all_low;
      r.mixed_output = r.all_low_output;
      r.met = all_low_met;
    } else {
      r.met = outputs_within(want, engine.prepare(r.mixed_model)->run(inputs), opt.tolerance, r.mixed, r.mixed_output);
      ++r.runs;
    }
  }
  return r;
}

std::vector<QuantizedValueError> quantized_value_errors(const Model& a, const Model& b, const GraphMatch& m,
                                                        const Capture& a_values, const Capture& b_values) {
  const match::GraphIndex A(a, &a_values);
  const match::GraphIndex B(b, &b_values);
  // The A tensor A's partner of B's consumer c reads at input k, if c's output is paired with an A node of c's operator.
  auto read_by_partner = [&](int c, size_t k) -> std::string {
    const Node& nb = b.graph.nodes[size_t(c)];
    for (const auto& o : nb.outputs) {
      if (!B.is_data(o)) continue;
      auto it = std::find_if(m.pairs.begin(), m.pairs.end(), [&](const TensorPair& p) { return p.b == B.root_of(o); });
      if (it == m.pairs.end()) continue;
      auto pa = A.producer.find(it->a);
      if (pa == A.producer.end()) return {};
      const Node& na = a.graph.nodes[size_t(pa->second)];
      if (na.op_type != nb.op_type || k >= na.inputs.size()) return {};
      return na.inputs[k];
    }
    return {};
  };
  std::map<std::string, std::string> a_of;  // B root -> A tensor
  for (const auto& p : m.pairs) a_of[p.b] = p.a;
  std::vector<QuantizedValueError> out;
  for (size_t i = 0; i < b.graph.nodes.size(); ++i) {
    const Node& q = b.graph.nodes[i];
    if (q.op_type != "QuantizeLinear" || !(q.domain.empty() || q.domain == "com.microsoft") || q.inputs.size() < 2 ||
        q.outputs.empty() || !B.is_data(q.inputs[0]))
      continue;
    auto pa = a_of.find(B.root_of(q.inputs[0]));
    if (pa == a_of.end()) continue;
    std::string a_tensor = pa->second;
    // Through the DequantizeLinear nodes reading q to the first consumer whose partner reads a value.
    if (auto qc = B.consumers.find(q.outputs[0]); qc != B.consumers.end())
      for (int dq : qc->second) {
        const Node& d = b.graph.nodes[size_t(dq)];
        if (d.op_type != "DequantizeLinear" || d.outputs.empty()) continue;
        auto dc = B.consumers.find(d.outputs[0]);
        if (dc == B.consumers.end()) continue;
        std::string found;
        for (int c : dc->second) {
          const Node& nc = b.graph.nodes[size_t(c)];
          for (size_t k = 0; k < nc.inputs.size() && found.empty(); ++k)
            if (nc.inputs[k] == d.outputs[0]) found = read_by_partner(c, k);
          if (!found.empty()) break;
        }
        if (!found.empty() && a_values.values.count(found)) {
          a_tensor = found;
          break;
        }
      }
    auto va = a_values.values.find(a_tensor);
    auto vq = b_values.values.find(q.outputs[0]);
    const Tensor* scale = B.static_value(q.inputs[1]);
    const Tensor* zp = q.inputs.size() > 2 && !q.inputs[2].empty() ? B.static_value(q.inputs[2]) : nullptr;
    if (va == a_values.values.end() || !va->second.is_tensor() || vq == b_values.values.end() || !vq->second.is_tensor() ||
        !scale || scale->element_count() == 0)
      continue;
    const Tensor& x = va->second.tensor();
    const DataType qt = vq->second.tensor().dtype();
    double lo = 0, hi = 255;
    switch (qt) {
      case DataType::Int8: lo = -128; hi = 127; break;
      case DataType::Uint16: hi = 65535; break;
      case DataType::Int16: lo = -32768; hi = 32767; break;
      case DataType::Int4: lo = -8; hi = 7; break;
      case DataType::Uint4: hi = 15; break;
      default: break;
    }
    // Per tensor, or per axis (the scale's length along `axis`).
    const Shape& shape = x.shape();
    const uint64_t channels = scale->element_count();
    int64_t axis = 1;
    if (const Attribute* a = q.attribute("axis")) axis = a->i;
    if (axis < 0) axis += static_cast<int64_t>(shape.size());
    uint64_t inner = 1;
    if (channels > 1) {
      if (axis < 0 || axis >= static_cast<int64_t>(shape.size()) || static_cast<uint64_t>(shape[size_t(axis)]) != channels) continue;
      for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= static_cast<uint64_t>(shape[d]);
    }
    QuantizedValueError e;
    e.a_tensor = a_tensor;
    e.b_tensor = q.outputs[0];
    e.quantizer = q.label(i);
    e.elements = x.element_count();
    std::vector<double> v(x.element_count());
    x.elements_as_double(0, v.size(), v.data());
    double sum = 0;
    for (uint64_t k = 0; k < v.size(); ++k) {
      const uint64_t c = channels > 1 ? (k / inner) % channels : 0;
      const double s = scale->element_as_double(c);
      const double z = zp ? zp->element_as_double(zp->element_count() > 1 ? c : 0) : 0.0;
      e.scale = std::max(e.scale, std::fabs(s));
      if (!(s > 0) || !std::isfinite(v[k])) continue;
      const double unclipped = std::nearbyint(v[k] / s) + z;  // round half to even, as QuantizeLinear
      const double qv = std::clamp(unclipped, lo, hi);
      e.saturated += qv != unclipped;
      const double steps = std::fabs(v[k] - (qv - z) * s) / s;
      e.max_steps = std::max(e.max_steps, steps);
      sum += steps;
    }
    e.mean_steps = v.empty() ? 0 : sum / static_cast<double>(v.size());
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.max_steps > y.max_steps; });
  return out;
}

}  // namespace onnxscope
