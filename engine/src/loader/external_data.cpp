#include "loader/external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace onnxscope::detail {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const Location& where, std::string code, std::string message, std::string expected = {}) {
  throw Error(Diagnostic{Severity::Error, std::move(code), where, std::move(message), std::move(expected)});
}

// Read-only private mapping of a whole file; unmapped when the last tensor using it goes.
class MappedFile final : public Buffer {
 public:
  MappedFile(void* p, size_t n) : p_(p), n_(n) {}
  ~MappedFile() override {
    if (p_) munmap(p_, n_);
  }
  const std::byte* data() const override { return static_cast<const std::byte*>(p_); }
  size_t size() const override { return n_; }

 private:
  void* p_;
  size_t n_;
};

// Strict non-negative decimal: no sign, no spaces, no hex, no overflow.
bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  out = v;
  return true;
}

bool is_inside(const fs::path& child, const fs::path& parent) {
  auto c = child.begin(), p = parent.begin();
  for (; p != parent.end(); ++p, ++c)
    if (c == child.end() || *c != *p) return false;
  return c != child.end();  // strictly below the folder
}

}  // namespace

ExternalDataResolver::ExternalDataResolver(fs::path base_dir, bool allowed)
    : base_dir_(std::move(base_dir)), allowed_(allowed) {
  std::error_code ec;
  if (!base_dir_.empty()) canonical_base_ = fs::canonical(base_dir_.empty() ? "." : base_dir_, ec);
  if (ec) canonical_base_.clear();
}

std::shared_ptr<Buffer> ExternalDataResolver::open_file(const std::string& location, const Location& where) {
  Location at = where;
  if (location.empty()) fail(at, "external-data-location", "external data has an empty 'location'");
  if (location.find('\0') != std::string::npos)
    fail(at, "external-data-location", "external data location contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute())
    fail(at, "external-data-escape", "external data location '" + location + "' is an absolute path",
         "a path relative to the model's folder");
  fs::path norm = rel.lexically_normal();
  if (norm.empty() || *norm.begin() == ".." || norm == ".")
    fail(at, "external-data-escape", "external data location '" + location + "' leaves the model's folder",
         "a path inside the model's folder");
  if (canonical_base_.empty())
    fail(at, "external-data-base", "cannot resolve the model's folder '" + base_dir_.string() + "'");

  fs::path full = canonical_base_ / norm;
  struct stat link_st {};
  if (lstat(full.c_str(), &link_st) != 0)
    fail(at, "external-data-missing",
         "external data file '" + location + "' cannot be opened: " + std::strerror(errno),
         "the file beside the model at " + full.string());
  if (S_ISLNK(link_st.st_mode))
    fail(at, "external-data-symlink", "external data file '" + location + "' is a symbolic link; refused",
         "a regular file");
  std::error_code ec;
  fs::path canon = fs::canonical(full, ec);
  if (ec || !is_inside(canon, canonical_base_))
    fail(at, "external-data-escape",
         "external data file '" + location + "' resolves outside the model's folder" +
             (ec ? "" : " (to " + canon.string() + ")"),
         "a path inside " + canonical_base_.string());

  if (auto it = files_.find(canon.string()); it != files_.end()) return it->second;

  int fd = ::open(canon.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    fail(at, "external-data-missing",
         "external data file '" + location + "' cannot be opened: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(at, "external-data-not-file", "external data '" + location + "' is not a regular file");
  }
  // A hard link could point anywhere; the file we opened must be the one we checked.
  if (st.st_nlink > 1 || st.st_dev != link_st.st_dev || st.st_ino != link_st.st_ino) {
    ::close(fd);
    fail(at, "external-data-hardlink",
         "external data file '" + location + "' has " + std::to_string(st.st_nlink) +
             " hard links or changed while opening; refused",
         "a file with a single link");
  }
  std::shared_ptr<Buffer> buf;
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    buf = make_owned_buffer(0);
  } else {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(at, "external-data-map", "cannot map external data file '" + location + "': " + std::strerror(e));
    }
    buf = std::make_shared<MappedFile>(p, size);
  }
  ::close(fd);
  files_.emplace(canon.string(), buf);
  return buf;
}

std::shared_ptr<Buffer> ExternalDataResolver::resolve(const std::vector<StringPair>& entries,
                                                      uint64_t expected_bytes, const Location& where) {
  if (!allowed_)
    fail(where, "external-data-refused", "tensor uses external data, which is disabled for this load");
  if (base_dir_.empty())
    fail(where, "external-data-refused",
         "tensor uses external data but the model was loaded from bytes without a base folder",
         "load from a file, or give a base folder");
  std::string location;
  uint64_t offset = 0, length = 0;
  bool has_length = false;
  std::set<std::string> seen;
  for (const auto& [key, value] : entries) {
    if (!seen.insert(key).second)
      fail(where, "external-data-key", "external data key '" + key + "' appears twice");
    if (key == "location") {
      location = value;
    } else if (key == "offset") {
      if (!parse_u64(value, offset) || offset > uint64_t(INT64_MAX))
        fail(where, "external-data-offset", "external data offset '" + value + "' is not a non-negative integer");
    } else if (key == "length") {
      if (!parse_u64(value, length) || length > uint64_t(INT64_MAX))
        fail(where, "external-data-length", "external data length '" + value + "' is not a non-negative integer");
      has_length = true;
    } else if (key == "checksum") {
      // Accepted (it is part of the spec); the data is checked by size and bounds.
    } else {
      fail(where, "external-data-key", "unknown external data key '" + key + "'",
           "location, offset, length or checksum");
    }
  }
  if (!seen.count("location")) fail(where, "external-data-location", "external data has no 'location' key");
  auto file = open_file(location, where);
  uint64_t size = file->size();
  if (offset > size)
    fail(where, "external-data-bounds",
         "external data offset " + std::to_string(offset) + " is past the end of '" + location + "' (" +
             std::to_string(size) + " bytes)");
  if (!has_length) length = size - offset;
  if (length > size - offset)
    fail(where, "external-data-bounds",
         "external data [" + std::to_string(offset) + ", +" + std::to_string(length) + ") runs past the end of '" +
             location + "' (" + std::to_string(size) + " bytes)");
  if (length != expected_bytes)
    fail(where, "external-data-length",
         "external data in '" + location + "' has " + std::to_string(length) + " bytes but the tensor's type and shape need " +
             std::to_string(expected_bytes),
         std::to_string(expected_bytes) + " bytes");
  return make_slice_buffer(file, static_cast<size_t>(offset), static_cast<size_t>(length));
}

}  // namespace onnxscope::detail
