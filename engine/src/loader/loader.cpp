#include "onnxscope/loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "loader/external_data.h"
#include "loader/proto_convert.h"
#include "loader/wire_scan.h"
#include "onnxscope/shape_inference.h"

namespace onnxscope {
namespace {

// Generous enough for 32 nested subgraphs (3 message levels each) plus deep
// TypeProto nesting; small enough that the parser's recursion cannot exhaust
// a thread's stack.
constexpr int kProtobufRecursionLimit = 400;

// Reads a memory-mapped file in 4 MiB chunks and gives each chunk's pages
// back to the kernel once the parser has moved two chunks past it. The parser
// copies every field it keeps, so without this a model's weights would be
// resident twice at the peak (the mapping and the parsed copy). Pages given
// back fault in again from the file if read later (the wire scan of a
// corrupt file). BackUp only ever concerns the last chunk, which is kept.
class ReleasingMappedStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  ReleasingMappedStream(const std::byte* data, uint64_t size) : data_(data), size_(size) {}
  bool Next(const void** data, int* size) override {
    if (pos_ >= size_) return false;
    release_before(pos_ >= 2 * kChunk ? pos_ - 2 * kChunk : 0);
    const uint64_t n = std::min<uint64_t>(kChunk, size_ - pos_);
    *data = data_ + pos_;
    *size = static_cast<int>(n);
    pos_ += n;
    return true;
  }
  void BackUp(int count) override { pos_ -= static_cast<uint64_t>(count); }
  bool Skip(int count) override {
    const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(count), size_ - pos_);
    pos_ += n;
    return n == static_cast<uint64_t>(count);
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(pos_); }

 private:
  static constexpr uint64_t kChunk = uint64_t{4} << 20;
  void release_before(uint64_t end) {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    end -= end % page;
    if (end > released_) {
      madvise(const_cast<std::byte*>(data_) + released_, end - released_, MADV_DONTNEED);
      released_ = end;
    }
  }
  const std::byte* data_;
  uint64_t size_, pos_ = 0, released_ = 0;
};

LoadResult parse_and_convert(std::span<const std::byte> bytes, const LoadOptions& options, const std::string& name,
                             bool mapped_file = false) {
  LoadResult result;
  Location file_loc{name};
  if (bytes.size() > options.max_model_bytes) {
    result.diagnostics.error("model-too-large", file_loc,
                             "model is " + std::to_string(bytes.size()) + " bytes; a protobuf message cannot exceed 2 GiB",
                             "large weights in external data files");
    return result;
  }
  if (bytes.empty()) {
    result.diagnostics.error("empty-file", file_loc, "file is empty", "an ONNX ModelProto");
    return result;
  }

  onnx::ModelProto proto;
  google::protobuf::io::ArrayInputStream array_stream(bytes.data(), static_cast<int>(bytes.size()));
  ReleasingMappedStream mapped_stream(bytes.data(), bytes.size());
  google::protobuf::io::ZeroCopyInputStream* stream = &array_stream;
  if (mapped_file) stream = &mapped_stream;  // only for a private file mapping: its pages can be given back
  google::protobuf::io::CodedInputStream coded(stream);
  coded.SetRecursionLimit(kProtobufRecursionLimit);
  coded.SetTotalBytesLimit(static_cast<int>(std::min<uint64_t>(options.max_model_bytes, INT32_MAX)));
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    auto problem = detail::scan_model_wire(bytes);
    std::string msg = "not a valid ONNX model: the protobuf bytes are corrupt or truncated";
    if (problem) {
      file_loc.value = problem->path;
      msg += " (at byte " + std::to_string(problem->offset) + " in " + problem->path + ": " + problem->message + ")";
    } else {
      msg += " (the wire format is intact, so a field holds bytes of the wrong kind, e.g. invalid UTF-8 in a string, or messages nest deeper than " +
             std::to_string(kProtobufRecursionLimit) + " levels)";
    }
    result.diagnostics.error("corrupt-model", file_loc, msg);
    return result;
  }
  if (proto.ir_version() == 0 && !proto.has_graph()) {
    result.diagnostics.error("not-a-model", file_loc,
                             "no ir_version and no graph: this is not an ONNX ModelProto (a TensorProto or other message?)",
                             "a ModelProto");
    return result;
  }
  if (!proto.has_graph()) {
    result.diagnostics.error("missing-graph", file_loc, "model has no graph", "ModelProto.graph");
    return result;
  }
  if (!proto.unknown_fields().empty())
    result.diagnostics.warning("unknown-fields", file_loc,
                               std::to_string(proto.unknown_fields().size()) +
                                   " bytes of fields this ONNX version does not define were ignored");

  auto model = std::make_unique<Model>();
  model->source = name;
  detail::ExternalDataResolver external(options.base_dir, options.allow_external_data);
  detail::ConvertContext ctx{name, &external, &result.diagnostics, options.max_subgraph_depth};
  try {
    detail::model_from_proto(proto, *model, ctx);
  } catch (const Error& e) {
    result.diagnostics.add(e.diagnostic());
    return result;
  } catch (const std::bad_alloc&) {
    result.diagnostics.error("out-of-memory", file_loc, "ran out of memory while converting the model");
    return result;
  }
  validate_model(*model, options, result.diagnostics);
  if (options.infer_shapes && !result.diagnostics.has_errors()) infer_shapes(*model, result.diagnostics, options.plugins);
  result.model = std::move(model);
  return result;
}

}  // namespace

LoadResult load_model_bytes(std::span<const std::byte> bytes, LoadOptions options, std::string display_name) {
  return parse_and_convert(bytes, options, display_name);
}

LoadResult load_model_file(const std::filesystem::path& path, LoadOptions options) {
  const std::string name = path.string();
  LoadResult fail;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fail.diagnostics.error(errno == ENOENT ? "file-not-found" : "cannot-read", Location{name},
                           std::string("cannot open model: ") + std::strerror(errno));
    return fail;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail.diagnostics.error("cannot-read", Location{name}, "not a regular file", "an .onnx file");
    return fail;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > options.max_model_bytes) {
    ::close(fd);
    fail.diagnostics.error("model-too-large", Location{name},
                           "model file is " + std::to_string(size) + " bytes; a protobuf message cannot exceed 2 GiB",
                           "large weights in external data files");
    return fail;
  }
  if (options.base_dir.empty()) options.base_dir = path.parent_path().empty() ? "." : path.parent_path();
  void* p = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    fail.diagnostics.error("cannot-read", Location{name}, std::string("cannot map model: ") + std::strerror(map_errno));
    return fail;
  }
  LoadResult r = parse_and_convert({static_cast<const std::byte*>(p), size}, options, name, /*mapped_file=*/true);
  if (p) munmap(p, size);
  return r;
}

}  // namespace onnxscope
