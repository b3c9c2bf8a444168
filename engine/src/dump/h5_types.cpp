#include "dump/h5_types.h"

#include <cstdio>

namespace onnxscope::h5 {

Handle file_type(DataType t) {
  auto copy = [](hid_t base) { return Handle(H5Tcopy(base), H5Tclose); };
  switch (t) {
    case DataType::Float: return copy(H5T_IEEE_F32LE);
    case DataType::Double: return copy(H5T_IEEE_F64LE);
    case DataType::Int8: return copy(H5T_STD_I8LE);
    case DataType::Int16: return copy(H5T_STD_I16LE);
    case DataType::Int32: return copy(H5T_STD_I32LE);
    case DataType::Int64: return copy(H5T_STD_I64LE);
    case DataType::Uint16: return copy(H5T_STD_U16LE);
    case DataType::Uint32: return copy(H5T_STD_U32LE);
    case DataType::Uint64: return copy(H5T_STD_U64LE);
    case DataType::Float16: {
      // IEEE binary16: sign at bit 15, exponent 5 bits at 10, mantissa 10 bits.
      Handle h = copy(H5T_IEEE_F32LE);
      H5Tset_fields(h.get(), 15, 10, 5, 0, 10);
      H5Tset_precision(h.get(), 16);
      H5Tset_size(h.get(), 2);
      H5Tset_ebias(h.get(), 15);
      return h;
    }
    case DataType::Complex64:
    case DataType::Complex128: {
      const bool dbl = t == DataType::Complex128;
      const size_t part = dbl ? 8 : 4;
      Handle h(H5Tcreate(H5T_COMPOUND, 2 * part), H5Tclose);
      H5Tinsert(h.get(), "r", 0, dbl ? H5T_IEEE_F64LE : H5T_IEEE_F32LE);
      H5Tinsert(h.get(), "i", part, dbl ? H5T_IEEE_F64LE : H5T_IEEE_F32LE);
      return h;
    }
    case DataType::String: {
      Handle h = copy(H5T_C_S1);
      H5Tset_size(h.get(), H5T_VARIABLE);
      H5Tset_cset(h.get(), H5T_CSET_UTF8);
      return h;
    }
    case DataType::BFloat16: return copy(H5T_STD_U16LE);  // bit patterns
    default: return copy(H5T_STD_U8LE);                   // uint8, bool, FP8 bits, packed types one per byte
  }
}

size_t stored_element_size(DataType t) {
  if (t == DataType::String) return 0;
  const uint32_t bits = dtype_info(t).bits;
  return bits < 8 ? 1 : bits / 8;
}

std::string escape_name(const std::string& name) {
  if (name == ".") return "%2E";
  std::string out;
  for (char c : name) {
    if (c == '%') out += "%25";
    else if (c == '/') out += "%2F";
    else out += c;
  }
  return out.empty() ? "%00" : out;
}

}  // namespace onnxscope::h5
