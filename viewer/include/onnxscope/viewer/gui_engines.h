// The engines the GUI runs: each in its own onnxscope-worker process, so a
// kernel or plugin that crashes, aborts or never returns costs one run, not
// the window and the user's work (onnxscope/isolation.h). In process only
// when no worker is found or the user asked for it (--in-process).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "onnxscope/engine.h"

namespace onnxscope::viewer {

// The worker the GUI's engines use; empty: run them in this process.
// Until set, onnxscope-worker beside the application (or $ONNXSCOPE_WORKER).
void set_engine_worker(std::filesystem::path worker);
std::filesystem::path engine_worker();

// An engine by name ("reference", "cpu") with the GUI's plugins: isolated when
// a worker is set, else in process. nullptr for an unknown name.
std::unique_ptr<Engine> make_gui_engine(const std::string& name);

}  // namespace onnxscope::viewer
