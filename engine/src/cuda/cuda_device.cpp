// The CUDA device of the offload engine (offload/device.h): stream-ordered
// device memory, copies on one stream, float32 elementwise kernels
// (kernels/elementwise.cu), MatMul on cuBLAS, and the view ops (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity) as new shapes over the same memory.
// Everything else runs on the CPU engine.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "cuda/kernels/kernels.h"
#include "cuda/shapes.h"
#include "offload/offload_engine.h"
#include "onnxscope/cuda.h"
#include "onnxscope/diagnostics.h"

namespace onnxscope {

namespace cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(e)));
}

// cuBLAS, opened when the first CUDA engine is made: linked in, its libraries
// (libcublas and libcublasLt) would cost every onnxscope process 150 MiB of
// resident memory at start, GPU or not.
struct Blas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long, const void*,
                                         cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                         long long, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

const Blas& blas() {
  static const Blas b = [] {
    void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error(std::string("cannot open cuBLAS: ") + dlerror());
    auto sym = [&](const char* name) {
      void* p = dlsym(lib, name);
      if (!p) throw std::runtime_error(std::string("cuBLAS has no ") + name);
      return p;
    };
    Blas r;
    r.create = reinterpret_cast<decltype(r.create)>(sym("cublasCreate_v2"));
    r.destroy = reinterpret_cast<decltype(r.destroy)>(sym("cublasDestroy_v2"));
    r.set_stream = reinterpret_cast<decltype(r.set_stream)>(sym("cublasSetStream_v2"));
    r.gemm_strided_batched = reinterpret_cast<decltype(r.gemm_strided_batched)>(sym("cublasGemmStridedBatchedEx"));
    return r;
  }();
  return b;
}

// The stream and cuBLAS handle; device memory holds it, so it outlives them.
struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  bool tf32 = false;
  ~Context() {
    if (blas) cuda::blas().destroy(blas);
    if (stream) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  }
};

const std::map<std::string, UnaryOp>& unary_ops() {
  static const std::map<std::string, UnaryOp> ops{
      {"Relu", UnaryOp::Relu}, {"Sigmoid", UnaryOp::Sigmoid}, {"Tanh", UnaryOp::Tanh}, {"Exp", UnaryOp::Exp},
      {"Log", UnaryOp::Log},   {"Sqrt", UnaryOp::Sqrt},       {"Neg", UnaryOp::Neg},   {"Abs", UnaryOp::Abs},
      {"Erf", UnaryOp::Erf}};
  return ops;
}

const std::map<std::string, BinaryOp>& binary_ops() {
  static const std::map<std::string, BinaryOp> ops{
      {"Add", BinaryOp::Add}, {"Sub", BinaryOp::Sub}, {"Mul", BinaryOp::Mul}, {"Div", BinaryOp::Div}};
  return ops;
}

const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  return ops;
}

bool is_float(const Graph& g, const std::string& v) {
  const TypeInfo* t = v.empty() ? nullptr : g.type_of(v);
  return t && t->is_tensor() && t->elem == DataType::Float;
}

bool is_tensor(const Graph& g, const std::string& v) {
  const TypeInfo* t = v.empty() ? nullptr : g.type_of(v);
  return t && t->is_tensor() && t->elem != DataType::Undefined && t->elem != DataType::String;
}

