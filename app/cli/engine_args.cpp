#include "engine_args.h"

#include "onnxscope/cpu.h"
#include "onnxscope/dump.h"
#include "onnxscope/loader.h"

#include <cmath>
#include <iostream>
#include <optional>
#include <set>

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

void add_disable_kernel_option(CLI::App* cmd, std::vector<std::string>& impls_out) {
  std::set<std::string> impls;
  for (const auto& k : cpu_kernels().all()) impls.insert(k.impl);
  impls.insert("cpu-float32");  // float16/bfloat16 nodes on the float32 kernels (cpu/low_precision.h)
  std::string impl_list;
  for (const auto& i : impls) impl_list += (impl_list.empty() ? "" : ", ") + i;
  cmd->add_option("--disable-kernel", impls_out,
                  "cpu: leave a kernel implementation out, so the next one for each op runs, the reference last "
                  "(repeatable; to see whether a kernel is what moves an output): " + impl_list)
      ->check([impls](const std::string& v) -> std::string {
        return impls.count(v) ? std::string{} : "unknown kernel implementation '" + v + "'";
      });
}

void add_engine_options(CLI::App* cmd, EngineArgs& a) {
  add_limit_options(cmd, a.limits);
  cmd->add_option("--engine", a.engine, "reference, cpu, cuda (an NVIDIA GPU, the rest on the cpu engine) or cuda-sim (the cuda engine's kernels run on the host, to check them without a GPU)")->capture_default_str();
  add_precision_option(cmd, a.precision);
  cmd->add_option("--threads", a.threads, "cpu, reference: intra-op threads (0: every core; the reference's results do not depend on it)")->capture_default_str();
  cmd->add_option("--opt-level", a.opt_level, "cpu: 0 no graph rewrites ... 3 all")->check(CLI::Range(0, 3))->capture_default_str();
  std::string passes;
  for (const auto& p : cpu_passes()) passes += (passes.empty() ? "" : ", ") + p.name;
  cmd->add_option("--disable-pass", a.disabled, "cpu: skip a graph pass (repeatable): " + passes)
      ->check([](const std::string& v) -> std::string {
        for (const auto& p : cpu_passes())
          if (p.name == v) return {};
        return "unknown pass '" + v + "'";
      });
  add_disable_kernel_option(cmd, a.disabled_kernels);
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
  // allow_extra_args(false): CLI11 splits a vector option's "[a,b]" into two
  // values, which made the documented "[lo,hi]" form an error.
  cmd->add_option("--val-range", a.val_ranges,
                  "Range of an input's random values: NAME:[lo,hi], or [lo,hi] for every input (repeatable); floats are "
                  "drawn from [lo, hi), integers from lo to hi inclusive")
      ->allow_extra_args(false);
  cmd->add_option("--save-inputs", a.save_inputs, "Write the inputs the run used to this .npz file (numpy.load reads it; --inputs feeds it back)");
  cmd->add_flag("--no-cast-inputs", a.no_cast,
                "Refuse a float input of another float type than the model declares instead of converting it");
}

NamedValues make_cli_inputs(const Model& m, const InputArgs& args, const InputSpec& spec, std::vector<InputNote>* notes) {
  // An unknown --dim is a command-line mistake (exit 2), found before anything runs.
  if (std::string why = unknown_dim_error(m, spec.dims); !why.empty()) throw CLI::ValidationError("--dim", why);
  std::vector<InputNote> own;
  std::vector<InputNote>& n = notes ? *notes : own;
  NamedValues in = make_inputs(m, spec, &n);
  for (const auto& note : n) std::cerr << "onnxscope: " << note.text << "\n";
  if (!args.save_inputs.empty()) {
    write_npz(args.save_inputs, in);
    std::cerr << "onnxscope: wrote the inputs to " << args.save_inputs << "\n";
  }
  return in;
}

