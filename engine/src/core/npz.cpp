// NumPy .npz archives: a zip file of .npy members, stored (numpy.savez) or
// deflated (numpy.savez_compressed), with zip64 records (numpy writes them).
// Everything is read through the central directory; every size and offset is
// checked against the file before it is used, and each member's CRC-32 is
// verified, so a truncated or hostile archive is an error, never a crash.
#include <zlib.h>

#include <cstring>
#include <fstream>

#include "onnxscope/npy.h"

namespace onnxscope {
namespace {

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) {
  throw Error(Diagnostic{Severity::Error, "bad-npz", Location{p.string()}, what, {}});
}

constexpr uint32_t kEocd = 0x06054b50, kZip64Eocd = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr uint32_t kCentral = 0x02014b50, kLocal = 0x04034b50;
constexpr uint64_t kMaxMembers = 1 << 16;

uint64_t le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

class Archive {
 public:
  explicit Archive(const std::filesystem::path& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) fail(path, "cannot open");
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
  }
  uint64_t size() const { return size_; }
  std::string read(uint64_t offset, uint64_t n, const char* what) {
    if (offset > size_ || n > size_ - offset) fail(path_, std::string(what) + " lies outside the file (truncated?)");
    std::string s(static_cast<size_t>(n), '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    if (n && !in_.read(s.data(), static_cast<std::streamsize>(n))) fail(path_, std::string("cannot read ") + what);
    return s;
  }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

const unsigned char* u(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); }

std::string inflate_raw(const std::filesystem::path& where, const std::string& packed, uint64_t expected) {
  std::string out(static_cast<size_t>(expected), '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(where, "cannot start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != expected)
    fail(where, "compressed data is corrupt or does not inflate to its recorded size of " + std::to_string(expected) + " bytes");
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> read_npz(const std::filesystem::path& path, uint64_t max_bytes) {
  Archive ar(path);
  if (ar.size() < 22) fail(path, "not an .npz archive (too short for a zip directory)");
  // The end-of-central-directory record is in the last 22 + 65535 bytes.
  const uint64_t tail_len = std::min<uint64_t>(ar.size(), 22 + 65535);
  const std::string tail = ar.read(ar.size() - tail_len, tail_len, "end of archive");
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_len) - 22; i >= 0; --i)
    if (le(u(tail) + i, 4) == kEocd) {
      eocd = i;
      break;
    }
  if (eocd < 0) fail(path, "not an .npz archive (no zip end-of-directory record)");
  const unsigned char* e = u(tail) + eocd;
  uint64_t entries = le(e + 10, 2), cd_size = le(e + 12, 4), cd_offset = le(e + 16, 4);
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0) fail(path, "multi-disk zip archives are not supported");
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    const uint64_t abs_eocd = ar.size() - tail_len + static_cast<uint64_t>(eocd);
    if (abs_eocd < 20) fail(path, "zip64 locator missing");
    const std::string loc = ar.read(abs_eocd - 20, 20, "zip64 locator");
    if (le(u(loc), 4) != kZip64Locator) fail(path, "zip64 locator missing");
    const std::string z = ar.read(le(u(loc) + 8, 8), 56, "zip64 directory record");
    if (le(u(z), 4) != kZip64Eocd) fail(path, "bad zip64 directory record");
    entries = le(u(z) + 32, 8);
    cd_size = le(u(z) + 40, 8);
    cd_offset = le(u(z) + 48, 8);
  }
  if (entries > kMaxMembers) fail(path, std::to_string(entries) + " members is not plausible");
  if (cd_size > (uint64_t{64} << 20)) fail(path, "central directory of " + std::to_string(cd_size) + " bytes is not plausible");
  const std::string cd = ar.read(cd_offset, cd_size, "central directory");

  std::vector<std::pair<std::string, Tensor>> out;
  uint64_t pos = 0;
  for (uint64_t k = 0; k < entries; ++k) {
    if (cd_size - pos < 46 || le(u(cd) + pos, 4) != kCentral) fail(path, "central directory entry " + std::to_string(k) + " is corrupt");
    const unsigned char* c = u(cd) + pos;
    const uint64_t flags = le(c + 8, 2), method = le(c + 10, 2), crc = le(c + 16, 4);
    uint64_t packed = le(c + 20, 4), size = le(c + 24, 4), local = le(c + 42, 4);
    const uint64_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    if (cd_size - pos - 46 < name_len + extra_len + comment_len) fail(path, "central directory entry " + std::to_string(k) + " is truncated");
    std::string name(cd, pos + 46, name_len);
    // zip64 extra field: the 64-bit values of the fields saturated above, in order.
    for (uint64_t x = pos + 46 + name_len, end = x + extra_len; x + 4 <= end;) {
      const uint64_t id = le(u(cd) + x, 2), len = le(u(cd) + x + 2, 2);
      if (x + 4 + len > end) fail(path, "member '" + name + "': extra field overruns its entry");
      if (id == 1) {
        uint64_t f = x + 4;
        auto take = [&](uint64_t& v) {
          if (v != 0xFFFFFFFF) return;
          if (f + 8 > x + 4 + len) fail(path, "member '" + name + "': short zip64 field");
          v = le(u(cd) + f, 8);
          f += 8;
        };
        take(size);
        take(packed);
        take(local);
      }
      x += 4 + len;
    }
    pos += 46 + name_len + extra_len + comment_len;
    const std::filesystem::path where = path.string() + ":" + name;
    if (flags & 1) fail(where, "encrypted members are not supported");
    if (method != 0 && method != 8) fail(where, "compression method " + std::to_string(method) + " is not supported (stored or deflate only)");
    if (size > max_bytes + 4096 || size > 0xFFFFFFFFu || packed > ar.size())
      fail(where, "member of " + std::to_string(size) + " bytes exceeds the limit of " + std::to_string(max_bytes) + " bytes");
    const std::string lh = ar.read(local, 30, "local header");
    if (le(u(lh), 4) != kLocal) fail(where, "local header is corrupt");
    const uint64_t data = local + 30 + le(u(lh) + 26, 2) + le(u(lh) + 28, 2);
    std::string bytes = ar.read(data, packed, "member data");
    if (method == 8) bytes = inflate_raw(where, bytes, size);
    else if (packed != size) fail(where, "stored member has different packed and unpacked sizes");
    const uLong actual_crc = crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
    if (actual_crc != crc) fail(where, "CRC-32 mismatch (the archive is corrupt)");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    out.emplace_back(name, parse_npy(bytes, where));
  }
  return out;
}

}  // namespace onnxscope
