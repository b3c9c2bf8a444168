#include <mutex>

#include "cpu/arena.h"
#include "cpu/kernels/kernels.h"
#include "cpu/low_precision.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "reference/interpreter.h"

namespace onnxscope {
namespace {

// One executable form of the model: the rewritten graph and its interpreter.
struct Plan {
  std::shared_ptr<Model> model;
  std::unique_ptr<ref::Interpreter> interp;
  cpu::OptimizeResult passes;
};

class CpuPrepared final : public PreparedModel {
 public:
  CpuPrepared(std::shared_ptr<const Model> original, const CpuOptions& options, std::shared_ptr<KernelRegistry> kernels)
      : original_(std::move(original)), options_(options), kernels_(std::move(kernels)) {
    fast_ = build(false);
  }

  NamedValues run(const NamedValues& inputs, const RunOptions& options) override {
    cpu::ReleaseRepackedWeights release(options_.release_repacked_weights);
    // An observer must see every original node: run the plan that keeps them
    // (no fusion, no folding) instead of materialising fused intermediates.
    if (options.observer && options.capture_original) {
      std::call_once(capture_once_, [&] { capture_ = build(true); });
      last_ = capture_.interp.get();
      return capture_.interp->run(inputs, options);
    }
    last_ = fast_.interp.get();
    arena_used_ = false;
    // Values an observer reads must keep their bytes: no arena for those runs.
    if (options.observer && options.observer->reads_values()) return fast_.interp->run(inputs, options);
    const uint64_t before = arena_.planned_runs();
    NamedValues out;
    {
      cpu::ArenaRun arena_run(arena_);
      out = fast_.interp->run(inputs, options);
    }
    arena_used_ = arena_.planned_runs() > before;
    return out;
  }
  RunStats last_run_stats() const override {
    RunStats s = last_ ? last_->last_run_stats() : RunStats{};
    s.arena_bytes = arena_used_ ? arena_.arena_bytes() : 0;
    return s;
  }

  const Plan& fast_plan() const { return fast_; }

 private:
  Plan build(bool capture) {
    Plan p;
    p.model = std::make_shared<Model>(*original_);
    Diagnostics log;
    p.passes = cpu::optimize(*p.model, options_, capture, log);
    p.interp = std::make_unique<ref::Interpreter>(
        p.model, *kernels_, RunLimits{options_.max_tensor_bytes, options_.max_live_bytes, options_.timeout_seconds});
    // The engine's own operators (fused_ops.h, nchwc.h) all give outputs
    // shaped by their inputs' shapes and attributes.
    if (!capture && options_.opt_level > 0)
      p.interp->cache_shape_values([](const Node& n) { return n.domain == cpu::kCpuDomain; });
    return p;
  }

  std::shared_ptr<const Model> original_;
  CpuOptions options_;
  std::shared_ptr<KernelRegistry> kernels_;
  Plan fast_;
  Plan capture_;
  std::once_flag capture_once_;
  const ref::Interpreter* last_ = nullptr;  // the plan that ran last
  cpu::ActivationArena arena_;               // node outputs of the fast plan's runs
  bool arena_used_ = false;                  // the last run was served from the arena
};

class CpuEngine final : public Engine {
 public:
  explicit CpuEngine(CpuOptions o) : options_(std::move(o)), kernels_(std::make_shared<KernelRegistry>()) {
    if (!options_.max_tensor_bytes) options_.max_tensor_bytes = ref::default_max_tensor_bytes();
    cpu::apply_cpu_isa_cap();
    cpu::set_thread_count(options_.threads);
    // oneDNN's dispatch order: plugins, then the optimized kernels, the reference last.
    if (options_.extra_kernels) kernels_->add_all(*options_.extra_kernels);
    for (const KernelDef& k : cpu_kernels().all())
      if (!options_.disabled_kernels.count(k.impl)) kernels_->add(k);
    if (!options_.disabled_kernels.count("cpu-float32")) cpu::register_float32_kernels(*kernels_, cpu_kernels(), kernels_.get());
    kernels_->add_all(reference_kernels());
  }
  std::string_view name() const override { return "cpu"; }
  std::vector<NodeSupport> supports(const Model& model) const override {
    std::shared_ptr<const Model> view(&model, [](const Model*) {});
    return ref::Interpreter(view, *kernels_, options_.max_tensor_bytes).supports();
  }
  std::unique_ptr<PreparedModel> prepare(std::shared_ptr<const Model> model) override {
    auto prepared = std::make_unique<CpuPrepared>(std::move(model), options_, kernels_);
    cpu::start_threads();
    return prepared;
  }

 private:
  CpuOptions options_;
  std::shared_ptr<KernelRegistry> kernels_;
};

}  // namespace

std::vector<PassInfo> cpu_passes() {
  std::vector<PassInfo> out;
  for (const auto& p : cpu::pass_table()) out.push_back(p.info);
  return out;
}

std::unique_ptr<Engine> make_cpu_engine(CpuOptions options) { return std::make_unique<CpuEngine>(std::move(options)); }

OptimizedModel optimize_for_cpu(const Model& model, const CpuOptions& options) {
  OptimizedModel out;
  out.model = std::make_shared<Model>(model);
  Diagnostics log;
  cpu::optimize(*out.model, options, false, log, &out.rewrites);
  return out;
}

}  // namespace onnxscope
