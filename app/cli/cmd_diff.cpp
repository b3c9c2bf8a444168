// onnxscope diff MODEL --engines A,B[,C...]: run engines (or read dumps) on
// the same inputs, and against the baseline A:
// compare every node's outputs, name the first divergence and blame the
// nodes that introduce error (re-run alone in B on A's inputs).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>
#include <sstream>

#include "cmd_diff_against.h"
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

std::string num(double v) { return short_number(v); }

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

// "A,B[,C...]" where each is an engine name or a dump (dump:FILE or FILE.h5).
// A is the baseline every other source is compared with.
bool parse_sides(const std::string& spec, const EngineSettings& settings, std::vector<Side>& sides) {
  std::vector<std::string> tokens;
  for (size_t start = 0;;) {
    const size_t comma = spec.find(',', start);
    tokens.push_back(spec.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (tokens.size() < 2) {
    std::cerr << "onnxscope: --engines needs two or more sources, A,B[,C...] (engine names or dump:FILE.h5), got '"
              << spec << "'\n";
    return false;
  }
  sides.resize(tokens.size());
  bool any_engine = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    Side& side = sides[i];
    side.token = tokens[i];
    if (is_dump_token(side.token)) {
      side.dump_path = side.token.rfind("dump:", 0) == 0 ? side.token.substr(5) : side.token;
      continue;
    }
    side.engine = make_engine(side.token, with_plugins(settings, side.token));
    if (!side.engine) {
      std::cerr << "onnxscope: unknown engine '" << side.token
                << "' in --engines (engines: reference, cpu, cuda, cuda-sim; or dump:FILE.h5)\n";
      return false;
    }
    any_engine = true;
  }
  if (!any_engine) {
    std::cerr << "onnxscope: every source is a dump; use `onnxscope compare A.h5 B.h5 --model MODEL`\n";
    return false;
  }
  return true;
}

}  // namespace

