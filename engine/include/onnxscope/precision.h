// Where does reduced precision break my model? (`onnxscope precision`)
//
// - Range: each node's float outputs in the float32 run, against what
//   float16 (or bfloat16) can hold: values past its largest finite value
//   overflow to inf, nonzero values below its smallest subnormal flush to 0.
// - Conversion: the model with its float32 values in float16/bfloat16,
//   except nodes kept in float32 (casts at their edges) and nodes whose
//   operator cannot take the type (the schema says so).
// - Keep set: the nodes that overflow, then, greedily by the error each node
//   introduces on its own (blame), until the outputs meet the tolerance,
//   each step confirmed by a run of the mixed model.
// - Quantized models (against their float32 original): each quantized
//   value's error on its own, in quantization steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "onnxscope/diff.h"
#include "onnxscope/engine.h"
#include "onnxscope/graph_match.h"
#include "onnxscope/ir.h"

namespace onnxscope {

// What one node's float outputs span in a float32 run, against a target type.
struct NodeRange {
  size_t node_index = 0;
  std::string node, op_type, output;  // the output with the widest span
  double max_abs = 0;                 // largest finite magnitude
  double min_nonzero = 0;             // smallest nonzero magnitude (0: none)
  uint64_t elements = 0;
  uint64_t overflow = 0;              // finite values past the type's largest finite value
  uint64_t underflow = 0;             // nonzero values below its smallest subnormal (flushed to 0)
  uint64_t nonfinite = 0;             // NaN or inf already in float32
};

// The ranges of every data node with a float32 output, in topological order.
std::vector<NodeRange> node_ranges(const Model& model, const Capture& fp32, DataType target);

// The model with float32 values in `target` (Float16 or BFloat16): initializers
// and constants converted, float graph inputs and outputs kept float32 with
// Casts at the edges, nodes in `keep` (labels) running in float32 with Casts
// around them. Nodes whose operator does not take `target` (the schema's type
// constraints, operators outside the standard domains, subgraphs) stay
// float32 too; `auto_kept` lists them. Needs the float32 run's values for the
// element types of the model's values.
//
// With `emulate`, the model stays float32: each converted node reads its
// float inputs rounded to `target` (constants rounded once, values through a
// Cast to `target` and back) and its float outputs are rounded the same way.
// It computes what storing every value of the converted nodes in `target`
// gives (the reference's own float16 kernels compute in double and round
// each result once), at float32 speed on engines without float16 kernels.
//
// `weights`, when given, keeps the converted float32 constants between calls
// on one model (a search converts it many times): each is converted once.
struct ConvertedWeights {
  std::map<std::tuple<std::string, DataType, bool>, Tensor> made;  // (constant, target, emulated) -> its tensor
};
std::shared_ptr<Model> convert_precision(const Model& model, const Capture& fp32, DataType target,
                                         const std::set<std::string>& keep, std::vector<std::string>* auto_kept = nullptr,
                                         bool emulate = false, ConvertedWeights* weights = nullptr);

// Each node's own error in `target`, for all nodes in one run: the model as
// it is (float32), and beside each node convert_precision would convert (not
// in `keep`) the same node again on its inputs converted to `target`
// (emulated: rounded to it), its results in `target` cast back to float32
// and made graph outputs. A run gives, per node, what blame re-runs a piece
// for: its result from the float32 run's inputs. `nodes` receives, per such
// node (its label), its float outputs' names and their converted results'.
struct NodeAlone {
  std::string node;
  std::vector<std::pair<std::string, std::string>> outputs;  // (the model's value, the node alone's result)
};
std::shared_ptr<Model> node_error_model(const Model& model, const Capture& fp32, DataType target,
                                        const std::set<std::string>& keep, bool emulate, ConvertedWeights* weights,
                                        std::vector<NodeAlone>& nodes);

struct PrecisionOptions {
  DataType target = DataType::Float16;
  DiffTolerance tolerance;  // the outputs of the mixed model against float32's
  size_t max_keep = SIZE_MAX;  // nodes the search may keep in float32
  // The search runs emulated models (convert_precision's `emulate`); the
  // mixed model it ends with is converted for real and run once to confirm.
  bool emulate = true;
  std::function<void(const std::string&)> progress;
};

struct PrecisionResult {
  std::vector<NodeRange> ranges;
  std::optional<size_t> first_out_of_range;  // index into ranges: the first overflow or underflow
  std::vector<std::string> auto_kept;        // float32 because the operator cannot take the type
  std::vector<std::string> keep;             // the nodes kept in float32, in the order they were added
  std::vector<std::string> why;              // per kept node: "overflows float16 (max |x| 1.2e5)", "blame 0.3"
  TensorDiff all_low, mixed;                 // worst output: every node converted; the mixed model
  std::string all_low_output, mixed_output;
  bool met = false;                          // the mixed model's outputs meet the tolerance (a run of the real model)
  bool emulated_met = false;                 // the search's own verdict (emulated when PrecisionOptions::emulate)
  size_t runs = 0;
  std::shared_ptr<Model> mixed_model;
};

// Runs the float32 model (once, capturing every value) and converted models
// in `engine`. Throws onnxscope::Error when a run fails.
PrecisionResult find_mixed_precision(std::shared_ptr<const Model> model, const NamedValues& inputs, Engine& engine,
                                     const PrecisionOptions& options);

// A quantized model against its float32 original: per quantized value of B
// (its QuantizeLinear's scale and zero point), A's float32 value quantized
// with them and back, against A's value: the error that value's
// quantization makes on its own, in its steps; worst first.
struct QuantizedValueError {
  std::string a_tensor, b_tensor;  // the float value and the QuantizeLinear output in B
  std::string quantizer;           // B's QuantizeLinear node
  double scale = 0;                // one step (the largest, for per-axis scales)
  double max_steps = 0;            // largest |A - dq(q(A))| in steps
  double mean_steps = 0;
  uint64_t saturated = 0;          // elements clipped at the integer type's ends
  uint64_t elements = 0;
};
// The A value is the one A's partner of B's consumer reads (a Relu that B
// folded into the quantization range is applied, as B's consumer sees it),
// else the value paired with the quantized one.
std::vector<QuantizedValueError> quantized_value_errors(const Model& a, const Model& b, const GraphMatch& m,
                                                        const Capture& a_values, const Capture& b_values);

}  // namespace onnxscope
