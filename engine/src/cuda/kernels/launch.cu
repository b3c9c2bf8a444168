// The GPU's launch table: each kernel of kernels/kernel_list.h as a
// grid-stride loop over its items, or one warp per row for a row kernel.
#include <array>

#include "cuda/kernels/kernel_list.h"
#include "cuda/kernels/launch.h"

namespace onnxscope::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

// A warp's 32 lanes; sums and extremes across them by butterfly shuffles
// (host-callable in name only, for the __host__ __device__ kernels).
struct WarpLanes {
  int l;
  __host__ __device__ int lane() const { return l; }
  __host__ __device__ int count() const { return 32; }
  __host__ __device__ float sum(float v) const {
#ifdef __CUDA_ARCH__
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
#endif
    return v;
  }
  __host__ __device__ float max(float v) const {
#ifdef __CUDA_ARCH__
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
#endif
    return v;
  }
  __host__ __device__ float min(float v) const {
#ifdef __CUDA_ARCH__
    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
#endif
    return v;
  }
  __host__ __device__ float prod(float v) const {
#ifdef __CUDA_ARCH__
    for (int o = 16; o > 0; o >>= 1) v *= __shfl_xor_sync(0xffffffffu, v, o);
#endif
    return v;
  }
};

template <class F>
__global__ void items_kernel(F f, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

// Every lane of a warp takes the same rows, so the shuffles see full warps.
template <class F>
__global__ void rows_kernel(F f, int64_t rows) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const WarpLanes lanes{static_cast<int>(threadIdx.x % 32)};
  for (int64_t r = warp; r < rows; r += warps) f(r, lanes);
}

int blocks_for(int64_t units, int64_t per_block) {
  const int64_t b = (units + per_block - 1) / per_block;
  return static_cast<int>(b < 65535 ? b : 65535);  // grid-stride loops cover the rest
}

template <class F>
int launch_one(const void* args, int64_t n, void* stream) {
  if (n <= 0) return cudaSuccess;
  const F& f = *static_cast<const F*>(args);
  const auto s = static_cast<cudaStream_t>(stream);
  if constexpr (is_row_kernel<F>())
    rows_kernel<F><<<blocks_for(n, kWarpsPerBlock), kThreads, 0, s>>>(f, n);
  else
    items_kernel<F><<<blocks_for(n, kThreads), kThreads, 0, s>>>(f, n);
  return cudaGetLastError();
}

template <class... K>
constexpr std::array<int (*)(const void*, int64_t, void*), sizeof...(K)> gpu_table(KernelList<K...>) {
  return {&launch_one<K>...};
}

}  // namespace

int launch_on_gpu(int kernel, const void* args, int64_t n, void* stream) {
  static constexpr auto table = gpu_table(AllKernels{});
  if (kernel < 0 || kernel >= static_cast<int>(table.size())) return cudaErrorInvalidValue;
  return table[static_cast<size_t>(kernel)](args, n, stream);
}

}  // namespace onnxscope::cuda
