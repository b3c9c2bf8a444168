// Formatting a DiffReport. The text, JSON and Markdown forms say the same
// things: the settings, the first divergence with its worst element and its
// non-finite values, the first non-finite value, what one side lacks or holds
// in another type, the nodes that introduce the most error, and the per-node
// table.
#include "onnxscope/diff_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace onnxscope {
namespace {

std::string num(double v) { return short_number(v); }

}  // namespace

std::string short_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

namespace {

// JSON has no inf or NaN: those are written as the strings "inf", "-inf", "nan".
nlohmann::json jnum(double v) {
  if (std::isfinite(v)) return v;
  return num(v);
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

std::string status(const NodeDiff& n) {
  if (n.outputs.empty()) {
    if (!n.unpaired.empty()) return n.unpaired;
    if (!n.only_in_a.empty()) return "only in A";
    if (!n.only_in_b.empty()) return "only in B";
    return "not compared";
  }
  return n.diverges ? "DIVERGES" : "ok";
}

// "within 1 quantization step" (the tolerance let it pass) or "3 quantization
// steps"; for a dequantized tensor its step, the scale, too.
std::string steps_text(const TensorDiff& d) {
  const double k = d.steps();
  char b[96];
  const bool whole = std::fabs(k - std::round(k)) < 1e-3;
  if (whole) std::snprintf(b, sizeof b, "%.0f quantization step%s", std::round(k), std::round(k) == 1 ? "" : "s");
  else std::snprintf(b, sizeof b, "%.2f quantization steps", k);
  std::string s = (d.within() ? "within " : "") + std::string(b);
  if (d.quant_step != 1) s += " of " + num(d.quant_step);
  return s;
}

std::string list(const std::vector<std::string>& names, size_t most = 5) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < most; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > most) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

// What the status column alone does not say: non-finite values (even where
// both sides agree on them), types that differ, outputs one side lacks.
std::string node_note(const NodeDiff& n) {
  std::string s;
  auto add = [&](const std::string& x) {
    if (!x.empty()) s += (s.empty() ? "" : "; ") + x;
  };
  for (const auto& [name, d] : n.outputs) {
    const std::string prefix = n.outputs.size() > 1 ? "'" + name + "' " : "";
    if (!d.comparable) {
      add(prefix + d.problem);
      continue;
    }
    add(d.any_nonfinite() ? prefix + nonfinite_counts_text(d) : "");
    if (d.quant_step > 0 && d.max_abs > 0 && std::isfinite(d.max_abs)) add(prefix + steps_text(d));
    if (d.types_differ())
      add(prefix + "B " + std::string(dtype_name(d.dtype_b)) + ", A " + std::string(dtype_name(d.dtype_a)));
  }
  for (const auto& [a, b] : n.partners)
    if (a != b) add((n.partners.size() > 1 ? "'" + a + "' " : std::string()) + "B's '" + b + "'");
  if (!n.outputs.empty()) {
    if (!n.only_in_a.empty()) add("only in A: " + list(n.only_in_a, 3));
    if (!n.only_in_b.empty()) add("only in B: " + list(n.only_in_b, 3));
  }
  return s;
}

// "output 'y': A holds 3 inf where B is finite (first at flat index 7); 12 of
// 4096 elements out of tolerance (rtol 1e-4, atol 1e-5), worst at flat index 7:
// A=1.00000012 B=1.5"
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
    if (std::string nf = nonfinite_mismatch_text(d); !nf.empty()) s += nf + "; ";
    char rule[96];
    std::snprintf(rule, sizeof rule, "rtol %g, atol %g", d.rule.rtol, d.rule.atol);
    s += std::to_string(d.out_of_tolerance) + " of " + std::to_string(d.elements) + " elements out of tolerance (" + rule +
         "), worst at flat index " + std::to_string(d.worst_index) + ": A=" + format_value(d.worst_a, d.dtype_a) +
         " B=" + format_value(d.worst_b, d.dtype_b);
    if (std::isfinite(d.worst_a) && std::isfinite(d.worst_b))
      s += " (|A-B| " + num(std::fabs(d.worst_a - d.worst_b)) + ")";
    if (d.types_differ())
      s += "; B is " + std::string(dtype_name(d.dtype_b)) + ", A " + std::string(dtype_name(d.dtype_a)) +
           ": compared in double";
  }
  return s;
}

