// Running backend-suite test cases on an engine: each case in its own child
// process with a time limit, so a crash or a hang in one never stops the run.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "onnxscope/conformance/compare.h"
#include "onnxscope/conformance/suite.h"
#include "onnxscope/engine.h"
#include "onnxscope/plugin.h"

namespace onnxscope::conformance {

enum class Status { Pass, Fail, Error, Crash, Timeout, Skip };
std::string_view status_name(Status s);
std::optional<Status> status_from_name(std::string_view s);

struct CaseResult {
  std::string key;     // "group/name", unique across the suite
  Status status = Status::Error;
  std::string detail;  // why it failed / errored / was skipped
  double seconds = 0;
  std::vector<std::string> ops;  // operator types of the main graph, for per-op tables
};

using EngineFactory = std::function<std::unique_ptr<Engine>()>;

// Runs one case in this process (no isolation). With plugins, their
// operators validate and infer shapes when the model loads.
CaseResult run_case(const TestCase& c, Engine& engine, const Tolerance& tol, const PluginSet* plugins = nullptr);

struct SuiteOptions {
  int jobs = 2;
  double timeout_seconds = 60;
  // Address-space limit of each child; 0: none. A GPU engine needs none:
  // the CUDA driver reserves far more address space than memory at start.
  uint64_t memory_limit_bytes = uint64_t{6} << 30;
  // Tests one child runs one after another (each with an engine of its own).
  // 1 isolates every test; more pays a process's start-up once for many (a
  // GPU engine's: CUDA, cuBLAS, cuDNN). A crash or a timeout is still its
  // test's alone: the child's tests after it run again in a new child.
  int tests_per_child = 1;
  // Per-case tolerance overrides and skips (key -> ...).
  std::map<std::string, Tolerance> tolerances;
  std::map<std::string, std::string> skips;  // key -> reason: not run at all
  std::function<void(const CaseResult&, size_t done, size_t total)> progress;
  // Plugins loaded in this process (the forked children inherit them).
  const PluginSet* plugins = nullptr;
};

// The address-space limit for a test child of this engine: none for cuda,
// whose start maps tens of GiB of address space (unified addressing) and fails
// under a limit of a few GiB (the engine's --max-tensor-bytes checks still
// bound what a test may allocate); SuiteOptions' default for the others.
uint64_t child_memory_limit(const std::string& engine);

// Runs every case in child processes (tests_per_child at a time in each);
// results in the order of `cases`.
std::vector<CaseResult> run_suite(const std::vector<TestCase>& cases, const EngineFactory& make_engine,
                                  const SuiteOptions& options);

// Makes one engine in a child process, as run_suite's children will, and
// returns why it failed ("" when it started). The parent touches no engine:
// a GPU engine made here would leave CUDA unusable in every forked child.
std::string engine_start_error(const EngineFactory& make_engine, double timeout_seconds);

std::string case_key(const TestCase& c);

// DIR/PREFIX0.pb, DIR/PREFIX1.pb, ... in order, up to the first missing number.
std::vector<std::filesystem::path> numbered_files(const std::filesystem::path& dir, const std::string& prefix);
// What upstream's runner feeds a light model's float input: arange(n)/n in
// float32, unknown dims as 1.
Value light_model_input(const ValueInfo& in);

}  // namespace onnxscope::conformance
