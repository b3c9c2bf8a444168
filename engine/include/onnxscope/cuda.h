// The CUDA engine: runs on an NVIDIA GPU what it has kernels for and hands
// the rest to the CPU engine, node runs at a time (docs/cuda-engine.md).
// Built when the CUDA toolkit (nvcc, cuBLAS, cuDNN) is found at configure
// time; every build has these functions, and says why it cannot run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onnxscope/cpu.h"
#include "onnxscope/engine.h"

namespace onnxscope {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  uint64_t memory_bytes = 0;
};

struct CudaStatus {
  bool built = false;                 // this build has the CUDA engine
  std::vector<CudaDeviceInfo> devices;
  std::string reason;                 // why there is none, when devices is empty
};

CudaStatus cuda_status();

struct CudaOptions {
  int device = 0;
  // How MatMul, Gemm and Conv compute (the other operators compute in
  // float32): "fp32" float32 throughout (no TF32); "tf32": tensor cores
  // may round their float32 inputs to TF32; "fp16": inputs rounded to
  // float16, float32 accumulation, results rounded to float16, as
  // torch.autocast runs them.
  std::string precision = "fp32";
  CpuOptions host;  // the CPU engine that runs what the GPU does not
};

// Throws onnxscope::Error ("no-device") when there is no usable GPU, or
// ("bad-option") for an unknown precision.
std::unique_ptr<Engine> make_cuda_engine(const CudaOptions& options = {});

// "cuda-sim": the cuda engine's operators and kernels run on the host, one
// thread, with GEMM and convolution as plain loops; every build has it. It
// checks the CUDA engine's logic (placement, kernel arguments, kernels)
// without a GPU; it says nothing of the GPU's speed or of cuBLAS/cuDNN.
std::unique_ptr<Engine> make_cuda_sim_engine(const CudaOptions& options = {});

}  // namespace onnxscope
