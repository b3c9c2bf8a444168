// onnxscope dump MODEL --out dump.h5: stream every node's outputs to HDF5.
// onnxscope compare A.h5 B.h5 [--model MODEL]: diff two dumps tensor by tensor.
#include <chrono>
#include <cstdio>
#include <cmath>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/diff.h"
#include "onnxscope/dump.h"
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
  nlohmann::json s{{"threads", e.threads}, {"opt_level", e.opt_level}, {"disabled_passes", e.disabled}};
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
    EngineArgs eng;
    InputArgs in;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  cmd->add_option("--out", a->out, "HDF5 file to write")->required();
  cmd->add_option("--only", a->only, "Only tensors whose name matches this regex");
  cmd->add_flag("--stats-only", a->stats_only, "Keep summary statistics, not the data");
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
      NamedValues inputs = make_inputs(*m, a->in.spec());
      DumpWriter writer(a->out, header_for(*m, a->model, a->eng), wo);
      for (const auto& [name, v] : inputs) writer.write_input(name, v);
      DumpObserver obs(writer);
      RunOptions ro;
      ro.observer = &obs;
      ro.seed = a->in.seed;
      ro.observe_subgraphs = false;
      NamedValues outs = engine->prepare(m)->run(inputs, ro);
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

Runner add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "Diff two HDF5 dumps tensor by tensor");
  struct Args {
    std::string a, b, model;
    double rtol = 1e-4, atol = 1e-5;
    int64_t ulp = -1;
    bool json = false;
    double timeout = 60;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("A", a->a, "Baseline dump")->required();
  cmd->add_option("--timeout", a->timeout, "Seconds a dump's reading may go without finishing a dataset (dumps are read in a child process)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("B", a->b, "Dump to compare")->required();
  cmd->add_option("--model", a->model, "Order by this model's topology");
  cmd->add_option("--rtol", a->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", a->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--ulp", a->ulp, "Compare by ULP distance instead");
  cmd->add_flag("--json", a->json, "Print one JSON document");
  return [a]() -> int {
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
    // Order: the model's node order when given, else A's topological indices.
    std::vector<std::string> order;
    std::map<std::string, std::string> producer;
    if (!a->model.empty()) {
      LoadResult r = load_model_file(a->model, plugin_load_options());
      if (!r.model) {
        std::cerr << "onnxscope: cannot load " << a->model << "\n";
        return kExitBadInput;
      }
      for (size_t i = 0; i < r.model->graph.nodes.size(); ++i)
        for (const auto& o : r.model->graph.nodes[i].outputs)
          if (!o.empty()) {
            order.push_back(o);
            producer[o] = r.model->graph.nodes[i].label(i);
          }
    } else {
      for (const auto& e : da.tensors) {
        order.push_back(e.name);
        producer[e.name] = e.node;
      }
    }
    std::map<std::string, const DumpEntry*> ia, ib;
    for (const auto& e : da.tensors) ia[e.name] = &e;
    for (const auto& e : db.tensors) ib[e.name] = &e;
    DiffTolerance tol{a->rtol, a->atol, a->ulp};
    nlohmann::json rows = nlohmann::json::array();
    std::string first;
    size_t compared = 0, missing = 0;
    for (const auto& name : order) {
      auto x = ia.find(name), y = ib.find(name);
      if (x == ia.end() || y == ib.end()) {
        ++missing;
        continue;
      }
      nlohmann::json row{{"tensor", name}, {"node", producer[name]}};
      bool diverges;
      if (x->second->data && y->second->data) {
        TensorDiff d = diff_tensors(*x->second->data, *y->second->data, tol);
        diverges = !d.within();
        row.update({{"max_abs", d.max_abs}, {"max_rel", d.max_rel}, {"cosine", d.cosine},
                    {"out_of_tolerance", d.out_of_tolerance}, {"problem", d.problem}});
      } else {
        // Stats-only dumps: compare the summaries.
        const auto& s = x->second->stats;
        const auto& t = y->second->stats;
        double dm = std::fabs(s.mean - t.mean);
        diverges = dm > tol.atol + tol.rtol * std::fabs(s.mean) || s.nan_count != t.nan_count;
        row.update({{"mean_a", s.mean}, {"mean_b", t.mean}, {"stats_only", true}});
      }
      row["diverges"] = diverges;
      if (diverges && first.empty()) first = name;
      ++compared;
      rows.push_back(row);
    }
    if (a->json) {
      nlohmann::json j{{"a", a->a}, {"b", a->b}, {"tensors", rows}, {"compared", compared}, {"only_in_one", missing}};
      if (!first.empty()) j["first_divergence"] = first;
      std::cout << j.dump(2) << "\n";
    } else {
      for (const auto& r : rows)
        std::cout << (r["diverges"].get<bool>() ? "DIVERGES " : "ok       ") << r["tensor"].get<std::string>()
                  << "  (" << r["node"].get<std::string>() << ")"
                  << (r.contains("max_abs") ? "  max|A-B| " + short_num(r["max_abs"].get<double>()) : "") << "\n";
      std::cout << compared << " tensors compared, " << missing << " present in only one dump\n";
      std::cout << (first.empty() ? "no divergence\n" : "first divergence: tensor '" + first + "' (node " + producer[first] + ")\n");
    }
    return kExitOk;
  };
}

}  // namespace onnxscope::cli
