// A build without the CUDA toolkit: the CUDA engine's entry points say so.
#include "onnxscope/cuda.h"
#include "onnxscope/diagnostics.h"

namespace onnxscope {

CudaStatus cuda_status() {
  CudaStatus s;
  s.reason = "this build has no CUDA engine (nvcc, cuBLAS or cuDNN was not found when it was configured)";
  return s;
}

std::unique_ptr<Engine> make_cuda_engine(const CudaOptions&) {
  throw Error(Diagnostic{Severity::Error, "no-device", {}, cuda_status().reason, {}});
}

}  // namespace onnxscope
