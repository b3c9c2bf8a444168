// onnxscope diff A.onnx --against B.onnx: two models of one network (fp32
// and fp16, two exporters, before and after an optimizer) run on the same
// inputs, their values paired (graph_match.h) and compared along A's order;
// blame re-runs the piece of B that computes each paired value on A's values.
#include "cmd_diff_against.h"

#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "onnxscope/diff_report.h"
#include "onnxscope/graph_match.h"
#include "onnxscope/loader.h"
#include "onnxscope/model_diff.h"

namespace onnxscope::cli {
namespace {

std::string node_list(const std::vector<MatchNode>& nodes, size_t limit) {
  std::string s;
  for (size_t i = 0; i < nodes.size() && i < limit; ++i)
    s += (i ? ", " : "") + std::string("'") + nodes[i].node + "' (" + nodes[i].op_type + ")";
  if (nodes.size() > limit) s += ", and " + std::to_string(nodes.size() - limit) + " more (--json lists them all)";
  return s;
}

std::string match_text(const GraphMatch& m, const std::string& a, const std::string& b) {
  std::map<std::string, size_t> by_how;
  for (const auto& p : m.pairs) ++by_how[match_how_name(p.how)];
  std::string how;
  for (const auto& [k, n] : by_how) how += (how.empty() ? "" : ", ") + k + " " + std::to_string(n);
  std::string s = "pairing A = " + a + " with B = " + b + ": " + std::to_string(m.pairs.size()) + " values paired (" +
                  (how.empty() ? "none" : how) + ")\n  " + m.summary() + "\n";
  if (!m.unmatched_a.empty())
    s += "  unmatched in A (" + std::to_string(m.unmatched_a.size()) + "): " + node_list(m.unmatched_a, 12) + "\n";
  if (!m.unmatched_b.empty())
    s += "  unmatched in B (" + std::to_string(m.unmatched_b.size()) + "): " + node_list(m.unmatched_b, 12) + "\n";
  if (!m.region_a.empty())
    s += "  in rewritten regions of A (" + std::to_string(m.region_a.size()) + "): " + node_list(m.region_a, 6) + "\n";
  if (!m.region_b.empty())
    s += "  in rewritten regions of B (" + std::to_string(m.region_b.size()) + "): " + node_list(m.region_b, 6) + "\n";
  for (size_t i = 0; i < m.rejected.size() && i < 8; ++i)
    s += "  not paired: A '" + m.rejected[i].a + "' with B '" + m.rejected[i].b + "': " + m.rejected[i].why + "\n";
  if (m.rejected.size() > 8) s += "  (" + std::to_string(m.rejected.size() - 8) + " more pairs dropped; --json lists them)\n";
  return s;
}

nlohmann::json match_json(const GraphMatch& m) {
  using nlohmann::json;
  auto nodes = [](const std::vector<MatchNode>& v) {
    json out = json::array();
    for (const auto& n : v) out.push_back({{"node", n.node}, {"op_type", n.op_type}});
    return out;
  };
  json pairs = json::array();
  for (const auto& p : m.pairs) pairs.push_back({{"a", p.a}, {"b", p.b}, {"how", match_how_name(p.how)}});
  json rejected = json::array();
  for (const auto& r : m.rejected) rejected.push_back({{"a", r.a}, {"b", r.b}, {"why", r.why}});
  return {{"pairs", pairs},
          {"data_nodes_a", m.data_nodes_a},
          {"data_nodes_b", m.data_nodes_b},
          {"paired_a", m.paired_a},
          {"paired_b", m.paired_b},
          {"coverage_a", m.coverage_a()},
          {"coverage_b", m.coverage_b()},
          {"region_a", nodes(m.region_a)},
          {"region_b", nodes(m.region_b)},
          {"unmatched_a", nodes(m.unmatched_a)},
          {"unmatched_b", nodes(m.unmatched_b)},
          {"rejected", rejected},
          {"summary", m.summary()}};
}

std::vector<std::string> split(const std::string& spec) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t comma = spec.find(',', start);
    out.push_back(spec.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

namespace {

// Both models loaded, run and paired, and the comparison along A (with blame unless asked not to).
struct Against {
  std::unique_ptr<Engine> ea, eb;
  std::vector<std::string> engines;
  std::shared_ptr<const Model> ma, mb;
  Capture ca, cb;
  std::optional<GraphMatch> match;
  DiffReportContext ctx;
  DiffReport report;
};

// 0 when ready, else the exit code (the message printed).
int prepare_against(const DiffAgainstArgs& a, Against& w, bool blame) {
  w.engines = split(a.engines.empty() ? "reference" : a.engines);
  if (w.engines.size() > 2) {
    std::cerr << "onnxscope: with --against, --engines is one engine for both models or two (A's, B's), got '" << a.engines
              << "'\n";
    return kExitUsage;
  }
  for (size_t k = 0; k < 2; ++k) {
    const std::string& name = w.engines[std::min(k, w.engines.size() - 1)];
    if (name.rfind("dump:", 0) == 0 || (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0)) {
      std::cerr << "onnxscope: with --against, both sides run models; a dump ('" << name
                << "') cannot stand for one (use `onnxscope compare`)\n";
      return kExitUsage;
    }
    (k == 0 ? w.ea : w.eb) = make_engine(name, with_plugins(a.eng.settings(), name));
    if (!(k == 0 ? w.ea : w.eb)) {
      std::cerr << "onnxscope: unknown engine '" << name << "' in --engines (engines: reference, cpu, cuda, cuda-sim)\n";
      return kExitUsage;
    }
  }
  w.ma = load_valid_model(a.model);
  if (!w.ma) return kExitBadInput;
  w.mb = load_valid_model(a.against);
  if (!w.mb) return kExitBadInput;
  w.ctx.model_path = a.model + " against " + a.against;
  w.ctx.tolerance = a.tol.make();
  w.ctx.top = a.top;
  std::optional<TensorMapping> mapping;
  if (!a.mapping.empty()) mapping = read_tensor_mapping(a.mapping);
  w.ctx.inputs = a.in.describe();
  std::vector<InputNote> notes;
  NamedValues inputs = make_cli_inputs(*w.ma, a.in, a.in.spec(), &notes);
  for (const auto& n : notes) w.ctx.inputs += "; " + n.text;
  NamedValues inputs_b = inputs_for_other(*w.ma, *w.mb, inputs);
  w.ctx.inputs += " (the same values fed to B)";
  w.ca = capture_run(*w.ea, w.ma, inputs);
  w.cb = capture_run(*w.eb, w.mb, inputs_b);
  MatchOptions mo;
  mo.mapping = mapping ? &*mapping : nullptr;
  mo.a_values = &w.ca;
  mo.b_values = &w.cb;
  w.match = match_graphs(*w.ma, *w.mb, mo);
  // Quantized tensors of either model, in A's names, report their steps.
  w.ctx.tolerance.quant_step = quantization_steps_against(*w.ma, *w.mb, *w.match);
  w.report = diff_against(*w.ma, *w.match, w.ca, capture_in_a_names(*w.match, w.cb), w.ctx.tolerance);
  w.report.a = a.model + " (" + w.engines.front() + ")";
  w.report.b = a.against + " (" + w.engines.back() + ")";
  if (!blame) {
    w.ctx.blame_note = "blame: skipped (--no-blame)";
  } else {
    blame_against(*w.ma, *w.mb, *w.match, w.ca, w.cb, *w.eb, w.ctx.tolerance, w.report);
    w.ctx.blame_note = "blame: for each node, the nodes of B that compute its partner re-run on A's values (converted to B's "
                       "types) and compared with A's outputs; nodes whose piece reaches an unpaired value get none";
  }
  return 0;
}

}  // namespace

int run_reduce_against(const DiffAgainstArgs& a) {
  try {
    Against w;
    if (int rc = prepare_against(a, w, true); rc != 0) return rc;
    std::cout << match_text(*w.match, a.model, a.against);
    if (!w.report.first_divergence) {
      std::cout << "no divergence between " << a.model << " and " << a.against << ": nothing to reduce\n";
      return kExitOk;
    }
    const ReduceResult red = reduce_against(*w.ma, *w.mb, *w.match, w.ca, w.cb, *w.eb, w.ctx.tolerance, w.report, a.report);
    if (!red.reproduced) {
      std::cout << "the divergence at node '" << w.report.nodes[*w.report.first_divergence].node
                << "' did not reproduce in a piece of B fed A's values (it builds up over more than one piece); nothing "
                   "written\n";
      return kExitBadInput;
    }
    std::cout << "wrote " << a.report << ": " << red.nodes.size() << " node(s) of " << a.against << ", " << red.how << "\n";
    for (const auto& n : red.nodes) std::cout << "  " << n << "\n";
    std::cout << "max |A-B| " << format_value(red.diff.max_abs, red.diff.dtype_a) << "; run it with: onnxscope conformance --suite "
              << a.report << " --engine " << w.engines.back() << "\n";
    return kExitOk;
  } catch (const Error& e) {
    std::cerr << "onnxscope: " << e.what() << "\n";
    return kExitBadInput;
  }
}

int run_diff_against(const DiffAgainstArgs& a) {
  try {
    Against w;
    if (int rc = prepare_against(a, w, !a.no_blame); rc != 0) return rc;
    if (!a.write_mapping.empty()) {
      std::ofstream out(a.write_mapping);
      out << tensor_mapping_text(*w.match, a.model, a.against);
      if (!out) {
        std::cerr << "onnxscope: cannot write " << a.write_mapping << "\n";
        return kExitBadInput;
      }
    }
    const std::string pairing = match_text(*w.match, a.model, a.against);
    if (a.json) {
      nlohmann::json j = nlohmann::json::parse(diff_report_json(w.report, w.ctx));
      j["against"] = a.against;
      j["match"] = match_json(*w.match);
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << pairing << diff_report_text(w.report, w.ctx);
    }
    if (!a.report.empty()) {
      std::ofstream out(a.report);
      out << diff_report_markdown(w.report, w.ctx) << "\n## Pairing of " << a.model << " with " << a.against << "\n\n```\n"
          << pairing << "```\n";
      if (!out) {
        std::cerr << "onnxscope: cannot write " << a.report << "\n";
        return kExitBadInput;
      }
    }
    return w.report.first_divergence ? kExitDrift : kExitOk;
  } catch (const Error& e) {
    std::cerr << "onnxscope: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace onnxscope::cli
