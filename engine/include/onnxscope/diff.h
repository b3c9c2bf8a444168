// Comparing two sources of the same model's tensors (two engines, or an
// engine and a dump): per-tensor error statistics, the first node whose
// outputs leave the tolerance, and blame: the error a node introduces
// (itself, re-run on the first source's inputs) versus the error it inherits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/engine.h"

namespace onnxscope {

// How close two tensors must be. One global rtol/atol (or a ULP limit), then
// narrower rules: by element type, then by tensor name (the most specific
// wins). Element i agrees when |a-b| <= atol + rtol * |a| (a is the baseline).
struct ToleranceRule {
  double rtol = 0, atol = 0;
};

struct DiffTolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
  int64_t max_ulp = -1;  // >= 0: compare by ULP distance instead of rtol/atol
  std::map<DataType, ToleranceRule> by_dtype;
  std::map<std::string, ToleranceRule> by_tensor;
  // Tensors that carry quantization parameters, with the size of one step in
  // their own units (quantization_steps() finds them): 1 for a quantized
  // integer tensor, the scale for a DequantizeLinear output. Each diff of
  // such a tensor reports its difference in steps; with quant_steps > 0 a
  // difference of up to that many steps is within tolerance (--quant-steps).
  std::map<std::string, double> quant_step;
  int64_t quant_steps = 0;

  // The rule for one tensor: its name's, else its type's (the looser of the
  // two types' when A and B differ in type), else the global one.
  ToleranceRule rule_for(const std::string& tensor, DataType a, DataType b) const;
  // "rtol 1e-4, atol 1e-5; float16: rtol 0.004, atol 0.001; 'y': ..."
  std::string describe() const;
};

// The tensors of `model`'s main graph whose values are quantized, with one
// step's size: the integer outputs of QuantizeLinear, DynamicQuantizeLinear,
// QLinear* (ai.onnx and com.microsoft) and a quantized QGemm (a step is 1),
// and the float outputs of DequantizeLinear whose scale is one constant
// value (a step is that scale). Per-axis and blocked scales are left out.
std::map<std::string, double> quantization_steps(const Model& model);

// The tolerance a diff uses when none is given: 1e-4 / 1e-5, looser for
// float16 and bfloat16 (a few units in their last place), whose rounding
// alone would otherwise fail every comparison.
DiffTolerance default_tolerance();

// Elements where exactly one side is NaN, or one side is infinite and the
// other is not the same infinity, are out of tolerance whatever the
// tolerance; NaN against NaN and inf against the same inf agree (as upstream's
// comparison does). Each kind of mismatch is counted with its first index.
struct NonFiniteMismatch {
  uint64_t count = 0;
  uint64_t first = 0;  // flat index of the first
};

struct TensorDiff {
  bool comparable = true;   // false: shape, kind or an incompatible dtype differ (see `problem`)
  std::string problem;
  DataType dtype_a = DataType::Undefined, dtype_b = DataType::Undefined;
  bool types_differ() const { return dtype_a != dtype_b; }  // compared in double when both are numbers
  ToleranceRule rule;       // the rtol/atol this tensor was held to
  double quant_step = 0;    // > 0: one quantization step of this tensor (DiffTolerance::quant_step)
  double steps() const { return quant_step > 0 ? max_abs / quant_step : 0; }  // the difference in steps
  uint64_t elements = 0;
  // max_abs is inf when a non-finite value meets a different value; max_rel
  // is over the elements whose A is not zero.
  double max_abs = 0, max_rel = 0, mean_abs = 0, rmse = 0;
  double cosine = 1;        // cosine similarity of the two tensors as vectors (finite pairs)
  uint64_t max_ulp = 0;     // for float types
  uint64_t out_of_tolerance = 0;
  uint64_t nan_a = 0, nan_b = 0, inf_a = 0, inf_b = 0;
  NonFiniteMismatch nan_only_a, nan_only_b;  // NaN on one side, a number on the other
  NonFiniteMismatch inf_only_a, inf_only_b;  // an infinity on one side, a finite value on the other
  NonFiniteMismatch inf_opposite;            // inf against -inf
  // The element with the largest violation of the tolerance (|a-b| - atol -
  // rtol*|a|, or ULP distance - limit; a non-finite mismatch is the largest),
  // the first of equals. For a tensor within tolerance: the closest to failing.
  uint64_t worst_index = 0;
  double worst_a = 0, worst_b = 0;
  double worst_violation = 0;
  bool within() const { return comparable && out_of_tolerance == 0; }
  uint64_t nonfinite_mismatches() const {
    return nan_only_a.count + nan_only_b.count + inf_only_a.count + inf_only_b.count + inf_opposite.count;
  }
  bool any_nonfinite() const { return nan_a + nan_b + inf_a + inf_b > 0; }
};

