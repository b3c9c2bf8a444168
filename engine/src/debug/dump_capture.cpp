// An HDF5 dump (onnxscope's, or one the ONNX Runtime / PyTorch helpers wrote)
// as one side of a diff, lined up with an engine's capture by tensor name.
#include "onnxscope/dump.h"

namespace onnxscope {

Capture capture_from_dump(const DumpFile& dump, const Model* model, std::string source) {
  Capture c;
  c.source = source.empty() ? "dump:" + (dump.header.producer.empty() ? std::string("?") : dump.header.producer) : std::move(source);
  for (const auto* group : {&dump.inputs, &dump.tensors})
    for (const DumpEntry& e : *group) {
      if (!e.data) continue;
      c.values.insert_or_assign(e.name, Value(*e.data));
      c.kernel_of[e.name] = dump.header.producer.empty() ? "dump" : dump.header.producer;
    }
  if (model)
    for (const auto& init : model->graph.initializers) c.values.try_emplace(init.name, Value(init.value));
  return c;
}

}  // namespace onnxscope
