// The CPU engine's intra-op thread pool: parallel_for over index ranges.
// One process-wide pool sized by --threads (default: every core).
#pragma once

#include <cstdint>
#include <functional>

namespace onnxscope::cpu {

void set_thread_count(int threads);  // 0: hardware concurrency
int thread_count();

// Calls fn(begin, end) on disjoint chunks covering [0, n), on the pool's
// threads and the caller's; returns when all are done. Runs inline when n is
// smaller than `grain` or the pool has one thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Starts the pool's threads now (an empty region), so the first run of a
// prepared model does not pay for creating them.
void start_threads();

}  // namespace onnxscope::cpu
