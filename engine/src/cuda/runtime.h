// What the CUDA engine's operators (cuda/ops/) need from below: device
// memory, copies, kernel launches, a strided-batched GEMM with cuBLAS's
// meaning, and a convolution with cuDNN's. Two implementations: the GPU
// (cuda_runtime.cpp: CUDA, cuBLAS, cuDNN) and the host (host_runtime.cpp:
// plain loops over host memory), so everything above the runtime, the
// operators included, runs in CI without a GPU (engine "cuda-sim").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/kernels/kernel_list.h"
#include "offload/steady_state.h"
#include "onnxscope/buffer.h"
#include "onnxscope/tensor.h"

namespace onnxscope::cuda {

// How GEMM and convolution compute (every other kernel computes in float32):
// Fp32: float32 throughout (no tensor cores); Tf32: tensor cores may round
// the float32 inputs to TF32 (10 mantissa bits); Fp16: inputs rounded to
// float16, products accumulated in float32, the result rounded to float16
// (what torch.autocast does to these operators).
enum class MathMode { Fp32, Tf32, Fp16 };
const char* math_mode_name(MathMode m);  // "fp32", "tf32", "fp16"

// What a fused operator applies in place to a GEMM's or convolution's
// result: y[i] = act(y[i] + bias[(i / inner) % channels] + residual[i]) over
// the result's elements in memory order (no bias, no residual: nullptr; the
// residual is a convolution's only, fuse-conv-residual). The runtime runs it as one
// kernel after the call (EpilogueKernel), or inside the library's call where
// the library computes the same thing (cuDNN's convolution with bias and
// ReLU, cuBLASLt's bias epilogue); library_epilogues() counts those.
struct Epilogue {
  const float* bias = nullptr;
  int64_t inner = 1, channels = 1;
  const float* residual = nullptr;
  UnaryOp act = UnaryOp::Identity;
  float alpha = 0.f, beta = 0.f;
  // fp16 mode: the result also written here rounded to float16 (the output's
  // half copy, offload::DeviceTensor::half_copy), or nullptr.
  uint16_t* half_out = nullptr;
  bool any() const { return bias != nullptr || residual != nullptr || act != UnaryOp::Identity || half_out != nullptr; }
};

// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b < batch, all
// column-major float32 as cuBLAS reads them (m x n result, inner size k).
// Element extents (for a runtime that converts the operands first):
// A spans (batch - 1) * stride_a + (cols - 1) * lda + rows elements, where
// op(A) is m x k stored as rows x cols (k x m when trans_a); B likewise.
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f, beta = 0.f;
  const float* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const float* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  // Fp16: A or B already in float16 (a constant converted once, cuda/
  // half_cache.h), same layout; read instead of converting A or B.
  const void* a_half = nullptr;
  const void* b_half = nullptr;
  float* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  // Applied to C after the product; C must then be packed (ldc == m, and
  // stride_c == m * n when batch > 1), its batch * m * n elements in order.
  Epilogue epilogue;
};

// C[i] = alpha * op(A[i]) * op(B[i]) + beta * C[i] for i < batch, as GemmArgs
// but each matrix at its own address: a, b, c are device arrays of `batch`
// pointers (PointerTableKernel makes them). For matrices no single batch
// stride reaches: attention's heads read in place from [B, S, H, D]. In
// float32 and TF32 A and B are float32; in fp16 (`half`) they are float16
// (half copies), accumulated in float32 into float32 C, which the caller
// then rounds to float16 (the host's is rounded already; rounding twice
// changes nothing).
struct GemmPointersArgs {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f, beta = 0.f;
  const float* const* a = nullptr;
  int64_t lda = 0;
  const float* const* b = nullptr;
  int64_t ldb = 0;
  float* const* c = nullptr;
  int64_t ldc = 0;
  int64_t batch = 1;
  bool half = false;  // a and b point at float16: fp16 mode, and only there
};

// g's sizes, leading dims, scales and batch as a GemmArgs with no operands:
// what cuBLAS's rules check, and each matrix's GEMM on the host.
GemmArgs gemm_args_of(const GemmPointersArgs& g);

