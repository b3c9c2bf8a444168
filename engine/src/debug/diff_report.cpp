// Formatting a DiffReport. The text and Markdown forms say the same things:
// the settings, the first divergence with its worst element, the nodes that
// introduce the most error, and the per-node table.
#include "onnxscope/diff_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace onnxscope {
namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

double max_rel(const NodeDiff& n) {
  double m = 0;
  for (const auto& [name, d] : n.outputs) m = std::max(m, d.max_rel);
  return m;
}

double min_cosine(const NodeDiff& n) {
  double c = 1;
  for (const auto& [name, d] : n.outputs)
    if (d.comparable) c = std::min(c, d.cosine);
  return c;
}

const char* status(const NodeDiff& n) {
  if (n.outputs.empty()) return "not compared";
  return n.diverges ? "DIVERGES" : "ok";
}

std::string tolerance_text(const DiffTolerance& t) {
  if (t.max_ulp >= 0) return "max " + std::to_string(t.max_ulp) + " ULP";
  return "rtol " + num(t.rtol) + ", atol " + num(t.atol);
}

// "output 'y': 12 of 4096 elements out of tolerance, worst at flat index 7: A=1 B=1.5"
std::string divergence_detail(const NodeDiff& n) {
  std::string s;
  for (const auto& [name, d] : n.outputs) {
    if (d.within()) continue;
    if (!s.empty()) s += "; ";
    s += "output '" + name + "': ";
    if (!d.comparable) {
      s += d.problem;
      continue;
    }
    s += std::to_string(d.out_of_tolerance) + " of " + std::to_string(d.elements) +
         " elements out of tolerance, worst at flat index " + std::to_string(d.worst_index) + ": A=" + num(d.worst_a) +
         " B=" + num(d.worst_b);
    if (d.nan_a || d.nan_b) s += ", NaN count A=" + std::to_string(d.nan_a) + " B=" + std::to_string(d.nan_b);
  }
  return s;
}

size_t compared_count(const DiffReport& r) {
  return static_cast<size_t>(std::count_if(r.nodes.begin(), r.nodes.end(), [](const NodeDiff& n) { return !n.outputs.empty(); }));
}

// Markdown table cells must not contain a raw '|'.
std::string cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

}  // namespace

std::string diff_report_text(const DiffReport& r, const DiffReportContext& ctx) {
  std::ostringstream o;
  o << "A = " << r.a << ", B = " << r.b << "; tolerance " << tolerance_text(ctx.tolerance) << "\n";
  o << "  #    node                                      op                  max|A-B|    max rel   introduced  status\n";
  for (const auto& n : r.nodes) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-4zu %-41.41s %-19.19s %-11s %-9s %-11s %s\n", n.node_index, n.node.c_str(),
                  n.op_type.c_str(), n.outputs.empty() ? "-" : num(n.total_score).c_str(),
                  n.outputs.empty() ? "-" : num(max_rel(n)).c_str(), n.introduced ? num(n.introduced_score).c_str() : "-",
                  status(n));
    o << line;
  }
  o << compared_count(r) << " of " << r.nodes.size() << " nodes compared";
  if (compared_count(r) < r.nodes.size()) o << " (the others have no output present on both sides)";
  o << "\n";
  if (r.first_divergence) {
    const auto& n = r.nodes[*r.first_divergence];
    o << "first divergence: node '" << n.node << "' (" << n.op_type << " #" << n.node_index << "); "
      << divergence_detail(n) << "\n";
  } else {
    o << "no divergence: every compared node's outputs agree within tolerance\n";
  }
  if (!ctx.blame_note.empty()) o << ctx.blame_note << "\n";
  if (!r.blame_order.empty()) {
    o << "top nodes by introduced error:\n";
    for (size_t k = 0; k < r.blame_order.size() && k < ctx.top; ++k) {
      const auto& n = r.nodes[r.blame_order[k]];
      if (n.introduced_score <= 0) break;
      o << "  " << n.node << " (" << n.op_type << "): introduced " << num(n.introduced_score) << ", observed "
        << num(n.total_score) << "\n";
    }
  }
  return o.str();
}

