// The CUDA engine's runtime on a GPU (cuda/runtime.h): stream-ordered
// memory and copies on one stream, kernels from kernels/launch.cu, GEMM on
// cuBLAS, convolution on cuDNN. cuBLAS and cuDNN are opened at run time
// (dlopen): linked in, their libraries would cost every onnxscope process
// hundreds of MiB of resident memory at start, GPU or not.
#include "cuda/cuda_runtime.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
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
};

const Blas& blas() {
  static const Blas b = [] {
    void* lib = open_library("libcublas.so.13");
    const char* n = "cuBLAS";
    return Blas{symbol<decltype(&cublasCreate_v2)>(lib, n, "cublasCreate_v2"),
                symbol<decltype(&cublasDestroy_v2)>(lib, n, "cublasDestroy_v2"),
                symbol<decltype(&cublasSetStream_v2)>(lib, n, "cublasSetStream_v2"),
                symbol<decltype(&cublasSetWorkspace_v2)>(lib, n, "cublasSetWorkspace_v2"),
                symbol<Blas::Gemm>(lib, n, "cublasGemmStridedBatchedEx")};
  }();
  return b;
}

#define ONNXSCOPE_CUDNN_FUNCTIONS(X) \
  X(Create) X(Destroy) X(SetStream) X(GetErrorString) X(CreateTensorDescriptor) X(DestroyTensorDescriptor) \
  X(SetTensorNdDescriptor) X(CreateFilterDescriptor) X(DestroyFilterDescriptor) X(SetFilterNdDescriptor) \
  X(CreateConvolutionDescriptor) X(DestroyConvolutionDescriptor) X(SetConvolutionNdDescriptor) X(SetConvolutionGroupCount) \
  X(SetConvolutionMathType) X(FindConvolutionForwardAlgorithm) X(ConvolutionForward) \
  X(FindConvolutionBackwardDataAlgorithm) X(ConvolutionBackwardData)

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
  ~ConvPlan() {
    if (x) dnn().DestroyTensorDescriptor(x);
    if (y) dnn().DestroyTensorDescriptor(y);
    if (w) dnn().DestroyFilterDescriptor(w);
    if (conv) dnn().DestroyConvolutionDescriptor(conv);
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
  }
  ~GpuRuntime() override {
    if (stream_) cudaStreamSynchronize(stream_);
    conv_plans_.clear();
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

 protected:
  void device_gemm(const GemmArgs& g, MathMode mode) override {
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
    if (mode == MathMode::Fp16) {  // the result as a half tensor would hold it
      const int64_t c_extent = (g.batch - 1) * g.stride_c + (g.n - 1) * g.ldc + g.m;
      const RoundToHalfKernel round{g.c, g.c};
      launch(*this, round, c_extent);
    }
  }

  void device_conv(const ConvArgs& c, MathMode mode) override {
    const ConvPlan& p = plan(c, mode);
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
      x = x16.half_of(c.x, xs);
      w = c.w_half ? c.w_half : w16.half_of(c.w, ws);
      y = y16.get(static_cast<uint64_t>(ys) * 2);
    }
    Scratch workspace(*this);
    const float one = 1.f, zero = 0.f;
    if (c.transposed)  // the plan's y is this x (the "gradient"), its x this y
      check(dnn().ConvolutionBackwardData(dnn_, &one, p.w, w, p.y, x, p.conv, p.bwd_algo, workspace.get(p.workspace),
                                          p.workspace, &zero, p.x, y),
            "cudnnConvolutionBackwardData");
    else
      check(dnn().ConvolutionForward(dnn_, &one, p.x, x, p.w, w, p.conv, p.algo, workspace.get(p.workspace), p.workspace,
                                     &zero, p.y, y),
            "cudnnConvolutionForward");
    if (mode == MathMode::Fp16) {
      const CastKernel back{ElemType::Float16, ElemType::Float, y, c.y};
      launch(*this, back, ys);
    }
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

  const ConvPlan& plan(const ConvArgs& c, MathMode mode) {
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
    // Timed once per problem (cuDNN runs the candidates), fastest first.
    synchronize();
    if (c.transposed) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int found = 0;
      check(dnn().FindConvolutionBackwardDataAlgorithm(dnn_, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                       &found, perf),
            "cudnnFindConvolutionBackwardDataAlgorithm");
      const int i = choose_algorithm(perf, found, mode, &backward_data_transforms, *p);
      p->bwd_algo = perf[i].algo;
    } else {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int found = 0;
      check(dnn().FindConvolutionForwardAlgorithm(dnn_, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
            "cudnnFindConvolutionForwardAlgorithm");
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
};

}  // namespace

std::shared_ptr<Runtime> make_gpu_runtime(int device) { return std::make_shared<GpuRuntime>(device); }

}  // namespace onnxscope::cuda
