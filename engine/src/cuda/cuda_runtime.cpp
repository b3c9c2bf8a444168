// The CUDA engine's runtime on a GPU (cuda/runtime.h): stream-ordered
// memory and copies on one stream, kernels from kernels/launch.cu, GEMM on
// cuBLAS, convolution on cuDNN. cuBLAS and cuDNN are opened at run time
// (dlopen): linked in, their libraries would cost every onnxscope process
// hundreds of MiB of resident memory at start, GPU or not.
#include "cuda/cuda_runtime.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "cuda/kernels/launch.h"

namespace onnxscope::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void* open_library(const char* name) {
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw std::runtime_error(std::string("cannot open ") + name + ": " + dlerror());
  return lib;
}

template <class F>
F symbol(void* lib, const char* library, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) throw std::runtime_error(std::string(library) + " has no " + name);
  return reinterpret_cast<F>(p);
}

struct Blas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  // Named by its type: cuBLAS 13's header overloads it for 64-bit sizes.
  using Gemm = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                  const void*, cudaDataType, int, long long, const void*, cudaDataType, int, long long,
                                  const void*, void*, cudaDataType, int, long long, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);
  Gemm gemm;
  using GemmBatched = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                         const void* const[], cudaDataType, int, const void* const[], cudaDataType, int,
                                         const void*, void* const[], cudaDataType, int, int, cublasComputeType_t,
                                         cublasGemmAlgo_t);
  GemmBatched gemm_batched;
};

const Blas& blas() {
  static const Blas b = [] {
    void* lib = open_library("libcublas.so.13");
    const char* n = "cuBLAS";
    return Blas{symbol<decltype(&cublasCreate_v2)>(lib, n, "cublasCreate_v2"),
                symbol<decltype(&cublasDestroy_v2)>(lib, n, "cublasDestroy_v2"),
                symbol<decltype(&cublasSetStream_v2)>(lib, n, "cublasSetStream_v2"),
                symbol<decltype(&cublasSetWorkspace_v2)>(lib, n, "cublasSetWorkspace_v2"),
                symbol<Blas::Gemm>(lib, n, "cublasGemmStridedBatchedEx"),
                symbol<Blas::GemmBatched>(lib, n, "cublasGemmBatchedEx")};
  }();
  return b;
}

// cuBLASLt: a GEMM with its bias added in the kernel's own epilogue.
#define ONNXSCOPE_CUBLASLT_FUNCTIONS(X)                                                                             \
  X(Create) X(Destroy) X(MatmulDescCreate) X(MatmulDescDestroy) X(MatmulDescSetAttribute) X(MatrixLayoutCreate)     \
  X(MatrixLayoutDestroy) X(MatrixLayoutSetAttribute) X(MatmulPreferenceCreate) X(MatmulPreferenceDestroy)            \
  X(MatmulPreferenceSetAttribute) X(MatmulAlgoGetHeuristic) X(Matmul)

struct BlasLt {
#define X(f) decltype(&cublasLt##f) f;
  ONNXSCOPE_CUBLASLT_FUNCTIONS(X)
#undef X
};

const BlasLt& blas_lt() {
  static const BlasLt t = [] {
    void* lib = open_library("libcublasLt.so.13");
    BlasLt r{};
#define X(f) r.f = symbol<decltype(&cublasLt##f)>(lib, "cuBLASLt", "cublasLt" #f);
    ONNXSCOPE_CUBLASLT_FUNCTIONS(X)
#undef X
    return r;
  }();
  return t;
}

#define ONNXSCOPE_CUDNN_FUNCTIONS(X) \
  X(Create) X(Destroy) X(SetStream) X(GetErrorString) X(CreateTensorDescriptor) X(DestroyTensorDescriptor) \
  X(SetTensorNdDescriptor) X(CreateFilterDescriptor) X(DestroyFilterDescriptor) X(SetFilterNdDescriptor) \
  X(CreateConvolutionDescriptor) X(DestroyConvolutionDescriptor) X(SetConvolutionNdDescriptor) X(SetConvolutionGroupCount) \
  X(SetConvolutionMathType) X(FindConvolutionForwardAlgorithm) X(ConvolutionForward) \
  X(FindConvolutionBackwardDataAlgorithm) X(ConvolutionBackwardData) X(ConvolutionBiasActivationForward) \
  X(CreateActivationDescriptor) X(DestroyActivationDescriptor) X(SetActivationDescriptor)

struct Dnn {
#define X(f) decltype(&cudnn##f) f;
  ONNXSCOPE_CUDNN_FUNCTIONS(X)
#undef X
};

const Dnn& dnn() {
  static const Dnn d = [] {
    void* lib = open_library("libcudnn.so.9");
    Dnn r{};
#define X(f) r.f = symbol<decltype(&cudnn##f)>(lib, "cuDNN", "cudnn" #f);
    ONNXSCOPE_CUDNN_FUNCTIONS(X)
#undef X
    return r;
  }();
  return d;
}

