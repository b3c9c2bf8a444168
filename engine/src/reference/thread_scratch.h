// Scratch a kernel needs on every run, kept by the thread between calls.
// glibc maps a block past 128 KiB of its own and unmaps it on free; mapping,
// faulting in and unmapping a recurrent layer's packed weights and
// projections again on every run cost more than a small layer's arithmetic
// (munmap in a process with threads is a TLB shoot-down on every core: 40-70
// us each). The vector is lent for the borrower's lifetime; a second
// borrower on the same thread meanwhile (a nested run) gets one of its own,
// and the larger of the two is kept, up to 16 MiB.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace onnxscope::ref {

// An allocator whose resize leaves new elements uninitialised: scratch is
// written before it is read, and zeroing it first was one more pass. Its
// blocks start on a cache line: glibc's are 16 bytes past one, so every
// 64-byte vector load of a packed panel touched two lines.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  static constexpr std::align_val_t kAlign{64};
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new(n * sizeof(T), kAlign));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using ScratchVector = std::vector<T, UninitializedAllocator<T>>;

template <typename T, typename Tag>
class ThreadScratch {
 public:
  ThreadScratch() { v_.swap(slot()); }
  ThreadScratch(ThreadScratch&& o) noexcept : v_(std::move(o.v_)) {}
  ThreadScratch& operator=(ThreadScratch&&) = delete;
  ThreadScratch(const ThreadScratch&) = delete;
  ~ThreadScratch() {
    if (v_.capacity() > slot().capacity() && v_.capacity() * sizeof(T) <= kKeepBytes) slot().swap(v_);
  }
  ScratchVector<T>& operator*() { return v_; }
  const ScratchVector<T>& operator*() const { return v_; }
  ScratchVector<T>* operator->() { return &v_; }
  const ScratchVector<T>* operator->() const { return &v_; }

 private:
  // A larger block goes back to the system after the run: a large layer's
  // arithmetic dwarfs mapping it again, and a session should not hold it.
  static constexpr size_t kKeepBytes = size_t{16} << 20;
  static ScratchVector<T>& slot() {
    thread_local ScratchVector<T> kept;
    return kept;
  }
  ScratchVector<T> v_;
};

}  // namespace onnxscope::ref
