// onnxscope bench MODEL: time an engine on a model: prepare time, latency
// median and p90 over timed runs after warm-up runs, throughput, peak RSS.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "commands.h"
#include "engine_args.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/proto_io.h"

namespace onnxscope::cli {

namespace {

// How oneDNN's OpenMP threads wait between primitives in this process, as
// app/omp_defaults.cpp (or the user's environment) set it before start.
std::string openmp_wait() {
  std::string s = "libgomp default";
  if (const char* n = std::getenv("GOMP_SPINCOUNT")) s = std::string("spin, GOMP_SPINCOUNT=") + n;
  else if (const char* p = std::getenv("OMP_WAIT_POLICY")) s = std::string("OMP_WAIT_POLICY=") + p;
  if (const char* b = std::getenv("OMP_PROC_BIND")) s += std::string(", OMP_PROC_BIND=") + b;
  return s;
}

struct BenchArgs {
  std::string model;
  int64_t batch = 0;  // 0: leave first dimensions as --dim / the model say
  int warmup = 3;
  int iterations = 20;
  bool json = false;
  std::string save_outputs;
};

// Name given to unnamed first dimensions so that --batch can size them.
constexpr const char* kBatchDim = "onnxscope.bench.batch";

// The graph inputs as make_inputs should see them under --batch N: every
// symbolic first dimension, and every unknown one, becomes N (a --dim giving
// it another value is a usage error). Returns a model holding only inputs and
// initializers; tensors share their buffers, so no weights are copied.
Model batched_input_view(const Model& m, int64_t batch, InputSpec& spec) {
  Model view;
  view.source = m.source;
  view.graph.inputs = m.graph.inputs;
  view.graph.initializers = m.graph.initializers;
  if (batch <= 0) return view;
  for (auto& v : view.graph.inputs) {
    if (!v.type.is_tensor() || !v.type.shape || v.type.shape->empty()) continue;
    Dim& d = v.type.shape->front();
    if (d.is_known()) continue;
    if (!d.is_symbolic()) d = Dim::symbolic(kBatchDim);
    if (auto it = spec.dims.find(d.param); it != spec.dims.end() && it->second != batch)
      throw CLI::ValidationError("--batch", "--dim " + d.param + "=" + std::to_string(it->second) + " contradicts --batch " +
                                                std::to_string(batch) + " (first dimension of '" + v.name + "')");
    spec.dims[d.param] = batch;
  }
  return view;
}

// Whether a run processes `batch` inferences: some input whose first
// dimension the model leaves open has that many rows (random or from a file).
bool batch_applies(const Model& m, const NamedValues& in, int64_t batch) {
  if (batch <= 0) return false;
  for (const auto& v : m.graph.inputs) {
    if (!v.type.is_tensor() || !v.type.shape || v.type.shape->empty() || v.type.shape->front().is_known()) continue;
    for (const auto& [name, val] : in)
      if (name == v.name && val.is_tensor() && !val.tensor().shape().empty() && val.tensor().shape()[0] == batch)
        return true;
  }
  return false;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least p of the samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Peak resident set of this process so far: VmHWM of /proc/self/status.
// Not getrusage's ru_maxrss: Linux carries that across exec from the forked
// parent, so a bench started by a big process would report the parent's peak.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// Resident set now: VmRSS of /proc/self/status (0 if unreadable).
double rss_now_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

std::string shape_of(const Value& v) { return v.describe(); }

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time an engine on a model: prepare, latency median/p90, throughput, peak RSS");
  auto a = std::make_shared<BenchArgs>();
  auto eng = std::make_shared<EngineArgs>();
  eng->engine = "cpu";
  auto inputs = std::make_shared<InputArgs>();
  cmd->add_option("MODEL", a->model, "ONNX model file")->required();
  add_engine_options(cmd, *eng);
  add_input_options(cmd, *inputs);
  cmd->add_option("--batch", a->batch, "Set every symbolic or unknown first input dimension to N (throughput counts N per run)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", a->warmup, "Untimed runs before the timed ones")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--iterations", a->iterations, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON document instead of text");
  cmd->add_option("--save-outputs", a->save_outputs,
                  "Write the last run's tensor outputs to DIR/output_K.pb (TensorProto), to compare with other runtimes");
  return [=]() -> int {
    // What the process holds before the model: the program and its libraries
    // (what a runtime measured from inside a host process does not count).
    const double baseline_rss = rss_now_mib();
    const auto t_load = std::chrono::steady_clock::now();
    std::shared_ptr<const Model> m = load_valid_model(a->model);
    if (!m) return kExitBadInput;
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
    EngineSettings settings = eng->settings();
    settings.release_repacked_weights = true;  // this command's model has no other reader
    auto engine = make_engine(eng->engine, settings);
    if (!engine) {
      std::cerr << "onnxscope: unknown engine '" << eng->engine << "'\n";
      return kExitUsage;
    }
    InputSpec spec = inputs->spec();
    const Model view = batched_input_view(*m, a->batch, spec);
    int64_t per_run = 1;

    std::vector<double> times_ms;
    double prepare_ms = 0, first_run_ms = 0;
    RunStats stats;
    NamedValues in, out;
    try {
      in = make_inputs(view, spec);
      if (batch_applies(*m, in, a->batch))
        per_run = a->batch;
      else if (a->batch > 0)
        std::cerr << "onnxscope: warning: --batch " << a->batch
                  << " sized no input (none has an open first dimension of that size); counting 1 inference per run\n";
      auto t0 = std::chrono::steady_clock::now();
      auto prepared = engine->prepare(m);
      auto t1 = std::chrono::steady_clock::now();
      prepare_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      RunOptions ro;
      ro.seed = inputs->seed;
      for (int i = 0; i < a->warmup + a->iterations; ++i) {
        // The last run's outputs go first, outside the timer: kept, each run
        // would write a buffer other than the last one's (twice the memory
        // in flight, colder caches) and free the old one inside the timing.
        out.clear();
        auto s = std::chrono::steady_clock::now();
        out = prepared->run(in, ro);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
        if (i == 0) first_run_ms = ms;
        if (i >= a->warmup) times_ms.push_back(ms);
      }
      stats = prepared->last_run_stats();
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }

    nlohmann::json saved = nlohmann::json::array();
    if (!a->save_outputs.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(a->save_outputs, ec);
      for (size_t k = 0; k < out.size(); ++k) {
        const auto& [name, v] = out[k];
        if (!v.is_tensor()) continue;  // sequences, maps: not needed for comparisons
        const auto path = std::filesystem::path(a->save_outputs) / ("output_" + std::to_string(k) + ".pb");
        std::ofstream f(path, std::ios::binary);
        const std::string bytes = tensor_to_proto_bytes(v.tensor(), name);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!f) {
          std::cerr << "onnxscope: cannot write " << path.string() << "\n";
          return kExitBadInput;
        }
        saved.push_back({{"name", name}, {"file", path.string()}});
      }
    }

