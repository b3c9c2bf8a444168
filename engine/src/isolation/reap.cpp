#include "isolation/reap.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <thread>

namespace onnxscope::isolation {

std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds grace) {
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  for (;;) {
    const pid_t r = waitpid(pid, &status, 0);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
  }
}

}  // namespace onnxscope::isolation
