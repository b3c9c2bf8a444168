// onnxscope's in-memory model: a faithful, protobuf-free copy of an ONNX
// ModelProto that engines, rewrites, the debugger and the GUI share.
// The loader (loader.h) builds it and checks it; nothing here validates.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/dtype.h"
#include "onnxscope/tensor.h"

namespace onnxscope {

// One dimension of a declared shape: a number, a symbolic name, or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string param;   // symbolic name ("batch") when not a number
  bool is_known() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !param.empty(); }
  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string name) { return Dim{-1, std::move(name)}; }
  bool operator==(const Dim&) const = default;
};

// The declared or inferred type of a value (TypeProto).
struct TypeInfo {
  enum class Kind { Unknown, Tensor, SparseTensor, Sequence, Optional, Map, Opaque };
  Kind kind = Kind::Unknown;
  DataType elem = DataType::Undefined;    // tensor / sparse tensor element type
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
  DataType map_key = DataType::Undefined;
  std::shared_ptr<TypeInfo> inner;        // sequence/optional element, map value
  std::string opaque_domain, opaque_name;

  static TypeInfo tensor(DataType t, std::optional<std::vector<Dim>> shape = std::nullopt);
  bool is_tensor() const { return kind == Kind::Tensor; }
  // "float[batch,3,224,224]", "seq(int64[?])", "?" when unknown.
  std::string to_string() const;
  bool operator==(const TypeInfo& o) const;
};

struct ValueInfo {
  std::string name;
  TypeInfo type;
  std::string doc;
};

struct StringPair {
  std::string key, value;
};

struct Graph;

enum class AttrType {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5,
  Floats = 6, Ints = 7, Strings = 8, Tensors = 9, Graphs = 10,
  SparseTensor = 11, SparseTensors = 12, TypeProto = 13, TypeProtos = 14,
};
std::string_view attr_type_name(AttrType t);

struct SparseTensor {
  Tensor values;   // [NNZ]
  Tensor indices;  // int64 [NNZ] (linear) or [NNZ, rank]
  Shape dims;      // dense shape
};

struct Attribute {
  std::string name;
  AttrType type = AttrType::Undefined;
  std::string ref_attr_name;  // inside functions: take the caller's attribute
  std::string doc;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  SparseTensor sparse;
  TypeInfo tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<TypeInfo> type_protos;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" is ai.onnx
  std::string overload;
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;
  std::string doc;
  std::vector<StringPair> metadata;

  const Attribute* attribute(std::string_view n) const;
  // Display name: the node's name, or "op_type#index" when it has none.
  std::string label(size_t index) const;
};

struct Initializer {
  std::string name;
  Tensor value;
  std::string doc;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;  // topological order after loading
  std::vector<ValueInfo> inputs, outputs, value_info;
  std::vector<Initializer> initializers;
  std::vector<SparseTensor> sparse_initializers;  // name is values.name in the proto
  std::vector<std::string> sparse_initializer_names;
  std::string doc;
  std::vector<StringPair> metadata;

  const Initializer* initializer(std::string_view n) const;
  // Declared or inferred type of a value: inputs, outputs, value_info, initializers.
  const TypeInfo* type_of(std::string_view n) const;
};

struct OpsetImport {
  std::string domain;  // "" for ai.onnx
  int64_t version = 0;
};

struct Function {
  std::string name, domain, overload;
  std::vector<std::string> inputs, outputs;
  std::vector<std::string> attributes;          // attribute names without defaults
  std::vector<Attribute> attribute_defaults;    // attribute_proto: with defaults
  std::vector<Node> nodes;
  std::vector<OpsetImport> opset_imports;
  std::vector<ValueInfo> value_info;
  std::string doc;
  std::vector<StringPair> metadata;
};

struct Model {
  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name, producer_version, domain, doc;
  int64_t model_version = 0;
  std::vector<StringPair> metadata;
  Graph graph;
  std::vector<Function> functions;
  std::string source;  // file path or "<bytes>", for messages

  // Imported version of a domain ("" and "ai.onnx" are the same), 0 if absent.
  int64_t opset_version(std::string_view domain) const;
  const Function* function(std::string_view domain, std::string_view name,
                           std::string_view overload = {}) const;
};

// "" and "ai.onnx" both name the default domain.
inline bool is_default_domain(std::string_view d) { return d.empty() || d == "ai.onnx"; }
std::string_view domain_display_name(std::string_view d);  // "" -> "ai.onnx"

}  // namespace onnxscope
