// Command-line options shared by the commands that run engines.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "onnxscope/diff.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/ir.h"
#include "plugin_args.h"

#include <memory>

namespace onnxscope::cli {

struct EngineArgs {
  std::string engine = "reference";
  int threads = 0;
  int opt_level = 3;
  std::vector<std::string> disabled;
  std::vector<std::string> disabled_kernels;
  std::string precision = "fp32";
  RunLimits limits;
  EngineSettings settings() const {
    EngineSettings s;
    s.precision = precision;
    s.limits = limits;
    s.threads = threads;
    s.opt_level = opt_level;
    s.disabled_passes = {disabled.begin(), disabled.end()};
    s.disabled_kernels = {disabled_kernels.begin(), disabled_kernels.end()};
    return with_plugins(s, engine);
  }
};

struct InputArgs {
  uint64_t seed = 0;
  std::vector<std::string> dims;    // name=value
  std::vector<std::string> inputs;  // name=file.pb or name=file.npy
  std::vector<std::string> archives;  // .npz files, arrays by input name
  std::string inputs_from;          // an HDF5 dump whose /inputs to reuse
  std::vector<std::string> val_ranges;  // [lo,hi] or NAME:[lo,hi]
  std::string save_inputs;          // .npz to write the inputs a run used to
  bool no_cast = false;             // refuse float inputs of another float type
  InputSpec spec() const;           // throws CLI::ValidationError on a malformed pair
  bool given() const { return !inputs.empty() || !archives.empty() || !inputs_from.empty(); }
  std::string describe() const;     // for reports: "seeded random (seed 0)", the files...
};

// make_inputs with the notes printed to stderr (how each input was made),
// then --save-inputs written. Throws onnxscope::Error.
NamedValues make_cli_inputs(const Model& m, const InputArgs& args, const InputSpec& spec,
                            std::vector<InputNote>* notes = nullptr);

// --rtol/--atol (global, per element type or per tensor) and --ulp, shared by
// diff, compare and reduce.
struct ToleranceArgs {
  std::vector<std::string> rtol, atol;
  int64_t ulp = -1;
  int64_t quant_steps = 0;  // --quant-steps; the steps themselves come from the model (quantization_steps)
  DiffTolerance make() const;  // throws CLI::ValidationError on a malformed value
};
void add_tolerance_options(CLI::App* cmd, ToleranceArgs& t);

void add_engine_options(CLI::App* cmd, EngineArgs& a);
// --disable-kernel IMPL (repeatable), checked against the CPU engine's kernel names.
void add_disable_kernel_option(CLI::App* cmd, std::vector<std::string>& impls);
// --precision of the cuda engines (add_engine_options includes it).
void add_precision_option(CLI::App* cmd, std::string& precision);
// --max-tensor-bytes, --max-live-bytes, --timeout (add_engine_options includes them).
void add_limit_options(CLI::App* cmd, RunLimits& limits);

// "A,B" -> two engines (diff, reduce). False, after printing why, for a
// malformed or unknown pair.
bool make_engine_pair(const std::string& spec, const EngineSettings& settings, std::unique_ptr<Engine>& a,
                      std::unique_ptr<Engine>& b);

// Loads a model for a command that runs it: nullptr (after printing every
// error to stderr) unless it loads without errors.
std::shared_ptr<const Model> load_valid_model(const std::string& path);
void add_input_options(CLI::App* cmd, InputArgs& a);

}  // namespace onnxscope::cli