std::string diff_report_json(const DiffReport& r, const DiffReportContext& ctx) {
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
            {"compared", !n.outputs.empty()}, {"observed", n.total_score}, {"outputs", outs}};
    if (n.introduced) jn["introduced"] = n.introduced_score;
    nodes.push_back(jn);
  }
  json j{{"a", r.a}, {"b", r.b}, {"model", ctx.model_path}, {"inputs", ctx.inputs}, {"nodes", nodes},
         {"tolerance", {{"rtol", ctx.tolerance.rtol}, {"atol", ctx.tolerance.atol}, {"max_ulp", ctx.tolerance.max_ulp}}}};
  if (r.first_divergence) j["first_divergence"] = r.nodes[*r.first_divergence].node;
  json blame = json::array();
  for (size_t i : r.blame_order) blame.push_back(r.nodes[i].node);
  j["blame"] = blame;
  if (!ctx.blame_note.empty()) j["blame_note"] = ctx.blame_note;
  return j.dump(2) + "\n";
}

std::string diff_report_markdown(const DiffReport& r, const DiffReportContext& ctx) {
  std::ostringstream o;
  o << "# onnxscope diff: " << cell(r.a) << " vs " << cell(r.b) << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| model | `" << cell(ctx.model_path) << "` |\n";
  o << "| A (baseline) | " << cell(r.a) << " |\n| B | " << cell(r.b) << " |\n";
  o << "| inputs | " << cell(ctx.inputs) << " |\n";
  o << "| tolerance | " << tolerance_text(ctx.tolerance) << " |\n";
  o << "| nodes compared | " << compared_count(r) << " of " << r.nodes.size() << " |\n\n";

  o << "## First divergence\n\n";
  if (r.first_divergence) {
    const auto& n = r.nodes[*r.first_divergence];
    o << "Node **" << cell(n.node) << "** (" << n.op_type << ", #" << n.node_index << ").\n\n";
    for (const auto& [name, d] : n.outputs) {
      if (d.within()) continue;
      o << "- output `" << cell(name) << "`: ";
      if (!d.comparable) {
        o << d.problem << "\n";
        continue;
      }
      o << d.out_of_tolerance << " of " << d.elements << " elements out of tolerance; max |A-B| " << num(d.max_abs)
        << ", max rel " << num(d.max_rel) << ", RMSE " << num(d.rmse) << ", cosine " << num(d.cosine) << ", max ULP "
        << d.max_ulp << "; worst at flat index " << d.worst_index << ": A=" << num(d.worst_a) << " B=" << num(d.worst_b)
        << "\n";
    }
    o << "\n";
  } else {
    o << "None: every compared node's outputs agree within tolerance.\n\n";
  }

  o << "## Nodes that introduce error\n\n";
  if (!ctx.blame_note.empty()) o << ctx.blame_note << "\n\n";
  bool any = false;
  for (size_t k = 0; k < r.blame_order.size() && k < ctx.top; ++k) {
    const auto& n = r.nodes[r.blame_order[k]];
    if (n.introduced_score <= 0) break;
    if (!any) o << "| node | op | introduced max abs | observed max abs | diverges |\n|---|---|---|---|---|\n";
    any = true;
    o << "| " << cell(n.node) << " | " << n.op_type << " | " << num(n.introduced_score) << " | " << num(n.total_score)
      << " | " << (n.diverges ? "yes" : "no") << " |\n";
  }
  if (!any) o << "No node introduces a measurable error on its own.\n";
  o << "\n## Every node\n\n";
  o << "| # | node | op | max abs | max rel | cosine | introduced | status |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& n : r.nodes) {
    const bool c = !n.outputs.empty();
    o << "| " << n.node_index << " | " << cell(n.node) << " | " << n.op_type << " | " << (c ? num(n.total_score) : "-")
      << " | " << (c ? num(max_rel(n)) : "-") << " | " << (c ? num(min_cosine(n)) : "-") << " | "
      << (n.introduced ? num(n.introduced_score) : "-") << " | " << status(n) << " |\n";
  }
  return o.str();
}

}  // namespace onnxscope
