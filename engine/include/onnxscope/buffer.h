// Byte storage behind tensors: owned memory, a protobuf string taken over
// without copying, or a read-only memory-mapped slice of an external-data file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnxscope {

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const std::byte* data() const = 0;
  virtual std::size_t size() const = 0;
  // Writable pointer, or nullptr for read-only storage (mapped files).
  virtual std::byte* mutable_data() { return nullptr; }
  // True when the bytes belong to this buffer alone (not a view into another
  // buffer, not a mapping): with no other owner, a kernel may write them.
  virtual bool owns_bytes() const { return false; }
};

// Zero-initialised heap storage. Throws std::bad_alloc like any allocation:
// callers size-check before asking (see limits.h).
std::shared_ptr<Buffer> make_owned_buffer(std::size_t bytes);
std::shared_ptr<Buffer> make_owned_buffer(std::vector<std::byte> bytes);
// Takes over a string (e.g. a TensorProto's raw_data) without copying.
std::shared_ptr<Buffer> make_string_buffer(std::string bytes);
// A view into part of another buffer that keeps it alive.
std::shared_ptr<Buffer> make_slice_buffer(std::shared_ptr<Buffer> parent, std::size_t offset,
                                          std::size_t bytes);

}  // namespace onnxscope
