// The calls every runtime shares (cuda/runtime.h): allocations routed to the
// run's arena, small copies carried by kernels, and the rules of a capture.
#include "cuda/runtime.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/arena.h"

namespace onnxscope::cuda {

GemmArgs gemm_args_of(const GemmPointersArgs& g) {
  GemmArgs a;
  a.trans_a = g.trans_a;
  a.trans_b = g.trans_b;
  a.m = g.m;
  a.n = g.n;
  a.k = g.k;
  a.alpha = g.alpha;
  a.beta = g.beta;
  a.lda = g.lda;
  a.ldb = g.ldb;
  a.ldc = g.ldc;
  a.batch = g.batch;
  return a;
}

namespace {

[[noreturn]] void refuse(const std::string& library, const std::string& why) {
  throw std::runtime_error(library + " would refuse this call: " + why);
}

void fits_int(const char* library, const char* what, int64_t v) {
  if (v < 0 || v > INT_MAX) refuse(library, std::string(what) + " " + std::to_string(v) + " is outside [0, INT_MAX]");
}

// cublasGemmStridedBatchedEx's rules: sizes and batch in int and not
// negative; each leading dim at least the rows of the matrix as stored, and 1.
void check_gemm(const GemmArgs& g) {
  const char* lib = "cuBLAS";
  fits_int(lib, "m", g.m);
  fits_int(lib, "n", g.n);
  fits_int(lib, "k", g.k);
  fits_int(lib, "batch", g.batch);
  auto leading = [&](const char* name, int64_t ld, int64_t rows) {
    fits_int(lib, name, ld);
    if (ld < std::max<int64_t>(1, rows))
      refuse(lib, std::string(name) + " " + std::to_string(ld) + " is less than max(1, " + std::to_string(rows) + ")");
  };
  leading("lda", g.lda, g.trans_a ? g.k : g.m);
  leading("ldb", g.ldb, g.trans_b ? g.n : g.k);
  leading("ldc", g.ldc, g.m);
  if (g.epilogue.any() && (g.ldc != g.m || (g.batch > 1 && g.stride_c != g.m * g.n)))
    throw std::logic_error("a GEMM epilogue needs a packed C");
  if (g.epilogue.any() && (g.epilogue.inner < 1 || g.epilogue.channels < 1)) throw std::logic_error("bad epilogue geometry");
  if (g.epilogue.residual) throw std::logic_error("a residual is a convolution's epilogue only");
}

void check_gemm_pointers(const GemmPointersArgs& g) { check_gemm(gemm_args_of(g)); }

// cuDNN's descriptors: every dim at least 1 and in int, pads not negative,
// strides and dilations at least 1, each tensor under 2^31 elements; and
// the output size the forward geometry gives, floor((in + 2 pad - span) /
// stride) + 1 (for a transposed one, in and out trade places, so an output
// longer by less than the stride, output_padding, passes).
void check_conv(const ConvArgs& c) {
  const char* lib = "cuDNN";
  if (c.rank < 1 || c.rank > 3) refuse(lib, std::to_string(c.rank) + " spatial dims (it takes 1 to 3 here)");
  auto dim = [&](const char* what, int64_t v) {
    fits_int(lib, what, v);
    if (v < 1) refuse(lib, std::string(what) + " is 0");
  };
  dim("batch", c.n);
  dim("channels", c.c);
  dim("filters", c.k);
  dim("groups", c.groups);
  if (c.c % c.groups || c.k % c.groups)
    refuse(lib, std::to_string(c.c) + " channels and " + std::to_string(c.k) + " filters in " + std::to_string(c.groups) + " groups");
  // Each factor is below 2^31, and each product is checked before it grows.
  int64_t x = c.n * c.c, w = c.transposed ? c.c * (c.k / c.groups) : c.k * (c.c / c.groups), y = c.n * c.k;
  auto sizes = [&] {
    if (x > INT_MAX || w > INT_MAX || y > INT_MAX) refuse(lib, "a tensor of 2^31 elements or more");
  };
  sizes();
  for (int d = 0; d < c.rank; ++d) {
    dim("input size", c.in[d]);
    dim("kernel size", c.kernel[d]);
    dim("output size", c.out[d]);
    dim("stride", c.stride[d]);
    dim("dilation", c.dilation[d]);
    fits_int(lib, "pad", c.pad[d]);
    const int64_t big = c.transposed ? c.out[d] : c.in[d], small = c.transposed ? c.in[d] : c.out[d];
    const int64_t span = (c.kernel[d] - 1) * c.dilation[d] + 1;
    const int64_t room = big + 2 * c.pad[d] - span;
    if (room < 0 || room / c.stride[d] + 1 != small)
      refuse(lib, std::string(c.transposed ? "transposed " : "") + "convolution: spatial dim " + std::to_string(d) + " of " +
                      std::to_string(big) + " with pad " + std::to_string(c.pad[d]) + ", window " + std::to_string(span) +
                      " and stride " + std::to_string(c.stride[d]) + " gives " + std::to_string(room < 0 ? 0 : room / c.stride[d] + 1) +
                      ", not " + std::to_string(small));
    x *= c.in[d];
    w *= c.kernel[d];
    y *= c.out[d];
    sizes();
  }
}

// Copies up to this size go as StoreBytesKernel launches (a few KiB: the
// scalars and index lists operators upload), larger ones as device copies.
constexpr uint64_t kInlineCopyBytes = 4 * StoreBytesKernel::kBytes;
}  // namespace

DeviceMemory Runtime::allocate(uint64_t bytes) { return allocate_checked(bytes, false); }

DeviceMemory Runtime::allocate_lasting(uint64_t bytes) {
  if (capturing_) throw offload::CaptureUnsupported("a lasting allocation of " + std::to_string(bytes) + " bytes");
  return allocate_checked(bytes, true);
}

DeviceMemory Runtime::allocate_checked(uint64_t bytes, bool lasting) {
  if (bytes == 0) return nullptr;
  if (max_allocation_ && bytes > max_allocation_)
    throw std::runtime_error("a device tensor of " + std::to_string(bytes) + " bytes is more than the limit of " +
                             std::to_string(max_allocation_) + " bytes for one tensor (--max-tensor-bytes)");
  const uint64_t live = live_->load();
  if (max_live_ && bytes > max_live_ - std::min(max_live_, live))
    throw std::runtime_error("a device tensor of " + std::to_string(bytes) + " bytes with " + std::to_string(live) +
                             " bytes already alive is more than the limit of " + std::to_string(max_live_) +
                             " bytes alive at once (--max-live-bytes)");
  DeviceMemory m = lasting ? allocate_unplanned(bytes) : allocate_within_limits(bytes);
  *live_ += bytes;
  void* p = m.get();
  return DeviceMemory(p, [m = std::move(m), live = live_, bytes](void*) mutable {
    *live -= bytes;
    m.reset();
  });
}

DeviceMemory Runtime::allocate_within_limits(uint64_t bytes) {
  if (arena_) return arena_->allocate(bytes, capturing_);
  if (capturing_)
    throw offload::CaptureUnsupported("an allocation of " + std::to_string(bytes) + " bytes outside a memory plan");
  return allocate_unplanned(bytes);
}

DeviceMemory Runtime::allocate_unplanned(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = device_allocate(bytes);
  std::shared_ptr<Runtime> self = shared_from_this();
  return DeviceMemory(p, [self](void* q) { self->device_release(q); });
}

void Runtime::copy_in(void* device, const void* host, uint64_t bytes) {
  if (bytes == 0) return;
  if (!capturing_ && bytes > kInlineCopyBytes) {
    device_copy_in(device, host, bytes);
    return;
  }
  auto* to = static_cast<unsigned char*>(device);
  const auto* from = static_cast<const unsigned char*>(host);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(bytes - done, StoreBytesKernel::kBytes);
    StoreBytesKernel k{};
    std::memcpy(k.bytes, from + done, n);
    k.to = to + done;
    launch(*this, k, static_cast<int64_t>(n));
    done += n;
  }
}

