// Ending a child process: the worker of an isolated engine, the child that
// reads a dump.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>

namespace onnxscope::isolation {

// Waits up to `grace` for child `pid` to exit by itself, then kills it
// (SIGKILL) and waits for that. Its wait status; nullopt when it cannot be
// waited for (not our child, or already reaped).
std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds grace);

}  // namespace onnxscope::isolation