// y = conv(x, w) with cuDNN's meaning, float32 NCHW: x [n, c, *in],
// w [k, c / groups, *kernel], y [n, k, *out], 1 to 3 spatial dims,
// symmetric zero padding (asymmetric pads are applied before, by a copy).
// transposed: y = conv_transpose(x, w), cuDNN's backward data with x as the
// gradient: w [c, k / groups, *kernel], y[o] gathers x[i] * w[kk] where
// o = i * stride + kk * dilation - pad, for o in [0, out); out may exceed
// the forward geometry's by less than the stride (output_padding).
struct ConvArgs {
  bool transposed = false;
  int rank = 2;
  int64_t n = 0, c = 0, k = 0, groups = 1;
  int64_t in[3] = {}, kernel[3] = {}, out[3] = {};
  int64_t pad[3] = {}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  const float* x = nullptr;
  const float* w = nullptr;
  float* y = nullptr;
  const void* w_half = nullptr;  // Fp16: w already in float16 (cuda/half_cache.h)
  const void* x_half = nullptr;  // Fp16: x already in float16 (its producer's half copy)
  Epilogue epilogue;             // applied to y (not for a transposed convolution)
};

// Device memory, freed (in the device's stream order) when the last holder goes.
using DeviceMemory = std::shared_ptr<void>;

class Arena;  // cuda/arena.h

// The memory, copy and capture calls are the base class's: they route an
// allocation to the run's arena (cuda/arena.h) and keep a capture honest;
// each runtime supplies the device_* primitives under them.
class Runtime : public std::enable_shared_from_this<Runtime> {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;

  // New device memory (empty for 0 bytes), not initialised: from the arena of
  // the run in progress when it has a place for it, else from the device.
  // Throws std::runtime_error when the memory is not there, and
  // offload::CaptureUnsupported inside a capture when the arena has no place.
  DeviceMemory allocate(uint64_t bytes);
  // Memory that outlives the run (within the limits, never from the arena):
  // what a device keeps across runs. Not inside a capture.
  DeviceMemory allocate_lasting(uint64_t bytes);
  // From the device, past any arena (prepare-time uploads, arena regions).
  DeviceMemory allocate_unplanned(uint64_t bytes);
  // The host buffer may be reused as soon as copy_in returns. Small copies,
  // and every copy inside a capture, go as kernels carrying the bytes: no
  // wait, and a capture keeps them.
  void copy_in(void* device, const void* host, uint64_t bytes);
  // copy_in of a tensor's bytes (a graph input), the runtime free to keep
  // its host memory page-locked for this and later copies (the GPU: a
  // registration kept while the caller still holds the tensor's storage).
  void copy_in_tensor(void* device, const Tensor& t);
  // Waits for everything queued before it. Not inside a capture.
  void copy_out(void* host, const void* device, uint64_t bytes);
  // Host memory for a tensor about to be copied from the device (zeroed or
  // not: the copy fills it): the GPU's comes page-locked from a pool, so the
  // copy runs at the link's speed; nullptr: the caller's own allocation.
  virtual std::shared_ptr<Buffer> host_buffer(uint64_t bytes) {
    (void)bytes;
    return nullptr;
  }
  // Not inside a capture.
  void synchronize();
  virtual void copy(void* to, const void* from, uint64_t bytes) = 0;
  virtual void zero(void* p, uint64_t bytes) = 0;
  // Kernel `kernel` of kernels/kernel_list.h over n items; use launch() below.
  virtual void launch_kernel(int kernel, const void* args, int64_t n) = 0;
  // Both check their arguments first as cuBLAS and cuDNN do (sizes and
  // leading dims, int ranges, the convolution's geometry) and throw
  // std::runtime_error for what the GPU would refuse, so cuda-sim refuses
  // it too. A GEMM with m, n or batch 0 does nothing.
  void gemm(const GemmArgs& g, MathMode mode);
  void gemm_pointers(const GemmPointersArgs& g, MathMode mode);  // half operands in Fp16 only (else std::logic_error)
  void conv(const ConvArgs& c, MathMode mode);
  // Epilogues done inside a library call (not as a kernel after it) since
  // the runtime was made.
  uint64_t library_epilogues() const { return library_epilogues_; }
  // fp16 mode's half copies of activations (offload::DeviceTensor::
  // half_copy): whether producers write them (default: yes, unless
  // ONNXSCOPE_CUDA_HALF_COPIES=0), and how many operator inputs have been
  // read from one instead of converted (OpContext::half_input counts them).
  bool half_copies() const { return half_copies_; }
  void set_half_copies(bool on) { half_copies_ = on; }
  uint64_t half_inputs_read() const { return half_inputs_read_; }
  void count_half_input() { ++half_inputs_read_; }
  // "cublas" / "cudnn" on the GPU, "host-gemm" / "host-conv" on the host.
  virtual std::string gemm_name() const = 0;
  virtual std::string conv_name() const = 0;

