// onnxscope diff MODEL --engines A,B: run two engines (or an engine and a
// dump) on the same inputs,
// compare every node's outputs, name the first divergence and blame the
// nodes that introduce error (re-run alone in B on A's inputs).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/diff.h"
#include "onnxscope/diff_report.h"
#include "onnxscope/dump.h"
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

bool is_dump_token(const std::string& t) {
  return t.rfind("dump:", 0) == 0 || (t.size() > 3 && t.compare(t.size() - 3, 3, ".h5") == 0);
}

// One side of a diff: an engine to run, or a dump read from disk.
struct Side {
  std::string token;
  std::unique_ptr<Engine> engine;
  std::string dump_path;
  std::optional<DumpFile> dump;
};

// "A,B" where each is an engine name or a dump (dump:FILE or FILE.h5).
bool parse_sides(const std::string& spec, const EngineSettings& settings, Side& a, Side& b) {
  const auto comma = spec.find(',');
  if (comma == std::string::npos || spec.find(',', comma + 1) != std::string::npos) {
    std::cerr << "onnxscope: --engines needs two sources, A,B (an engine name or dump:FILE.h5), got '" << spec << "'\n";
    return false;
  }
  for (auto [side, tok] : {std::pair{&a, spec.substr(0, comma)}, std::pair{&b, spec.substr(comma + 1)}}) {
    side->token = tok;
    if (is_dump_token(tok)) {
      side->dump_path = tok.rfind("dump:", 0) == 0 ? tok.substr(5) : tok;
      continue;
    }
    side->engine = make_engine(tok, settings);
    if (!side->engine) {
      std::cerr << "onnxscope: unknown engine '" << tok << "' in --engines (engines: reference, cpu; or dump:FILE.h5)\n";
      return false;
    }
  }
  if (!a.engine && !b.engine) {
    std::cerr << "onnxscope: both sides are dumps; use `onnxscope compare A.h5 B.h5 --model MODEL`\n";
    return false;
  }
  return true;
}

}  // namespace

Runner add_diff_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("diff", "Run two engines (or an engine and a dump) side by side; first divergence and per-node blame");
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
  cmd->add_option("--engines", a->engines,
                  "A (baseline) and B: engine names or dumps, e.g. reference,cpu or cpu,dump:torch.h5")
      ->capture_default_str();
  cmd->add_option("--rtol", a->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", a->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--ulp", a->ulp, "Compare by ULP distance (float types) instead of rtol/atol");
  cmd->add_option("--top", a->top, "How many blamed nodes to list")->capture_default_str();
  cmd->add_option("--report", a->report, "Also write the report as Markdown to this file");
  cmd->add_flag("--json", a->json, "Print one JSON document");
  cmd->add_flag("--no-blame", a->no_blame, "Skip re-running each node alone");
  cmd->add_option("--threads", a->eng.threads, "cpu: intra-op threads (0: every core)");
  add_input_options(cmd, a->in);
  return [a]() -> int {
    Side sa, sb;
    if (!parse_sides(a->engines, a->eng.settings(), sa, sb)) return kExitUsage;
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    DiffReportContext ctx;
    ctx.model_path = a->model;
    ctx.tolerance = DiffTolerance{a->rtol, a->atol, a->ulp};
    ctx.top = a->top;
    try {
      for (Side* s : {&sa, &sb})
        if (!s->dump_path.empty()) {
          s->dump = read_dump(s->dump_path);
          if (!s->dump->header.model_sha256.empty() && s->dump->header.model_sha256 != file_sha256(a->model))
            std::cerr << "onnxscope: note: " << s->dump_path << " was made from a different file than " << a->model
                      << " (SHA-256 differs); tensors are matched by name\n";
        }
      InputSpec spec = a->in.spec();
      ctx.inputs = a->in.describe();
      // With a dump on one side and no inputs given, feed the dump's own inputs.
      const Side* dump_side = sa.dump ? &sa : (sb.dump ? &sb : nullptr);
      if (dump_side && a->in.given() == false) {
        for (const auto& e : dump_side->dump->inputs)
          if (e.data) spec.from_dump[e.name] = *e.data;
        ctx.inputs = "the inputs stored in " + dump_side->dump_path;
      }
      NamedValues inputs = make_inputs(*m, spec);
      auto capture = [&](Side& s) {
        return s.engine ? capture_run(*s.engine, m, inputs) : capture_from_dump(*s.dump, m.get(), "dump:" + s.dump_path);
      };
      Capture ca = capture(sa);
      Capture cb = capture(sb);
      DiffReport report = diff_captures(*m, ca, cb, ctx.tolerance);
      if (a->no_blame) {
        ctx.blame_note = "blame: skipped (--no-blame)";
      } else if (sb.engine) {
        blame_nodes(*m, ca, *sb.engine, ctx.tolerance, report);
        ctx.blame_note = "blame: each node re-run alone in B (" + report.b + ") on A's inputs, compared with A's outputs";
      } else {
        // B is a dump and cannot run: re-run each node in A on the dump's inputs.
        blame_nodes(*m, cb, *sa.engine, ctx.tolerance, report);
        ctx.blame_note = "blame: B is a dump, so each node is re-run alone in A (" + report.a +
                         ") on B's inputs and compared with B's outputs";
      }
      std::cout << (a->json ? diff_report_json(report, ctx) : diff_report_text(report, ctx));
      if (!a->report.empty()) {
        std::ofstream out(a->report);
        out << diff_report_markdown(report, ctx);
        if (!out) {
          std::cerr << "onnxscope: cannot write " << a->report << "\n";
          return kExitBadInput;
        }
      }
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
