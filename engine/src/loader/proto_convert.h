// ModelProto -> onnxscope IR. Checks everything that is about a single message
// (tensor sizes, data types, dims, attribute payloads, nesting depth) while
// converting; graph-level rules (names, order, schemas) live in validate.cpp.
#pragma once

#include <string>

#include "loader/external_data.h"
#include "onnx/onnx-ml.pb.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"

namespace onnxscope::detail {

struct ConvertContext {
  std::string file;
  ExternalDataResolver* external = nullptr;
  Diagnostics* diags = nullptr;
  int max_subgraph_depth = 32;
};

// Moves large payloads (raw_data) out of the proto instead of copying them.
void model_from_proto(onnx::ModelProto& proto, Model& out, ConvertContext& ctx);

// Converts one TensorProto; throws onnxscope::Error on bad data. `where`
// locates it for messages. Used for initializers, attributes and test data.
Tensor tensor_from_proto(onnx::TensorProto& proto, ConvertContext& ctx, const Location& where);
TypeInfo type_from_proto(const onnx::TypeProto& proto, ConvertContext& ctx, const Location& where);

}  // namespace onnxscope::detail
