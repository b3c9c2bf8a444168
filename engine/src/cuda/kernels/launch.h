// Launching a kernel of kernels/kernel_list.h by its number, on the GPU
// (launch.cu, CUDA builds) or on the host (launch_host.cpp, every build).
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxscope::cuda {

// Runs kernel `kernel` over n items (rows for a row kernel); args points at
// its functor. A row kernel runs with `lanes` lanes: 1, or a warp simulated
// on that many host threads.
void launch_on_host(int kernel, const void* args, int64_t n, int lanes = 1);
// Bytes of kernel `kernel`'s functor (to keep a copy of its arguments).
size_t kernel_args_size(int kernel);
// Queues it on `stream` (a cudaStream_t); returns the cudaError_t of the launch.
int launch_on_gpu(int kernel, const void* args, int64_t n, void* stream);

}  // namespace onnxscope::cuda
