#include "onnxscope/buffer.h"

#include <atomic>
#include <mutex>
#include <stdexcept>

namespace onnxscope {
namespace {

// Bytes the buffer owns: a vector, or a string taken over without copying.
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
  return std::make_shared<OwnedBuffer>(std::vector<std::byte>(bytes));
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