std::string nonfinite_detail(const NodeDiff& n) {
  std::string s;
  for (const auto& [name, d] : n.outputs)
    if (d.comparable && d.any_nonfinite())
      s += (s.empty() ? "" : "; ") + ("output '" + name + "': " + nonfinite_counts_text(d) + " of " +
                                       std::to_string(d.elements) + " elements");
  return s;
}

size_t compared_count(const DiffReport& r) {
  return static_cast<size_t>(std::count_if(r.nodes.begin(), r.nodes.end(), [](const NodeDiff& n) { return !n.outputs.empty(); }));
}

std::vector<std::string> one_sided(const DiffReport& r, bool a_side) {
  std::vector<std::string> out;
  for (const auto& n : r.nodes)
    for (const auto& name : a_side ? n.only_in_a : n.only_in_b) out.push_back(name);
  return out;
}

// The lines under the table, shared by the text and Markdown forms.
std::vector<std::string> summary_lines(const DiffReport& r) {
  std::vector<std::string> lines;
  std::string l = std::to_string(compared_count(r)) + " of " + std::to_string(r.nodes.size()) + " nodes compared";
  if (compared_count(r) < r.nodes.size()) l += " (the others have no output present on both sides)";
  l += "; " + std::to_string(r.diverging()) + " diverge";
  lines.push_back(l);
  if (r.stopped_early) lines.push_back("stopped at the first divergence (--fail-fast): later nodes were not compared");
  const auto only_a = one_sided(r, true), only_b = one_sided(r, false);
  if (!only_a.empty() || !only_b.empty())
    lines.push_back(std::to_string(only_a.size()) + " tensor(s) only in A" + (only_a.empty() ? "" : " (" + list(only_a) + ")") +
                    ", " + std::to_string(only_b.size()) + " only in B" + (only_b.empty() ? "" : " (" + list(only_b) + ")"));
  if (size_t k = r.types_differ())
    lines.push_back(std::to_string(k) + " compared tensor(s) differ in element type between A and B; their values were "
                    "converted to double and held to the looser type's tolerance");
  return lines;
}

}  // namespace

