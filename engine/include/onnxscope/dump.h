// HDF5 activation dumps (format: docs/dump-format.md). A writer streams a
// run's tensors to disk as nodes finish; a reader loads a dump defensively
// (every size and type checked before anything is allocated or read).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "onnxscope/diagnostics.h"
#include "onnxscope/diff.h"
#include "onnxscope/engine.h"

namespace onnxscope {

inline constexpr const char* kDumpFormat = "onnxscope-dump";
inline constexpr int64_t kDumpFormatVersion = 1;

struct DumpHeader {
  std::string tool_version;
  std::string model_path, model_sha256;
  std::string engine, engine_settings;  // settings as a JSON string
  std::string opset_imports;            // JSON object: domain -> version
  std::string created;                  // ISO 8601 UTC
  std::string producer;                 // "onnxscope", "onnxruntime", "pytorch"
};

struct TensorStats {
  double min = 0, max = 0, mean = 0, stddev = 0;
  uint64_t nan_count = 0, inf_count = 0, elements = 0;
};
TensorStats tensor_stats(const Tensor& t);

struct DumpEntry {
  std::string name;      // original tensor name
  std::string node;      // producing node ("" for inputs)
  std::string op_type;
  int64_t topo_index = -1;  // producing node's index in the main graph; -1 for inputs
  std::string dtype;     // ONNX dtype name
  Shape shape;
  bool stats_only = false;
  TensorStats stats;
  std::optional<Tensor> data;  // absent when stats_only (or not loaded)
};

struct DumpWriterOptions {
  std::optional<std::regex> only;  // tensor names to keep (search)
  bool stats_only = false;
};

// Writes one dump file. Throws onnxscope::Error naming the file on failure.
class DumpWriter {
 public:
  DumpWriter(const std::filesystem::path& path, const DumpHeader& header, DumpWriterOptions options = {});
  ~DumpWriter();
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  void write_input(const std::string& name, const Value& v);
  void write_tensor(const std::string& name, const Value& v, const std::string& node, const std::string& op_type,
                    int64_t topo_index);
  // Finalises the file (graph output names as an attribute); further writes fail.
  void close(const std::vector<std::string>& graph_outputs = {});
  size_t written() const { return written_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DumpWriterOptions options_;
  size_t written_ = 0;
};

// An observer that streams every node output of the main graph to a writer
// (tensors only; sequences and maps are skipped with a count).
class DumpObserver : public Observer {
 public:
  explicit DumpObserver(DumpWriter& w) : writer_(w) {}
  void on_node(const NodeEvent& e) override;
  size_t skipped_non_tensors() const { return skipped_; }

 private:
  DumpWriter& writer_;
  size_t skipped_ = 0;
};

struct DumpFile {
  DumpHeader header;
  std::vector<std::string> graph_outputs;
  std::vector<DumpEntry> inputs;
  std::vector<DumpEntry> tensors;  // in topological order when topo_index is known
};

struct DumpReadOptions {
  bool load_data = true;
  uint64_t max_tensor_bytes = uint64_t{4} << 30;  // refuse a dataset claiming more
  // Read the file in a child process that sends each dataset back: libhdf5
  // itself can crash, loop or allocate without bound on a malformed file
  // (the fuzzer found all three), and that must become an error, not take
  // the caller (the GUI) down. The child may go this long without sending a
  // dataset, and use 256 MiB for libhdf5 plus twice the dataset it reads.
  bool isolate = true;
  double isolate_timeout_seconds = 60;
};

// Throws onnxscope::Error naming the file, the dataset and the problem.
DumpFile read_dump(const std::filesystem::path& path, DumpReadOptions options = {});

// A dump as one side of a diff: its inputs and tensors by name (stats-only
// entries have no values and are left out), plus `model`'s initializers when
// given (dumps do not store weights; blame needs them to re-run a node).
// `source` names it in reports (default: "dump:<producer>").
Capture capture_from_dump(const DumpFile& dump, const Model* model = nullptr, std::string source = {});

// SHA-256 of a file, hex.
std::string file_sha256(const std::filesystem::path& path);

}  // namespace onnxscope