void Runtime::copy_in_tensor(void* device, const Tensor& t) {
  const uint64_t bytes = t.byte_size();
  if (!capturing_ && bytes > kInlineCopyBytes && t.buffer()) prepare_host_source(t.buffer());
  copy_in(device, t.raw(), bytes);
}

void Runtime::copy_out(void* host, const void* device, uint64_t bytes) {
  if (capturing_)
    throw offload::CaptureUnsupported("a copy of " + std::to_string(bytes) + " bytes to the host in the middle of the run");
  if (bytes) device_copy_out(host, device, bytes);
}

void Runtime::synchronize() {
  if (capturing_) throw offload::CaptureUnsupported("a wait for the device in the middle of the run");
  device_synchronize();
}

EpilogueKernel epilogue_kernel(const Epilogue& e, float* y) {
  EpilogueKernel k;
  k.act = e.act;
  k.alpha = e.alpha;
  k.beta = e.beta;
  k.bias = e.bias;
  k.inner = e.inner;
  k.channels = e.channels;
  k.residual = e.residual;
  k.half_out = e.half_out;
  k.y = y;
  return k;
}

void run_epilogue(Runtime& rt, const Epilogue& e, float* y, int64_t count) { launch(rt, epilogue_kernel(e, y), count); }

void Runtime::gemm(const GemmArgs& g, MathMode mode) {
  check_gemm(g);
  if (g.epilogue.half_out && mode != MathMode::Fp16) throw std::logic_error("a half copy outside fp16 mode");
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (!device_gemm(g, mode) && g.epilogue.any()) run_epilogue(*this, g.epilogue, g.c, g.batch * g.m * g.n);
}