  // What allocate() may give: one allocation (0: no limit), and all of
  // them alive at once (0: no limit). A request past either throws
  // std::runtime_error naming the limit (a hostile shape fails before any
  // memory is touched; on cuda-sim the "device" is the host's memory).
  void set_limits(uint64_t max_allocation, uint64_t max_live) {
    max_allocation_ = max_allocation;
    max_live_ = max_live;
  }

  // The arena allocations come from while a run is in progress (nullptr: none).
  void set_arena(Arena* arena) { arena_ = arena; }
  // Capture (offload/steady_state.h): the work queued between begin_capture
  // and end_capture is recorded, not done; replay() does it.
  void begin_capture();
  std::unique_ptr<offload::CapturedWork> end_capture();
  void abort_capture();
  virtual void replay(const offload::CapturedWork& work) = 0;
  bool capturing() const { return capturing_; }

 protected:
  virtual void* device_allocate(uint64_t bytes) = 0;
  virtual void device_release(void* p) = 0;
  virtual void device_copy_in(void* device, const void* host, uint64_t bytes) = 0;
  // Before a large copy_in_tensor: the runtime may page-lock the storage.
  virtual void prepare_host_source(const std::shared_ptr<Buffer>& storage) { (void)storage; }
  virtual void device_copy_out(void* host, const void* device, uint64_t bytes) = 0;
  virtual void device_synchronize() = 0;
  // Checked (gemm: m, n, batch > 0). Each returns true when it applied the
  // epilogue itself; the base class runs EpilogueKernel otherwise.
  virtual bool device_gemm(const GemmArgs& g, MathMode mode) = 0;
  virtual bool device_conv(const ConvArgs& c, MathMode mode) = 0;
  virtual void device_gemm_pointers(const GemmPointersArgs& g, MathMode mode) = 0;  // checked, m, n, batch > 0
  void note_library_epilogue() { ++library_epilogues_; }
  virtual void device_begin_capture() = 0;
  virtual std::unique_ptr<offload::CapturedWork> device_end_capture() = 0;
  virtual void device_abort_capture() = 0;

 private:
  DeviceMemory allocate_checked(uint64_t bytes, bool lasting);
  DeviceMemory allocate_within_limits(uint64_t bytes);
  Arena* arena_ = nullptr;
  bool capturing_ = false;
  uint64_t max_allocation_ = 0, max_live_ = 0;
  uint64_t library_epilogues_ = 0;
  bool half_copies_ = half_copies_by_default();
  uint64_t half_inputs_read_ = 0;
  static bool half_copies_by_default();
  // Bytes allocate() has given that are still held; shared with each
  // allocation's release, which may come after the runtime is gone.
  std::shared_ptr<std::atomic<uint64_t>> live_ = std::make_shared<std::atomic<uint64_t>>(0);
};

// True when the environment sets `name` to "0": the off switch of one of
// the GPU's fast paths (ONNXSCOPE_CUDA_LIBRARY_EPILOGUES, _PINNED,
// _HALF_COPIES; docs/cuda-engine.md), to time the difference or rule it out.
bool switched_off(const char* name);

// The epilogue as its kernel over y (source 0), and that kernel launched
// over `count` elements.
EpilogueKernel epilogue_kernel(const Epilogue& e, float* y);
void run_epilogue(Runtime& rt, const Epilogue& e, float* y, int64_t count);

template <class F>
void launch(Runtime& rt, const F& f, int64_t n) {
  static_assert(kernel_id<F> >= 0, "the kernel is not in kernels/kernel_list.h");
  static_assert(std::is_trivially_copyable_v<F>, "a kernel is passed by value to the GPU");
  if (n > 0) rt.launch_kernel(kernel_id<F>, &f, n);
}

// The host runtime (host_runtime.cpp); fills new memory with a NaN pattern
// so that a kernel reading what nothing wrote shows in the results, and
// captures by recording its calls. Row kernels run with `row_lanes` lanes
// (32: a GPU warp, simulated on host threads).
std::shared_ptr<Runtime> make_host_runtime(int row_lanes = 1);

}  // namespace onnxscope::cuda
