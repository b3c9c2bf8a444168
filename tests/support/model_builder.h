// Builds ONNX models in tests as real protobuf messages, so the loader sees
// exactly the bytes a file would hold; no binary fixtures needed.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <memory>
#include <vector>

#include "onnx/onnx-ml.pb.h"
#include "onnxscope/dtype.h"
#include "onnxscope/loader.h"

namespace onnxscope::test {

using DimSpec = std::variant<int64_t, std::string>;  // number or symbolic name

void set_type(onnx::TypeProto* t, DataType elem, const std::vector<DimSpec>& dims);
onnx::ValueInfoProto make_value(const std::string& name, DataType elem, const std::vector<DimSpec>& dims);

void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v);
void attr_float(onnx::NodeProto& n, const std::string& name, float v);
void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v);
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v);
void attr_strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v);
void attr_tensor(onnx::NodeProto& n, const std::string& name, const onnx::TensorProto& t);
onnx::GraphProto* attr_graph(onnx::NodeProto& n, const std::string& name);

onnx::TensorProto make_tensor_raw(const std::string& name, DataType t, const std::vector<int64_t>& dims,
                                  const std::string& raw);
onnx::TensorProto make_float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<float>& values);
onnx::TensorProto make_int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values);

// Graph-level helpers usable on the main graph and on subgraph bodies.
onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = {},
                          const std::string& domain = {});

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17, int64_t ir_version = 8);

  ModelBuilder& opset(const std::string& domain, int64_t version);
  ModelBuilder& input(const std::string& name, DataType t, const std::vector<DimSpec>& dims);
  ModelBuilder& output(const std::string& name, DataType t, const std::vector<DimSpec>& dims);
  ModelBuilder& output_untyped(const std::string& name);
  ModelBuilder& initializer(onnx::TensorProto t);
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = {},
                        const std::string& domain = {});

  onnx::ModelProto& proto() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  std::string bytes() const;
  LoadResult load(LoadOptions options = {}) const;

 private:
  onnx::ModelProto model_;
};

// True if a diagnostic with this code (and severity) is present.
bool has_code(const LoadResult& r, const std::string& code, Severity s = Severity::Error);
// All diagnostics, one per line, for assertion messages.
std::string dump(const LoadResult& r);

// The built model, loaded; throws std::runtime_error with the diagnostics
// when it does not load (the test fails there, saying why).
std::shared_ptr<Model> load_model(const ModelBuilder& b);
// The op types of the graph's nodes, in order.
std::vector<std::string> op_types(const Model& m);

}  // namespace onnxscope::test
