// The host's launch table: each kernel of kernels/kernel_list.h run as a
// plain loop over its items (rows with one lane), for the host runtime.
#include <array>

#include "cuda/kernels/kernel_list.h"
#include "cuda/kernels/launch.h"

namespace onnxscope::cuda {

namespace {

template <class F>
void run_on_host(const void* args, int64_t n) {
  const F& f = *static_cast<const F*>(args);
  if constexpr (is_row_kernel<F>()) {
    const OneLane lane;
    for (int64_t r = 0; r < n; ++r) f(r, lane);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

template <class... K>
constexpr std::array<void (*)(const void*, int64_t), sizeof...(K)> host_table(KernelList<K...>) {
  return {&run_on_host<K>...};
}

template <class... K>
constexpr std::array<size_t, sizeof...(K)> size_table(KernelList<K...>) {
  return {sizeof(K)...};
}

}  // namespace

size_t kernel_args_size(int kernel) {
  static constexpr auto table = size_table(AllKernels{});
  return table.at(static_cast<size_t>(kernel));
}

void launch_on_host(int kernel, const void* args, int64_t n) {
  static constexpr auto table = host_table(AllKernels{});
  table.at(static_cast<size_t>(kernel))(args, n);
}

}  // namespace onnxscope::cuda
