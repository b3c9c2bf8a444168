// What `onnxscope inspect` reports about a model, as data (for the CLI's text
// and JSON output and for the GUI's model overview).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"

namespace onnxscope {

struct OpCount {
  std::string domain, op_type;
  uint64_t count = 0;
};

struct GraphCount {
  std::string path;  // "main/If_0:then_branch", "function custom::Foo"
  uint64_t nodes = 0;
};

struct ModelSummary {
  std::string file;
  bool loaded = false;  // false when the bytes could not be read as a model at all
  int64_t ir_version = 0;
  std::string producer_name, producer_version, domain, doc;
  int64_t model_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::vector<StringPair> metadata;
  std::vector<ValueInfo> inputs;   // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  uint64_t main_nodes = 0;         // nodes of the main graph
  uint64_t total_nodes = 0;        // including subgraphs and function bodies
  std::vector<OpCount> op_counts;  // over all graphs, most frequent first
  uint64_t initializer_count = 0;
  uint64_t parameter_count = 0;    // elements of all initializers (dense + sparse non-zeros)
  uint64_t parameter_bytes = 0;
  std::vector<GraphCount> subgraphs;
  std::vector<GraphCount> functions;
  uint64_t inferred_values = 0;    // values with a known type after inference
  uint64_t total_values = 0;
  std::vector<Diagnostic> findings;
  size_t errors = 0, warnings = 0;
};

ModelSummary summarize(const Model* model, const Diagnostics& diags, const std::string& file);
std::string summary_text(const ModelSummary& s);
std::string summary_json(const ModelSummary& s);

}  // namespace onnxscope
