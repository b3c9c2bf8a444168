// The cuda engine: the operator table (ops/) on the GPU runtime
// (cuda_runtime.cpp) under the offload engine; and what the machine has.
// CUDA builds only (cuda_absent.cpp otherwise).
#include <cuda_runtime_api.h>

#include "cuda/cuda_runtime.h"
#include "cuda/kernel_device.h"
#include "offload/offload_engine.h"
#include "onnxscope/cuda.h"
#include "onnxscope/diagnostics.h"

namespace onnxscope {

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
  const cuda::MathMode mode = cuda::math_mode(options.precision);
  const CudaStatus s = cuda_status();
  const CudaDeviceInfo* info = nullptr;
  for (const auto& d : s.devices)
    if (d.index == options.device) info = &d;
  if (!info)
    throw Error(Diagnostic{Severity::Error, "no-device", {},
                           "the cuda engine needs an NVIDIA GPU: " +
                               (s.devices.empty() ? s.reason : "there is no device " + std::to_string(options.device)),
                           {}});
  std::shared_ptr<cuda::Runtime> rt;
  try {
    rt = cuda::make_gpu_runtime(options.device);
    // On the GPU only the limits asked for: its allocator refuses what does
    // not fit, and host memory is no measure of it.
    rt->set_limits(options.host.max_tensor_bytes, options.host.max_live_bytes);
  } catch (const std::exception& e) {
    throw Error(Diagnostic{Severity::Error, "no-device", {}, std::string("the cuda engine cannot start: ") + e.what(), {}});
  }
  auto device = cuda::make_kernel_device(std::move(rt), mode, "cuda:" + std::to_string(info->index) + " " + info->name);
  offload::OffloadOptions o;
  o.host = options.host;
  return offload::make_offload_engine("cuda", std::move(device), std::move(o));
}

}  // namespace onnxscope
