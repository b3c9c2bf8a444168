// onnxscope bisect-passes MODEL: which of the cpu engine's graph rewrites
// moves an output beyond tolerance against the reference.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/bisect_passes.h"
#include "onnxscope/proto_io.h"

namespace onnxscope::cli {
namespace {

std::string check_text(const OutputCheck& c) {
  if (c.output.empty()) return "no output compared";
  const TensorDiff& d = c.diff;
  std::string s = std::string(c.within ? "within tolerance" : "OUT OF TOLERANCE") + " (worst output '" + c.output + "'";
  if (!d.comparable) return s + ": " + d.problem + ")";
  s += ": max|A-B| " + format_value(d.max_abs, d.dtype_a) + ", " + std::to_string(d.out_of_tolerance) + " of " +
       std::to_string(d.elements) + " elements out";
  if (std::string nf = nonfinite_mismatch_text(d); !nf.empty()) s += "; " + nf;
  return s + ")";
}

nlohmann::json check_json(const OutputCheck& c) {
  return {{"within", c.within},
          {"output", c.output},
          {"max_abs", std::isfinite(c.diff.max_abs) ? nlohmann::json(c.diff.max_abs) : nlohmann::json(nullptr)},
          {"out_of_tolerance", c.diff.out_of_tolerance},
          {"elements", c.diff.elements},
          {"text", check_text(c)}};
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

}  // namespace

Runner add_bisect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bisect-passes", "Find the one graph rewrite of the cpu engine that moves an output beyond tolerance against the reference");
  struct Args {
    std::string model, out;
    ToleranceArgs tol;
    EngineArgs eng;
    InputArgs in;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  a->eng.engine = "cpu";
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--engine", a->eng.engine, "the engine whose rewrites are bisected (cpu)")->capture_default_str();
  cmd->add_option("--out", a->out, "Folder to write before.onnx and after.onnx: the engine's graphs without and with the rewrite");
  cmd->add_flag("--json", a->json, "Print one JSON document");
  cmd->add_option("--threads", a->eng.threads, "intra-op threads (0: every core)")->capture_default_str();
  add_tolerance_options(cmd, a->tol);
  add_disable_kernel_option(cmd, a->eng.disabled_kernels);
  add_limit_options(cmd, a->eng.limits);
  add_input_options(cmd, a->in);
  return [a]() -> int {
    if (a->eng.engine != "cpu") {
      std::cerr << "onnxscope: bisect-passes bisects the cpu engine's graph rewrites (--engine cpu); got '" << a->eng.engine
                << "'\n";
      return kExitUsage;
    }
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    try {
      NamedValues inputs = make_cli_inputs(*m, a->in, a->in.spec());
      BisectOptions o;
      o.settings = a->eng.settings();
      o.tolerance = a->tol.make();
      if (!a->json) o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
      const BisectResult r = bisect_passes(m, inputs, o);
      std::string text = "bisect-passes: " + a->model + " on cpu against the reference; tolerance " + o.tolerance.describe() +
                         "\nthe optimizer makes " + std::to_string(r.sites.size()) + " rewrites\n  with all of them: " +
                         check_text(r.all) + "\n  with none: " + check_text(r.none) + "\n";
      nlohmann::json j{{"model", a->model},
                       {"rewrites", r.sites.size()},
                       {"runs", r.runs},
                       {"all", check_json(r.all)},
                       {"none", check_json(r.none)}};
      int rc = kExitOk;
      if (r.all.within) {
        text += "no rewrite moves the outputs beyond tolerance: nothing to bisect\n";
      } else if (!r.none.within) {
        text += "the outputs leave the tolerance with no rewrite at all: a kernel, not a rewrite (see `onnxscope diff " +
                a->model + " --engines reference,cpu`)\n";
        j["kernel_not_rewrite"] = true;
        rc = kExitDrift;
      } else {
        const RewriteSite& s = r.sites[*r.culprit];
        text += "rewrite " + std::to_string(*r.culprit + 1) + " of " + std::to_string(r.sites.size()) + " moves them: pass " +
                s.pass + " at node '" + s.node + "'\n  before it (" + std::to_string(*r.culprit) + " rewrites): " +
                check_text(r.before) + "\n  after it (" + std::to_string(*r.culprit + 1) + " rewrites): " +
                check_text(r.after) + "\n  it took away: " + joined(r.removed) + "\n  it made: " + joined(r.added) +
                "\n  the model's nodes they stand for: " + joined(r.original) + "\n";
        j["culprit"] = {{"index", *r.culprit},  {"pass", s.pass},       {"node", s.node},
                        {"before", check_json(r.before)}, {"after", check_json(r.after)}, {"removed", r.removed},
                        {"added", r.added},     {"original", r.original}};
        if (!a->out.empty()) {
          std::filesystem::create_directories(a->out);
          save_model(*r.model_before, std::filesystem::path(a->out) / "before.onnx");
          save_model(*r.model_after, std::filesystem::path(a->out) / "after.onnx");
          text += "wrote " + a->out + "/before.onnx and " + a->out + "/after.onnx (the engine's graphs with " +
                  std::to_string(*r.culprit) + " and " + std::to_string(*r.culprit + 1) + " rewrites)\n";
        }
        rc = kExitDrift;
      }
      text += std::to_string(r.runs) + " cpu engine runs\n";
      j["runs"] = r.runs;
      if (a->json) std::cout << j.dump(2) << "\n";
      else std::cout << text;
      return rc;
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
