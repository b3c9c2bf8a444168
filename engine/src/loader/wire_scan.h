// When protobuf refuses a file it says only "failed to parse". This walks the
// wire format along the ModelProto message tree and reports the first byte
// that cannot be right, with the field path that leads to it
// ("graph.initializer[3]: length 4000000 runs past the end, 1234 bytes left").
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace onnxscope::detail {

struct WireProblem {
  uint64_t offset = 0;  // byte offset in the file
  std::string path;     // "graph.node[12].attribute[0]"
  std::string message;
};

std::optional<WireProblem> scan_model_wire(std::span<const std::byte> bytes);

}  // namespace onnxscope::detail
