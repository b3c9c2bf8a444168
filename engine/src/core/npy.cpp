// NumPy .npy files as inputs (format version 1.0/2.0/3.0): little-endian
// numeric and bool arrays in C order. The header is parsed strictly and the
// data size checked against the file before anything is allocated.
#include <fstream>
#include <regex>

#include "onnxscope/npy.h"

namespace onnxscope {
namespace {

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) {
  throw Error(Diagnostic{Severity::Error, "bad-npy", Location{p.string()}, what, {}});
}

DataType dtype_of_descr(const std::filesystem::path& p, const std::string& d) {
  static const std::pair<const char*, DataType> table[] = {
      {"<f4", DataType::Float}, {"<f8", DataType::Double}, {"<f2", DataType::Float16}, {"|i1", DataType::Int8},
      {"<i2", DataType::Int16}, {"<i4", DataType::Int32}, {"<i8", DataType::Int64}, {"|u1", DataType::Uint8},
      {"<u2", DataType::Uint16}, {"<u4", DataType::Uint32}, {"<u8", DataType::Uint64}, {"|b1", DataType::Bool},
      {"<c8", DataType::Complex64}, {"<c16", DataType::Complex128}};
  for (const auto& [name, t] : table)
    if (d == name) return t;
  fail(p, "unsupported dtype '" + d + "' (little-endian numeric or bool arrays only)");
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  char magic[8];
  if (!in.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY") fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  if (header_len > 1 << 20 || header_len > file_size) fail(path, "header length " + std::to_string(header_len) + " is not plausible");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']+)')"))) fail(path, "header has no 'descr'");
  const DataType type = dtype_of_descr(path, m[1]);
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)"))) fail(path, "Fortran-order arrays are not supported");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) fail(path, "header has no 'shape'");
  Shape shape;
  const std::string dims = m[1];
  std::regex num(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    if (it->str().size() > 18) fail(path, "dimension too large");
    shape.push_back(std::stoll(it->str()));
  }
  auto count = checked_element_count(shape);
  auto bytes = count ? storage_bytes(type, *count) : std::nullopt;
  const uint64_t data_start = (major == 1 ? 10 : 12) + header_len;
  if (!bytes || *bytes > file_size - std::min(file_size, data_start))
    fail(path, "shape " + shape_to_string(shape) + " needs more bytes than the file holds");
  Tensor t = Tensor::zeros(type, shape);
  if (*bytes && !in.read(reinterpret_cast<char*>(t.mutable_raw()), static_cast<std::streamsize>(*bytes)))
    fail(path, "truncated data");
  return t;
}

}  // namespace onnxscope
