// The operator table as an offload device: placement asks each node's
// entry, run() calls it with an OpContext, kernel_name() says which
// implementation ran. Also the cuda-sim engine: the same device over the
// host runtime, in every build.
#include "cuda/kernel_device.h"

#include <set>
#include <stdexcept>

#include "cuda/arena.h"
#include "cuda/ops/op_table.h"
#include "offload/offload_engine.h"
#include "onnxscope/cuda.h"
#include "onnxscope/diagnostics.h"
#include "reference/interpreter.h"

namespace onnxscope::cuda {

namespace {

// A run's captured work, and whether it holds a checking kernel (so a
// replay leaves a fault record to read).
struct Capture final : offload::CapturedWork {
  std::unique_ptr<offload::CapturedWork> work;
  bool checks = false;
};

class KernelDevice final : public offload::Device {
 public:
  KernelDevice(std::shared_ptr<Runtime> rt, MathMode mode, std::string name)
      : rt_(std::move(rt)), faults_(rt_), halves_(rt_), mode_(mode), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  PlacementRules rules() const override {
    PlacementRules r;
    r.refuse = [](const Graph& g, const Node& n, int64_t opset) -> std::optional<std::string> {
      const OpDef* d = find_op(n.domain, n.op_type);
      if (!d) return "no CUDA kernel for " + (n.domain.empty() || n.domain == "ai.onnx" ? "" : n.domain + "::") + n.op_type;
      if (d->refuse_in_opset) return d->refuse_in_opset(g, n, opset);
      return d->refuse(g, n);
    };
    r.reads_on_host = [](const Node& n, size_t i) {
      const OpDef* d = find_op(n.domain, n.op_type);
      return d && d->reads_on_host && d->reads_on_host(n, i);
    };
    return r;
  }

  offload::DeviceTensor upload(const Tensor& t) override {
    offload::DeviceTensor d;
    d.dtype = t.dtype();
    d.shape = t.shape();
    const uint64_t bytes = t.byte_size();
    if (bytes == 0) return d;
    d.storage = rt_->allocate(bytes);
    d.data = d.storage.get();
    rt_->copy_in_tensor(d.data, t);
    return d;
  }

  Tensor download(const offload::DeviceTensor& d) override {
    // Page-locked host memory where the runtime has it (the copy then runs
    // at the link's speed), else zeroed heap memory.
    const std::optional<uint64_t> bytes = storage_bytes(d.dtype, elements_of(d.shape));
    std::shared_ptr<Buffer> pinned = bytes && *bytes ? rt_->host_buffer(*bytes) : nullptr;
    Tensor t = pinned ? Tensor::from_buffer(d.dtype, d.shape, std::move(pinned)) : Tensor::zeros(d.dtype, d.shape);
    if (t.byte_size()) rt_->copy_out(t.mutable_raw(), d.data, t.byte_size());
    return t;
  }

  void run(const Node& n, int64_t opset, std::span<const offload::DeviceTensor* const> in,
           std::span<const Tensor* const> host_args, std::vector<offload::DeviceTensor>& out) override {
    const OpDef* d = find_op(n.domain, n.op_type);
    if (!d) throw std::runtime_error("no CUDA kernel for " + n.op_type);
    OpContext ctx(rt_, faults_, n, opset, mode_, in, host_args, out, &halves_);
    d->run(ctx);
  }

  std::string kernel_name(const Node& n) const override {
    const OpDef* d = find_op(n.domain, n.op_type);
    // The precision shows where it applies: "cublas-tf32", "cudnn-fp16".
    const std::string math = mode_ == MathMode::Fp32 ? "" : std::string("-") + math_mode_name(mode_);
    switch (d ? d->backend : OpBackend::Kernel) {
      case OpBackend::View: return "cuda-view";
      case OpBackend::Gemm: return rt_->gemm_name() + math;
      case OpBackend::Conv: return rt_->conv_name() + math;
      case OpBackend::Kernel: break;
    }
    return rt_->name() == "host" ? "host-kernel" : "cuda";
  }

  void synchronize() override { rt_->synchronize(); }
  std::optional<offload::DeviceFault> take_fault() override {
    auto f = faults_.take();
    if (!f) return std::nullopt;
    return offload::DeviceFault{f->node, describe_fault(*f)};
  }

