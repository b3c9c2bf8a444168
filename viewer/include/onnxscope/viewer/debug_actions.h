// Scripted debugger actions on a main window whose model has loaded, for
// `onnxscope-gui --screenshot ... --engines a,b --step N` and for tests: run
// the engine pair to the end (the divergence overlay fills and colours the
// graph), or step N nodes; waits in a local event loop.
#pragma once

#include <QString>
#include <QStringList>

namespace onnxscope::viewer {

class MainWindow;

struct DebugActions {
  QStringList engines;  // 1 or 2 engine names; empty: the Debugger dock's choice
  int steps = -1;       // >= 0: step this many nodes and stop there; -1: run to the end
  QString inputs;       // the Debugger dock's input files: .npz archives, NAME=FILE.pb|.npy, comma-separated
  QString dims;         // symbolic dims: NAME=V, comma-separated
};

// "" on success, else what went wrong (unknown engine, a node's error, timeout).
QString apply_debug_actions(MainWindow& window, const DebugActions& actions, int timeout_ms = 600000);

}  // namespace onnxscope::viewer
