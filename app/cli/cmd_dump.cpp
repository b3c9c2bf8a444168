// onnxscope dump MODEL --out dump.h5: stream every node's outputs to HDF5.
// onnxscope compare A.h5 B.h5 [--model MODEL]: diff two dumps tensor by tensor.
#include <chrono>
#include <cstdio>
#include <cmath>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/diff.h"
#include "onnxscope/diff_report.h"
#include "onnxscope/dump.h"
#include "onnxscope/finite_check.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"

namespace onnxscope::cli {

namespace {

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string short_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

DumpHeader header_for(const Model& m, const std::string& path, const EngineArgs& e) {
  DumpHeader h;
  h.producer = "onnxscope";
  h.tool_version = ONNXSCOPE_VERSION;
  h.model_path = path;
  h.model_sha256 = file_sha256(path);
  h.engine = e.engine;
  nlohmann::json s{{"threads", e.threads}, {"opt_level", e.opt_level}, {"disabled_passes", e.disabled}, {"disabled_kernels", e.disabled_kernels}};
  h.engine_settings = s.dump();
  nlohmann::json o = nlohmann::json::object();
  for (const auto& imp : m.opset_imports) o[std::string(domain_display_name(imp.domain))] = imp.version;
  h.opset_imports = o.dump();
  h.created = now_iso8601();
  return h;
}

}  // namespace

Runner add_dump_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("dump", "Run a model and stream every node's outputs to an HDF5 dump");
  struct Args {
    std::string model, out, only;
    bool stats_only = false;
    bool check_finite = false;
    EngineArgs eng;
    InputArgs in;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--out", a->out, "HDF5 file to write")->required();
  cmd->add_option("--only", a->only, "Only tensors whose name matches this regex");
  cmd->add_flag("--stats-only", a->stats_only, "Keep summary statistics, not the data");
  cmd->add_flag("--check-finite", a->check_finite,
                "Stop at the first node whose output holds NaN or Inf: keep the dump up to it, name it, that output "
                "and every input that fed it (finite or not), and exit 1");
  add_engine_options(cmd, a->eng);
  add_input_options(cmd, a->in);
  return [a]() -> int {
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    auto engine = make_engine(a->eng.engine, a->eng.settings());
    if (!engine) {
      std::cerr << "onnxscope: unknown engine '" << a->eng.engine << "'\n";
      return kExitUsage;
    }
    DumpWriterOptions wo;
    wo.stats_only = a->stats_only;
    if (!a->only.empty()) {
      try {
        wo.only = std::regex(a->only);
      } catch (const std::regex_error& e) {
        std::cerr << "onnxscope: bad --only regex: " << e.what() << "\n";
        return kExitUsage;
      }
    }
    try {
      NamedValues inputs = make_cli_inputs(*m, a->in, a->in.spec());
      DumpWriter writer(a->out, header_for(*m, a->model, a->eng), wo);
      for (const auto& [name, v] : inputs) writer.write_input(name, v);
      DumpObserver obs(writer);
      FiniteCheck check;
      Observers both({&obs, &check});
      RunOptions ro;
      ro.observer = a->check_finite ? static_cast<Observer*>(&both) : &obs;
      ro.seed = a->in.seed;
      ro.observe_subgraphs = false;
      NamedValues outs;
      try {
        outs = engine->prepare(m)->run(inputs, ro);
      } catch (const Error&) {
        if (!a->check_finite || !check.found()) throw;
        writer.close({});  // the run stopped there: what it wrote up to that node stays readable
        std::cout << "wrote " << writer.written() << " tensors to " << a->out << " (up to the first non-finite value)\n"
                  << "first non-finite value: " << check.found()->text();
        return kExitBadInput;
      }
      if (a->check_finite) std::cout << "no NaN or Inf in any node's outputs\n";
      std::vector<std::string> names;
      for (const auto& [name, v] : outs) names.push_back(name);
      writer.close(names);
      std::cout << "wrote " << writer.written() << " tensors to " << a->out;
      if (obs.skipped_non_tensors()) std::cout << " (" << obs.skipped_non_tensors() << " sequence/map values not stored)";
      std::cout << "\n";
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    return kExitOk;
  };
}

namespace {

// A stats-only entry on either side: the summaries are all there is to compare.
TensorDiff stats_diff(const DumpEntry& x, const DumpEntry& y, const DiffTolerance& tol) {
  const TensorStats &s = x.stats, &t = y.stats;
  TensorDiff d;
  d.dtype_a = dtype_from_name(x.dtype).value_or(DataType::Undefined);
  d.dtype_b = dtype_from_name(y.dtype).value_or(DataType::Undefined);
  d.rule = tol.rule_for(x.name, d.dtype_a, d.dtype_b);
  d.elements = s.elements;
  d.nan_a = s.nan_count;
  d.nan_b = t.nan_count;
  d.inf_a = s.inf_count;
  d.inf_b = t.inf_count;
  const double dm = std::fabs(s.mean - t.mean);
  const bool bad = !(dm <= d.rule.atol + d.rule.rtol * std::fabs(s.mean)) || s.nan_count != t.nan_count ||
                   s.inf_count != t.inf_count || x.shape != y.shape;
  d.max_abs = dm;
  if (bad) {
    d.comparable = false;
    d.problem = "stats only: mean A=" + format_value(s.mean, DataType::Double) + " B=" + format_value(t.mean, DataType::Double) +
                ", NaN A=" + std::to_string(s.nan_count) + " B=" + std::to_string(t.nan_count) + ", inf A=" +
                std::to_string(s.inf_count) + " B=" + std::to_string(t.inf_count);
  }
  return d;
}

std::string compare_text(const DiffReport& r, const DiffTolerance& tol, const std::vector<std::string>& tensor_of) {
  std::ostringstream o;
  o << "A = " << r.a << ", B = " << r.b << "; tolerance " << tol.describe() << "\n";
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeDiff& n = r.nodes[i];
    std::string st = diff_status_text(n);
    char head[64];
    std::snprintf(head, sizeof head, "%-12s", st.c_str());
    o << head << tensor_of[i] << "  (" << n.node << ")";
    if (!n.outputs.empty() && n.outputs[0].second.comparable) o << "  max|A-B| " << short_num(n.total_score);
    if (std::string note = diff_node_note(n); !note.empty()) o << "  " << note;
    o << "\n";
  }
  size_t compared = 0, only_a = 0, only_b = 0;
  for (const auto& n : r.nodes) {
    compared += !n.outputs.empty();
    only_a += n.only_in_a.size();
    only_b += n.only_in_b.size();
  }
  o << compared << " tensors compared, " << r.diverging() << " diverge; " << only_a << " only in A, " << only_b
    << " only in B\n";
  if (size_t k = r.types_differ())
    o << k << " compared tensor(s) differ in element type between A and B; their values were converted to double and "
      << "held to the looser type's tolerance\n";
  if (r.stopped_early) o << "stopped at the first divergence (--fail-fast): later tensors were not compared\n";
  if (r.first_divergence) {
    const NodeDiff& n = r.nodes[*r.first_divergence];
    o << "first divergence: tensor '" << tensor_of[*r.first_divergence] << "' (node " << n.node << "); "
      << diff_divergence_detail(n) << "\n";
  } else {
    o << "no divergence\n";
  }
  if (r.first_nonfinite) {
    const NodeDiff& n = r.nodes[*r.first_nonfinite];
    o << "first non-finite value: tensor '" << tensor_of[*r.first_nonfinite] << "' (node " << n.node << "): "
      << nonfinite_counts_text(n.outputs[0].second) << "\n";
  }
  return o.str();
}

}  // namespace

Runner add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "Diff two HDF5 dumps tensor by tensor");
  struct Args {
    std::string a, b, model, report;
    ToleranceArgs tol;
    bool json = false, fail_fast = false;
    double timeout = 60;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("A", a->a, "Baseline dump")->required();
  cmd->add_option("--timeout", a->timeout, "Seconds a dump's reading may go without finishing a dataset (dumps are read in a child process)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("B", a->b, "Dump to compare")->required();
  cmd->add_option("--model", a->model, "Order by this model's topology");
  add_tolerance_options(cmd, a->tol);
  cmd->add_flag("--json", a->json, "Print one JSON document");
  cmd->add_option("--report", a->report, "Also write the comparison as Markdown to this file");
  cmd->add_flag("--fail-fast", a->fail_fast, "Stop at the first divergent tensor");
  return [a]() -> int {
    DiffTolerance tol = a->tol.make();
    DumpFile da, db;
    try {
      DumpReadOptions ro;
      ro.isolate_timeout_seconds = a->timeout;
      da = read_dump(a->a, ro);
      db = read_dump(a->b, ro);
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    const std::string &ha = da.header.model_sha256, &hb = db.header.model_sha256;
    if (!ha.empty() && !hb.empty() && ha != hb)
      std::cerr << "onnxscope: warning: " << a->a << " and " << a->b << " were made from different model files ("
                << (da.header.model_path.empty() ? "?" : da.header.model_path) << " and "
                << (db.header.model_path.empty() ? "?" : db.header.model_path)
                << ", SHA-256 differs); tensors are matched by name\n";
    // Steps in order, one tensor each: the model's node order when given,
    // else A's topological order; then what only B holds.
    std::vector<DiffStep> steps;
    std::vector<std::string> tensor_of;
    std::set<std::string> placed;
    auto add_step = [&](const std::string& tensor, const std::string& node, const std::string& op) {
      if (!placed.insert(tensor).second) return;
      steps.push_back({node, op, steps.size(), {tensor}});
      tensor_of.push_back(tensor);
    };
    std::map<std::string, const DumpEntry*> ia, ib;
    for (const auto& e : da.tensors) ia[e.name] = &e;
    for (const auto& e : db.tensors) ib[e.name] = &e;
    if (!a->model.empty()) {
      LoadResult r = load_model_file(a->model, plugin_load_options());
      if (!r.model) {
        std::cerr << "onnxscope: cannot load " << a->model << "\n";
        return kExitBadInput;
      }
      if (const std::string h = file_sha256(a->model); (!ha.empty() && ha != h) || (!hb.empty() && hb != h))
        std::cerr << "onnxscope: note: " << a->model << " is not the file "
                  << (!ha.empty() && ha != h ? a->a : a->b) << " was made from (SHA-256 differs)\n";
      for (size_t i = 0; i < r.model->graph.nodes.size(); ++i) {
        const Node& n = r.model->graph.nodes[i];
        for (const auto& o : n.outputs)
          if (!o.empty() && (ia.count(o) || ib.count(o))) add_step(o, n.label(i), n.op_type);
      }
      tol.quant_step = quantization_steps(*r.model);
    }
    for (const auto* d : {&da, &db})
      for (const auto& e : d->tensors) add_step(e.name, e.node.empty() ? "?" : e.node, e.op_type);
    Capture ca = capture_from_dump(da, nullptr, a->a), cb = capture_from_dump(db, nullptr, a->b);
    DiffReport rep = diff_steps(steps, ca, cb, tol);
    // Stats-only entries: compared by their summaries.
    for (size_t i = 0; i < rep.nodes.size(); ++i) {
      auto x = ia.find(tensor_of[i]), y = ib.find(tensor_of[i]);
      NodeDiff& n = rep.nodes[i];
      if ((x == ia.end()) != (y == ib.end()) && n.outputs.empty() && n.only_in_a.empty() && n.only_in_b.empty())
        (x != ia.end() ? n.only_in_a : n.only_in_b).push_back(tensor_of[i]);  // a stats-only entry on one side
      if (x == ia.end() || y == ib.end() || (x->second->data && y->second->data)) continue;
      n.only_in_a.clear();
      n.only_in_b.clear();
      TensorDiff d = stats_diff(*x->second, *y->second, tol);
      n.diverges = !d.within();
      n.total_score = d.comparable ? d.max_abs : INFINITY;
      n.outputs = {{tensor_of[i], d}};
    }
    rep.first_divergence.reset();
    rep.first_nonfinite.reset();
    for (size_t i = 0; i < rep.nodes.size(); ++i) {
      if (rep.nodes[i].diverges && !rep.first_divergence) rep.first_divergence = i;
      for (const auto& [name, d] : rep.nodes[i].outputs)
        if (d.comparable && d.any_nonfinite() && !rep.first_nonfinite && rep.nodes[i].op_type != "Constant")
          rep.first_nonfinite = i;
    }
    if (a->fail_fast && rep.first_divergence && *rep.first_divergence + 1 < rep.nodes.size()) {
      rep.nodes.resize(*rep.first_divergence + 1);
      tensor_of.resize(rep.nodes.size());
      rep.stopped_early = true;
      if (rep.first_nonfinite && *rep.first_nonfinite >= rep.nodes.size()) rep.first_nonfinite.reset();
    }
    DiffReportContext ctx;
    ctx.model_path = a->model;
    ctx.inputs = "the inputs stored in each dump";
    ctx.tolerance = tol;
    ctx.blame_note = "blame: none (A and B are both dumps; nothing can re-run a node)";
    size_t compared = 0, only_a = 0, only_b = 0;
    for (const auto& n : rep.nodes) {
      compared += !n.outputs.empty();
      only_a += n.only_in_a.size();
      only_b += n.only_in_b.size();
    }
    if (a->json) {
      nlohmann::json j = nlohmann::json::parse(diff_report_json(rep, ctx));
      // Tensor-level keys (a dump is a list of tensors).
      nlohmann::json rows = nlohmann::json::array();
      for (size_t i = 0; i < rep.nodes.size(); ++i) {
        nlohmann::json row = j["nodes"][i];
        row["tensor"] = tensor_of[i];
        rows.push_back(row);
      }
      j.erase("nodes");
      j["tensors"] = rows;
      j["compared"] = compared;
      j["only_in_one"] = only_a + only_b;
      j["only_in_a_count"] = only_a;
      j["only_in_b_count"] = only_b;
      if (rep.first_divergence) {
        j["first_divergence_node"] = j["first_divergence"];
        j["first_divergence"] = tensor_of[*rep.first_divergence];
      }
      if (rep.first_nonfinite) {
        j["first_nonfinite_node"] = j["first_nonfinite"];
        j["first_nonfinite"] = tensor_of[*rep.first_nonfinite];
      }
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << compare_text(rep, tol, tensor_of);
    }
    if (!a->report.empty()) {
      std::ofstream out(a->report);
      out << diff_report_markdown(rep, ctx);
      if (!out) {
        std::cerr << "onnxscope: cannot write " << a->report << "\n";
        return kExitBadInput;
      }
    }
    return rep.first_divergence ? kExitDrift : kExitOk;
  };
}

}  // namespace onnxscope::cli
