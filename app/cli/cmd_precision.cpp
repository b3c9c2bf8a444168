// onnxscope precision MODEL [--dtype fp16|bf16] [--out mixed.onnx]: where
// float16 (or bfloat16) breaks a float32 model, and the nodes to keep in
// float32; with --against B (its float16 or quantized version): each node's
// and each quantized value's own error, worst first.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/diff_report.h"
#include "onnxscope/graph_match.h"
#include "onnxscope/model_diff.h"
#include "onnxscope/precision.h"
#include "onnxscope/proto_io.h"

namespace onnxscope::cli {
namespace {

std::string g3(double v) { return short_number(v); }

std::string range_text(const NodeRange& n, const char* type) {
  std::string s = "node '" + n.node + "' (" + n.op_type + "): ";
  if (n.overflow) s += std::to_string(n.overflow) + " of " + std::to_string(n.elements) + " values past " + type + "'s largest (max |x| " + g3(n.max_abs) + ")";
  if (n.overflow && n.underflow) s += "; ";
  if (n.underflow)
    s += std::to_string(n.underflow) + " nonzero values below its smallest subnormal, flushed to 0 (smallest |x| " + g3(n.min_nonzero) + ")";
  return s;
}

nlohmann::json range_json(const NodeRange& n) {
  return {{"node", n.node}, {"op_type", n.op_type}, {"output", n.output}, {"max_abs", n.max_abs}, {"min_nonzero", n.min_nonzero},
          {"elements", n.elements}, {"overflow", n.overflow}, {"underflow", n.underflow}, {"nonfinite", n.nonfinite}};
}

// The mixed-precision search on one float32 model.
int run_search(const std::string& path, std::shared_ptr<const Model> m, const NamedValues& inputs, Engine& engine,
               const PrecisionOptions& o, const std::string& out, bool json) {
  const char* type = o.target == DataType::BFloat16 ? "bfloat16" : "float16";
  const PrecisionResult r = find_mixed_precision(m, inputs, engine, o);
  size_t overflow = 0, underflow = 0;
  for (const auto& n : r.ranges) {
    overflow += n.overflow > 0;
    underflow += n.underflow > 0;
  }
  std::string t = "precision: " + path + " in " + type + " on " + std::string(engine.name()) + "; tolerance " +
                  o.tolerance.describe() + "\nranges of the float32 run: " + std::to_string(r.ranges.size()) +
                  " nodes with float outputs; " + std::to_string(overflow) + " overflow " + type + ", " +
                  std::to_string(underflow) + " underflow to 0\n";
  if (r.first_out_of_range) t += "first out of range: " + range_text(r.ranges[*r.first_out_of_range], type) + "\n";
  else t += "every value fits " + std::string(type) + "\n";
  for (const auto& a : r.auto_kept) t += "  float32 (the operator cannot take " + std::string(type) + "): " + a + "\n";
  t += "every node in " + std::string(type) + " but the overflowing ones: worst output '" + r.all_low_output + "' max|A-B| " +
       g3(r.all_low.max_abs) + (r.all_low.within() ? " (meets the tolerance)" : " (out of tolerance)") + "\n";
  t += "kept in float32 (" + std::to_string(r.keep.size()) + "):";
  for (size_t i = 0; i < r.keep.size(); ++i) t += "\n  '" + r.keep[i] + "': " + r.why[i];
  if (o.emulate)
    t += "\n(the search ran emulated " + std::string(type) + " models: float32 kernels on values rounded to " + type +
         "; it found the tolerance " + (r.emulated_met ? "met" : "not met") + ")";
  t += "\nthe mixed model, run as written: worst output '" + r.mixed_output + "' max|A-B| " + g3(r.mixed.max_abs) +
       (r.met ? " (meets the tolerance)" : " (out of tolerance: --max-keep, a looser tolerance, or --no-emulate)") + "\n";
  if (!out.empty() && r.mixed_model) {
    save_model(*r.mixed_model, out);
    t += "wrote " + out + "\n";
  }
  t += std::to_string(r.runs) + " runs\n";
  if (json) {
    nlohmann::json ranges = nlohmann::json::array();
    for (const auto& n : r.ranges) ranges.push_back(range_json(n));
    nlohmann::json j{{"model", path}, {"dtype", type}, {"ranges", ranges}, {"auto_kept", r.auto_kept},
                     {"keep", r.keep}, {"why", r.why}, {"met", r.met}, {"emulated", o.emulate},
                     {"emulated_met", r.emulated_met}, {"runs", r.runs},
                     {"all_low", {{"output", r.all_low_output}, {"max_abs", r.all_low.max_abs}, {"within", r.all_low.within()}}},
                     {"mixed", {{"output", r.mixed_output}, {"max_abs", r.mixed.max_abs}, {"within", r.mixed.within()}}}};
    if (r.first_out_of_range) j["first_out_of_range"] = r.ranges[*r.first_out_of_range].node;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << t;
  }
  return r.met ? kExitOk : kExitDrift;
}

// A float32 model against its float16 or quantized version.
int run_against(const std::string& a_path, const std::string& b_path, std::shared_ptr<const Model> ma,
                std::shared_ptr<const Model> mb, const NamedValues& inputs, Engine& engine, const DiffTolerance& tol,
                size_t top, bool json) {
  const NamedValues inputs_b = inputs_for_other(*ma, *mb, inputs);
  const Capture ca = capture_run(engine, ma, inputs);
  const Capture cb = capture_run(engine, mb, inputs_b);
  MatchOptions mo;
  mo.a_values = &ca;
  mo.b_values = &cb;
  const GraphMatch match = match_graphs(*ma, *mb, mo);
  DiffTolerance qt = tol;
  qt.quant_step = quantization_steps_against(*ma, *mb, match);
  DiffReport report = diff_against(*ma, match, ca, capture_in_a_names(match, cb), qt);
  blame_against(*ma, *mb, match, ca, cb, engine, qt, report);
  const auto quantized = quantized_value_errors(*ma, *mb, match, ca, cb);
  // B's own float type, if it is a float16/bfloat16 model: A's ranges against it.
  DataType low = DataType::Undefined;
  for (const auto& [name, v] : cb.values)
    if (v.is_tensor() && (v.tensor().dtype() == DataType::Float16 || v.tensor().dtype() == DataType::BFloat16)) low = v.tensor().dtype();
  std::vector<NodeRange> ranges;
  std::optional<size_t> first;
  if (low != DataType::Undefined) {
    ranges = node_ranges(*ma, ca, low);
    for (size_t i = 0; i < ranges.size() && !first; ++i)
      if (ranges[i].overflow || ranges[i].underflow) first = i;
  }
  // Nodes by the error they introduce on their own: in steps where quantized, else against their values' scale.
  std::map<std::string, double> scale;
  for (const auto& n : node_ranges(*ma, ca, DataType::Float16)) scale[n.node] = n.max_abs;
  struct Row {
    double score;
    std::string node, op, unit;
    double introduced, observed;
  };
  std::vector<Row> rows;
  for (const auto& nd : report.nodes) {
    if (!nd.introduced) continue;
    double step = 0;
    for (const auto& [name, d] : nd.outputs) step = std::max(step, d.quant_step);
    const double s = step > 0 ? step : std::max(scale[nd.node], 1e-30);
    rows.push_back({nd.introduced_score / s, nd.node, nd.op_type, step > 0 ? "steps" : "of its scale", nd.introduced_score / s,
                    nd.total_score / s});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.score > y.score; });
  const bool outputs_ok = !report.first_divergence ||
                          std::none_of(ma->graph.outputs.begin(), ma->graph.outputs.end(), [&](const ValueInfo& o) {
                            for (const auto& nd : report.nodes)
                              for (const auto& [name, d] : nd.outputs)
                                if (name == o.name && !d.within()) return true;
                            return false;
                          });
  if (json) {
    nlohmann::json qv = nlohmann::json::array(), nodes = nlohmann::json::array(), rj = nlohmann::json::array();
    for (const auto& q : quantized)
      qv.push_back({{"a_tensor", q.a_tensor}, {"b_tensor", q.b_tensor}, {"quantizer", q.quantizer}, {"scale", q.scale},
                    {"max_steps", q.max_steps}, {"mean_steps", q.mean_steps}, {"saturated", q.saturated}, {"elements", q.elements}});
    for (const auto& r : rows)
      nodes.push_back({{"node", r.node}, {"op_type", r.op}, {"unit", r.unit}, {"introduced", r.introduced}, {"observed", r.observed}});
    for (const auto& n : ranges) rj.push_back(range_json(n));
    nlohmann::json j{{"a", a_path}, {"b", b_path}, {"quantized_values", qv}, {"nodes", nodes}, {"ranges", rj},
                     {"outputs_within", outputs_ok}, {"match", match.summary()}};
    if (first) j["first_out_of_range"] = ranges[*first].node;
    if (report.first_nonfinite) j["first_nonfinite"] = report.nodes[*report.first_nonfinite].node;
    std::cout << j.dump(2) << "\n";
    return outputs_ok ? kExitOk : kExitDrift;
  }
  std::string t = "precision: " + a_path + " (float32) against " + b_path + " on " + std::string(engine.name()) + "\n  " +
                  match.summary() + "\n";
  if (first)
    t += "first out of " + std::string(low == DataType::BFloat16 ? "bfloat16" : "float16") + "'s range in the float32 run: " +
         range_text(ranges[*first], low == DataType::BFloat16 ? "bfloat16" : "float16") + "\n";
  if (report.first_nonfinite)
    t += "first non-finite value: node '" + report.nodes[*report.first_nonfinite].node + "'\n";
  if (!quantized.empty()) {
    t += "quantized values, worst first (A's float32 values quantized with B's scale and zero point, on their own):\n";
    for (size_t i = 0; i < quantized.size() && i < top; ++i) {
      const auto& q = quantized[i];
      t += "  '" + q.a_tensor + "' (" + q.quantizer + "): max " + g3(q.max_steps) + " steps, mean " + g3(q.mean_steps) + ", " +
           std::to_string(q.saturated) + " of " + std::to_string(q.elements) + " saturated; step " + g3(q.scale) + "\n";
    }
  }
  t += "nodes by the error they introduce on their own (B's piece fed A's float32 values), worst first:\n";
  for (size_t i = 0; i < rows.size() && i < top; ++i)
    t += "  '" + rows[i].node + "' (" + rows[i].op + "): introduced " + g3(rows[i].introduced) + " " + rows[i].unit +
         ", accumulated " + g3(rows[i].observed) + "\n";
  t += outputs_ok ? "the outputs agree within tolerance\n" : "the outputs differ beyond tolerance\n";
  std::cout << t;
  return outputs_ok ? kExitOk : kExitDrift;
}

}  // namespace

