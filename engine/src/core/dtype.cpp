#include "onnxscope/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace onnxscope {
namespace {

using D = DataType;
// type, name, onnx_name, bits, float, signed, integer, complex
constexpr std::array<DTypeInfo, kMaxDataType + 1> kInfo = {{
    {D::Undefined, "undefined", "UNDEFINED", 0, false, false, false, false},
    {D::Float, "float", "FLOAT", 32, true, true, false, false},
    {D::Uint8, "uint8", "UINT8", 8, false, false, true, false},
    {D::Int8, "int8", "INT8", 8, false, true, true, false},
    {D::Uint16, "uint16", "UINT16", 16, false, false, true, false},
    {D::Int16, "int16", "INT16", 16, false, true, true, false},
    {D::Int32, "int32", "INT32", 32, false, true, true, false},
    {D::Int64, "int64", "INT64", 64, false, true, true, false},
    {D::String, "string", "STRING", 0, false, false, false, false},
    {D::Bool, "bool", "BOOL", 8, false, false, false, false},
    {D::Float16, "float16", "FLOAT16", 16, true, true, false, false},
    {D::Double, "double", "DOUBLE", 64, true, true, false, false},
    {D::Uint32, "uint32", "UINT32", 32, false, false, true, false},
    {D::Uint64, "uint64", "UINT64", 64, false, false, true, false},
    {D::Complex64, "complex64", "COMPLEX64", 64, true, true, false, true},
    {D::Complex128, "complex128", "COMPLEX128", 128, true, true, false, true},
    {D::BFloat16, "bfloat16", "BFLOAT16", 16, true, true, false, false},
    {D::Float8E4M3FN, "float8e4m3fn", "FLOAT8E4M3FN", 8, true, true, false, false},
    {D::Float8E4M3FNUZ, "float8e4m3fnuz", "FLOAT8E4M3FNUZ", 8, true, true, false, false},
    {D::Float8E5M2, "float8e5m2", "FLOAT8E5M2", 8, true, true, false, false},
    {D::Float8E5M2FNUZ, "float8e5m2fnuz", "FLOAT8E5M2FNUZ", 8, true, true, false, false},
    {D::Uint4, "uint4", "UINT4", 4, false, false, true, false},
    {D::Int4, "int4", "INT4", 4, false, true, true, false},
    {D::Float4E2M1, "float4e2m1", "FLOAT4E2M1", 4, true, true, false, false},
    {D::Float8E8M0, "float8e8m0", "FLOAT8E8M0", 8, true, false, false, false},
    {D::Uint2, "uint2", "UINT2", 2, false, false, true, false},
    {D::Int2, "int2", "INT2", 2, false, true, true, false},
    {D::Float6E2M3, "float6e2m3", "FLOAT6E2M3", 6, true, true, false, false},
    {D::Float6E3M2, "float6e3m2", "FLOAT6E3M2", 6, true, true, false, false},
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

bool is_known_dtype(int32_t value) { return value > 0 && value <= kMaxDataType; }

const DTypeInfo& dtype_info(DataType t) {
  auto v = static_cast<int32_t>(t);
  return is_known_dtype(v) ? kInfo[static_cast<size_t>(v)] : kInfo[0];
}

std::string_view dtype_name(DataType t) { return dtype_info(t).name; }

std::optional<DataType> dtype_from_name(std::string_view name) {
  if (name.starts_with("tensor(") && name.ends_with(")")) name = name.substr(7, name.size() - 8);
  for (const auto& info : kInfo) {
    if (info.type == DataType::Undefined) continue;
    if (iequals(name, info.name) || name == info.onnx_name) return info.type;
  }
  return std::nullopt;
}

bool is_packed_dtype(DataType t) {
  uint32_t bits = dtype_info(t).bits;
  return bits > 0 && bits < 8;
}

std::optional<uint64_t> storage_bytes(DataType t, uint64_t count) {
  const auto& info = dtype_info(t);
  if (info.bits == 0) return std::nullopt;
  uint64_t bits = 0;
  if (__builtin_mul_overflow(count, uint64_t{info.bits}, &bits)) return std::nullopt;
  return bits / 8 + (bits % 8 != 0 ? 1 : 0);  // packed types round up to whole bytes
}

}  // namespace onnxscope
