#include "cpu/thread_pool.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxscope::cpu {
namespace {

// One parallel region. Each thread owns a contiguous run of chunks and takes
// them in order, so a thread meets the same bytes run after run (they stay
// in its core's cache: handed out first come, first served, Add over 0.4 MB
// ran 40% slower); a thread that runs out takes chunks from the others'
// runs, so a thread the OS delays does not hold up the region. The first
// exception a chunk throws is kept and rethrown by the caller once every
// thread has left.
struct Region {
  const std::function<void(int64_t)>* task = nullptr;
  int64_t chunks = 0;
  int owners = 1;
  std::unique_ptr<std::atomic<int64_t>[]> next;  // per owner: its next chunk
  std::mutex error_mutex;
  std::exception_ptr error;

  void start(int64_t n_chunks, int n_owners) {
    chunks = n_chunks;
    owners = n_owners;
    next = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(owners));
    for (int o = 0; o < owners; ++o) next[o].store(first(o), std::memory_order_relaxed);
  }
  int64_t first(int o) const { return chunks * o / owners; }
  void run(int64_t c) {
    try {
      (*task)(c);
    } catch (...) {
      std::lock_guard<std::mutex> lk(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  void work(int self) {
    for (int k = 0; k < owners; ++k) {
      const int o = (self + k) % owners;
      const int64_t end = first(o + 1);
      for (;;) {
        const int64_t c = next[o].fetch_add(1, std::memory_order_relaxed);
        if (c >= end) break;
        run(c);
      }
    }
  }
};

// libgomp's entry for `#pragma omp parallel` (its ABI since GCC 4.9). Debian's
// libdnnl runs on libgomp, so its threads are already there: running our
// kernels on the same team means one set of threads under one waiting policy
// (app/omp_defaults.cpp). With two pools, a oneDNN thread still spinning after
// its primitive takes the core from our own worker on a 2-core machine.
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);

GompParallel gomp_parallel() {
  static const GompParallel fn = [] {
    const char* pick = std::getenv("ONNXSCOPE_CPU_POOL");  // "own": our threads, for comparison
    if (pick && std::strcmp(pick, "own") == 0) return GompParallel{};
    return reinterpret_cast<GompParallel>(dlsym(RTLD_DEFAULT, "GOMP_parallel"));
  }();
  return fn;
}

using OmpThreadNum = int (*)();
OmpThreadNum omp_thread_num() {
  static const OmpThreadNum fn = reinterpret_cast<OmpThreadNum>(dlsym(RTLD_DEFAULT, "omp_get_thread_num"));
  return fn;
}
void run_region_body(void* region) {
  const OmpThreadNum num = omp_thread_num();
  static_cast<Region*>(region)->work(num ? num() : 0);
}

// Our own threads, where libgomp is not loaded (a oneDNN built on another
// runtime) or ONNXSCOPE_CPU_POOL=own.
class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(Region& r) {
    std::unique_lock<std::mutex> lk(m_);
    region_ = &r;
    active_ = static_cast<int>(workers_.size());
    ++generation_;
    lk.unlock();
    cv_.notify_all();
    r.work(0);  // the caller takes chunks too
    lk.lock();
    done_cv_.wait(lk, [&] { return active_ == 0; });
    region_ = nullptr;
  }

 private:
  void loop(int self) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lk(m_);
      cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      Region* r = region_;
      lk.unlock();
      r->work(self);
      lk.lock();
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  Region* region_ = nullptr;
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

std::mutex g_mutex;
std::unique_ptr<Pool> g_pool;
int g_threads = 0;
// g_threads once resolved, read without the mutex: every kernel call asks.
std::atomic<int> g_threads_seen{0};

int resolved_threads() {  // under g_mutex
  if (g_threads <= 0) g_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  g_threads_seen.store(g_threads, std::memory_order_relaxed);
  return g_threads;
}

Pool& own_pool() {
  std::lock_guard<std::mutex> lk(g_mutex);
  if (!g_pool) g_pool = std::make_unique<Pool>(resolved_threads());
  return *g_pool;
}

// One parallel region at a time; nested calls run inline.
std::mutex g_region;
thread_local bool t_in_region = false;

}  // namespace

void set_thread_count(int threads) {
  std::lock_guard<std::mutex> lk(g_mutex);
  const int want = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (want == g_threads) return;
  g_threads = want;
  g_threads_seen.store(want, std::memory_order_relaxed);
  g_pool.reset();
}

int thread_count() {
  if (const int n = g_threads_seen.load(std::memory_order_relaxed); n > 0) return n;
  std::lock_guard<std::mutex> lk(g_mutex);
  return resolved_threads();
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t threads = thread_count();
  if (threads == 1 || n <= grain || t_in_region) {
    fn(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads * 4, (n + grain - 1) / std::max<int64_t>(grain, 1));
  // A multiple of the threads, so each gets the same share: [1,128,768]
  // in grains of 32768 was 3 chunks, one thread doing two of them.
  if (chunks % threads != 0) chunks = std::min<int64_t>(n, (chunks / threads + 1) * threads);
  const int64_t per = (n + chunks - 1) / chunks;
  std::lock_guard<std::mutex> region_lock(g_region);
  const std::function<void(int64_t)> task = [&](int64_t c) {
    const int64_t b = c * per, e = std::min(n, b + per);
    if (b >= e) return;
    t_in_region = true;
    try {
      fn(b, e);
    } catch (...) {
      t_in_region = false;
      throw;
    }
    t_in_region = false;
  };
  Region r;
  r.task = &task;
  if (GompParallel gomp = gomp_parallel()) {
    const auto team = static_cast<unsigned>(std::min<int64_t>(threads, chunks));
    r.start(chunks, static_cast<int>(team));
    gomp(run_region_body, &r, team, 0);
  } else {
    Pool& pool = own_pool();
    r.start(chunks, pool.size());
    pool.run(r);
  }
  if (r.error) std::rethrow_exception(r.error);
}

LaneShare share_lanes(int64_t rows, int64_t lanes, int64_t at_least) {
  const int64_t threads = thread_count(), per_row = (threads + rows - 1) / std::max<int64_t>(rows, 1);
  if (per_row <= 1) return {1, lanes};
  return {per_row, std::min(lanes, std::max(at_least, ((lanes + per_row - 1) / per_row + 15) / 16 * 16))};
}

void start_threads() {
  const int64_t threads = thread_count();
  if (threads <= 1) return;
  // Each thread also makes one allocation: glibc gives a thread its own heap
  // (a 64 MiB reservation mapped and trimmed) at its first malloc, which
  // otherwise falls in the first run. The chunks wait for one another (for
  // at most 20 ms) so that no thread takes a second one and leaves another
  // thread without.
  std::atomic<int64_t> arrived{0};
  parallel_for(threads, 1, [&](int64_t, int64_t) {
    void* p = std::malloc(64);
    asm volatile("" : : "r"(p) : "memory");  // kept: a malloc/free pair alone may be dropped
    std::free(p);
    arrived.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (arrived.load() < threads && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  });
}

}  // namespace onnxscope::cpu