bool switched_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "0") == 0;
}

bool Runtime::half_copies_by_default() { return !switched_off("ONNXSCOPE_CUDA_HALF_COPIES"); }

void Runtime::gemm_pointers(const GemmPointersArgs& g, MathMode mode) {
  if ((mode == MathMode::Fp16) != g.half) throw std::logic_error("a pointer-array GEMM's operands are float16 in fp16 mode, and only there");
  check_gemm_pointers(g);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  device_gemm_pointers(g, mode);
}

void Runtime::conv(const ConvArgs& c, MathMode mode) {
  check_conv(c);
  if (c.transposed && c.epilogue.any()) throw std::logic_error("no epilogue on a transposed convolution");
  if (c.epilogue.any() && (c.epilogue.inner < 1 || c.epilogue.channels < 1)) throw std::logic_error("bad epilogue geometry");
  if (c.epilogue.half_out && mode != MathMode::Fp16) throw std::logic_error("a half copy outside fp16 mode");
  if (c.x_half && (mode != MathMode::Fp16 || c.transposed)) throw std::logic_error("a half input outside fp16 mode");
  if (device_conv(c, mode) || !c.epilogue.any()) return;
  int64_t ys = c.n * c.k;
  for (int d = 0; d < c.rank; ++d) ys *= c.out[d];
  run_epilogue(*this, c.epilogue, c.y, ys);
}

void Runtime::begin_capture() {
  if (capturing_) throw std::logic_error("a capture inside a capture");
  device_begin_capture();
  capturing_ = true;
}

std::unique_ptr<offload::CapturedWork> Runtime::end_capture() {
  if (!capturing_) throw std::logic_error("no capture to end");
  capturing_ = false;
  return device_end_capture();
}

void Runtime::abort_capture() {
  if (!capturing_) return;
  capturing_ = false;
  device_abort_capture();
}

}  // namespace onnxscope::cuda