void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(e)));
}

void check(cudnnStatus_t e, const char* what) {
  if (e != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + dnn().GetErrorString(e));
}

// A size in cuBLAS's and cuDNN's int: Runtime::gemm and Runtime::conv
// (runtime.cpp) have checked that each one fits.
int as_int(int64_t v) { return static_cast<int>(v); }

// One convolution problem, as cuDNN sees it (rank 1 is made rank 2 with a
// height of 1): x, w, y in the forward direction's terms, so a transposed
// convolution's x is its output and its y its input.
struct ConvKey {
  bool transposed;
  std::vector<int> x, w, y, pad, stride, dilation;
  int groups;
  MathMode mode;
  auto tie() const { return std::tie(transposed, x, w, y, pad, stride, dilation, groups, mode); }
  bool operator<(const ConvKey& o) const { return tie() < o.tie(); }
};

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};           // forward
  cudnnConvolutionBwdDataAlgo_t bwd_algo{};   // transposed: backward data
  size_t workspace = 0;
  // The fused call (cudnnConvolutionBiasActivationForward), made at its
  // first use: the bias as [1, k, 1, ...], ReLU and identity; `fused`
  // 0 untried, 1 works, -1 cuDNN refused it (the epilogue kernel runs).
  cudnnTensorDescriptor_t bias = nullptr;
  cudnnActivationDescriptor_t relu = nullptr, identity = nullptr;
  int fused[4] = {0, 0, 0, 0};  // ReLU, identity; then each with a residual
  ~ConvPlan() {
    if (x) dnn().DestroyTensorDescriptor(x);
    if (y) dnn().DestroyTensorDescriptor(y);
    if (w) dnn().DestroyFilterDescriptor(w);
    if (conv) dnn().DestroyConvolutionDescriptor(conv);
    if (bias) dnn().DestroyTensorDescriptor(bias);
    if (relu) dnn().DestroyActivationDescriptor(relu);
    if (identity) dnn().DestroyActivationDescriptor(identity);
  }
};

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// Device memory for one call, released (stream-ordered) when it goes; from
// the run's arena like every other allocation, so a captured run keeps it.
class Scratch {
 public:
  explicit Scratch(Runtime& rt) : rt_(rt) {}
  void* get(uint64_t bytes) {
    if (!m_ && bytes) m_ = rt_.allocate(bytes);
    return m_.get();
  }
  // `count` floats converted to float16 here.
  void* half_of(const float* x, int64_t count) {
    void* h = get(static_cast<uint64_t>(count) * 2);
    const CastKernel k{ElemType::Float, ElemType::Float16, x, h};
    launch(rt_, k, count);
    return h;
  }

 private:
  Runtime& rt_;
  DeviceMemory m_;
};

// One cuBLASLt problem with a bias epilogue: the descriptors and the
// algorithm its heuristic chose (ok false: it offered none; the GEMM then
// goes the plain way and the epilogue runs as a kernel).
struct LtKey {
  bool trans_a, trans_b;
  int64_t m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch;
  MathMode mode;
  int align_a, align_b, align_c, align_bias;
  auto tie() const {
    return std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch, mode, align_a, align_b,
                    align_c, align_bias);
  }
  bool operator<(const LtKey& o) const { return tie() < o.tie(); }
};

struct LtPlan {
  bool ok = false;
  bool used = false;  // has run once
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  ~LtPlan() {
    if (desc) blas_lt().MatmulDescDestroy(desc);
    if (a) blas_lt().MatrixLayoutDestroy(a);
    if (b) blas_lt().MatrixLayoutDestroy(b);
    if (c) blas_lt().MatrixLayoutDestroy(c);
  }
};

// The largest power of two up to 256 that divides the address: what the
// heuristic may assume of the operands' alignment.
int alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int al = 1;
  while (al < 256 && a % static_cast<uintptr_t>(al * 2) == 0) al *= 2;
  return al;
}

// ONNXSCOPE_CUDA_LIBRARY_EPILOGUES=0 leaves every epilogue to the kernel
// (to time the difference, or to rule the fused calls out).
bool library_epilogues_allowed() {
  static const bool allowed = !switched_off("ONNXSCOPE_CUDA_LIBRARY_EPILOGUES");
  return allowed;
}

// ONNXSCOPE_CUDA_PINNED=0: host memory is never page-locked (downloads into
// heap memory, inputs copied from where they are), to time the difference.
bool pinned_transfers_allowed() {
  static const bool allowed = !switched_off("ONNXSCOPE_CUDA_PINNED");
  return allowed;
}