std::string diff_report_text(const DiffReport& r, const DiffReportContext& ctx) {
  std::ostringstream o;
  o << "A = " << r.a << ", B = " << r.b << "; tolerance " << ctx.tolerance.describe() << "\n";
  o << "  #    node                                      op                  max|A-B|    max rel   introduced  status\n";
  for (const auto& n : r.nodes) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-4zu %-41.41s %-19.19s %-11s %-9s %-11s %s", n.node_index, n.node.c_str(),
                  n.op_type.c_str(), n.outputs.empty() ? "-" : num(n.total_score).c_str(),
                  n.outputs.empty() ? "-" : num(max_rel(n)).c_str(), n.introduced ? num(n.introduced_score).c_str() : "-",
                  status(n).c_str());
    o << line;
    if (std::string note = node_note(n); !note.empty()) o << "  " << note;
    o << "\n";
  }
  for (const auto& l : summary_lines(r)) o << l << "\n";
  if (r.first_divergence) {
    const auto& n = r.nodes[*r.first_divergence];
    o << "first divergence: node '" << n.node << "' (" << n.op_type << " #" << n.node_index << "); "
      << divergence_detail(n) << "\n";
  } else {
    o << "no divergence: every compared node's outputs agree within tolerance\n";
  }
  if (r.first_nonfinite) {
    const auto& n = r.nodes[*r.first_nonfinite];
    o << "first non-finite value: node '" << n.node << "' (" << n.op_type << " #" << n.node_index << "); "
      << nonfinite_detail(n) << "\n";
  }
  if (!ctx.blame_note.empty()) o << ctx.blame_note << "\n";
  if (!r.blame_order.empty() && r.nodes[r.blame_order[0]].introduced_score <= 0) {
    o << "no node introduces error: every re-run piece reproduced its outputs exactly\n";
  } else if (!r.blame_order.empty()) {
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
  auto mismatch = [](const NonFiniteMismatch& m) { return json{{"count", m.count}, {"first", m.first}}; };
  json nodes = json::array();
  for (const auto& n : r.nodes) {
    json outs = json::array();
    for (const auto& [name, d] : n.outputs)
      outs.push_back({{"name", name},
                      {"comparable", d.comparable},
                      {"problem", d.problem},
                      {"dtype_a", std::string(dtype_name(d.dtype_a))},
                      {"dtype_b", std::string(dtype_name(d.dtype_b))},
                      {"rtol", d.rule.rtol},
                      {"atol", d.rule.atol},
                      {"elements", d.elements},
                      {"max_abs", jnum(d.max_abs)},
                      {"max_rel", jnum(d.max_rel)},
                      {"mean_abs", jnum(d.mean_abs)},
                      {"rmse", jnum(d.rmse)},
                      {"cosine", jnum(d.cosine)},
                      {"max_ulp", d.max_ulp},
                      {"quant_step", jnum(d.quant_step)},
                      {"quant_steps", jnum(d.steps())},
                      {"out_of_tolerance", d.out_of_tolerance},
                      {"within", d.within()},
                      {"nan_a", d.nan_a},
                      {"nan_b", d.nan_b},
                      {"inf_a", d.inf_a},
                      {"inf_b", d.inf_b},
                      {"nonfinite_mismatch",
                       {{"inf_only_a", mismatch(d.inf_only_a)},
                        {"inf_only_b", mismatch(d.inf_only_b)},
                        {"nan_only_a", mismatch(d.nan_only_a)},
                        {"nan_only_b", mismatch(d.nan_only_b)},
                        {"inf_opposite", mismatch(d.inf_opposite)},
                        {"text", nonfinite_mismatch_text(d)}}},
                      {"worst_index", d.worst_index},
                      {"worst_a", jnum(d.worst_a)},
                      {"worst_b", jnum(d.worst_b)},
                      {"worst_violation", jnum(d.worst_violation)}});
    json jn{{"index", n.node_index}, {"node", n.node},         {"op_type", n.op_type},
            {"diverges", n.diverges}, {"status", status(n)},   {"compared", !n.outputs.empty()},
            {"observed", jnum(n.total_score)}, {"outputs", outs}, {"only_in_a", n.only_in_a},
            {"only_in_b", n.only_in_b}};
    if (n.introduced) jn["introduced"] = jnum(n.introduced_score);
    if (!n.unpaired.empty()) jn["unpaired"] = n.unpaired;
    if (!n.partners.empty()) {
      json partners = json::object();
      for (const auto& [a, b] : n.partners) partners[a] = b;
      jn["b_tensors"] = partners;
    }
    nodes.push_back(jn);
  }
  json by_dtype = json::object(), by_tensor = json::object();
  for (const auto& [t, rule] : ctx.tolerance.by_dtype)
    by_dtype[std::string(dtype_name(t))] = {{"rtol", rule.rtol}, {"atol", rule.atol}};
  for (const auto& [name, rule] : ctx.tolerance.by_tensor) by_tensor[name] = {{"rtol", rule.rtol}, {"atol", rule.atol}};
  json j{{"a", r.a},
         {"b", r.b},
         {"model", ctx.model_path},
         {"inputs", ctx.inputs},
         {"nodes", nodes},
         {"diverging", r.diverging()},
         {"stopped_early", r.stopped_early},
         {"only_in_a", one_sided(r, true)},
         {"only_in_b", one_sided(r, false)},
         {"types_differ", r.types_differ()},
         {"tolerance",
          {{"rtol", ctx.tolerance.rtol},
           {"atol", ctx.tolerance.atol},
           {"max_ulp", ctx.tolerance.max_ulp},
           {"by_dtype", by_dtype},
           {"by_tensor", by_tensor},
           {"text", ctx.tolerance.describe()}}}};
  if (r.first_divergence) {
    const auto& n = r.nodes[*r.first_divergence];
    j["first_divergence"] = n.node;
    j["first_divergence_detail"] = divergence_detail(n);
  }
  if (r.first_nonfinite) {
    const auto& n = r.nodes[*r.first_nonfinite];
    j["first_nonfinite"] = n.node;
    j["first_nonfinite_detail"] = nonfinite_detail(n);
  }
  json blame = json::array();
  for (size_t i : r.blame_order) blame.push_back(r.nodes[i].node);
  j["blame"] = blame;
  if (!ctx.blame_note.empty()) j["blame_note"] = ctx.blame_note;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

std::string diff_report_markdown(const DiffReport& r, const DiffReportContext& ctx) {
  auto cell = markdown_cell;
  std::ostringstream o;
  o << "# onnxscope diff: " << cell(r.a) << " vs " << cell(r.b) << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| model | `" << cell(ctx.model_path) << "` |\n";
  o << "| A (baseline) | " << cell(r.a) << " |\n| B | " << cell(r.b) << " |\n";
  o << "| inputs | " << cell(ctx.inputs) << " |\n";
  o << "| tolerance | " << cell(ctx.tolerance.describe()) << " |\n";
  o << "| nodes compared | " << compared_count(r) << " of " << r.nodes.size() << " |\n";
  o << "| nodes diverging | " << r.diverging() << " |\n\n";
  for (const auto& l : summary_lines(r)) o << cell(l) << ".\n\n";

  o << "## First divergence\n\n";
  if (r.first_divergence) {
    const auto& n = r.nodes[*r.first_divergence];
    o << "Node **" << cell(n.node) << "** (" << cell(n.op_type) << ", #" << n.node_index << ").\n\n";
    for (const auto& [name, d] : n.outputs) {
      if (d.within()) continue;
      o << "- output `" << cell(name) << "`: ";
      if (!d.comparable) {
        o << cell(d.problem) << "\n";
        continue;
      }
      if (std::string nf = nonfinite_mismatch_text(d); !nf.empty()) o << cell(nf) << "; ";
      o << d.out_of_tolerance << " of " << d.elements << " elements out of tolerance (rtol " << num(d.rule.rtol)
        << ", atol " << num(d.rule.atol) << "); max \\|A-B\\| " << num(d.max_abs) << ", max rel " << num(d.max_rel)
        << ", RMSE " << num(d.rmse) << ", cosine " << num(d.cosine) << ", max ULP " << d.max_ulp
        << "; worst at flat index " << d.worst_index << ": A=" << format_value(d.worst_a, d.dtype_a)
        << " B=" << format_value(d.worst_b, d.dtype_b);
      if (d.types_differ()) o << " (B " << dtype_name(d.dtype_b) << ", A " << dtype_name(d.dtype_a) << ": compared in double)";
      o << "\n";
    }
    o << "\n";
  } else {
    o << "None: every compared node's outputs agree within tolerance.\n\n";
  }
  o << "## First non-finite value\n\n";
  if (r.first_nonfinite) {
    const auto& n = r.nodes[*r.first_nonfinite];
    o << "Node **" << cell(n.node) << "** (" << cell(n.op_type) << ", #" << n.node_index << "): "
      << cell(nonfinite_detail(n)) << ".\n\n";
  } else {
    o << "None: no compared tensor holds NaN or Inf on either side.\n\n";
  }

  o << "## Nodes that introduce error\n\n";
  if (!ctx.blame_note.empty()) o << cell(ctx.blame_note) << "\n\n";
  bool any = false;
  for (size_t k = 0; k < r.blame_order.size() && k < ctx.top; ++k) {
    const auto& n = r.nodes[r.blame_order[k]];
    if (n.introduced_score <= 0) break;
    if (!any) o << "| node | op | introduced max abs | observed max abs | diverges |\n|---|---|---|---|---|\n";
    any = true;
    o << "| " << cell(n.node) << " | " << cell(n.op_type) << " | " << num(n.introduced_score) << " | "
      << num(n.total_score) << " | " << (n.diverges ? "yes" : "no") << " |\n";
  }
  if (!any) o << "No node introduces a measurable error on its own.\n";
  o << "\n## Every node\n\n";
  o << "| # | node | op | max abs | max rel | cosine | introduced | status | note |\n"
       "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& n : r.nodes) {
    const bool c = !n.outputs.empty();
    o << "| " << n.node_index << " | " << cell(n.node) << " | " << cell(n.op_type) << " | "
      << (c ? num(n.total_score) : "-") << " | " << (c ? num(max_rel(n)) : "-") << " | "
      << (c ? num(min_cosine(n)) : "-") << " | " << (n.introduced ? num(n.introduced_score) : "-") << " | "
      << status(n) << " | " << cell(node_note(n)) << " |\n";
  }
  return o.str();
}

std::string diff_status_text(const NodeDiff& n) { return status(n); }
std::string diff_node_note(const NodeDiff& n) { return node_note(n); }
std::string diff_divergence_detail(const NodeDiff& n) { return divergence_detail(n); }

}  // namespace onnxscope
