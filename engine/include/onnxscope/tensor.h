// A dense tensor value: element type, shape and bytes in ONNX's raw_data layout
// (little-endian, row-major, sub-byte types packed LSB first). Strings are kept
// as a vector of byte strings.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "onnxscope/buffer.h"
#include "onnxscope/dtype.h"

namespace onnxscope {

using Shape = std::vector<int64_t>;

// Product of dims, or nullopt if a dim is negative or the product overflows.
std::optional<uint64_t> checked_element_count(std::span<const int64_t> dims);
std::string shape_to_string(std::span<const int64_t> dims);  // "[2,3,4]"

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor; throws std::length_error if the size overflows.
  static Tensor zeros(DataType type, Shape shape);
  // Wraps existing storage; `buffer` must hold at least storage_bytes() bytes.
  static Tensor from_buffer(DataType type, Shape shape, std::shared_ptr<Buffer> buffer);
  static Tensor from_strings(Shape shape, std::vector<std::string> strings);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  uint64_t element_count() const { return count_; }
  // Bytes of element data (0 for strings).
  uint64_t byte_size() const;
  bool is_string() const { return dtype_ == DataType::String; }
  bool empty() const { return dtype_ == DataType::Undefined; }

  const std::byte* raw() const { return buffer_ ? buffer_->data() : nullptr; }
  // Copies read-only (mapped) storage first so writes never reach a file.
  std::byte* mutable_raw();
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(raw()); }
  template <typename T>
  T* mutable_data() { return reinterpret_cast<T*>(mutable_raw()); }

  const std::vector<std::string>& strings() const { return strings_; }
  std::vector<std::string>& mutable_strings() { return strings_; }

  // Element i widened to double (complex: real part; string: error).
  double element_as_double(uint64_t i) const;
  // Element i as int64 for integer and bool types (floats truncate).
  int64_t element_as_int64(uint64_t i) const;
  // Elements [first, first + count) as element_as_double / element_as_int64
  // give them, decoded with one type dispatch for the whole run: what a
  // whole-tensor pass (diff, statistics) uses instead of one call per element.
  void elements_as_double(uint64_t first, uint64_t count, double* out) const;
  void elements_as_int64(uint64_t first, uint64_t count, int64_t* out) const;

 private:
  DataType dtype_ = DataType::Undefined;
  Shape shape_;
  uint64_t count_ = 0;
  std::shared_ptr<Buffer> buffer_;
  std::vector<std::string> strings_;
};

// A bool tensor from outside (a model file, an input file, a dump, a plugin's
// output) may hold bytes other than 0 and 1. They are true, as numpy and ONNX
// Runtime read them; this sets each to 1 (copying read-only storage first)
// and returns how many it changed, so no kernel sees another byte. 0 for a
// tensor of another type.
uint64_t normalize_bool_bytes(Tensor& t);

// Unpacks sub-byte element i of packed storage to its bit pattern (no sign
// extension; see float_formats.h and dtype helpers for interpretation).
uint8_t packed_element_bits(DataType t, const std::byte* data, uint64_t i);
void set_packed_element_bits(DataType t, std::byte* data, uint64_t i, uint8_t bits);
// The codes of elements [first, first + count) of packed (or one-byte) storage, one per byte.
void unpack_element_bits(DataType t, const std::byte* data, uint64_t first, uint64_t count, uint8_t* out);

}  // namespace onnxscope
