// Operator schemas of the standard domains (ai.onnx, ai.onnx.ml,
// ai.onnx.preview.training, ai.onnx.preview) for every opset version, compiled
// in from the pinned onnx release (scripts/gen_op_schemas.py).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "onnxscope/ir.h"

namespace onnxscope {

struct FormalParam {
  const char* name;
  const char* type_str;  // "T" or a concrete "tensor(int64)"
  uint8_t option;        // 0 single, 1 optional, 2 variadic
  bool homogeneous;
  int min_arity;
};

struct AttrDefault {
  bool has = false;
  int64_t i = 0;
  float f = 0;
  const char* s = nullptr;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

struct AttrSpec {
  const char* name;
  AttrType type;
  bool required;
  AttrDefault default_value;
};

struct TypeConstraint {
  const char* param;    // "T"
  const char* allowed;  // comma-separated type strings
};

struct OpSchema {
  const char* domain;
  const char* name;
  int since_version;
  bool deprecated;
  int min_inputs, max_inputs, min_outputs, max_outputs;
  std::span<const FormalParam> inputs, outputs;
  std::span<const AttrSpec> attributes;
  std::span<const TypeConstraint> type_constraints;
  bool has_function;                    // defined by a function body
  bool has_context_dependent_function;  // body built from the node's context

  const AttrSpec* attribute(std::string_view n) const;
  const TypeConstraint* constraint(std::string_view param) const;
  // Formal parameter a node input/output position binds to (variadic last one repeats).
  const FormalParam* input_param(size_t position) const;
  const FormalParam* output_param(size_t position) const;
};

// Serialized FunctionProto of an operator the spec defines as a function,
// written for one opset version of the default domain.
struct FunctionBodyBytes {
  const char* domain;
  const char* name;
  int since_version;  // the schema version it belongs to
  int opset;          // the opset the body's own nodes are written for
  const unsigned char* data;
  size_t size;
};

// The body to expand for `schema` in a model importing the default domain at
// `model_opset` (the newest body written for an opset <= model_opset), or
// nullptr when the operator has no static function body.
const FunctionBodyBytes* find_function_body(const OpSchema& schema, int64_t model_opset);

// Schema in force for `op` of `domain` at `opset_version`: the newest version
// with since_version <= opset_version. Nullptr if the op does not exist then.
const OpSchema* find_schema(std::string_view domain, std::string_view op, int64_t opset_version);
// All versions of an op, oldest first; empty if unknown.
std::vector<const OpSchema*> schema_versions(std::string_view domain, std::string_view op);
// Whether the domain is one whose schemas we carry.
bool is_standard_domain(std::string_view domain);
// Highest opset version of a standard domain that we carry; 0 for others.
int64_t max_known_opset(std::string_view domain);
std::span<const OpSchema> all_schemas();
// The onnx release the table came from.
std::string_view schema_onnx_version();

}  // namespace onnxscope