// Inputs a view op reads on the host: Reshape's shape, Squeeze/Unsqueeze's
// axes (an input since opset 13).
bool view_reads_on_host(const Node& n, size_t i) {
  return i == 1 && (n.op_type == "Reshape" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze");
}

uint64_t count_of(const Shape& s) {
  auto n = checked_element_count(s);
  if (!n) throw std::runtime_error("the shape " + shape_to_string(s) + " has too many elements");
  return *n;
}

uint64_t bytes_of(DataType t, const Shape& s) {
  auto b = storage_bytes(t, count_of(s));
  if (!b) throw std::runtime_error("the shape " + shape_to_string(s) + " is too large");
  return *b;
}

std::vector<int64_t> ints_of(const Tensor* t) {
  std::vector<int64_t> v;
  if (!t) return v;
  if (t->dtype() != DataType::Int64) throw std::runtime_error("expected an int64 tensor, got " + std::string(dtype_name(t->dtype())));
  v.assign(t->data<int64_t>(), t->data<int64_t>() + t->element_count());
  return v;
}

class CudaDevice final : public offload::Device {
 public:
  CudaDevice(int device, bool tf32, std::string name) : ctx_(std::make_shared<Context>()), name_(std::move(name)) {
    ctx_->device = device;
    ctx_->tf32 = tf32;
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&ctx_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(blas().create(&ctx_->blas), "cublasCreate");
    check(blas().set_stream(ctx_->blas, ctx_->stream), "cublasSetStream");
  }

  std::string name() const override { return name_; }

  PlacementRules rules() const override {
    PlacementRules r;
    r.refuse = [](const Graph& g, const Node& n) -> std::optional<std::string> {
      if (!n.domain.empty() && n.domain != "ai.onnx") return "no CUDA kernel for domain " + n.domain;
      const std::string& op = n.op_type;
      if (unary_ops().count(op) || binary_ops().count(op)) {
        for (const auto& in : n.inputs)
          if (!is_float(g, in)) return "the CUDA kernel for " + op + " takes float32 only (or the type is unknown)";
        return std::nullopt;
      }
      if (op == "MatMul") {
        if (n.inputs.size() != 2 || !is_float(g, n.inputs[0]) || !is_float(g, n.inputs[1]))
          return std::string("the CUDA MatMul takes float32 only (or the type is unknown)");
        const TypeInfo* a = g.type_of(n.inputs[0]);
        const TypeInfo* b = g.type_of(n.inputs[1]);
        // Decided here, from the declared ranks: B a matrix, or A and B of one rank
        // (their batch dims are checked again when it runs).
        if (!a->shape || !b->shape || a->shape->size() < 2 || b->shape->size() < 2 ||
            (b->shape->size() != 2 && b->shape->size() != a->shape->size()))
          return std::string("the CUDA MatMul takes A [..., M, K] with B [K, N] or B of A's rank");
        return std::nullopt;
      }
      if (view_ops().count(op)) {
        if (n.inputs.empty() || !is_tensor(g, n.inputs[0])) return "the CUDA " + op + " takes tensors of a known type";
        if (op == "Unsqueeze" && n.inputs.size() < 2 && !n.attribute("axes")) return std::string("Unsqueeze without axes");
        return std::nullopt;
      }
      return "no CUDA kernel for " + op;
    };
    r.reads_on_host = view_reads_on_host;
    return r;
  }

  offload::DeviceTensor upload(const Tensor& t) override {
    offload::DeviceTensor d = allocate(t.dtype(), t.shape());
    if (t.byte_size())
      check(cudaMemcpyAsync(d.data, t.raw(), t.byte_size(), cudaMemcpyHostToDevice, ctx_->stream), "cudaMemcpyAsync to the device");
    // The host buffer may be freed as soon as this returns.
    check(cudaStreamSynchronize(ctx_->stream), "cudaStreamSynchronize");
    return d;
  }

  Tensor download(const offload::DeviceTensor& d) override {
    Tensor t = Tensor::zeros(d.dtype, d.shape);
    if (t.byte_size()) {
      check(cudaMemcpyAsync(t.mutable_raw(), d.data, t.byte_size(), cudaMemcpyDeviceToHost, ctx_->stream), "cudaMemcpyAsync to the host");
      check(cudaStreamSynchronize(ctx_->stream), "cudaStreamSynchronize");
    }
    return t;
  }

  void run(const Node& n, int64_t opset, std::span<const offload::DeviceTensor* const> in,
           std::span<const Tensor* const> host_args, std::vector<offload::DeviceTensor>& out) override {
    const std::string& op = n.op_type;
    auto input = [&](size_t k) -> const offload::DeviceTensor& {
      if (k >= in.size() || !in[k]) throw std::runtime_error(op + ": input " + std::to_string(k) + " is not on the device");
      return *in[k];
    };
    if (auto u = unary_ops().find(op); u != unary_ops().end()) {
      const auto& x = input(0);
      out[0] = allocate(DataType::Float, x.shape);
      check(launch_unary(u->second, static_cast<const float*>(x.data), static_cast<float*>(out[0].data),
                         static_cast<int64_t>(count_of(x.shape)), ctx_->stream),
            op.c_str());
      return;
    }
    if (auto b = binary_ops().find(op); b != binary_ops().end()) {
      const auto& x = input(0);
      const auto& y = input(1);
      auto bc = broadcast(x.shape, y.shape);
      if (!bc) throw std::runtime_error(op + ": shapes " + shape_to_string(x.shape) + " and " + shape_to_string(y.shape) + " do not broadcast");
      out[0] = allocate(DataType::Float, broadcast_shape(*bc));
      BroadcastArgs args;
      args.rank = bc->rank;
      args.count = bc->count;
      for (int d = 0; d < bc->rank; ++d) {
        args.out[d] = bc->out[static_cast<size_t>(d)];
        args.a_stride[d] = bc->a_stride[static_cast<size_t>(d)];
        args.b_stride[d] = bc->b_stride[static_cast<size_t>(d)];
      }
      check(launch_binary(b->second, static_cast<const float*>(x.data), static_cast<const float*>(y.data),
                          static_cast<float*>(out[0].data), args, ctx_->stream),
            op.c_str());
      return;
    }
    if (op == "MatMul") {
      matmul(input(0), input(1), out[0]);
      return;
    }
    if (view_ops().count(op)) {
      const auto& x = input(0);
      Shape shape;
      if (op == "Identity") {
        shape = x.shape;
      } else if (op == "Reshape") {
        const auto target = ints_of(host_args.size() > 1 ? host_args[1] : nullptr);
        const Attribute* az = n.attribute("allowzero");
        shape = reshape_shape(x.shape, target, az && az->i != 0);
      } else if (op == "Flatten") {
        const Attribute* a = n.attribute("axis");
        shape = flatten_shape(x.shape, a ? a->i : 1);
      } else {
        std::vector<int64_t> axes;
        if (opset >= 13)
          axes = ints_of(host_args.size() > 1 ? host_args[1] : nullptr);
        else if (const Attribute* a = n.attribute("axes"))
          axes = a->ints;
        shape = op == "Squeeze" ? squeeze_shape(x.shape, axes) : unsqueeze_shape(x.shape, axes);
      }
      out[0] = x;  // the same device memory under another shape
      out[0].shape = std::move(shape);
      return;
    }
    throw std::runtime_error("no CUDA kernel for " + op);
  }

  std::string kernel_name(const Node& n) const override {
    if (n.op_type == "MatMul") return ctx_->tf32 ? "cublas-tf32" : "cublas";
    if (view_ops().count(n.op_type)) return "cuda-view";
    return "cuda";
  }

  void synchronize() override { check(cudaStreamSynchronize(ctx_->stream), "cudaStreamSynchronize"); }

 private:
  offload::DeviceTensor allocate(DataType dtype, const Shape& shape) {
    offload::DeviceTensor d;
    d.dtype = dtype;
    d.shape = shape;
    const uint64_t bytes = bytes_of(dtype, shape);
    if (bytes == 0) return d;
    void* p = nullptr;
    check(cudaMallocAsync(&p, bytes, ctx_->stream), "cudaMallocAsync");
    std::shared_ptr<Context> ctx = ctx_;
    d.storage = std::shared_ptr<void>(p, [ctx](void* q) { cudaFreeAsync(q, ctx->stream); });
    d.data = p;
    return d;
  }

  // Row-major C = A x B as column-major C^T = B^T x A^T: cuBLAS reads the
  // row-major buffers as their transposes, so no data moves.
  void matmul(const offload::DeviceTensor& a, const offload::DeviceTensor& b, offload::DeviceTensor& c) {
    auto plan = matmul_plan(a.shape, b.shape);
    if (!plan) throw std::runtime_error("MatMul: shapes " + shape_to_string(a.shape) + " x " + shape_to_string(b.shape) + " are not one strided-batched GEMM");
    c = allocate(DataType::Float, plan->out);
    if (plan->m == 0 || plan->n == 0 || plan->batch == 0) return;
    if (plan->k == 0) {
      check(cudaMemsetAsync(c.data, 0, bytes_of(DataType::Float, c.shape), ctx_->stream), "cudaMemsetAsync");
      return;
    }
    const float alpha = 1.f, beta = 0.f;
    check(blas().gemm_strided_batched(ctx_->blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(plan->n), static_cast<int>(plan->m),
                                     static_cast<int>(plan->k), &alpha, b.data, CUDA_R_32F, static_cast<int>(plan->n),
                                     plan->b_stride, a.data, CUDA_R_32F, static_cast<int>(plan->k), plan->a_stride, &beta,
                                     c.data, CUDA_R_32F, static_cast<int>(plan->n), plan->m * plan->n,
                                     static_cast<int>(plan->batch),
                                     ctx_->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  }

  std::shared_ptr<Context> ctx_;
  std::string name_;
};

}  // namespace
}  // namespace cuda

CudaStatus cuda_status() {
  CudaStatus s;
  s.built = true;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    s.reason = std::string(e == cudaErrorInsufficientDriver ? "no usable NVIDIA driver on this machine"
                           : e == cudaErrorNoDevice          ? "no NVIDIA GPU on this machine"
                                                             : "CUDA cannot start") +
               " (cudaGetDeviceCount: " + cudaGetErrorString(e) + ")";
    cudaGetLastError();  // clear it
    return s;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    s.devices.push_back({i, p.name, p.major, p.minor, static_cast<uint64_t>(p.totalGlobalMem)});
  }
  if (s.devices.empty()) s.reason = "no CUDA device found";
  return s;
}

std::unique_ptr<Engine> make_cuda_engine(const CudaOptions& options) {
  if (options.precision != "fp32" && options.precision != "tf32")
    throw Error(Diagnostic{Severity::Error, "bad-option", {},
                           "unknown CUDA precision '" + options.precision + "' (fp32 or tf32; fp16 is not implemented yet)", {}});
  const CudaStatus s = cuda_status();
  const CudaDeviceInfo* info = nullptr;
  for (const auto& d : s.devices)
    if (d.index == options.device) info = &d;
  if (!info)
    throw Error(Diagnostic{Severity::Error, "no-device", {},
                           "the cuda engine needs an NVIDIA GPU: " +
                               (s.devices.empty() ? s.reason : "there is no device " + std::to_string(options.device)),
                           {}});
  const std::string name = "cuda:" + std::to_string(info->index) + " " + info->name;
  auto device = std::make_shared<cuda::CudaDevice>(options.device, options.precision == "tf32", name);
  offload::OffloadOptions o;
  o.host = options.host;
  return offload::make_offload_engine("cuda", std::move(device), std::move(o));
}

}  // namespace onnxscope
