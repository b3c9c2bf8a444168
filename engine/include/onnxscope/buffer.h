// Byte storage behind tensors: owned memory, a protobuf string taken over
// without copying, or a read-only memory-mapped slice of an external-data file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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
  // Gives the bytes' memory back while a faithful copy lives elsewhere (an
  // engine's repacked weights). `restore` writes the original bytes into the
  // storage it is handed; it runs when the bytes are next asked for, and the
  // buffer then stays resident (a buffer someone still reads is not restored
  // on every run). False, and nothing changes, where the storage cannot be
  // given back (views, mappings) or was given back and asked for before.
  // The caller must know no one holds a pointer into the bytes meanwhile.
  virtual bool release_bytes(std::function<void(std::byte*)> restore) {
    (void)restore;
    return false;
  }
  // Whether the bytes are given back now (release_bytes) and not yet read again.
  virtual bool bytes_released() const { return false; }
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
