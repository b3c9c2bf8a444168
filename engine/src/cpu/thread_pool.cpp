#include "cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxscope::cpu {
namespace {

class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
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

  void run(int64_t chunks, const std::function<void(int64_t)>& task) {
    std::unique_lock<std::mutex> lk(m_);
    task_ = &task;
    next_ = 0;
    chunks_ = chunks;
    pending_ = chunks;
    ++generation_;
    lk.unlock();
    cv_.notify_all();
    work();  // the caller takes chunks too
    lk.lock();
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void work() {
    for (;;) {
      int64_t c = next_.fetch_add(1);
      if (c >= chunks_) return;
      (*task_)(c);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lk(m_);
        done_cv_.notify_all();
      }
    }
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lk(m_);
      cv_.wait(lk, [&] { return stop_ || (generation_ != seen && task_); });
      if (stop_) return;
      seen = generation_;
      lk.unlock();
      work();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t)>* task_ = nullptr;
  std::atomic<int64_t> next_{0}, pending_{0};
  int64_t chunks_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

std::mutex g_mutex;
std::unique_ptr<Pool> g_pool;
int g_threads = 0;

Pool& pool() {
  std::lock_guard<std::mutex> lk(g_mutex);
  if (!g_pool) {
    int n = g_threads > 0 ? g_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    g_pool = std::make_unique<Pool>(n);
  }
  return *g_pool;
}

// One parallel region at a time; nested calls run inline.
std::mutex g_region;
thread_local bool t_in_region = false;

}  // namespace

void set_thread_count(int threads) {
  std::lock_guard<std::mutex> lk(g_mutex);
  int want = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (g_pool && g_pool->size() == want) return;
  g_threads = want;
  g_pool.reset();
}

int thread_count() { return pool().size(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  Pool& p = pool();
  const int64_t threads = p.size();
  if (threads == 1 || n <= grain || t_in_region) {
    fn(0, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads * 4, (n + grain - 1) / std::max<int64_t>(grain, 1));
  const int64_t per = (n + chunks - 1) / chunks;
  std::lock_guard<std::mutex> region(g_region);
  std::function<void(int64_t)> task = [&](int64_t c) {
    const int64_t b = c * per, e = std::min(n, b + per);
    if (b >= e) return;
    t_in_region = true;
    fn(b, e);
    t_in_region = false;
  };
  p.run(chunks, task);
}

}  // namespace onnxscope::cpu
