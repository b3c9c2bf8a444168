// FunctionProto bytes -> Function, for the operator function bodies compiled
// in from the schemas (kept apart so the interpreter needs no protobuf headers).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "onnxscope/ir.h"

namespace onnxscope::detail {

// Throws onnxscope::Error if the bytes are not a valid FunctionProto.
std::shared_ptr<const Function> parse_function_proto(const unsigned char* data, size_t size, const std::string& label);

}  // namespace onnxscope::detail
