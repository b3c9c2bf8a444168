// `onnxscope diff A.onnx --against B.onnx`: the options diff passes on.
#pragma once

#include <string>

#include "commands.h"
#include "engine_args.h"

namespace onnxscope::cli {

struct DiffAgainstArgs {
  std::string model, against;
  std::string engines;  // "" (reference for both), "E" (both) or "EA,EB"
  std::string mapping, write_mapping, report;
  ToleranceArgs tol;
  bool json = false, no_blame = false;
  size_t top = 10;
  EngineArgs eng;
  InputArgs in;
};

int run_diff_against(const DiffAgainstArgs& args);
// reduce A --against B --out DIR: the piece of B that still diverges, as a test folder (args.report is DIR).
int run_reduce_against(const DiffAgainstArgs& args);

}  // namespace onnxscope::cli