    const double med = median(times_ms), p90 = percentile(times_ms, 0.9);
    const double mean = times_ms.empty() ? 0 : [&] {
      double s = 0;
      for (double t : times_ms) s += t;
      return s / static_cast<double>(times_ms.size());
    }();
    const double throughput = med > 0 ? 1000.0 * static_cast<double>(per_run) / med : 0;
    const double rss = peak_rss_mib();
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    if (a->json) {
      nlohmann::json j;
      j["model"] = a->model;
      j["engine"] = eng->engine;
      j["threads"] = eng->threads;
      j["cores"] = cores;
      j["opt_level"] = eng->opt_level;
      j["disabled_passes"] = eng->disabled;
      nlohmann::json kernels = nlohmann::json::array();
      for (const auto& k : eng->disabled_kernels) kernels.push_back(k);
      j["disabled_kernels"] = std::move(kernels);
      j["batch"] = per_run;
      j["warmup"] = a->warmup;
      j["iterations"] = a->iterations;
      j["load_ms"] = load_ms;
      j["prepare_ms"] = prepare_ms;
      j["first_run_ms"] = first_run_ms;
      j["latency_ms"] = {{"median", med},
                         {"p90", p90},
                         {"mean", mean},
                         {"min", *std::min_element(times_ms.begin(), times_ms.end())},
                         {"max", *std::max_element(times_ms.begin(), times_ms.end())}};
      j["throughput_per_s"] = throughput;
      j["peak_rss_mib"] = rss;
      j["baseline_rss_mib"] = baseline_rss;
      j["openmp_wait"] = openmp_wait();
      j["peak_activation_mib"] = static_cast<double>(stats.peak_live_bytes) / (1 << 20);
      j["activation_arena_mib"] = static_cast<double>(stats.arena_bytes) / (1 << 20);
      if (!stats.how.empty()) j["last_run"] = stats.how;
      if (stats.device_kept_bytes) j["device_kept_mib"] = static_cast<double>(stats.device_kept_bytes) / (1 << 20);
      j["shape_nodes_reused"] = stats.shape_nodes_reused;
      nlohmann::json ins = nlohmann::json::object();
      for (const auto& [name, v] : in) ins[name] = shape_of(v);
      j["inputs"] = ins;
      if (!a->save_outputs.empty()) j["outputs"] = saved;
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return kExitOk;
    }
    std::cout << std::fixed << std::setprecision(2);
    std::cout << "model       " << a->model << "\n";
    std::cout << "engine      " << eng->engine;
    if (eng->engine == "cpu")
      std::cout << " (threads " << (eng->threads > 0 ? std::to_string(eng->threads) : "all " + std::to_string(cores))
                << ", opt-level " << eng->opt_level << ")";
    std::cout << "\n";
    for (const auto& [name, v] : in) std::cout << "input       " << name << ": " << shape_of(v) << "\n";
    std::cout << "load        " << load_ms << " ms\n";
    std::cout << "prepare     " << prepare_ms << " ms\n";
    std::cout << "first run   " << first_run_ms << " ms\n";
    std::cout << "latency     median " << med << " ms, p90 " << p90 << " ms (" << a->iterations << " iterations after "
              << a->warmup << " warm-up)\n";
    std::cout << "throughput  " << throughput << " inferences/s (batch " << per_run << ")\n";
    std::cout << "peak RSS    " << rss << " MiB (" << rss - baseline_rss << " MiB above the " << baseline_rss
              << " MiB the process held before loading the model)\n";
    std::cout << "openmp wait " << openmp_wait() << "\n";
    std::cout << "activations " << static_cast<double>(stats.peak_live_bytes) / (1 << 20)
              << " MiB at most alive at once (node outputs)";
    if (stats.arena_bytes)
      std::cout << ", planned into a " << static_cast<double>(stats.arena_bytes) / (1 << 20) << " MiB arena";
    std::cout << "\n";
    if (!stats.how.empty()) std::cout << "last run    " << stats.how << "\n";
    if (stats.shape_nodes_reused)
      std::cout << "shape nodes " << stats.shape_nodes_reused
                << " computed from the input shapes alone, reused from an earlier run with the same shapes\n";
    if (stats.device_kept_bytes)
      std::cout << "kept        " << static_cast<double>(stats.device_kept_bytes) / (1 << 20)
                << " MiB on the device across runs (the weights' float16 copies)\n";
    for (const auto& s : saved) std::cout << "saved       " << s["name"].get<std::string>() << " -> " << s["file"].get<std::string>() << "\n";
    return kExitOk;
  };
}

}  // namespace onnxscope::cli