Runner add_diff_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("diff", "Run engines (and dumps) side by side; first divergence and per-node blame against the first");
  struct Args {
    std::string model, engines = "reference,cpu", report, against, mapping, write_mapping;
    ToleranceArgs tol;
    bool json = false, no_blame = false, fail_fast = false;
    size_t top = 10;
    EngineArgs eng;
    InputArgs in;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--engines", a->engines,
                  "A (baseline), B[, C...]: engine names or dumps, e.g. reference,cpu or reference,cpu,dump:torch.h5")
      ->capture_default_str();
  auto* engines_opt = cmd->get_option("--engines");
  cmd->add_option("--against", a->against,
                  "Another model of the same network (fp16, quantized, another exporter, optimized): run both on the same "
                  "inputs and compare the values they pair up (--engines: one engine for both, or A's,B's; default reference)");
  cmd->add_option("--mapping", a->mapping,
                  "With --against: a file of 'A_TENSOR B_TENSOR' pairs (or 'A_TENSOR -') taken before any automatic pairing");
  cmd->add_option("--write-mapping", a->write_mapping, "With --against: write the pairs found to this file (to check or edit)");
  add_tolerance_options(cmd, a->tol);
  cmd->add_option("--top", a->top, "How many blamed nodes to list")->capture_default_str();
  cmd->add_option("--report", a->report, "Also write the report as Markdown to this file");
  cmd->add_flag("--json", a->json, "Print one JSON document");
  cmd->add_flag("--no-blame", a->no_blame, "Skip re-running each node alone");
  cmd->add_flag("--fail-fast", a->fail_fast,
                "Stop at the first divergent node: B's run ends there, and only the nodes up to it are compared and blamed");
  cmd->add_option("--threads", a->eng.threads, "cpu, reference: intra-op threads (0: every core; the reference's results do not depend on it)");
  add_disable_kernel_option(cmd, a->eng.disabled_kernels);
  add_limit_options(cmd, a->eng.limits);
  add_precision_option(cmd, a->eng.precision);
  add_input_options(cmd, a->in);
  return [a, engines_opt]() -> int {
    if (!a->against.empty()) {
      if (a->fail_fast) {
        std::cerr << "onnxscope: --fail-fast is for engine diffs; with --against both models run to the end\n";
        return kExitUsage;
      }
      DiffAgainstArgs d;
      d.model = a->model;
      d.against = a->against;
      d.engines = engines_opt->count() ? a->engines : std::string();
      d.mapping = a->mapping;
      d.write_mapping = a->write_mapping;
      d.report = a->report;
      d.tol = a->tol;
      d.json = a->json;
      d.no_blame = a->no_blame;
      d.top = a->top;
      d.eng = a->eng;
      d.in = a->in;
      return run_diff_against(d);
    }
    if (!a->mapping.empty() || !a->write_mapping.empty()) {
      std::cerr << "onnxscope: --mapping and --write-mapping pair two models' tensors: they need --against\n";
      return kExitUsage;
    }
    std::vector<Side> sides;
    if (!parse_sides(a->engines, a->eng.settings(), sides)) return kExitUsage;
    DiffReportContext ctx;
    ctx.model_path = a->model;
    ctx.tolerance = a->tol.make();
    ctx.top = a->top;
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    ctx.tolerance.quant_step = quantization_steps(*m);
    bool any_divergence = false;
    try {
      const Side* dump_side = nullptr;
      for (Side& s : sides)
        if (!s.dump_path.empty()) {
          s.dump = read_dump(s.dump_path);
          if (!dump_side) dump_side = &s;
          if (!s.dump->header.model_sha256.empty() && s.dump->header.model_sha256 != file_sha256(a->model))
            std::cerr << "onnxscope: note: " << s.dump_path << " was made from a different file than " << a->model
                      << " (SHA-256 differs); tensors are matched by name\n";
        }
      InputSpec spec = a->in.spec();
      ctx.inputs = a->in.describe();
      // With a dump among the sources and no inputs given, feed the (first)
      // dump's inputs: every one of them, or an error.
      if (dump_side && !a->in.given()) {
        for (const auto& e : dump_side->dump->inputs)
          if (e.data) spec.from_dump[e.name] = *e.data;
        spec.dump_must_cover = true;
        ctx.inputs = "the inputs stored in " + dump_side->dump_path;
      }
      std::vector<InputNote> notes;
      NamedValues inputs = make_cli_inputs(*m, a->in, spec, &notes);
      for (const auto& n : notes) ctx.inputs += "; " + n.text;
      std::vector<Capture> captures;
      for (Side& s : sides) {
        if (!s.engine) captures.push_back(capture_from_dump(*s.dump, m.get(), "dump:" + s.dump_path));
        else if (a->fail_fast && !captures.empty())
          captures.push_back(capture_run_until_divergence(*s.engine, m, inputs, captures[0], ctx.tolerance));
        else captures.push_back(capture_run(*s.engine, m, inputs));
      }
      std::string text, markdown;
      nlohmann::json pairs = nlohmann::json::array();
      for (size_t k = 1; k < sides.size(); ++k) {
        const Side &sa = sides[0], &sb = sides[k];
        DiffReport report = diff_captures(*m, captures[0], captures[k], ctx.tolerance, a->fail_fast);
        any_divergence = any_divergence || report.first_divergence.has_value();
        if (a->no_blame) {
          ctx.blame_note = "blame: skipped (--no-blame)";
        } else if (sb.engine) {
          blame_nodes(*m, captures[0], *sb.engine, ctx.tolerance, report);
          ctx.blame_note = "blame: each node re-run alone in B (" + report.b + ") on A's inputs, compared with A's outputs";
        } else if (sa.engine) {
          // B is a dump and cannot run: re-run each node in A on the dump's inputs.
          blame_nodes(*m, captures[k], *sa.engine, ctx.tolerance, report);
          ctx.blame_note = "blame: B is a dump, so each node is re-run alone in A (" + report.a +
                           ") on B's inputs and compared with B's outputs";
        } else {
          ctx.blame_note = "blame: none (A and B are both dumps; nothing can re-run a node)";
        }
        text += (k > 1 ? "\n" : "") + diff_report_text(report, ctx);
        markdown += (k > 1 ? "\n" : "") + diff_report_markdown(report, ctx);
        pairs.push_back(nlohmann::json::parse(diff_report_json(report, ctx)));
        if (a->fail_fast && report.first_divergence) break;
      }
      if (a->json) std::cout << (pairs.size() == 1 ? pairs[0] : nlohmann::json{{"pairs", pairs}}).dump(2) << "\n";
      else std::cout << text;
      if (!a->report.empty()) {
        std::ofstream out(a->report);
        out << markdown;
        if (!out) {
          std::cerr << "onnxscope: cannot write " << a->report << "\n";
          return kExitBadInput;
        }
      }
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    // Like conformance drift: a divergence fails a CI step.
    return any_divergence ? kExitDrift : kExitOk;
  };
}

Runner add_reduce_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("reduce", "Cut a model down to the smallest piece that still diverges between two engines");
  struct Args {
    std::string model, engines = "reference,cpu", out, against;
    ToleranceArgs tol;
    EngineArgs eng;
    InputArgs in;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--engines", a->engines, "A (baseline) and B")->capture_default_str();
  auto* engines_opt = cmd->get_option("--engines");
  cmd->add_option("--against", a->against,
                  "Another model of the same network: the piece of it that still diverges from MODEL's values "
                  "(--engines: one engine for both, or A's,B's; default reference)");
  cmd->add_option("--out", a->out, "Folder to write (model.onnx + test_data_set_0)")->required();
  add_tolerance_options(cmd, a->tol);
  add_limit_options(cmd, a->eng.limits);
  add_precision_option(cmd, a->eng.precision);
  add_input_options(cmd, a->in);
  return [a, engines_opt]() -> int {
    if (!a->against.empty()) {
      DiffAgainstArgs d;
      d.model = a->model;
      d.against = a->against;
      d.engines = engines_opt->count() ? a->engines : std::string();
      d.report = a->out;
      d.tol = a->tol;
      d.eng = a->eng;
      d.in = a->in;
      return run_reduce_against(d);
    }
    std::unique_ptr<Engine> ea, eb;
    if (!make_engine_pair(a->engines, a->eng.settings(), ea, eb)) return kExitUsage;
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    DiffTolerance tol = a->tol.make();
    tol.quant_step = quantization_steps(*m);
    try {
      NamedValues inputs = make_cli_inputs(*m, a->in, a->in.spec());
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
