// Writing the inputs a run used as an .npz archive (--save-inputs), so the
// same values can feed another run, another engine or numpy: a zip of .npy
// members, stored (not compressed), each with its CRC-32.
#include <zlib.h>

#include <cstring>
#include <fstream>

#include "onnxscope/diagnostics.h"
#include "onnxscope/inputs.h"

namespace onnxscope {
namespace {

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) {
  throw Error(Diagnostic{Severity::Error, "bad-npz", Location{p.string()}, what, {}});
}

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The .npy descr of a type, or "" for one .npy cannot hold.
const char* descr_of(DataType t) {
  switch (t) {
    case DataType::Float: return "<f4";
    case DataType::Double: return "<f8";
    case DataType::Float16: return "<f2";
    case DataType::Int8: return "|i1";
    case DataType::Int16: return "<i2";
    case DataType::Int32: return "<i4";
    case DataType::Int64: return "<i8";
    case DataType::Uint8: return "|u1";
    case DataType::Uint16: return "<u2";
    case DataType::Uint32: return "<u4";
    case DataType::Uint64: return "<u8";
    case DataType::Bool: return "|b1";
    case DataType::Complex64: return "<c8";
    case DataType::Complex128: return "<c16";
    default: return "";
  }
}

std::string npy_bytes(const std::filesystem::path& path, const std::string& name, const Tensor& t0) {
  Tensor t = t0;
  if (t.dtype() == DataType::BFloat16) {  // exact in float32
    Tensor f = Tensor::zeros(DataType::Float, t.shape());
    for (uint64_t i = 0; i < t.element_count(); ++i) f.mutable_data<float>()[i] = static_cast<float>(t.element_as_double(i));
    t = std::move(f);
  }
  const std::string descr = descr_of(t.dtype());
  if (descr.empty())
    fail(path, "input '" + name + "' is " + std::string(dtype_name(t.dtype())) + ", which an .npy array cannot hold");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : i + 1 < t.shape().size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header + newline: a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  put(out, header.size(), 2);
  out += header;
  out.append(reinterpret_cast<const char*>(t.raw()), t.byte_size());
  return out;
}

}  // namespace

void write_npz(const std::filesystem::path& path, const NamedValues& values) {
  struct Member {
    std::string name;
    uint32_t crc;
    uint64_t size, offset;
  };
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot write");
  std::vector<Member> members;
  uint64_t offset = 0;
  for (const auto& [name, v] : values) {
    if (!v.is_tensor()) fail(path, "input '" + name + "' is " + v.describe() + ", not a tensor: an .npz holds tensors only");
    const std::string data = npy_bytes(path, name, v.tensor());
    const std::string file = name + ".npy";
    if (data.size() >= 0xffffffffull || offset >= 0xffffffffull)
      fail(path, "input '" + name + "' makes the archive larger than 4 GiB, which this writer does not support");
    const uint32_t crc = static_cast<uint32_t>(
        crc32_z(crc32_z(0, nullptr, 0), reinterpret_cast<const Bytef*>(data.data()), data.size()));
    std::string local;
    put(local, 0x04034b50, 4);
    put(local, 20, 2);  // version needed
    put(local, 0, 2);   // flags
    put(local, 0, 2);   // stored
    put(local, 0, 4);   // time, date
    put(local, crc, 4);
    put(local, data.size(), 4);
    put(local, data.size(), 4);
    put(local, file.size(), 2);
    put(local, 0, 2);
    local += file;
    out.write(local.data(), static_cast<std::streamsize>(local.size()));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    members.push_back({file, crc, data.size(), offset});
    offset += local.size() + data.size();
  }
  std::string central;
  for (const auto& m : members) {
    put(central, 0x02014b50, 4);
    put(central, 20, 2);  // made by
    put(central, 20, 2);  // needed
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 4);
    put(central, m.crc, 4);
    put(central, m.size, 4);
    put(central, m.size, 4);
    put(central, m.name.size(), 2);
    put(central, 0, 2);  // extra
    put(central, 0, 2);  // comment
    put(central, 0, 2);  // disk
    put(central, 0, 2);  // internal attributes
    put(central, 0, 4);  // external attributes
    put(central, m.offset, 4);
    central += m.name;
  }
  std::string end;
  put(end, 0x06054b50, 4);
  put(end, 0, 2);
  put(end, 0, 2);
  put(end, members.size(), 2);
  put(end, members.size(), 2);
  put(end, central.size(), 4);
  put(end, offset, 4);
  put(end, 0, 2);
  out.write(central.data(), static_cast<std::streamsize>(central.size()));
  out.write(end.data(), static_cast<std::streamsize>(end.size()));
  if (!out.flush()) fail(path, "cannot write");
}

}  // namespace onnxscope
