// The host's launch table: each kernel of kernels/kernel_list.h run as a
// plain loop over its items, for the host runtime. Row kernels run with one
// lane, or with a warp of lanes on host threads (ThreadLanes), so that the
// way a kernel splits a row across the GPU's 32 lanes is checked too.
#include <array>
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>

#include "onnxscope/deadline.h"
#include "cuda/kernels/kernel_list.h"
#include "cuda/kernels/launch.h"

namespace onnxscope::cuda {

namespace {

// One lane of a warp simulated by `count` host threads: every lane takes
// every row, as on the GPU, and meets the others at each reduction (a
// barrier to publish, a barrier before the slots are reused), so all lanes
// get the same result as from the GPU's shuffles (summed in lane order).
class ThreadLanes {
 public:
  struct Warp {
    explicit Warp(int count) : slots(static_cast<size_t>(count)), meet(count) {}
    std::vector<float> slots;
    std::barrier<> meet;
  };
  ThreadLanes(int lane, Warp& warp) : lane_(lane), warp_(&warp) {}
  int lane() const { return lane_; }
  int count() const { return static_cast<int>(warp_->slots.size()); }
  float sum(float v) const {
    return across(v, [](float a, float b) { return a + b; });
  }
  float max(float v) const {
    return across(v, [](float a, float b) { return fmaxf(a, b); });
  }
  float min(float v) const {
    return across(v, [](float a, float b) { return fminf(a, b); });
  }
  float prod(float v) const {
    return across(v, [](float a, float b) { return a * b; });
  }

 private:
  template <class Op>
  float across(float v, Op op) const {
    warp_->slots[static_cast<size_t>(lane_)] = v;
    warp_->meet.arrive_and_wait();
    float r = warp_->slots[0];
    for (size_t i = 1; i < warp_->slots.size(); ++i) r = op(r, warp_->slots[i]);
    warp_->meet.arrive_and_wait();
    return r;
  }
  int lane_;
  Warp* warp_;
};

template <class F>
void run_on_host(const void* args, int64_t n, int lanes) {
  const F& f = *static_cast<const F*>(args);
  if constexpr (is_row_kernel<F>()) {
    if (lanes <= 1) {
      const OneLane lane;
      for (int64_t r = 0; r < n; ++r) {
        if ((r & 255) == 0) poll_deadline();
        f(r, lane);
      }
      return;
    }
    ThreadLanes::Warp warp(lanes);
    std::vector<std::jthread> threads;
    for (int l = 0; l < lanes; ++l)
      threads.emplace_back([&f, &warp, l, n] {
        const ThreadLanes lane(l, warp);
        for (int64_t r = 0; r < n; ++r) f(r, lane);
      });
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if ((i & 4095) == 0) poll_deadline();  // one launch of a huge grid can take minutes here
      f(i);
    }
  }
}

template <class... K>
constexpr std::array<void (*)(const void*, int64_t, int), sizeof...(K)> host_table(KernelList<K...>) {
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

void launch_on_host(int kernel, const void* args, int64_t n, int lanes) {
  static constexpr auto table = host_table(AllKernels{});
  table.at(static_cast<size_t>(kernel))(args, n, lanes);
}

}  // namespace onnxscope::cuda
