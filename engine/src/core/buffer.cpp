#include "onnxscope/buffer.h"

#include <stdexcept>

namespace onnxscope {
namespace {

class OwnedBuffer final : public Buffer {
 public:
  explicit OwnedBuffer(std::vector<std::byte> b) : bytes_(std::move(b)) {}
  const std::byte* data() const override { return bytes_.data(); }
  std::size_t size() const override { return bytes_.size(); }
  std::byte* mutable_data() override { return bytes_.data(); }
  bool owns_bytes() const override { return true; }

 private:
  std::vector<std::byte> bytes_;
};

class StringBuffer final : public Buffer {
 public:
  explicit StringBuffer(std::string s) : s_(std::move(s)) {}
  const std::byte* data() const override { return reinterpret_cast<const std::byte*>(s_.data()); }
  std::size_t size() const override { return s_.size(); }
  std::byte* mutable_data() override { return reinterpret_cast<std::byte*>(s_.data()); }
  bool owns_bytes() const override { return true; }

 private:
  std::string s_;
};

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