// ONNXSCOPE_CUDA_FIND_ROUNDS=N (1 to 9; default 3): how many times cuDNN's
// Find times a convolution's candidates (find_steadily); 1 is cuDNN's own
// single timing, to time the difference.
int find_rounds() {
  static const int rounds = [] {
    const char* v = std::getenv("ONNXSCOPE_CUDA_FIND_ROUNDS");
    return v && v[0] >= '1' && v[0] <= '9' && v[1] == '\0' ? v[0] - '0' : 3;
  }();
  return rounds;
}

// Transfers below this go as they are: page-locking pays off on large ones.
constexpr uint64_t kPinnedFrom = uint64_t{1} << 20;

// Page-locked host memory for downloads, kept for reuse by size: a
// benchmark's or a service's outputs come back at the link's full speed
// instead of through the driver's staging copies (cudaMallocHost is slow
// itself, so blocks are kept for the next run). At most kMaxBytes held:
// a size not seen before makes room by freeing kept blocks, largest first
// (a debugging run's many activations do not pin memory for good); what
// cannot fit goes to heap memory.
class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  static constexpr uint64_t kMaxBytes = uint64_t{512} << 20;
  ~PinnedPool() {
    for (auto& [bytes, p] : free_) cudaFreeHost(p);
  }
  std::shared_ptr<Buffer> get(uint64_t bytes);
  void give_back(void* p, uint64_t bytes) { free_.emplace(bytes, p); }

 private:
  std::multimap<uint64_t, void*> free_;
  uint64_t held_ = 0;  // every block made, free or out
};

class PinnedBuffer final : public Buffer {
 public:
  PinnedBuffer(void* p, uint64_t bytes, std::weak_ptr<PinnedPool> pool) : p_(p), bytes_(bytes), pool_(std::move(pool)) {}
  ~PinnedBuffer() override {
    if (auto pool = pool_.lock()) pool->give_back(p_, bytes_);
    else cudaFreeHost(p_);  // the runtime went first
  }
  const std::byte* data() const override { return static_cast<const std::byte*>(p_); }
  std::size_t size() const override { return bytes_; }
  std::byte* mutable_data() override { return static_cast<std::byte*>(p_); }
  bool owns_bytes() const override { return true; }

 private:
  void* p_;
  uint64_t bytes_;
  std::weak_ptr<PinnedPool> pool_;
};

