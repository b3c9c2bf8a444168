// onnxscope run MODEL: run a model on an engine and print its outputs;
// --explain lists which kernel ran every node, --profile where the time goes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/dump.h"
#include "onnxscope/engines.h"
#include "onnxscope/finite_check.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"

namespace onnxscope::cli {

namespace {

// Time per (operator, kernel) over a run, and the slowest nodes, for --profile.
struct Profile : Observer {
  size_t slowest = 15;  // nodes listed, slowest first (0: all, in the order they ran)
  struct NodeTime {
    double seconds = 0;
    std::string where;  // graph path and node name (or op#index), kernel, input and output types
  };
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> by_op;  // -> (seconds, count)
  std::vector<NodeTime> nodes;
  double total = 0;
  void on_node(const NodeEvent& e) override {
    auto& slot = by_op[{e.node->op_type, std::string(e.kernel)}];
    slot.first += e.seconds;
    ++slot.second;
    total += e.seconds;
    std::string where = std::string(e.graph_path) + "  " +
                        (e.node->name.empty() ? e.node->op_type + "#" + std::to_string(e.node_index) : e.node->name) + "  " +
                        e.node->op_type + " [" + std::string(e.kernel) + "]  ";
    for (size_t i = 0; i < e.inputs.size() && i < 2; ++i) where += (i ? ", " : "") + (e.inputs[i] ? e.inputs[i]->describe() : "-");
    where += " -> " + (e.outputs.empty() ? std::string("-") : e.outputs.front().describe());
    nodes.push_back({e.seconds, std::move(where)});
  }
  bool reads_values() const override { return false; }  // times and shapes only: the run as bench runs it
  void print() const {
    std::vector<std::pair<std::pair<std::string, std::string>, std::pair<double, int>>> rows(by_op.begin(), by_op.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::cout << "time by operator and kernel (" << std::fixed << std::setprecision(2) << total * 1e3 << " ms in nodes):\n";
    for (const auto& [key, v] : rows)
      std::cout << "  " << std::setw(9) << v.first * 1e3 << " ms " << std::setw(5) << std::setprecision(1)
                << (total > 0 ? 100 * v.first / total : 0) << "%  " << std::setw(4) << v.second << " x " << key.first
                << " [" << key.second << "]\n" << std::setprecision(2);
    // The nodes themselves (first two inputs, first output): which
    // convolution or product of a kind takes the time.
    std::vector<const NodeTime*> order;
    for (const auto& n : nodes) order.push_back(&n);
    const size_t shown = slowest == 0 ? order.size() : std::min(order.size(), slowest);
    if (slowest != 0)
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                        [](const NodeTime* a, const NodeTime* b) { return a->seconds > b->seconds; });
    if (slowest == 0)
      std::cout << "\nevery node, in the order it ran (" << shown << "):\n";
    else
      std::cout << "\nslowest nodes (" << shown << " of " << nodes.size() << "):\n";
    for (size_t i = 0; i < shown; ++i)
      std::cout << "  " << std::setw(9) << std::setprecision(3) << order[i]->seconds * 1e3 << " ms " << std::setw(5)
                << std::setprecision(1) << (total > 0 ? 100 * order[i]->seconds / total : 0) << "%  " << order[i]->where
                << "\n";
    std::cout << std::setprecision(2);
  }
};

struct Explain : Observer {
  std::vector<std::string> lines;
  void on_node(const NodeEvent& e) override {
    std::string name = e.node->name.empty() ? e.node->op_type + "#" + std::to_string(e.node_index) : e.node->name;
    std::string fused;
    for (const auto& kv : e.node->metadata)
      if (kv.key == "onnxscope.fused_from") fused = "  <- " + kv.value;
    lines.push_back(std::string(e.graph_path) + "  " + name + "  " + e.node->op_type + "  [" + std::string(e.kernel) + "]" + fused);
  }
  bool reads_values() const override { return false; }
};

// NaN and Inf counts of a value's tensors (sequence items and map values
// included).
struct NonFinite {
  uint64_t nan = 0, inf = 0, elements = 0;
  void add(const Value& v) {
    if (v.is_sequence())
      for (const auto& item : v.items()) add(item);
    if (v.is_map()) add(Value(v.map_values()));
    if (!v.is_tensor() || v.tensor().is_string() || !dtype_info(v.tensor().dtype()).is_float) return;
    const Tensor& t = v.tensor();
    elements += t.element_count();
    for (uint64_t i = 0; i < t.element_count(); ++i) {
      const double x = t.element_as_double(i);
      nan += std::isnan(x);
      inf += std::isinf(x);
    }
  }
  std::string text() const {
    std::string s;
    if (nan) s += std::to_string(nan) + " NaN";
    if (inf) s += (s.empty() ? "" : ", ") + std::to_string(inf) + " inf";
    return s.empty() ? s : s + " of " + std::to_string(elements) + " elements";
  }
};

void print_value(const std::string& name, const Value& v) {
  std::cout << name << ": " << v.describe();
  if (v.is_tensor() && !v.tensor().is_string() && v.tensor().element_count() > 0) {
    const Tensor& t = v.tensor();
    const uint64_t n = t.element_count();
    std::cout << "  [";
    for (uint64_t i = 0; i < std::min<uint64_t>(n, 8); ++i) std::cout << (i ? ", " : "") << t.element_as_double(i);
    std::cout << (n > 8 ? ", ...]" : "]");
  }
  NonFinite nf;
  nf.add(v);
  if (!nf.text().empty()) std::cout << "  (" << nf.text() << ")";
  std::cout << "\n";
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on an engine and print its outputs");
  auto model = std::make_shared<std::string>();
  auto eng = std::make_shared<EngineArgs>();
  auto inputs = std::make_shared<InputArgs>();
  auto explain = std::make_shared<bool>(false);
  auto out_path = std::make_shared<std::string>();
  auto profile = std::make_shared<bool>(false);
  auto profile_nodes = std::make_shared<size_t>(15);
  auto validate = std::make_shared<bool>(false);
  auto check_finite = std::make_shared<bool>(false);
  cmd->add_option("MODEL", *model, "ONNX model file")->required();
  add_engine_options(cmd, *eng);
  add_input_options(cmd, *inputs);
  cmd->add_flag("--explain", *explain, "List every node as the engine ran it, with the kernel that ran it");
  cmd->add_option("--out", *out_path, "Also write the inputs and outputs to this HDF5 file (dump format)");
  cmd->add_flag("--profile", *profile, "Run three times (two warm caches and memory) and print time by operator and kernel, and the slowest nodes");
  cmd->add_option("--profile-nodes", *profile_nodes,
                  "With --profile: how many of the slowest nodes to list (0: every node, in the order it ran)")
      ->default_val(15);
  cmd->add_flag("--validate", *validate,
                "Check every node's outputs for NaN and Inf: name the first node that makes one, and exit 3 if any "
                "output holds one");
  cmd->add_flag("--check-finite", *check_finite,
                "Stop at the first node whose output holds NaN or Inf; name it, that output and every input that fed "
                "it (finite or not), and exit 1");
  return [=]() -> int {
    std::shared_ptr<const Model> m = load_valid_model(*model);
    if (!m) return kExitBadInput;
    EngineSettings settings = eng->settings();
    settings.release_repacked_weights = true;  // this command's model has no other reader
    auto engine = make_engine(eng->engine, settings);
    if (!engine) {
      std::cerr << "onnxscope: unknown engine '" << eng->engine << "'\n";
      return kExitUsage;
    }
    try {
      NamedValues in = make_cli_inputs(*m, *inputs, inputs->spec());
      auto t0 = std::chrono::steady_clock::now();
      auto prepared = engine->prepare(m);
      auto t1 = std::chrono::steady_clock::now();  // reset after a --profile warm-up
      Explain ex;
      RunOptions ro;
      ro.seed = inputs->seed;
      Profile prof;
      prof.slowest = *profile_nodes;
      if (*explain || *profile) {
        ro.capture_original = false;  // report nodes as the engine runs them (fused)
        ro.observe_subgraphs = false;
      }
      if (*explain) ro.observer = &ex;
      FiniteCheck first_bad(/*stop=*/!*validate);  // --validate runs on; --check-finite stops there
      if ((*validate || *check_finite) && (*explain || *profile)) {
        std::cerr << "onnxscope: --validate and --check-finite go alone, not with --explain or --profile\n";
        return kExitUsage;
      }
      if (*validate && *check_finite) {
        std::cerr << "onnxscope: --validate runs on past a NaN, --check-finite stops at it: give one\n";
        return kExitUsage;
      }
      if (*validate || *check_finite) ro.observer = &first_bad;
      if (*profile) {
        // Warm-up: primitive creation and first allocations, then the first
        // run from the activation arena (planned after the first), which
        // faults its pages in: the profiled run is the third, as bench's.
        // Observed like it, so that the three make the same allocations (an
        // observed run computes the shape nodes an unobserved one reuses).
        Profile warm;
        ro.observer = &warm;
        prepared->run(in, ro);
        prepared->run(in, ro);
        ro.observer = &prof;
        t1 = std::chrono::steady_clock::now();
      }
      NamedValues out;
      try {
        out = prepared->run(in, ro);
      } catch (const Error&) {
        if (!*check_finite || !first_bad.found()) throw;
        std::cout << "first non-finite value: " << first_bad.found()->text();  // the run stopped there
        return kExitBadInput;
      }
      auto t2 = std::chrono::steady_clock::now();
      NonFinite outputs_bad;
      for (const auto& [name, v] : out) {
        print_value(name, v);
        outputs_bad.add(v);
        NonFinite one;
        one.add(v);
        if (!one.text().empty()) std::cerr << "onnxscope: warning: output '" << name << "' holds " << one.text() << "\n";
      }
      if (!out_path->empty()) {
        DumpHeader h;
        h.tool_version = ONNXSCOPE_VERSION;
        h.model_path = *model;
        h.model_sha256 = file_sha256(*model);
        h.engine = eng->engine;
        DumpWriter w(*out_path, h);
        for (const auto& [name, v] : in) w.write_input(name, v);
        std::vector<std::string> names;
        for (const auto& [name, v] : out) {
          w.write_tensor(name, v, "", "", -1);
          names.push_back(name);
        }
        w.close(names);
      }
      std::cout << std::fixed << std::setprecision(2) << "engine " << eng->engine << ": prepare "
                << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms, run "
                << std::chrono::duration<double, std::milli>(t2 - t1).count() << " ms, activations "
                << static_cast<double>(prepared->last_run_stats().peak_live_bytes) / (1 << 20)
                << " MiB at most alive at once\n";
      if (*profile) prof.print();
      if (*explain) {
        std::cout << "nodes as run (" << ex.lines.size() << "):\n";
        for (const auto& l : ex.lines) std::cout << "  " << l << "\n";
        if (const std::string where = prepared->placement(); !where.empty()) {
          std::istringstream lines(where);
          std::string line;
          std::getline(lines, line);
          std::cout << "placement, fallbacks and copies (" << line << "):\n";
          while (std::getline(lines, line)) std::cout << "  " << line << "\n";
        }
        // Where the [plugin:NAME] kernels above come from.
        for (const auto& p : plugins().plugins())
          for (const auto& k : p.kernels)
            std::cout << "plugin:" << p.name << " = " << p.path << ": " << domain_display_name(k.domain) << "::"
                      << k.op_type << (k.description.empty() ? "" : " (" + k.description + ")") << "\n";
      }
      if (*validate || *check_finite) {
        if (first_bad.found()) std::cout << "first non-finite value: " << first_bad.found()->text();
        else std::cout << "no NaN or Inf in any node's outputs\n";
        if (*validate && outputs_bad.nan + outputs_bad.inf) return kExitDrift;
        if (*check_finite && first_bad.found()) return kExitBadInput;  // (a node the engine ran without reporting it)
      }
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    return kExitOk;
  };
}

}  // namespace onnxscope::cli
