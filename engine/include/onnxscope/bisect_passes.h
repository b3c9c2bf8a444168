// Which graph rewrite changed my output? (`onnxscope bisect-passes`): the
// model runs on the reference (the ground truth) and on the cpu engine with
// only its first k graph rewrites made (CpuOptions::rewrite_budget); a
// binary search over k finds the one rewrite after which the outputs leave
// the tolerance: its pass, the node it was made at, and the nodes it took
// away and made.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/cpu.h"
#include "onnxscope/diff.h"
#include "onnxscope/engines.h"

namespace onnxscope {

struct BisectOptions {
  EngineSettings settings;  // the cpu engine's (threads, passes, kernels); the budget is set per run
  DiffTolerance tolerance = default_tolerance();
  std::function<void(const std::string&)> progress;  // one line per run
};

// The graph outputs of one run against the reference's: the worst of them.
struct OutputCheck {
  bool within = true;
  std::string output;  // the worst output (the largest violation of the tolerance)
  TensorDiff diff;
};

struct BisectResult {
  std::vector<RewriteSite> sites;      // every rewrite the optimizer makes, in order
  size_t runs = 0;                     // cpu engine runs made
  OutputCheck all, none;               // with every rewrite, with none
  std::optional<size_t> culprit;       // index into sites: with it the outputs leave the tolerance, without it not
  OutputCheck before, after;           // with sites [0, culprit) and [0, culprit]
  std::vector<std::string> removed;    // nodes of the graph the culprit took away: "name (op)"
  std::vector<std::string> added;      // the nodes it made
  std::vector<std::string> original;   // the model's own nodes those stand for (their provenance)
  std::shared_ptr<Model> model_before, model_after;  // the engine's graphs without and with the culprit
};

// Throws onnxscope::Error when a run fails.
BisectResult bisect_passes(std::shared_ptr<const Model> model, const NamedValues& inputs, const BisectOptions& options);

}  // namespace onnxscope
