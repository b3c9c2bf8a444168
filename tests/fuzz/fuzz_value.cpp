// Fuzz target: TensorProto / SequenceProto / OptionalProto / MapProto bytes
// as the .pb files of a test folder, read against each declared type.
#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxscope/proto_io.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  TypeInfo tensor = TypeInfo::tensor(DataType::Undefined);
  TypeInfo seq;
  seq.kind = TypeInfo::Kind::Sequence;
  seq.inner = std::make_shared<TypeInfo>(tensor);
  TypeInfo opt;
  opt.kind = TypeInfo::Kind::Optional;
  opt.inner = std::make_shared<TypeInfo>(tensor);
  TypeInfo map;
  map.kind = TypeInfo::Kind::Map;
  map.map_key = DataType::Int64;
  map.inner = std::make_shared<TypeInfo>(TypeInfo::tensor(DataType::Float));
  for (const TypeInfo* t : {&tensor, &seq, &opt, &map}) {
    try {
      read_value_bytes(bytes, *t, "fuzz.pb");
    } catch (const Error&) {
    }
  }
  return 0;
}
