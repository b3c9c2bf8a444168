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
  // cuda-sim only: the lanes a row kernel (softmax, normalization,
  // reductions, pooling) splits each row across. 1: one; 32: a GPU warp,
  // simulated on 32 host threads in lockstep, which checks the split the GPU
  // makes. make_engine("cuda-sim") takes it from $ONNXSCOPE_CUDA_SIM_LANES.
  int sim_lanes = 1;
};

// Throws onnxscope::Error ("no-device") when there is no usable GPU, or
// ("bad-option") for an unknown precision (or sim_lanes outside 1 to 64).
std::unique_ptr<Engine> make_cuda_engine(const CudaOptions& options = {});

// "cuda-sim": the cuda engine's operators and kernels run on the host, one
// thread, with GEMM and convolution as plain loops; every build has it. It
// checks the CUDA engine's logic (placement, kernel arguments, kernels)
// without a GPU; it says nothing of the GPU's speed or of cuBLAS/cuDNN.
std::unique_ptr<Engine> make_cuda_sim_engine(const CudaOptions& options = {});

}  // namespace onnxscope