namespace {
double parse_number(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw CLI::ValidationError(option, "'" + text + "' is not a finite number");
}

// "[lo,hi]" -> range.
ValueRange parse_range(const std::string& text) {
  const auto comma = text.find(',');
  if (text.size() < 5 || text.front() != '[' || text.back() != ']' || comma == std::string::npos)
    throw CLI::ValidationError("--val-range", "expected [lo,hi] or NAME:[lo,hi], got '" + text + "'");
  ValueRange r{parse_number("--val-range", text.substr(1, comma - 1)),
               parse_number("--val-range", text.substr(comma + 1, text.size() - comma - 2))};
  if (r.lo > r.hi) throw CLI::ValidationError("--val-range", "lo is above hi in '" + text + "'");
  return r;
}

std::optional<DataType> dtype_named(const std::string& s) {
  if (s == "float32" || s == "fp32") return DataType::Float;
  if (s == "float64" || s == "fp64") return DataType::Double;
  if (s == "fp16") return DataType::Float16;
  if (s == "bf16") return DataType::BFloat16;
  return dtype_from_name(s);
}
}  // namespace

void add_tolerance_options(CLI::App* cmd, ToleranceArgs& t) {
  cmd->add_option("--rtol", t.rtol,
                  "Relative tolerance: VALUE for every tensor, TYPE:VALUE for an element type (float16:1e-2) or "
                  "TENSOR:VALUE for one tensor (repeatable; the most specific wins). Default 1e-4; float16 4e-3 and "
                  "bfloat16 3e-2 unless a plain VALUE is given");
  cmd->add_option("--atol", t.atol,
                  "Absolute tolerance, given like --rtol. Default 1e-5; float16 1e-3 and bfloat16 1e-2 unless a plain "
                  "VALUE is given");
  cmd->add_option("--ulp", t.ulp, "Compare float tensors by ULP distance instead of rtol/atol");
  cmd->add_option("--quant-steps", t.quant_steps,
                  "Quantized tensors (QuantizeLinear, QLinear* outputs; DequantizeLinear outputs with one scale) agree "
                  "within this many quantization steps; their differences are reported in steps either way")
      ->check(CLI::NonNegativeNumber);
}

DiffTolerance ToleranceArgs::make() const {
  DiffTolerance t = default_tolerance();
  struct Scoped {
    std::optional<double> rtol, atol;
  };
  std::map<DataType, Scoped> types;
  std::map<std::string, Scoped> tensors;
  bool global = false;
  auto take = [&](const std::vector<std::string>& values, const char* option, bool is_rtol) {
    for (const auto& v : values) {
      const auto colon = v.rfind(':');
      if (colon == std::string::npos) {
        (is_rtol ? t.rtol : t.atol) = parse_number(option, v);
        global = true;
        continue;
      }
      const std::string scope = v.substr(0, colon);
      const double x = parse_number(option, v.substr(colon + 1));
      if (scope.empty()) throw CLI::ValidationError(option, "expected VALUE, TYPE:VALUE or TENSOR:VALUE, got '" + v + "'");
      Scoped& s = dtype_named(scope) ? types[*dtype_named(scope)] : tensors[scope];
      (is_rtol ? s.rtol : s.atol) = x;
    }
  };
  take(rtol, "--rtol", true);
  take(atol, "--atol", false);
  for (const auto& v : rtol)
    if (v.find(':') == std::string::npos && parse_number("--rtol", v) < 0) throw CLI::ValidationError("--rtol", "must be >= 0");
  for (const auto& v : atol)
    if (v.find(':') == std::string::npos && parse_number("--atol", v) < 0) throw CLI::ValidationError("--atol", "must be >= 0");
  // A plain value means every type: the built-in float16/bfloat16 rules give way.
  if (global) t.by_dtype.clear();
  for (const auto& [type, s] : types) {
    const ToleranceRule base = t.by_dtype.count(type) ? t.by_dtype[type] : ToleranceRule{t.rtol, t.atol};
    t.by_dtype[type] = {s.rtol.value_or(base.rtol), s.atol.value_or(base.atol)};
  }
  for (const auto& [name, s] : tensors) t.by_tensor[name] = {s.rtol.value_or(t.rtol), s.atol.value_or(t.atol)};
  t.max_ulp = ulp;
  t.quant_steps = quant_steps;
  return t;
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
  s.cast_inputs = !no_cast;
  for (const auto& r : val_ranges) {
    const auto at = r.rfind(":[");
    if (at == std::string::npos) s.range_all = parse_range(r);
    else s.ranges[r.substr(0, at)] = parse_range(r.substr(at + 1));
  }
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
    // The dump's inputs are the run's inputs: one it lacks is an error, not random.
    s.dump_must_cover = inputs.empty() && archives.empty();
  }
  return s;
}

}  // namespace onnxscope::cli
