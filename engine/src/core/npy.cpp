// NumPy .npy arrays as inputs (format version 1.0/2.0/3.0): little-endian
// numeric and bool arrays in C order. The header is parsed strictly and the
// data size checked against the file before anything is allocated.
#include <cstring>
#include <fstream>
#include <regex>

#include "onnxscope/npy.h"

namespace onnxscope {
namespace {

constexpr uint32_t kMaxNpyHeader = 1 << 20;

struct NpyHeader {
  DataType type{};
  Shape shape;
  uint64_t data_offset = 0, data_bytes = 0;
};

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

static NpyHeader parse_npy_header(std::string_view bytes, const std::filesystem::path& path) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") fail(path, "not a .npy array (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
  uint32_t header_len = 0;
  size_t prefix = 0;
  if (major == 1) {
    header_len = byte(8) | (byte(9) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "truncated header");
    header_len = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    prefix = 12;
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  if (header_len > kMaxNpyHeader) fail(path, "header length " + std::to_string(header_len) + " is not plausible");
  if (bytes.size() < prefix + header_len) fail(path, "truncated header");
  const std::string header(bytes.substr(prefix, header_len));
  NpyHeader h;
  h.data_offset = prefix + header_len;
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']+)')"))) fail(path, "header has no 'descr'");
  h.type = dtype_of_descr(path, m[1]);
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)"))) fail(path, "Fortran-order arrays are not supported");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) fail(path, "header has no 'shape'");
  const std::string dims = m[1];
  std::regex num(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    if (it->str().size() > 18) fail(path, "dimension too large");
    h.shape.push_back(std::stoll(it->str()));
  }
  if (h.shape.size() > 64) fail(path, "rank " + std::to_string(h.shape.size()) + " is not plausible");
  auto count = checked_element_count(h.shape);
  auto nbytes = count ? storage_bytes(h.type, *count) : std::nullopt;
  if (!nbytes) fail(path, "shape " + shape_to_string(h.shape) + " overflows");
  h.data_bytes = *nbytes;
  return h;
}

Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  std::string prefix(static_cast<size_t>(std::min<uint64_t>(file_size, 12 + kMaxNpyHeader)), '\0');
  if (!in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()))) fail(path, "cannot read");
  const NpyHeader h = parse_npy_header(prefix, path);
  if (h.data_bytes > file_size - std::min<uint64_t>(file_size, h.data_offset))
    fail(path, "shape " + shape_to_string(h.shape) + " needs more bytes than the file holds");
  Tensor t = Tensor::zeros(h.type, h.shape);
  in.clear();
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  if (h.data_bytes && !in.read(reinterpret_cast<char*>(t.mutable_raw()), static_cast<std::streamsize>(h.data_bytes)))
    fail(path, "truncated data");
  normalize_bool_bytes(t);  // numpy reads a bool byte other than 0/1 as true
  return t;
}

Tensor parse_npy(std::string_view bytes, const std::filesystem::path& where) {
  const NpyHeader h = parse_npy_header(bytes, where);
  if (h.data_bytes > bytes.size() - std::min<uint64_t>(bytes.size(), h.data_offset))
    fail(where, "shape " + shape_to_string(h.shape) + " needs more bytes than the array holds");
  Tensor t = Tensor::zeros(h.type, h.shape);
  if (h.data_bytes) std::memcpy(t.mutable_raw(), bytes.data() + h.data_offset, h.data_bytes);
  normalize_bool_bytes(t);
  return t;
}

}  // namespace onnxscope
