// onnxscope conformance: run the upstream backend suite (or any folder of the
// same shape) on an engine, compare with expectations, report drift.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "commands.h"
#include "plugin_args.h"
#include "onnxscope/conformance/expectations.h"
#include "onnxscope/conformance/report.h"
#include "onnxscope/conformance/runner.h"
#include "onnxscope/engines.h"

namespace onnxscope::cli {

namespace {
struct ConformanceArgs {
  std::string suite, engine = "reference", expectations, report, junit, json, filter, progress_log;
  int jobs = 2, tests_per_child = 1;
  double timeout = 60;
  bool update = false, verbose = false;
};

// "onnx 1.23.2" from the VERSION file scripts/gen_backend_data.py writes at the
// suite root (or one level up when a subfolder is the suite).
std::string suite_onnx_version(const std::filesystem::path& suite) {
  for (const auto& dir : {suite, suite.parent_path()}) {
    std::ifstream in(dir / "VERSION");
    std::string word, version;
    while (in >> word)
      if (word == "onnx" && in >> version) return version;
  }
  return {};
}

// Nothing is made here: the runner's forked children make their own engines,
// and CUDA initialised in this process would be unusable in them.
conformance::EngineFactory engine_factory(const std::string& name) {
  if (!is_engine_name(name)) return nullptr;
  return [name] { return make_engine(name, with_plugins({}, name)); };
}
}  // namespace

Runner add_conformance_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("conformance", "Run the ONNX backend test suite on an engine and report drift");
  auto a = std::make_shared<ConformanceArgs>();
  cmd->add_option("--suite", a->suite, "Suite folder (e.g. ~/.cache/onnxscope/onnx-1.23.2 or one of its subfolders)")->required();
  cmd->add_option("--engine", a->engine, "Engine to test: reference, cpu, cuda (NVIDIA GPU), cuda-sim (the cuda engine's kernels on the host)")->capture_default_str();
  cmd->add_option("--expectations", a->expectations, "Expectations TOML file of this engine");
  cmd->add_option("--report", a->report, "Write a Markdown report (drift, per-operator table, totals)");
  cmd->add_option("--junit", a->junit, "Write JUnit XML");
  cmd->add_option("--json", a->json, "Write every result as JSON");
  cmd->add_option("--filter", a->filter, "Only tests whose group/name matches this regex (search)");
  cmd->add_option("--jobs", a->jobs, "Tests run in parallel, each in its own process")->capture_default_str();
  cmd->add_option("--timeout", a->timeout, "Seconds per test before it counts as a timeout")->capture_default_str();
  cmd->add_option("--tests-per-child", a->tests_per_child,
                  "Tests each child process runs in turn, each with a new engine: more than 1 pays a process's start "
                  "(CUDA's on a GPU) once for many; a crash or timeout still fails only its own test")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_flag("--update-expectations", a->update, "Rewrite the expectations file from this run's results");
  cmd->add_flag("-v,--verbose", a->verbose, "Print every non-passing test as it finishes");
  cmd->add_option("--progress-log", a->progress_log,
                  "Append a line per finished test (status, seconds, test, detail) to this file as it finishes, "
                  "so a run that is cut off still tells what it ran");
  return [a]() -> int {
    auto factory = engine_factory(a->engine);
    if (!factory) {
      std::cerr << "onnxscope: unknown engine '" << a->engine << "' (available: reference, cpu, cuda, cuda-sim)\n";
      return kExitUsage;
    }
    std::vector<conformance::TestCase> cases;
    try {
      cases = conformance::discover_suite(a->suite);
    } catch (const std::exception& e) {
      std::cerr << "onnxscope: cannot read suite " << a->suite << ": " << e.what() << "\n";
      return kExitBadInput;
    }
    if (!a->filter.empty()) {
      std::regex re;
      try {
        re = std::regex(a->filter);
      } catch (const std::regex_error& e) {
        std::cerr << "onnxscope: bad --filter regex: " << e.what() << "\n";
        return kExitUsage;
      }
      std::erase_if(cases, [&](const conformance::TestCase& c) { return !std::regex_search(conformance::case_key(c), re); });
    }
    if (cases.empty()) {
      std::cerr << "onnxscope: no test cases under " << a->suite << (a->filter.empty() ? "" : " matching the filter") << "\n";
      return kExitBadInput;
    }
    // One engine made (in a child) before the suite: an engine that cannot
    // start here, a GPU engine on a machine without one say, is one error
    // rather than an error in every test.
    if (std::string why = conformance::engine_start_error(factory, a->timeout); !why.empty()) {
      std::cerr << "onnxscope: the " << a->engine << " engine cannot run: " << why << "\n";
      return kExitBadInput;
    }
    conformance::Expectations exp;
    if (!a->expectations.empty() && !a->update) {
      try {
        exp = conformance::load_expectations(a->expectations);
      } catch (const std::exception& e) {
        std::cerr << "onnxscope: " << e.what() << "\n";
        return kExitBadInput;
      }
    } else if (!a->expectations.empty()) {
      try {
        exp = conformance::load_expectations(a->expectations);  // keep reasons and tolerances
      } catch (const std::exception&) {
      }
    }
    conformance::SuiteOptions opts;
    opts.jobs = a->jobs;
    opts.timeout_seconds = a->timeout;
    opts.tests_per_child = a->tests_per_child;
    opts.memory_limit_bytes = conformance::child_memory_limit(a->engine);
    if (!plugins().empty()) opts.plugins = &plugins();
    for (const auto& [key, e] : exp.tests) {
      if (e.tolerance) opts.tolerances[key] = *e.tolerance;
      if (e.status == conformance::Status::Skip) opts.skips[key] = e.reason;
    }
    std::ofstream progress_log;
    if (!a->progress_log.empty()) {
      progress_log.open(a->progress_log, std::ios::app);
      if (!progress_log) {
        std::cerr << "onnxscope: cannot write " << a->progress_log << "\n";
        return kExitBadInput;
      }
    }
    opts.progress = [&](const conformance::CaseResult& r, size_t done, size_t total) {
      if (a->verbose && r.status != conformance::Status::Pass)
        std::cerr << "[" << done << "/" << total << "] " << conformance::status_name(r.status) << " " << r.key << ": "
                  << r.detail.substr(0, 300) << "\n";
      if (progress_log.is_open()) {
        std::string detail = r.detail.substr(0, 300);
        std::replace(detail.begin(), detail.end(), '\n', ' ');
        progress_log << conformance::status_name(r.status) << '\t' << r.seconds << '\t' << r.key << '\t' << detail
                     << std::endl;  // flushed: the log outlives a run that is killed
      }
    };
    auto results = conformance::run_suite(cases, factory, opts);
    conformance::Drift drift;
    // A filtered run, or a subfolder of the suite, is not the whole suite:
    // expectations it did not run are not "not in suite".
    const bool whole_suite = a->filter.empty() && conformance::suite_key_root(a->suite) == std::filesystem::path(a->suite);
    if (!a->expectations.empty()) drift = conformance::compute_drift(exp, results, cases, whole_suite);
    std::cout << conformance::summary_text(results, drift, a->engine);
    try {
      if (!a->report.empty()) conformance::write_markdown_report(a->report, results, drift, a->engine);
      if (!a->junit.empty())
        conformance::write_junit(a->junit, results, a->engine, a->expectations.empty() || a->update ? nullptr : &exp);
      if (!a->json.empty()) conformance::write_json(a->json, results);
      if (a->update) {
        conformance::update_expectations(exp, results);
        exp.test_count = results.size();
        if (std::string v = suite_onnx_version(a->suite); !v.empty()) exp.onnx_version = v;
        conformance::save_expectations(a->expectations, exp, a->engine);
        std::cout << "wrote " << a->expectations << "\n";
        return kExitOk;
      }
    } catch (const std::exception& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return kExitBadInput;
    }
    if (a->expectations.empty()) return kExitOk;
    return drift.empty() ? kExitOk : kExitDrift;
  };
}

}  // namespace onnxscope::cli
