// Element types of ONNX tensors: the numbering of TensorProto.DataType, names,
// bit widths and the storage rules for the packed sub-byte types.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace onnxscope {

// Values are TensorProto.DataType numbers so a proto's data_type casts directly
// once is_known_dtype() said yes.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  Uint4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  Uint2 = 25,
  Int2 = 26,
  Float6E2M3 = 27,
  Float6E3M2 = 28,
};

inline constexpr int32_t kMaxDataType = 28;

struct DTypeInfo {
  DataType type;
  std::string_view name;       // lower-case, as in ONNX type strings: "float", "bfloat16"
  std::string_view onnx_name;  // enum spelling: "FLOAT", "BFLOAT16"
  uint32_t bits;               // bits per element; 0 for string
  bool is_float;               // any floating-point format, complex included
  bool is_signed;
  bool is_integer;
  bool is_complex;
};

bool is_known_dtype(int32_t value);
// Info for a known type; Undefined's entry for anything else.
const DTypeInfo& dtype_info(DataType t);
std::string_view dtype_name(DataType t);
// Parses "float", "tensor(float)" style names and enum spellings ("FLOAT").
std::optional<DataType> dtype_from_name(std::string_view name);

// Types stored several elements to a byte (4-, 2- and 6-bit formats).
bool is_packed_dtype(DataType t);

// Bytes needed to store `count` elements in ONNX's raw_data layout, or nullopt
// on overflow or for strings (which have no fixed-width layout).
std::optional<uint64_t> storage_bytes(DataType t, uint64_t count);

}  // namespace onnxscope
