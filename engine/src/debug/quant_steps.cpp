// Which tensors of a model are quantized, and how large one step of each is
// (DiffTolerance::quant_step): a diff reports a quantized tensor's
// difference in steps, and --quant-steps N lets N of them pass. Where two
// runtimes compute a quantized graph in different orders (ONNX Runtime runs
// QDQ patterns as integer kernels), one step is the expected difference.
#include <cmath>
#include <map>
#include <string>

#include "onnxscope/diff.h"

namespace onnxscope {
namespace {

bool integer_type(DataType t) {
  switch (t) {
    case DataType::Uint8: case DataType::Int8: case DataType::Uint16: case DataType::Int16:
    case DataType::Uint4: case DataType::Int4: case DataType::Uint2: case DataType::Int2: return true;
    default: return false;
  }
}

}  // namespace

std::map<std::string, double> quantization_steps(const Model& model) {
  const Graph& g = model.graph;
  // Constant values: initializers and Constant nodes' tensors.
  std::map<std::string, const Tensor*> constants;
  for (const auto& i : g.initializers) constants[i.name] = &i.value;
  for (const auto& n : g.nodes)
    if (n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") && n.outputs.size() == 1)
      if (const Attribute* v = n.attribute("value"); v && v->type == AttrType::Tensor) constants[n.outputs[0]] = &v->t;
  auto scalar = [&](const std::string& name) -> double {
    auto it = constants.find(name);
    if (it == constants.end() || it->second->element_count() != 1 || it->second->is_string()) return 0;
    const double v = it->second->element_as_double(0);
    return v > 0 && std::isfinite(v) ? v : 0;
  };
  auto type_of = [&](const std::string& name) {
    const TypeInfo* t = g.type_of(name);
    return t && t->is_tensor() ? t->elem : DataType::Undefined;
  };
  std::map<std::string, double> steps;
  for (const auto& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0].empty()) continue;
    const bool onnx = n.domain.empty() || n.domain == "ai.onnx", ms = n.domain == "com.microsoft";
    const std::string& y = n.outputs[0];
    if (n.op_type == "DequantizeLinear" && (onnx || ms)) {
      // Per tensor only: the axis and block attributes mean nothing for one scale.
      if (n.inputs.size() > 1)
        if (const double s = scalar(n.inputs[1]); s > 0) steps[y] = s;
      continue;
    }
    const bool quantizes = ((onnx || ms) && (n.op_type == "QuantizeLinear" || n.op_type == "DynamicQuantizeLinear")) ||
                           ((onnx || ms) && n.op_type.rfind("QLinear", 0) == 0) ||
                           (ms && n.op_type == "QGemm" && n.inputs.size() > 8 && !n.inputs[8].empty());
    if (!quantizes) continue;
    // Integer outputs count in steps of 1; an output of unknown type is taken
    // as quantized (these operators write nothing else).
    const DataType t = type_of(y);
    if (t == DataType::Undefined || integer_type(t)) steps[y] = 1;
  }
  return steps;
}

}  // namespace onnxscope
