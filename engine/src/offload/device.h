// What an accelerator gives the offload engine (offload/offload_engine.h):
// which nodes it runs (as placement rules), memory of its own, copies both
// ways, and one call per node. The CUDA engine implements it with CUDA,
// cuBLAS and cuDNN; tests implement it over host memory, so the engine's
// planning, copies, fallback and observation run in CI without a GPU.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/partition.h"
#include "offload/steady_state.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

namespace onnxscope::offload {

// A tensor in the device's memory.
struct DeviceTensor {
  DataType dtype = DataType::Undefined;
  Shape shape;
  void* data = nullptr;            // device address (nullptr for zero elements)
  std::shared_ptr<void> storage;   // freed on the device when the last holder goes
  bool constant = false;           // uploaded when the model was prepared: the same bytes for the plan's life
  // A float32 tensor's values rounded to float16, written beside them by the
  // producer for readers that take half operands (the CUDA engine's fp16
  // mode: a convolution's epilogue writes it, the next GEMM or convolution
  // reads it instead of converting); nullptr: none. A view of the same
  // memory order keeps it.
  const void* half_copy = nullptr;
  std::shared_ptr<void> half_storage;
};

// node_output: the first output of the node whose kernel found the fault.
struct DeviceFault {
  std::string node_output;
  std::string message;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // "cuda:0 NVIDIA H100 80GB HBM3"
  // What the device runs; PlacementRules::reads_on_host names the inputs its
  // kernels read from host memory (shape arguments).
  virtual PlacementRules rules() const = 0;
  virtual DeviceTensor upload(const Tensor& t) = 0;
  virtual Tensor download(const DeviceTensor& t) = 0;
  // Runs node `n` (opset `opset` of its domain). inputs[k] is the device
  // tensor of input k, or nullptr when it is omitted or read on the host;
  // host_args[k] is the host tensor of an input read on the host, else
  // nullptr. Sets one DeviceTensor per node output (omitted ones may stay
  // empty). Throws std::exception with a message on failure.
  virtual void run(const Node& n, int64_t opset, std::span<const DeviceTensor* const> inputs,
                   std::span<const Tensor* const> host_args, std::vector<DeviceTensor>& outputs) = 0;
  // The implementation that runs `n`, for observers and --explain ("cublas", "cuda").
  virtual std::string kernel_name(const Node& n) const = 0;
  // Waits until everything queued has finished (before timing, before a download is used).
  virtual void synchronize() = 0;
  // A check the device's kernels made as they ran, found now (kernels do
  // not wait to report: an index out of range gives zeros and a fault). The
  // offload engine asks before it reads anything the device computed and at
  // the end of each run; the first fault since the last call, or nullopt.
  virtual std::optional<DeviceFault> take_fault() { return std::nullopt; }
  // The CPU engine's graph passes (cpu/pass_table.cpp names) whose output
  // operators this device runs, beyond the engine-neutral ones the offload
  // engine always applies (runs without capture only).
  virtual std::set<std::string> passes() const { return {}; }

  // --- Repeated runs (offload/steady_state.h). The offload engine keeps one
  // RunMemory per plan and input shapes (nullptr: the device plans nothing)
  // and brackets each run without observer with begin_run / end_run; ok is
  // false when the run failed.
  virtual std::unique_ptr<RunMemory> make_run_memory() { return nullptr; }
  virtual void begin_run(RunMemory&) {}
  virtual void end_run(RunMemory&, bool /*ok*/) {}
  // Capture: the device work queued between begin_capture and end_capture
  // is recorded, not done (the tensors' contents are undefined until
  // replay); replay() does it, on the same memory, as often as asked.
  virtual bool can_capture() const { return false; }
  // Device memory kept across runs besides the uploaded constants (RunStats).
  virtual uint64_t kept_bytes() const { return 0; }
  virtual void begin_capture() { throw CaptureUnsupported(name() + " cannot capture its work"); }
  virtual std::unique_ptr<CapturedWork> end_capture() { throw CaptureUnsupported(name() + " cannot capture its work"); }
  virtual void abort_capture() {}
  virtual void replay(const CapturedWork&) {}
  // Host bytes into existing device memory of the same dtype and shape (the
  // inputs of a captured run).
  virtual void write(const DeviceTensor& to, const Tensor& from) = 0;
};

}  // namespace onnxscope::offload