Runner add_precision_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("precision",
                                 "Where float16/bfloat16 (or quantization) breaks a float32 model, and the nodes to keep in float32");
  struct Args {
    std::string model, against, out, dtype = "fp16";
    ToleranceArgs tol;
    EngineArgs eng;
    InputArgs in;
    size_t max_keep = SIZE_MAX, top = 10;
    bool json = false, no_emulate = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "the float32 ONNX model")->required();
  cmd->add_option("--dtype", a->dtype, "the reduced type: fp16 or bf16")->check(CLI::IsMember({"fp16", "bf16"}))->capture_default_str();
  cmd->add_option("--against", a->against, "the model's float16 or quantized version, instead of converting on the fly");
  cmd->add_option("--out", a->out, "write the mixed-precision model here");
  cmd->add_option("--max-keep", a->max_keep, "at most this many nodes kept in float32 by the search (default: no limit)");
  cmd->add_option("--top", a->top, "with --against: how many values and nodes to list")->capture_default_str();
  cmd->add_option("--engine", a->eng.engine, "the engine that runs both (reference, cpu)")->capture_default_str();
  cmd->add_option("--threads", a->eng.threads, "intra-op threads (0: every core)")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON document");
  cmd->add_flag("--no-emulate", a->no_emulate,
                "Search with real float16/bfloat16 models instead of emulated ones (float32 kernels on rounded values); "
                "slow where the engine has no kernels of the type");
  add_tolerance_options(cmd, a->tol);
  add_limit_options(cmd, a->eng.limits);
  add_input_options(cmd, a->in);
  return [a]() -> int {
    std::unique_ptr<Engine> engine = make_engine(a->eng.engine, a->eng.settings());
    if (!engine) {
      std::cerr << "onnxscope: unknown engine '" << a->eng.engine << "'\n";
      return kExitUsage;
    }
    if (!a->against.empty() && !a->out.empty()) {
      std::cerr << "onnxscope: --out writes the mixed model the search makes; with --against nothing is made\n";
      return kExitUsage;
    }
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    try {
      NamedValues inputs = make_cli_inputs(*m, a->in, a->in.spec());
      if (!a->against.empty()) {
        std::shared_ptr<const Model> b = load_valid_model(a->against);
        if (!b) return kExitBadInput;
        return run_against(a->model, a->against, m, b, inputs, *engine, a->tol.make(), a->top, a->json);
      }
      PrecisionOptions o;
      o.target = a->dtype == "bf16" ? DataType::BFloat16 : DataType::Float16;
      o.tolerance = a->tol.make();
      // The outputs are float32 again, but what they can meet is the reduced
      // type's precision: its built-in rule, unless a global one is given.
      const bool global_given = std::any_of(a->tol.rtol.begin(), a->tol.rtol.end(), [](const std::string& v) { return v.find(':') == std::string::npos; }) ||
                                std::any_of(a->tol.atol.begin(), a->tol.atol.end(), [](const std::string& v) { return v.find(':') == std::string::npos; });
      if (!global_given && a->tol.ulp < 0)
        if (auto it = o.tolerance.by_dtype.find(o.target); it != o.tolerance.by_dtype.end()) {
          o.tolerance.rtol = it->second.rtol;
          o.tolerance.atol = it->second.atol;
        }
      o.max_keep = a->max_keep;
      o.emulate = !a->no_emulate;
      if (!a->json) o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
      return run_search(a->model, m, inputs, *engine, o, a->out, a->json);
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    } catch (const std::filesystem::filesystem_error& e) {
      std::cerr << "onnxscope: cannot write " << a->out << ": " << e.what() << "\n";
      return kExitBadInput;
    }
  };
}

}  // namespace onnxscope::cli
