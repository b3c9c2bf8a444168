// onnxscope diff MODEL --engines A,B: run two engines on the same inputs,
// compare every node's outputs, name the first divergence and blame the
// nodes that introduce error (re-run alone in B on A's inputs).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/diff.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/reduce.h"

namespace onnxscope::cli {

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string table(const DiffReport& r, size_t top) {
  std::ostringstream o;
  o << "A = " << r.a << ", B = " << r.b << "\n";
  o << "  #    node                                      op                  max|A-B|    max rel   introduced  status\n";
  for (const auto& n : r.nodes) {
    double max_rel = 0;
    for (const auto& [name, d] : n.outputs) max_rel = std::max(max_rel, d.max_rel);
    char line[512];
    std::snprintf(line, sizeof line, "  %-4zu %-41.41s %-19.19s %-11s %-9s %-11s %s\n", n.node_index, n.node.c_str(),
                  n.op_type.c_str(), num(n.total_score).c_str(), num(max_rel).c_str(),
                  n.introduced ? num(n.introduced_score).c_str() : "-", n.diverges ? "DIVERGES" : "ok");
    o << line;
  }
  if (r.first_divergence) {
    const auto& n = r.nodes[*r.first_divergence];
    o << "first divergence: node '" << n.node << "' (" << n.op_type << " #" << n.node_index << ")";
    for (const auto& [name, d] : n.outputs)
      if (!d.within())
        o << "; output '" << name << "' "
          << (d.comparable ? std::to_string(d.out_of_tolerance) + " of " + std::to_string(d.elements) +
                                 " elements out of tolerance, worst at flat index " + std::to_string(d.worst_index) +
                                 ": A=" + num(d.worst_a) + " B=" + num(d.worst_b)
                           : d.problem);
    o << "\n";
  } else {
    o << "no divergence: every node's outputs agree within tolerance\n";
  }
  o << "top nodes by introduced error (each re-run alone in B on A's inputs):\n";
  for (size_t k = 0; k < r.blame_order.size() && k < top; ++k) {
    const auto& n = r.nodes[r.blame_order[k]];
    if (n.introduced_score <= 0) break;
    o << "  " << n.node << " (" << n.op_type << "): introduced " << num(n.introduced_score) << ", observed "
      << num(n.total_score) << "\n";
  }
  return o.str();
}

nlohmann::json to_json(const DiffReport& r) {
  using nlohmann::json;
  json nodes = json::array();
  for (const auto& n : r.nodes) {
    json outs = json::array();
    for (const auto& [name, d] : n.outputs)
      outs.push_back({{"name", name}, {"comparable", d.comparable}, {"problem", d.problem}, {"elements", d.elements},
                      {"max_abs", d.max_abs}, {"max_rel", d.max_rel}, {"mean_abs", d.mean_abs}, {"rmse", d.rmse},
                      {"cosine", d.cosine}, {"max_ulp", d.max_ulp}, {"out_of_tolerance", d.out_of_tolerance},
                      {"nan_a", d.nan_a}, {"nan_b", d.nan_b}, {"inf_a", d.inf_a}, {"inf_b", d.inf_b},
                      {"worst_index", d.worst_index}, {"worst_a", d.worst_a}, {"worst_b", d.worst_b}});
    json jn{{"index", n.node_index}, {"node", n.node}, {"op_type", n.op_type}, {"diverges", n.diverges},
            {"observed", n.total_score}, {"outputs", outs}};
    if (n.introduced) jn["introduced"] = n.introduced_score;
    nodes.push_back(jn);
  }
  json j{{"a", r.a}, {"b", r.b}, {"nodes", nodes}};
  if (r.first_divergence) j["first_divergence"] = r.nodes[*r.first_divergence].node;
  json blame = json::array();
  for (size_t i : r.blame_order) blame.push_back(r.nodes[i].node);
  j["blame"] = blame;
  return j;
}

}  // namespace