std::shared_ptr<Buffer> PinnedPool::get(uint64_t bytes) {
  void* p = nullptr;
  if (auto it = free_.find(bytes); it != free_.end()) {
    p = it->second;
    free_.erase(it);
  } else {
    while (held_ + bytes > kMaxBytes && !free_.empty()) {
      auto largest = std::prev(free_.end());
      cudaFreeHost(largest->second);
      held_ -= largest->first;
      free_.erase(largest);
    }
    if (held_ + bytes > kMaxBytes) return nullptr;
    if (cudaMallocHost(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    held_ += bytes;
  }
  return std::make_shared<PinnedBuffer>(p, bytes, weak_from_this());
}

// A captured run: the CUDA graph and its executable form.
struct GpuGraph final : offload::CapturedWork {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GpuGraph() override {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

class GpuRuntime final : public Runtime {
 public:
  explicit GpuRuntime(int device) : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    // Freed blocks stay in the stream-ordered pool for the next run instead
    // of going back to the driver at every synchronisation (threshold 0).
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    check(blas().create(&blas_), "cublasCreate");
    check(blas().set_stream(blas_, stream_), "cublasSetStream");
    // cuBLAS's workspace of our own, made before any capture: a captured
    // GEMM must not allocate (32 MiB, what Hopper's kernels ask at most).
    check(cudaMalloc(&blas_workspace_, kBlasWorkspace), "cudaMalloc (cuBLAS workspace)");
    check(blas().set_workspace(blas_, blas_workspace_, kBlasWorkspace), "cublasSetWorkspace");
    // cuBLASLt (the GEMMs with a bias epilogue): its handle made here, not
    // at a first use that could fall inside a capture. Without it the plain
    // path does every GEMM.
    try {
      if (blas_lt().Create(&lt_) != CUBLAS_STATUS_SUCCESS) lt_ = nullptr;
    } catch (const std::runtime_error&) {
      lt_ = nullptr;  // no cuBLASLt library
    }
  }
  ~GpuRuntime() override {
    if (stream_) cudaStreamSynchronize(stream_);
    for (auto& [b, r] : registered_)
      if (r.pinned) cudaHostUnregister(const_cast<std::byte*>(r.storage->data()));
    registered_.clear();
    conv_plans_.clear();
    lt_plans_.clear();
    if (lt_) blas_lt().Destroy(lt_);
    if (dnn_) dnn().Destroy(dnn_);
    if (blas_) blas().destroy(blas_);
    if (blas_workspace_) cudaFree(blas_workspace_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda:" + std::to_string(device_); }

  void copy(void* to, const void* from, uint64_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync on the GPU");
  }
  void zero(void* p, uint64_t bytes) override {
    if (bytes) check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync");
  }
  void launch_kernel(int kernel, const void* args, int64_t n) override {
    check(static_cast<cudaError_t>(launch_on_gpu(kernel, args, n, stream_)), "kernel launch");
  }
  void replay(const offload::CapturedWork& work) override {
    const auto* g = dynamic_cast<const GpuGraph*>(&work);
    if (!g) throw std::logic_error("not a CUDA graph of this runtime");
    check(cudaGraphLaunch(g->exec, stream_), "cudaGraphLaunch");
  }
  std::string gemm_name() const override { return "cublas"; }
  std::string conv_name() const override { return "cudnn"; }
  std::shared_ptr<Buffer> host_buffer(uint64_t bytes) override {
    if (!pinned_transfers_allowed() || bytes < kPinnedFrom) return nullptr;
    return pinned_->get(bytes);
  }

 protected:
  bool device_gemm(const GemmArgs& g, MathMode mode) override {
    if (lt_gemm(g, mode)) {
      note_library_epilogue();
      return true;
    }
    const void* a = g.a;
    const void* b = g.b;
    cudaDataType type = CUDA_R_32F;
    Scratch a16(*this), b16(*this);
    if (mode == MathMode::Fp16) {  // half operands, float accumulation and C
      auto extent = [&](bool trans, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
        if (trans) std::swap(rows, cols);
        return (g.batch - 1) * stride + (cols - 1) * ld + rows;
      };
      a = g.a_half ? g.a_half : a16.half_of(g.a, extent(g.trans_a, g.m, g.k, g.lda, g.stride_a));
      b = g.b_half ? g.b_half : b16.half_of(g.b, extent(g.trans_b, g.k, g.n, g.ldb, g.stride_b));
      type = CUDA_R_16F;
    }
    check(blas().gemm(blas_, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                      as_int(g.m), as_int(g.n), as_int(g.k), &g.alpha, a, type,
                      as_int(g.lda), g.stride_a, b, type, as_int(g.ldb), g.stride_b,
                      &g.beta, g.c, CUDA_R_32F, as_int(g.ldc), g.stride_c, as_int(g.batch),
                      mode == MathMode::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
    if (mode != MathMode::Fp16) return false;
    // The result as a half tensor would hold it, and the epilogue after
    // that rounding, in one pass (C is packed when there is an epilogue).
    if (g.epilogue.any()) {
      EpilogueKernel k = epilogue_kernel(g.epilogue, g.c);
      k.source = 1;
      launch(*this, k, g.batch * g.m * g.n);
      return true;
    }
    const int64_t c_extent = (g.batch - 1) * g.stride_c + (g.n - 1) * g.ldc + g.m;
    const RoundToHalfKernel round{g.c, g.c};
    launch(*this, round, c_extent);
    return false;
  }

  void device_gemm_pointers(const GemmPointersArgs& g, MathMode mode) override {
    check(blas().gemm_batched(blas_, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                              as_int(g.m), as_int(g.n), as_int(g.k), &g.alpha,
                              reinterpret_cast<const void* const*>(g.a), g.half ? CUDA_R_16F : CUDA_R_32F, as_int(g.lda),
                              reinterpret_cast<const void* const*>(g.b), g.half ? CUDA_R_16F : CUDA_R_32F, as_int(g.ldb), &g.beta,
                              reinterpret_cast<void* const*>(g.c), CUDA_R_32F, as_int(g.ldc), as_int(g.batch),
                              mode == MathMode::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmBatchedEx");
  }

  bool device_conv(const ConvArgs& c, MathMode mode) override {
    ConvPlan& p = plan(c, mode);
    int64_t xs = c.n * c.c, ws = c.transposed ? c.c * (c.k / c.groups) : c.k * (c.c / c.groups), ys = c.n * c.k;
    for (int d = 0; d < c.rank; ++d) {
      xs *= c.in[d];
      ws *= c.kernel[d];
      ys *= c.out[d];
    }
    Scratch x16(*this), w16(*this), y16(*this);
    const void* x = c.x;
    const void* w = c.w;
    void* y = c.y;
    if (mode == MathMode::Fp16) {
      x = c.x_half ? c.x_half : x16.half_of(c.x, xs);
      w = c.w_half ? c.w_half : w16.half_of(c.w, ws);
      y = y16.get(static_cast<uint64_t>(ys) * 2);
    }
    Scratch workspace(*this);
    const float one = 1.f, zero = 0.f;
    if (c.transposed) {  // the plan's y is this x (the "gradient"), its x this y
      check(dnn().ConvolutionBackwardData(dnn_, &one, p.w, w, p.y, x, p.conv, p.bwd_algo, workspace.get(p.workspace),
                                          p.workspace, &zero, p.x, y),
            "cudnnConvolutionBackwardData");
    } else if (mode != MathMode::Fp16 && fused_conv(c, p, workspace)) {
      note_library_epilogue();
      return true;
    } else {
      check(dnn().ConvolutionForward(dnn_, &one, p.x, x, p.w, w, p.conv, p.algo, workspace.get(p.workspace), p.workspace,
                                     &zero, p.y, y),
            "cudnnConvolutionForward");
    }
    if (mode != MathMode::Fp16) return false;
    // Back to float32 with the epilogue in the same pass.
    EpilogueKernel k = epilogue_kernel(c.epilogue, c.y);
    k.source = 2;
    k.half = static_cast<const uint16_t*>(y);
    launch(*this, k, ys);
    return true;
  }

  void* device_allocate(uint64_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMallocAsync(&p, bytes, stream_);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("cannot allocate " + std::to_string(bytes) + " bytes on the GPU: " + cudaGetErrorString(e));
    }
    return p;
  }
  void device_release(void* p) override {
    if (p) cudaFreeAsync(p, stream_);
  }
  // A graph input's storage page-locked (cudaHostRegister) and the
  // registration kept while the caller holds the storage: the next run's
  // copy of the same tensor runs at the link's speed. The registration holds
  // a reference, so the memory cannot be freed while registered; entries
  // only this runtime still holds are dropped at the next registration. At
  // most kMaxRegistered bytes; storage that is not plain heap memory (a
  // mapped file, a view) is left as it is.
  void prepare_host_source(const std::shared_ptr<Buffer>& storage) override {
    if (!pinned_transfers_allowed() || !storage->owns_bytes() || storage->size() < kPinnedFrom) return;
    if (registered_.count(storage.get())) return;
    for (auto it = registered_.begin(); it != registered_.end();) {
      if (it->second.storage.use_count() > 1) {
        ++it;
        continue;
      }
      if (it->second.pinned) {
        cudaHostUnregister(const_cast<std::byte*>(it->second.storage->data()));
        registered_bytes_ -= it->second.storage->size();
      }
      it = registered_.erase(it);
    }
    if (registered_bytes_ + storage->size() > kMaxRegistered) return;
    Registration r{storage, false};
    if (cudaHostRegister(const_cast<std::byte*>(storage->data()), storage->size(), cudaHostRegisterDefault) == cudaSuccess) {
      r.pinned = true;
      registered_bytes_ += storage->size();
    } else {
      cudaGetLastError();  // not registered (kept as such, not tried again while held)
    }
    registered_.emplace(storage.get(), std::move(r));
  }
  void device_copy_in(void* device, const void* host, uint64_t bytes) override {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync to the GPU");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");  // the host buffer may go now
  }
  void device_copy_out(void* host, const void* device, uint64_t bytes) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync to the host");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void device_synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  // Thread-local mode: this thread may make no call that is unsafe during a
  // capture (cudaMalloc and the like); other threads are left alone.
  void device_begin_capture() override {
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  }
  std::unique_ptr<offload::CapturedWork> device_end_capture() override {
    auto g = std::make_unique<GpuGraph>();
    const cudaError_t e = cudaStreamEndCapture(stream_, &g->graph);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw offload::CaptureUnsupported(std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e));
    }
    const cudaError_t i = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (i != cudaSuccess) {
      cudaGetLastError();
      throw offload::CaptureUnsupported(std::string("cudaGraphInstantiate: ") + cudaGetErrorString(i));
    }
    return g;
  }
  void device_abort_capture() override {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);  // ends it, valid or not
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
  }

 private:
  static constexpr size_t kBlasWorkspace = size_t{32} << 20;

  // A float32 or TF32 GEMM whose epilogue is a bias over C's rows and
  // nothing else, on cuBLASLt with the bias added in its epilogue: C is
  // then written once instead of written and read back. cuBLASLt's ReLU and
  // GELU epilogues are left alone: its ReLU turns NaN into 0 and its GELU is
  // not the one the operators define. False: the plain path instead.
  bool lt_gemm(const GemmArgs& g, MathMode mode) {
    const Epilogue& e = g.epilogue;
    if (!lt_ || mode == MathMode::Fp16 || !library_epilogues_allowed() || !e.bias || e.act != UnaryOp::Identity || e.inner != 1 ||
        e.channels != g.m || g.beta != 0.f)
      return false;
    LtKey key{g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c, g.batch, mode,
              alignment_of(g.a), alignment_of(g.b), alignment_of(g.c), alignment_of(e.bias)};
    auto it = lt_plans_.find(key);
    if (it == lt_plans_.end()) it = lt_plans_.emplace(key, make_lt_plan(key, e.bias)).first;
    LtPlan& p = *it->second;
    if (!p.ok) return false;
    const void* bias = e.bias;
    check(blas_lt().MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
          "cublasLtMatmulDescSetAttribute (bias)");
    const cublasStatus_t st = blas_lt().Matmul(lt_, p.desc, &g.alpha, g.a, p.a, g.b, p.b, &g.beta, g.c, p.c, g.c, p.c,
                                               &p.algo, blas_workspace_, kBlasWorkspace, stream_);
    if (st != CUBLAS_STATUS_SUCCESS && !p.used && !capturing()) {  // refused the first time: the plain path from now on
      p.ok = false;
      return false;
    }
    check(st, "cublasLtMatmul");
    p.used = true;
    return true;
  }

  // The plan of one cuBLASLt problem; any refusal on the way gives a plan
  // that is not ok (the plain path is always there).
  std::unique_ptr<LtPlan> make_lt_plan(const LtKey& k, const void* bias) {
    auto p = std::make_unique<LtPlan>();
    const BlasLt& lt = blas_lt();
    auto ok = [](cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; };
    const cublasComputeType_t compute = k.mode == MathMode::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (!ok(lt.MatmulDescCreate(&p->desc, compute, CUDA_R_32F))) return p;
    const int32_t ta = k.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = CUDA_R_32F;
    if (!ok(lt.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
        !ok(lt.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) ||
        !ok(lt.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue)) ||
        !ok(lt.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type)) ||
        !ok(lt.MatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)))
      return p;
    // Stored shapes: op(A) is m x k, so A is k x m when transposed.
    auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
      if (!ok(lt.MatrixLayoutCreate(l, CUDA_R_32F, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld))) return false;
      if (k.batch == 1) return true;
      const int32_t count = static_cast<int32_t>(k.batch);
      return ok(lt.MatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count)) &&
             ok(lt.MatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    };
    if (!layout(&p->a, k.trans_a ? k.k : k.m, k.trans_a ? k.m : k.k, k.lda, k.stride_a) ||
        !layout(&p->b, k.trans_b ? k.n : k.k, k.trans_b ? k.k : k.n, k.ldb, k.stride_b) ||
        !layout(&p->c, k.m, k.n, k.ldc, k.stride_c))
      return p;
    cublasLtMatmulPreference_t pref = nullptr;
    if (!ok(lt.MatmulPreferenceCreate(&pref))) return p;
    const uint64_t workspace = kBlasWorkspace;
    const uint32_t al_a = static_cast<uint32_t>(k.align_a), al_b = static_cast<uint32_t>(k.align_b),
                   al_c = static_cast<uint32_t>(k.align_c);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const bool asked =
        ok(lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace)) &&
        ok(lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a)) &&
        ok(lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b)) &&
        ok(lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c)) &&
        ok(lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c)) &&
        ok(lt.MatmulAlgoGetHeuristic(lt_, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &found));
    lt.MatmulPreferenceDestroy(pref);
    if (!asked || found < 1 || result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > kBlasWorkspace) return p;
    p->algo = result.algo;
    p->workspace = result.workspaceSize;
    p->ok = true;
    return p;
  }

  // Forward float32 / TF32 convolution with a bias, a residual or not, and
  // ReLU or nothing after it, as one cuDNN call: y = act(conv(x) + z +
  // bias), z the residual, with the ReLU keeping NaN as the operator does. cuDNN takes the identity only with
  // its implicit-precomputed-GEMM algorithm. False: the plain path instead
  // (also when cuDNN refuses the call the first time; the refusal is kept).
  bool fused_conv(const ConvArgs& c, ConvPlan& p, Scratch& workspace) {
    const Epilogue& e = c.epilogue;
    if (!library_epilogues_allowed() || !e.bias || c.transposed || e.channels != c.k) return false;
    const bool relu = e.act == UnaryOp::Relu;
    if (!relu && (e.act != UnaryOp::Identity || p.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)) return false;
    int& state = p.fused[(relu ? 0 : 1) + (e.residual ? 2 : 0)];
    if (state < 0) return false;
    if (!p.bias) {
      const int nd = c.rank == 1 ? 4 : c.rank + 2;
      std::vector<int> dims(static_cast<size_t>(nd), 1);
      dims[1] = as_int(c.k);
      check(dnn().CreateTensorDescriptor(&p.bias), "cudnnCreateTensorDescriptor");
      check(dnn().SetTensorNdDescriptor(p.bias, CUDNN_DATA_FLOAT, nd, dims.data(), packed_strides(dims).data()),
            "cudnnSetTensorNdDescriptor (bias)");
    }
    cudnnActivationDescriptor_t& act = relu ? p.relu : p.identity;
    if (!act) {
      check(dnn().CreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor");
      check(dnn().SetActivationDescriptor(act, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0),
            "cudnnSetActivationDescriptor");
    }
    const float one = 1.f, zero = 0.f;
    // Without a residual, z is y weighted by 0, as cuDNN's API asks for a z
    // (PyTorch passes its uninitialised output the same way);
    // cuda_fast_paths_test's GpuFusedEpiloguesIgnoreWhatYHeld fills y with NaN
    // first to check that the 0 weight means z is not read.
    const void* z = e.residual ? static_cast<const void*>(e.residual) : c.y;
    const cudnnStatus_t st = dnn().ConvolutionBiasActivationForward(
        dnn_, &one, p.x, c.x, p.w, c.w, p.conv, p.algo, workspace.get(p.workspace), p.workspace, e.residual ? &one : &zero,
        p.y, z, p.bias, e.bias, act, p.y, c.y);
    if (st == CUDNN_STATUS_SUCCESS) {
      state = 1;
      return true;
    }
    if (state == 1 || capturing()) check(st, "cudnnConvolutionBiasActivationForward");  // it worked before: a real failure
    state = -1;
    return false;
  }

  // cuDNN's Find times each candidate once, so one noisy timing decides (a
  // run's first problems may be timed while the GPU raises its clocks from
  // idle), and the choice changed from process to process. So each
  // candidate's time is the least of find_rounds() finds, and the
  // candidates are ranked again by it: on an H200, ResNet-50 in fp16 at
  // batch 1 ran in 1.18 ms against 2.39 with one find, TF32 at batch 32 in
  // 4.78 against 5.80 (docs/cuda-engine.md). A later find that fails
  // (memory for a candidate's buffers, say) ends the refining: the first
  // stands.
  template <class Perf, class Find>
  static int find_steadily(Perf* perf, int capacity, const char* what, Find find) {
    int found = 0;
    check(find(perf, &found), what);
    std::vector<Perf> again(static_cast<size_t>(capacity));
    for (int round = 1; round < find_rounds(); ++round) {
      int n = 0;
      if (find(again.data(), &n) != CUDNN_STATUS_SUCCESS) break;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < found; ++i)
          if (perf[i].algo == again[j].algo && perf[i].mathType == again[j].mathType &&
              perf[i].status == CUDNN_STATUS_SUCCESS && again[j].status == CUDNN_STATUS_SUCCESS)
            perf[i].time = std::min(perf[i].time, again[j].time);
    }
    std::stable_sort(perf, perf + found, [](const Perf& a, const Perf& b) {
      const bool a_ok = a.status == CUDNN_STATUS_SUCCESS, b_ok = b.status == CUDNN_STATUS_SUCCESS;
      return a_ok != b_ok ? a_ok : a_ok && a.time < b.time;
    });
    return found;
  }

  // The fastest of cuDNN's timed candidates that keeps to the mode: strict
  // fp32 takes no tensor-op math and keeps FMA math whatever the timing
  // reported (DEFAULT math would let Ampere and later round inputs to TF32).
  // Strict fp32 also takes, where cuDNN offers one, an algorithm that sums
  // products as the definition does and gives the same bits every run: the
  // FFT and Winograd ones transform the data, so their error follows the
  // largest values rather than each output's (on an H100, an FFT choice put
  // 8.1e-6 where the suite's ConvTranspose 3-D test expects an exact 0), and
  // the timing that ranks the candidates changes from run to run, so without
  // this a model's numbers could change between two runs of onnxscope.
  template <class Perf>
  int choose_algorithm(const Perf* perf, int found, MathMode mode, bool (*transforms)(decltype(Perf{}.algo)), ConvPlan& p) {
    auto usable = [&](const Perf& q) {
      return q.status == CUDNN_STATUS_SUCCESS &&
             !(mode == MathMode::Fp32 && (q.mathType == CUDNN_TENSOR_OP_MATH || q.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
    };
    int pick = -1;
    if (mode == MathMode::Fp32) {
      for (int i = 0; i < found && pick < 0; ++i)
        if (usable(perf[i]) && !transforms(perf[i].algo) && perf[i].determinism == CUDNN_DETERMINISTIC) pick = i;
      for (int i = 0; i < found && pick < 0; ++i)
        if (usable(perf[i]) && !transforms(perf[i].algo)) pick = i;
    }
    for (int i = 0; i < found && pick < 0; ++i)
      if (usable(perf[i])) pick = i;
    if (pick < 0) throw std::runtime_error("cuDNN has no algorithm for this convolution");
    if (mode != MathMode::Fp32) check(dnn().SetConvolutionMathType(p.conv, perf[pick].mathType), "cudnnSetConvolutionMathType");
    p.workspace = perf[pick].memory;
    return pick;
  }

  static bool forward_transforms(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
  }
  static bool backward_data_transforms(cudnnConvolutionBwdDataAlgo_t a) {
    return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
           a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
  }

  ConvPlan& plan(const ConvArgs& c, MathMode mode) {
    ConvKey key;
    key.transposed = c.transposed;
    // Forward terms: a transposed convolution's output is the forward input.
    std::vector<int> in = {as_int(c.n), as_int(c.c)};
    std::vector<int> out = {in[0], as_int(c.k)};
    key.w = c.transposed ? std::vector<int>{in[1], as_int(c.k / c.groups)}
                         : std::vector<int>{out[1], as_int(c.c / c.groups)};
    if (c.rank == 1) {  // cuDNN wants 2 spatial dims at least
      in.push_back(1);
      key.w.push_back(1);
      out.push_back(1);
      key.pad.push_back(0);
      key.stride.push_back(1);
      key.dilation.push_back(1);
    }
    for (int d = 0; d < c.rank; ++d) {
      in.push_back(as_int(c.in[d]));
      key.w.push_back(as_int(c.kernel[d]));
      out.push_back(as_int(c.out[d]));
      key.pad.push_back(as_int(c.pad[d]));
      key.stride.push_back(as_int(c.stride[d]));
      key.dilation.push_back(as_int(c.dilation[d]));
    }
    key.x = c.transposed ? out : in;
    key.y = c.transposed ? in : out;
    key.groups = as_int(c.groups);
    key.mode = mode;
    if (auto it = conv_plans_.find(key); it != conv_plans_.end()) return *it->second;

    if (!dnn_) {
      check(dnn().Create(&dnn_), "cudnnCreate");
      check(dnn().SetStream(dnn_, stream_), "cudnnSetStream");
    }
    auto p = std::make_unique<ConvPlan>();
    const int nd = static_cast<int>(key.x.size());
    // fp16: half tensors, float accumulation (cuDNN's "pseudo half" configuration).
    const cudnnDataType_t data = mode == MathMode::Fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    check(dnn().CreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor");
    check(dnn().SetTensorNdDescriptor(p->x, data, nd, key.x.data(), packed_strides(key.x).data()), "cudnnSetTensorNdDescriptor");
    check(dnn().CreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor");
    check(dnn().SetTensorNdDescriptor(p->y, data, nd, key.y.data(), packed_strides(key.y).data()), "cudnnSetTensorNdDescriptor");
    check(dnn().CreateFilterDescriptor(&p->w), "cudnnCreateFilterDescriptor");
    check(dnn().SetFilterNdDescriptor(p->w, data, CUDNN_TENSOR_NCHW, nd, key.w.data()), "cudnnSetFilterNdDescriptor");
    check(dnn().CreateConvolutionDescriptor(&p->conv), "cudnnCreateConvolutionDescriptor");
    check(dnn().SetConvolutionNdDescriptor(p->conv, nd - 2, key.pad.data(), key.stride.data(), key.dilation.data(),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolutionNdDescriptor");
    check(dnn().SetConvolutionGroupCount(p->conv, key.groups), "cudnnSetConvolutionGroupCount");
    // FMA math keeps float32 exact-as-float32; default math lets Ampere and
    // later use TF32; fp16 may use tensor cores.
    check(dnn().SetConvolutionMathType(p->conv, mode == MathMode::Fp32 ? CUDNN_FMA_MATH : mode == MathMode::Tf32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH),
          "cudnnSetConvolutionMathType");
    // Timed at the problem's first run (cuDNN runs the candidates; find_steadily), fastest first.
    synchronize();
    if (c.transposed) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      const int found = find_steadily(perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, "cudnnFindConvolutionBackwardDataAlgorithm",
                                      [&](cudnnConvolutionBwdDataAlgoPerf_t* out, int* n) {
                                        return dnn().FindConvolutionBackwardDataAlgorithm(
                                            dnn_, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, out);
                                      });
      const int i = choose_algorithm(perf, found, mode, &backward_data_transforms, *p);
      p->bwd_algo = perf[i].algo;
    } else {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      const int found = find_steadily(perf, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, "cudnnFindConvolutionForwardAlgorithm",
                                      [&](cudnnConvolutionFwdAlgoPerf_t* out, int* n) {
                                        return dnn().FindConvolutionForwardAlgorithm(
                                            dnn_, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, out);
                                      });
      const int i = choose_algorithm(perf, found, mode, &forward_transforms, *p);
      p->algo = perf[i].algo;
    }
    return *conv_plans_.emplace(key, std::move(p)).first->second;
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  std::map<ConvKey, std::unique_ptr<ConvPlan>> conv_plans_;
  cublasLtHandle_t lt_ = nullptr;
  std::map<LtKey, std::unique_ptr<LtPlan>> lt_plans_;
  std::shared_ptr<PinnedPool> pinned_ = std::make_shared<PinnedPool>();
  struct Registration {
    std::shared_ptr<Buffer> storage;
    bool pinned;
  };
  static constexpr uint64_t kMaxRegistered = uint64_t{1} << 30;
  std::map<const Buffer*, Registration> registered_;
  uint64_t registered_bytes_ = 0;
};

}  // namespace

std::shared_ptr<Runtime> make_gpu_runtime(int device) { return std::make_shared<GpuRuntime>(device); }

}  // namespace onnxscope::cuda