  // Repeated runs: device memory planned by liveness (cuda/arena.h), and the
  // whole run captured (a CUDA graph on a GPU, a list of calls on the host).
  std::unique_ptr<offload::RunMemory> make_run_memory() override { return std::make_unique<Arena>(rt_); }
  void begin_run(offload::RunMemory& m) override {
    auto& arena = static_cast<Arena&>(m);
    arena.begin_run();
    rt_->set_arena(&arena);
  }
  void end_run(offload::RunMemory& m, bool ok) override {
    rt_->set_arena(nullptr);
    static_cast<Arena&>(m).end_run(ok);
  }
  bool can_capture() const override { return true; }
  uint64_t kept_bytes() const override { return halves_.bytes(); }
  void begin_capture() override { rt_->begin_capture(); }
  std::unique_ptr<offload::CapturedWork> end_capture() override {
    auto c = std::make_unique<Capture>();
    c->work = rt_->end_capture();
    c->checks = faults_.end_capture();
    return c;
  }
  void abort_capture() override {
    rt_->abort_capture();
    faults_.end_capture();
  }
  void replay(const offload::CapturedWork& work) override {
    const auto* c = dynamic_cast<const Capture*>(&work);
    if (!c || !c->work) throw std::logic_error("not a capture of this device");
    rt_->replay(*c->work);
    faults_.replayed(c->checks);
  }
  void write(const offload::DeviceTensor& to, const Tensor& from) override {
    if (from.dtype() != to.dtype || from.shape() != to.shape)
      throw std::runtime_error("a " + std::string(dtype_name(from.dtype())) + " " + shape_to_string(from.shape()) +
                               " tensor cannot be written over a " + std::string(dtype_name(to.dtype)) + " " +
                               shape_to_string(to.shape) + " one");
    rt_->copy_in_tensor(to.data, from);
  }

  // The CPU engine's passes whose results the table runs: BatchNormalization
  // and per-channel Mul/Add folded into Conv, activations into FusedConv /
  // FusedGemm / FusedMatMul epilogues, decomposed LayerNormalization and
  // GELU made whole, scaled dot-product attention made Attention (opset >=
  // 23) or FusedAttention (masked, guarded, or below 23), MatMul + Add made
  // Gemm, residual sums folded into the convolution or the layer
  // normalization after them, attention's transposes read in place, what
  // elementwise chains remain made one kernel each. (Not nchwc-layout: a
  // CPU layout.)
  std::set<std::string> passes() const override {
    return {"fold-conv-batchnorm", "fold-conv-mul-add", "fuse-layernorm", "fuse-gelu", "fuse-sdpa", "fuse-masked-sdpa",
            "matmul-add-to-gemm", "fuse-conv-activation", "fuse-gemm-activation", "fuse-matmul-bias-activation",
            "fuse-conv-residual", "fuse-add-layernorm", "fuse-attention-transposes", "fuse-elementwise"};
  }

 private:
  std::shared_ptr<Runtime> rt_;
  FaultLog faults_;
  HalfCache halves_;  // fp16 copies of the weights, for the device's life
  MathMode mode_;
  std::string name_;
};

}  // namespace

std::shared_ptr<offload::Device> make_kernel_device(std::shared_ptr<Runtime> rt, MathMode mode, std::string name) {
  return std::make_shared<KernelDevice>(std::move(rt), mode, std::move(name));
}

MathMode math_mode(const std::string& precision) {
  if (precision == "fp32") return MathMode::Fp32;
  if (precision == "tf32") return MathMode::Tf32;
  if (precision == "fp16") return MathMode::Fp16;
  throw Error(Diagnostic{Severity::Error, "bad-option", {}, "unknown CUDA precision '" + precision + "' (fp32, tf32 or fp16)", {}});
}

}  // namespace onnxscope::cuda

namespace onnxscope {

std::unique_ptr<Engine> make_cuda_sim_engine(const CudaOptions& options) {
  const cuda::MathMode mode = cuda::math_mode(options.precision);
  if (options.sim_lanes < 1 || options.sim_lanes > 64)
    throw Error(Diagnostic{Severity::Error, "bad-option", {},
                           "cuda-sim's lanes per row must be 1 to 64, not " + std::to_string(options.sim_lanes), {}});
  std::string what = "cuda-sim (the CUDA engine's kernels on the host";
  if (options.sim_lanes > 1) what += ", rows split across " + std::to_string(options.sim_lanes) + " lanes";
  // The "device" is host memory: the CPU engine's limits and defaults.
  auto rt = cuda::make_host_runtime(options.sim_lanes);
  rt->set_limits(options.host.max_tensor_bytes ? options.host.max_tensor_bytes : ref::default_max_tensor_bytes(),
                 options.host.max_live_bytes ? options.host.max_live_bytes : ref::default_max_live_bytes());
  auto device = cuda::make_kernel_device(std::move(rt), mode, what + ")");
  offload::OffloadOptions o;
  o.host = options.host;
  return offload::make_offload_engine("cuda-sim", std::move(device), std::move(o));
}

}  // namespace onnxscope
