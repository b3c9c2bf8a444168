#include "engine_args.h"

#include "onnxscope/cpu.h"
#include "onnxscope/dump.h"
#include "onnxscope/loader.h"

#include <iostream>

namespace onnxscope::cli {

void add_limit_options(CLI::App* cmd, RunLimits& l) {
  cmd->add_option("--max-tensor-bytes", l.max_tensor_bytes,
                  "Largest tensor a run may make, e.g. 512MB or 2GB (default: half the machine's memory; "
                  "on a GPU's memory, only when given)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--max-live-bytes", l.max_live_bytes,
                  "Largest total of node outputs alive at once (default: three quarters of the machine's memory); "
                  "cuda, cuda-sim: of device memory held by tensors, weights included (on a GPU only when given)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--timeout", l.timeout_seconds, "Wall-time limit of one run, in seconds (default: none)")
      ->check(CLI::NonNegativeNumber);
}

void add_precision_option(CLI::App* cmd, std::string& precision) {
  cmd->add_option("--precision", precision,
                  "cuda, cuda-sim: how MatMul/Gemm/Conv compute: fp32 (float32, no TF32), tf32 (TF32 tensor cores) or "
                  "fp16 (float16 inputs and results, float32 accumulation, as torch.autocast)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16"}))
      ->capture_default_str();
}

void add_engine_options(CLI::App* cmd, EngineArgs& a) {
  add_limit_options(cmd, a.limits);
  cmd->add_option("--engine", a.engine, "reference, cpu, cuda (an NVIDIA GPU, the rest on the cpu engine) or cuda-sim (the cuda engine's kernels run on the host, to check them without a GPU)")->capture_default_str();
  add_precision_option(cmd, a.precision);
  cmd->add_option("--threads", a.threads, "cpu: intra-op threads (0: every core)")->capture_default_str();
  cmd->add_option("--opt-level", a.opt_level, "cpu: 0 no graph rewrites ... 3 all")->check(CLI::Range(0, 3))->capture_default_str();
  std::string passes;
  for (const auto& p : cpu_passes()) passes += (passes.empty() ? "" : ", ") + p.name;
  cmd->add_option("--disable-pass", a.disabled, "cpu: skip a graph pass (repeatable): " + passes)
      ->check([](const std::string& v) -> std::string {
        for (const auto& p : cpu_passes())
          if (p.name == v) return {};
        return "unknown pass '" + v + "'";
      });
}

bool make_engine_pair(const std::string& spec, const EngineSettings& settings, std::unique_ptr<Engine>& a,
                      std::unique_ptr<Engine>& b) {
  const auto comma = spec.find(',');
  if (comma != std::string::npos) {
    a = make_engine(spec.substr(0, comma), with_plugins(settings, spec.substr(0, comma)));
    b = make_engine(spec.substr(comma + 1), with_plugins(settings, spec.substr(comma + 1)));
  }
  if (a && b) return true;
  std::cerr << "onnxscope: --engines needs two known engines, e.g. reference,cpu (got '" << spec << "')\n";
  return false;
}

std::shared_ptr<const Model> load_valid_model(const std::string& path) {
  LoadResult r = load_model_file(path, plugin_load_options());
  if (!r.ok()) {
    for (const auto& d : r.diagnostics.items())
      if (d.severity == Severity::Error) std::cerr << "onnxscope: " << d.to_string() << "\n";
    return nullptr;
  }
  return std::move(r.model);
}

void add_input_options(CLI::App* cmd, InputArgs& a) {
  cmd->add_option("--seed", a.seed, "Seed of random inputs and random operators")->capture_default_str();
  cmd->add_option("--dim", a.dims, "Value of a symbolic dimension: NAME=VALUE (repeatable)");
  cmd->add_option("--input", a.inputs, "An input from a .pb (TensorProto, SequenceProto...) or .npy file: NAME=FILE (repeatable)");
  cmd->add_option("--inputs", a.archives, "An .npz archive (numpy.savez) whose arrays feed the inputs of the same names (repeatable)");
  cmd->add_option("--inputs-from", a.inputs_from, "Reuse the inputs stored in an HDF5 dump (same inputs as that run)");
}

std::string InputArgs::describe() const {
  std::string s;
  for (const auto& i : inputs) s += (s.empty() ? "" : ", ") + i;
  for (const auto& f : archives) s += (s.empty() ? "" : ", ") + f;
  if (!inputs_from.empty()) s += (s.empty() ? "" : ", ") + std::string("the inputs of ") + inputs_from;
  const std::string random = "seeded random (seed " + std::to_string(seed) + ")";
  if (s.empty()) return random;
  return s + "; any other input " + random;
}

InputSpec InputArgs::spec() const {
  InputSpec s;
  s.seed = seed;
  for (const auto& d : dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos) throw CLI::ValidationError("--dim", "expected NAME=VALUE, got '" + d + "'");
    try {
      s.dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    } catch (const std::exception&) {
      throw CLI::ValidationError("--dim", "'" + d.substr(eq + 1) + "' is not an integer");
    }
    if (s.dims[d.substr(0, eq)] < 0) throw CLI::ValidationError("--dim", "dimension must be >= 0");
  }
  for (const auto& in : inputs) {
    auto eq = in.find('=');
    if (eq == std::string::npos) throw CLI::ValidationError("--input", "expected NAME=FILE, got '" + in + "'");
    s.files[in.substr(0, eq)] = in.substr(eq + 1);
  }
  for (const auto& f : archives) s.archives.emplace_back(f);
  if (!inputs_from.empty()) {
    DumpFile d = read_dump(inputs_from);  // errors name the file
    for (auto& e : d.inputs)
      if (e.data) s.from_dump[e.name] = *e.data;
  }
  return s;
}

}  // namespace onnxscope::cli
