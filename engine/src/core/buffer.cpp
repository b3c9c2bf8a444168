#include "onnxscope/buffer.h"

#include "core/align.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <mutex>
#include <stdexcept>

namespace onnxscope {
namespace {

// Zeroed bytes from calloc: a large block comes straight from the kernel's
// zero pages, with no memset (a reference output of 256 KB was zeroed page
// by page on one thread before the kernel's threads wrote every byte of it
// again; now each page faults in where it is first written).
// The bytes start on a cache line (calloc's block is 63 bytes longer and
// the start rounded up): at malloc's 16-byte alignment every 64-byte vector
// load or store of a kernel on them (model inputs the CLI makes or reads,
// the reference's outputs) crossed two lines.
class ZeroedBytes {
 public:
  using value_type = std::byte;
  ZeroedBytes() = default;
  ZeroedBytes(std::size_t n, std::byte) : size_(n) {
    if (n == 0) return;
    if (n > SIZE_MAX - (kLine - 1)) throw std::bad_alloc();
    block_ = static_cast<std::byte*>(std::calloc(n + (kLine - 1), 1));
    if (!block_) throw std::bad_alloc();
    data_ = align_up(block_, kLine);
  }
  ZeroedBytes(const ZeroedBytes&) = delete;
  ZeroedBytes& operator=(const ZeroedBytes&) = delete;
  ZeroedBytes(ZeroedBytes&& o) noexcept { swap(o); }
  ZeroedBytes& operator=(ZeroedBytes&& o) noexcept {
    ZeroedBytes(std::move(o)).swap(*this);
    return *this;
  }
  ~ZeroedBytes() { std::free(block_); }
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  void swap(ZeroedBytes& o) noexcept {
    std::swap(block_, o.block_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }

 private:
  static constexpr std::uintptr_t kLine = 64;
  std::byte* block_ = nullptr;  // calloc's, for free
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Bytes the buffer owns: zeroed, a vector, or a string taken over without copying.
// They can be given back (release_bytes) and come back on the next read.
template <class Storage>
class HeldBytes final : public Buffer {
 public:
  explicit HeldBytes(Storage s) : bytes_(std::move(s)), size_(bytes_.size()) {}
  const std::byte* data() const override {
    if (released_.load(std::memory_order_acquire)) restore();
    return reinterpret_cast<const std::byte*>(bytes_.data());
  }
  std::size_t size() const override { return size_; }
  std::byte* mutable_data() override {
    if (released_.load(std::memory_order_acquire)) restore();
    return reinterpret_cast<std::byte*>(bytes_.data());
  }
  bool owns_bytes() const override { return true; }
  bool release_bytes(std::function<void(std::byte*)> restore) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (!restore || size_ == 0 || asked_back_ || released_.load(std::memory_order_relaxed)) return false;
    restore_ = std::move(restore);
    Storage().swap(bytes_);
    released_.store(true, std::memory_order_release);
    return true;
  }
  bool bytes_released() const override { return released_.load(std::memory_order_acquire); }

 private:
  void restore() const {
    std::lock_guard<std::mutex> lk(mu_);
    if (!released_.load(std::memory_order_relaxed)) return;
    Storage back(size_, typename Storage::value_type{});  // may throw bad_alloc, like any allocation
    restore_(reinterpret_cast<std::byte*>(back.data()));
    bytes_.swap(back);
    restore_ = nullptr;
    asked_back_ = true;
    released_.store(false, std::memory_order_release);
  }
  mutable Storage bytes_;
  const std::size_t size_;
  mutable std::mutex mu_;
  mutable std::atomic<bool> released_{false};
  mutable bool asked_back_ = false;  // released once and read again: stays
  mutable std::function<void(std::byte*)> restore_;
};

using ZeroedBuffer = HeldBytes<ZeroedBytes>;
using OwnedBuffer = HeldBytes<std::vector<std::byte>>;
using StringBuffer = HeldBytes<std::string>;

class SliceBuffer final : public Buffer {
 public:
  SliceBuffer(std::shared_ptr<Buffer> parent, std::size_t offset, std::size_t bytes)
      : parent_(std::move(parent)), offset_(offset), bytes_(bytes) {}
  const std::byte* data() const override { return parent_->data() + offset_; }
  std::size_t size() const override { return bytes_; }
  std::byte* mutable_data() override {
    std::byte* p = parent_->mutable_data();
    return p ? p + offset_ : nullptr;
  }

 private:
  std::shared_ptr<Buffer> parent_;
  std::size_t offset_, bytes_;
};

}  // namespace

std::shared_ptr<Buffer> make_owned_buffer(std::size_t bytes) {
  return std::make_shared<ZeroedBuffer>(ZeroedBytes(bytes, std::byte{0}));
}
std::shared_ptr<Buffer> make_owned_buffer(std::vector<std::byte> bytes) {
  return std::make_shared<OwnedBuffer>(std::move(bytes));
}
std::shared_ptr<Buffer> make_string_buffer(std::string bytes) {
  return std::make_shared<StringBuffer>(std::move(bytes));
}
std::shared_ptr<Buffer> make_slice_buffer(std::shared_ptr<Buffer> parent, std::size_t offset,
                                          std::size_t bytes) {
  if (!parent || offset > parent->size() || bytes > parent->size() - offset)
    throw std::out_of_range("buffer slice outside its parent");
  return std::make_shared<SliceBuffer>(std::move(parent), offset, bytes);
}

}  // namespace onnxscope