// Element statistics of b against a (a is the baseline), held to the rule
// `tol` gives the tensor `name`.
TensorDiff diff_tensors(const Tensor& a, const Tensor& b, const DiffTolerance& tol, const std::string& name = {});
TensorDiff diff_values(const Value& a, const Value& b, const DiffTolerance& tol, const std::string& name = {});

// How a diff's numbers are written: enough significant digits that two
// different values of `t` never print the same (9 for float32, 17 for double,
// 5 for float16...); "inf", "-inf", "nan" as such.
std::string format_value(double v, DataType t);
// "A holds 3 inf where B is finite (first at flat index 7)"; "" when the
// non-finite values agree.
std::string nonfinite_mismatch_text(const TensorDiff& d);
// "NaN A=1 B=0, inf A=130 B=130"; "" when neither side holds any.
std::string nonfinite_counts_text(const TensorDiff& d);

// Every value a run produced, by name, with the node that produced it.
struct Capture {
  std::string source;  // "reference", "cpu", a dump file
  std::map<std::string, Value> values;
  std::map<std::string, std::string> kernel_of;  // value -> kernel that produced it
};

// Runs `engine` on `model` with `inputs`, capturing the outputs of every node
// of the main graph (graph inputs included).
Capture capture_run(Engine& engine, std::shared_ptr<const Model> model, const NamedValues& inputs);
// The same, but each node's outputs are checked against `a` as they come and
// the run stops after the first node that leaves the tolerance (--fail-fast):
// the capture then ends there.
Capture capture_run_until_divergence(Engine& engine, std::shared_ptr<const Model> model, const NamedValues& inputs,
                                     const Capture& a, const DiffTolerance& tol);

struct NodeDiff {
  size_t node_index = 0;
  std::string node, op_type;
  std::vector<std::pair<std::string, TensorDiff>> outputs;  // per output present on both sides
  std::vector<std::string> only_in_a, only_in_b;             // outputs one side lacks
  // diff --against (model_diff.h): per compared output, the tensor of model B it was compared with.
  std::vector<std::pair<std::string, std::string>> partners;
  // diff --against, a node with no output paired: "in a rewritten region"
  // (B computes its value in another form) or "unmatched".
  std::string unpaired;
  bool diverges = false;
  // Blame: error of this node alone, re-run in engine B on A's inputs.
  std::optional<TensorDiff> introduced;
  double introduced_score = 0;  // max_abs of the introduced error over its outputs
  double total_score = 0;       // max_abs of the observed error
};

struct DiffReport {
  std::string a, b;
  std::vector<NodeDiff> nodes;          // main graph, topological order
  std::optional<size_t> first_divergence;  // index into nodes
  std::optional<size_t> first_nonfinite;   // index into nodes: first compared output holding NaN/Inf on either side
                                           // (Constant nodes, whose values the file holds, aside)
  bool stopped_early = false;              // --fail-fast: nodes after the first divergence were not compared
  size_t diverging() const;                // nodes whose outputs leave the tolerance
  size_t types_differ() const;             // compared outputs whose dtypes differ
  std::vector<size_t> blame_order;      // indices into nodes, largest introduced error first
};

// Compares two captures along the model's topological order. With
// `fail_fast`, stops after the first divergent node.
DiffReport diff_captures(const Model& model, const Capture& a, const Capture& b, const DiffTolerance& tol,
                         bool fail_fast = false);

// One step of a comparison in order: a node (or, for dumps without a model,
// the producer a dump names) and the tensors it made.
struct DiffStep {
  std::string node, op_type;
  size_t index = 0;
  std::vector<std::string> outputs;
};
// The same comparison over steps given in order (compare without a model).
DiffReport diff_steps(const std::vector<DiffStep>& steps, const Capture& a, const Capture& b, const DiffTolerance& tol,
                      bool fail_fast = false);

// Fills `introduced` for each node: its inputs taken from capture `a`, the
// node re-run alone in `engine_b`, its outputs compared with `a`'s.
// `should_stop` (polled between nodes) ends it early: nodes not reached get no
// blame, and the function returns false.
bool blame_nodes(const Model& model, const Capture& a, Engine& engine_b, const DiffTolerance& tol, DiffReport& report,
                 const std::function<bool()>& should_stop = {});

}  // namespace onnxscope
