#include "onnxscope/reference.h"

#include "cpu/thread_pool.h"
#include "reference/interpreter.h"

namespace onnxscope {
namespace {

class ReferencePrepared final : public PreparedModel {
 public:
  ReferencePrepared(std::shared_ptr<const Model> m, std::shared_ptr<KernelRegistry> k, const RunLimits& limits)
      : kernels_(std::move(k)), interp_(std::move(m), *kernels_, limits) {
    interp_.plan_ahead();
    cpu::start_threads();
  }
  NamedValues run(const NamedValues& inputs, const RunOptions& options) override {
    return interp_.run(inputs, options);
  }
  RunStats last_run_stats() const override { return interp_.last_run_stats(); }

 private:
  std::shared_ptr<KernelRegistry> kernels_;
  ref::Interpreter interp_;
};

class ReferenceEngine final : public Engine {
 public:
  explicit ReferenceEngine(ReferenceOptions o) : options_(o), kernels_(std::make_shared<KernelRegistry>()) {
    if (options_.extra_kernels) kernels_->add_all(*options_.extra_kernels);
    kernels_->add_all(reference_kernels());
    if (!options_.max_tensor_bytes) options_.max_tensor_bytes = ref::default_max_tensor_bytes();
    if (options_.threads > 0) cpu::set_thread_count(options_.threads);
  }
  std::string_view name() const override { return "reference"; }
  std::vector<NodeSupport> supports(const Model& model) const override {
    // The interpreter only reads the model here; no run state is touched.
    std::shared_ptr<const Model> view(&model, [](const Model*) {});
    return ref::Interpreter(view, *kernels_, options_.max_tensor_bytes).supports();
  }
  std::unique_ptr<PreparedModel> prepare(std::shared_ptr<const Model> model) override {
    return std::make_unique<ReferencePrepared>(
        std::move(model), kernels_, RunLimits{options_.max_tensor_bytes, options_.max_live_bytes, options_.timeout_seconds});
  }

 private:
  ReferenceOptions options_;
  std::shared_ptr<KernelRegistry> kernels_;
};

}  // namespace

std::unique_ptr<Engine> make_reference_engine(ReferenceOptions options) {
  return std::make_unique<ReferenceEngine>(options);
}

}  // namespace onnxscope
