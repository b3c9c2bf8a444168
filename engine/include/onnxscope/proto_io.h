// Reading and writing values as ONNX protobuf messages: the .pb files of the
// backend test suite (input_K.pb / output_K.pb) and user-supplied inputs.
// A .pb file does not say what it holds; the model's declared type decides
// (tensor -> TensorProto, sequence -> SequenceProto, optional -> OptionalProto,
// map -> MapProto).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "onnxscope/ir.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/value.h"

namespace onnxscope {

// Throws onnxscope::Error naming the file and what is wrong.
Value read_value_file(const std::filesystem::path& path, const TypeInfo& declared);
Value read_value_bytes(std::span<const std::byte> bytes, const TypeInfo& declared, const std::string& name);

// TensorProto bytes of a tensor (raw_data layout; strings in string_data).
std::string tensor_to_proto_bytes(const Tensor& t, const std::string& name);

// ModelProto bytes of a model (tensors inline as raw_data). Throws
// onnxscope::Error when the model does not fit in one protobuf message.
std::string model_to_bytes(const Model& m);
void save_model(const Model& m, const std::filesystem::path& path);

}  // namespace onnxscope