Runner add_diff_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("diff", "Run two engines side by side; first divergence and per-node blame");
  struct Args {
    std::string model, engines = "reference,cpu", report;
    double rtol = 1e-4, atol = 1e-5;
    int64_t ulp = -1;
    bool json = false, no_blame = false;
    size_t top = 10;
    EngineArgs eng;
    InputArgs in;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--engines", a->engines, "Two engines, A (baseline) and B: e.g. reference,cpu")->capture_default_str();
  cmd->add_option("--rtol", a->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", a->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--ulp", a->ulp, "Compare by ULP distance (float types) instead of rtol/atol");
  cmd->add_option("--top", a->top, "How many blamed nodes to list")->capture_default_str();
  cmd->add_option("--report", a->report, "Also write the table to this file");
  cmd->add_flag("--json", a->json, "Print one JSON document");
  cmd->add_flag("--no-blame", a->no_blame, "Skip re-running each node alone");
  cmd->add_option("--threads", a->eng.threads, "cpu: intra-op threads (0: every core)");
  add_input_options(cmd, a->in);
  return [a]() -> int {
    std::unique_ptr<Engine> ea, eb;
    if (!make_engine_pair(a->engines, a->eng.settings(), ea, eb)) return kExitUsage;
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    DiffTolerance tol{a->rtol, a->atol, a->ulp};
    try {
      NamedValues inputs = make_inputs(*m, a->in.spec());
      Capture ca = capture_run(*ea, m, inputs);
      Capture cb = capture_run(*eb, m, inputs);
      DiffReport report = diff_captures(*m, ca, cb, tol);
      if (!a->no_blame) blame_nodes(*m, ca, *eb, tol, report);
      std::string text = a->json ? to_json(report).dump(2) + "\n" : table(report, a->top);
      std::cout << text;
      if (!a->report.empty()) std::ofstream(a->report) << table(report, a->top);
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    return kExitOk;
  };
}

Runner add_reduce_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("reduce", "Cut a model down to the smallest piece that still diverges between two engines");
  struct Args {
    std::string model, engines = "reference,cpu", out;
    double rtol = 1e-4, atol = 1e-5;
    int64_t ulp = -1;
    EngineArgs eng;
    InputArgs in;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--engines", a->engines, "A (baseline) and B")->capture_default_str();
  cmd->add_option("--out", a->out, "Folder to write (model.onnx + test_data_set_0)")->required();
  cmd->add_option("--rtol", a->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", a->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--ulp", a->ulp, "Compare by ULP distance instead");
  add_input_options(cmd, a->in);
  return [a]() -> int {
    std::unique_ptr<Engine> ea, eb;
    if (!make_engine_pair(a->engines, a->eng.settings(), ea, eb)) return kExitUsage;
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    DiffTolerance tol{a->rtol, a->atol, a->ulp};
    try {
      NamedValues inputs = make_inputs(*m, a->in.spec());
      Capture ca = capture_run(*ea, m, inputs);
      Capture cb = capture_run(*eb, m, inputs);
      DiffReport report = diff_captures(*m, ca, cb, tol);
      if (!report.first_divergence) {
        std::cout << "no divergence between " << report.a << " and " << report.b << ": nothing to reduce\n";
        return kExitOk;
      }
      blame_nodes(*m, ca, *eb, tol, report);
      ReduceResult red = reduce_divergence(*m, ca, *eb, tol, report, a->out);
      if (!red.reproduced) {
        std::cout << "the divergence at node '" << report.nodes[*report.first_divergence].node
                  << "' did not reproduce in any piece tried; nothing written\n";
        return kExitBadInput;
      }
      std::cout << "wrote " << a->out << ": " << red.nodes.size() << " node(s), " << red.how << "\n";
      for (const auto& n : red.nodes) std::cout << "  " << n << "\n";
      std::cout << "max |A-B| " << num(red.diff.max_abs) << "; run it with: onnxscope conformance --suite " << a->out
                << " --engine " << report.b << "\n";
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    return kExitOk;
  };
}

}  // namespace onnxscope::cli
