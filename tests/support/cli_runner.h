// Runs the onnxscope executable as a user would, for the CLI tests.
#pragma once

#include <string>

namespace onnxscope::test {

struct CliRun {
  int exit_code = -1;
  bool signaled = false;  // killed by a signal: never acceptable
  std::string out, err;
};

// `onnxscope ARGS` (args are passed through the shell), stdout and stderr apart.
CliRun run_cli(const std::string& args);

}  // namespace onnxscope::test
