// Resolves TensorProto.external_data entries to bytes, refusing every path
// that could leave the model's folder (absolute, `..`, symlinks, hard links)
// and every offset/length that does not fit the file. Files are memory-mapped
// once and shared by all tensors that live in them.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxscope/buffer.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"

namespace onnxscope::detail {

class ExternalDataResolver {
 public:
  // An empty base_dir means "loaded from bytes": any external reference is refused.
  ExternalDataResolver(std::filesystem::path base_dir, bool allowed);

  // Bytes of one tensor; throws onnxscope::Error (located at `where`).
  std::shared_ptr<Buffer> resolve(const std::vector<StringPair>& entries, uint64_t expected_bytes,
                                  const Location& where);

 private:
  std::shared_ptr<Buffer> open_file(const std::string& location, const Location& where);

  std::filesystem::path base_dir_;
  std::filesystem::path canonical_base_;
  bool allowed_;
  std::map<std::string, std::shared_ptr<Buffer>> files_;  // by canonical path
};

}  // namespace onnxscope::detail
