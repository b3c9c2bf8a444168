// Engines in a worker process. A kernel or plugin that crashes, aborts, hangs
// or is killed for memory takes down only the worker: the caller (the GUI,
// holding the user's work) gets an onnxscope::Error located at the node that
// was running, and the next prepare or run starts a fresh worker.
//
// The worker is the `onnxscope-worker` executable; it loads the model from
// bytes the caller sends, makes the named engine with the same settings and
// plugins, and streams every observed node's outputs back over a socket.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "onnxscope/engine.h"
#include "onnxscope/engines.h"

namespace onnxscope {

struct IsolationOptions {
  std::filesystem::path worker;      // the onnxscope-worker executable
  std::vector<std::string> plugins;  // plugin libraries the worker loads (EngineSettings::extra_kernels cannot cross)
  // After an observer asks to stop (or the run's timeout passes), how long a
  // kernel that does not return gets before the worker is killed.
  double stop_grace_seconds = 2;
};

// An engine named like make_engine()'s that runs in a worker process. Throws
// onnxscope::Error (code "worker") when the worker cannot be started, naming
// the executable. Calls on one isolated engine are serialised; NodeEvent's
// `inputs` is empty for events that come from a worker.
std::unique_ptr<Engine> make_isolated_engine(const std::string& name, const EngineSettings& settings,
                                             IsolationOptions options);

// `onnxscope-worker` next to `executable`'s folder (a program's own path), or
// $ONNXSCOPE_WORKER when set; empty when neither exists.
std::filesystem::path find_worker(const std::filesystem::path& executable);

// The worker program: `onnxscope-worker --socket FD --status FD`. Returns its
// exit code.
int worker_main(int argc, char** argv);

}  // namespace onnxscope
