// The wall-clock limit of the run under way on this thread
// (RunLimits::timeout_seconds), for kernels where one node alone can take
// long (a convolution a mutated model padded to 65,536 columns): they call
// poll_deadline() every so often (per output plane, row or block), which
// throws DeadlineExceeded once the limit has passed; the engine reports it as
// the run's timeout at that node. The engines set it around each run
// (DeadlineScope); other threads see none, so pool threads never throw.
#pragma once

#include <chrono>
#include <stdexcept>

namespace onnxscope {

struct DeadlineExceeded : std::runtime_error {
  DeadlineExceeded() : std::runtime_error("the run passed its time limit inside this node") {}
};

namespace detail {
inline thread_local std::chrono::steady_clock::time_point t_deadline = std::chrono::steady_clock::time_point::max();
}

inline void poll_deadline() {
  if (detail::t_deadline != std::chrono::steady_clock::time_point::max() &&
      std::chrono::steady_clock::now() > detail::t_deadline)
    throw DeadlineExceeded();
}

// Sets this thread's deadline for its lifetime (none when `at` is max), then
// puts back the one before (a run nested in another keeps the outer limit
// when it has none of its own).
class DeadlineScope {
 public:
  explicit DeadlineScope(std::chrono::steady_clock::time_point at) : saved_(detail::t_deadline) {
    if (at != std::chrono::steady_clock::time_point::max()) detail::t_deadline = at;
  }
  ~DeadlineScope() { detail::t_deadline = saved_; }
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  std::chrono::steady_clock::time_point saved_;
};

}  // namespace onnxscope
