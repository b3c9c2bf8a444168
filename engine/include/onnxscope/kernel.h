// The kernel ABI shared by every engine and by plugins: a kernel is a plain
// function over a KernelContext; a registry maps (domain, op_type, opset
// version range) to an ordered list of implementations, the first that
// accepts a problem runs it, and the reference kernel is always last.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"
#include "onnxscope/value.h"

namespace onnxscope {

class KernelContext;
using KernelFn = void (*)(KernelContext&);
using AcceptsFn = bool (*)(const KernelContext&);

struct KernelDef {
  std::string domain;           // "" is ai.onnx
  std::string op_type;
  int since_version = 1;        // first opset version implemented
  int until_version = INT_MAX;  // last opset version implemented (inclusive)
  std::string impl = "reference";
  KernelFn fn = nullptr;
  AcceptsFn accepts = nullptr;  // nullptr: accepts every problem
  // Per-kernel data for kernels that share one fn (plugins); the kernel reads
  // it through KernelContext::kernel_def().
  const void* data = nullptr;
};

class KernelRegistry {
 public:
  // Implementations are tried in the order they were added.
  void add(KernelDef def);
  void add_all(const KernelRegistry& other);
  // Every implementation covering this op at this opset version, in order.
  std::vector<const KernelDef*> candidates(std::string_view domain, std::string_view op_type,
                                           int64_t opset_version) const;
  bool has(std::string_view domain, std::string_view op_type, int64_t opset_version) const;
  const std::vector<KernelDef>& all() const { return defs_; }

 private:
  std::vector<KernelDef> defs_;
};

// What a kernel sees of the node it runs. Implemented by each engine.
class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual const Node& node() const = 0;
  // Imported version of the node's domain (model or function opset imports).
  virtual int64_t opset_version() const = 0;
  virtual size_t input_count() const = 0;  // as written in the node, omitted ones included
  // nullptr when the input is omitted ("") or beyond the written count.
  virtual const Value* input_value(size_t i) const = 0;
  virtual size_t output_count() const = 0;
  // False for an omitted ("") optional output: the kernel may skip computing it.
  virtual bool output_wanted(size_t i) const = 0;
  // The slot output i is written to (none until the kernel sets it).
  virtual Value& output(size_t i) = 0;
  // Runs a subgraph (If/Loop/Scan body, SequenceMap body) with this node's
  // scope visible; returns its outputs in order.
  virtual std::vector<Value> run_graph(const Graph& g, std::vector<Value> inputs) = 0;
  // Seed for random operators without a 'seed' attribute (deterministic runs).
  virtual uint64_t seed() const = 0;
  // Largest tensor a kernel may allocate, in bytes.
  virtual uint64_t max_tensor_bytes() const = 0;
  // Where this node is, for messages.
  virtual Location location() const = 0;
  // The graph this node belongs to, for operators that refer to other nodes
  // by name (ai.onnx.preview.training Gradient).
  virtual const Graph& graph() const = 0;
  // The storage of input i when this node is its last reader and nothing else
  // holds it (no other value, observer or caller): an output may then be
  // written into it in place (the input reads as that output from then on).
  // nullptr otherwise, and in contexts that cannot tell.
  virtual std::shared_ptr<Buffer> reusable_input_buffer(size_t i) {
    (void)i;
    return nullptr;
  }
  // A slot where the kernel being tried or run keeps what it worked out for
  // this node (a created primitive, reordered weights) from one call to the
  // next: one per node and kernel, for as long as the prepared model lives.
  // The kernel checks that what it kept still fits the inputs it is given.
  // nullptr where the engine keeps none.
  virtual std::shared_ptr<void>* kernel_state() const { return nullptr; }
  // True when the node's input i names an initializer of graph() (constant
  // weights a kernel may pack once). By name here; the interpreter answers
  // from its plan without a search.
  virtual bool input_is_initializer(size_t i) const {
    return i < node().inputs.size() && graph().initializer(node().inputs[i]) != nullptr;
  }

  // --- helpers on top of the above ---------------------------------------
  bool has_input(size_t i) const;
  // The i-th input as a tensor; fails (a located error) if absent or not a tensor.
  const Tensor& input(size_t i) const;
  const Tensor* optional_input(size_t i) const;
  // A zero-filled output tensor, size-checked against max_tensor_bytes().
  Tensor& allocate_output(size_t i, DataType type, Shape shape);
  void set_output(size_t i, Value v) { output(i) = std::move(v); }

  const Attribute* attr(std::string_view name) const { return node().attribute(name); }
  bool has_attr(std::string_view name) const { return attr(name) != nullptr; }
  // The attribute's value, or `fallback` (the spec's default) when not given;
  // fails if the attribute has another type.
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback = {}) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  std::vector<std::string> attr_strings(std::string_view name, std::vector<std::string> fallback = {}) const;
  const Tensor* attr_tensor(std::string_view name) const;
  const Graph* attr_graph(std::string_view name) const;
  // Attribute that must be present.
  const Attribute& required_attr(std::string_view name) const;

  // Throws onnxscope::Error (code "kernel") located at this node.
  [[noreturn]] void fail(const std::string& message) const;

  // The registry entry being tried or run (set by the engine before it calls
  // accepts/fn); nullptr when a kernel is called directly.
  const KernelDef* kernel_def() const { return kernel_def_; }
  void set_kernel_def(const KernelDef* def) { kernel_def_ = def; }

 private:
  const KernelDef* kernel_def_ = nullptr;
};

}  // namespace onnxscope
