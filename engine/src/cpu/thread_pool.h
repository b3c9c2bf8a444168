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

// Rows of `lanes` independent lanes, `rows` of them: where the rows are
// fewer than the threads, each row's lanes can be shared among `per_row`
// threads in shares of `lanes` (a multiple of 16, a vector, and at least
// `at_least`); per_row is 1 where the rows alone give every thread work.
struct LaneShare {
  int64_t per_row;
  int64_t lanes;
};
LaneShare share_lanes(int64_t rows, int64_t lanes, int64_t at_least);

// Starts the pool's threads now (an empty region), so the first run of a
// prepared model does not pay for creating them.
void start_threads();

}  // namespace onnxscope::cpu
