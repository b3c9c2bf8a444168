#include "reference/interpreter.h"

#include "onnxscope/deadline.h"

#include "loader/function_body.h"
#include "onnxscope/op_schema.h"

#include <algorithm>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

namespace onnxscope::ref {
namespace {

[[noreturn]] void fail_at(Location where, std::string code, std::string message) {
  throw Error(Diagnostic{Severity::Error, std::move(code), std::move(where), std::move(message), {}});
}

int64_t version_in(const std::vector<OpsetImport>& opsets, const std::string& domain) {
  for (const auto& o : opsets)
    if (o.domain == domain || (is_default_domain(domain) && is_default_domain(o.domain))) return o.version;
  return 0;
}

// The KernelContext a kernel sees: one node, its inputs, its output slots.
class NodeContext final : public KernelContext {
 public:
  NodeContext(Interpreter& in, Interpreter::Frame& frame, const Graph& graph, const Node& node, int64_t version,
              const Location& where, const std::vector<const Value*>& inputs, std::vector<Value>& outputs,
              const std::vector<OpsetImport>& opsets, const std::string& path, int64_t iteration,
              const std::vector<Interpreter::GraphPlan::Read>& reads)
      : in_(in), frame_(frame), graph_(graph), node_(node), index_(static_cast<size_t>(where.node_index)),
        version_(version), where_(where), inputs_(inputs),
        outputs_(outputs), opsets_(opsets), path_(path), iteration_(iteration), reads_(reads) {}

  const Node& node() const override { return node_; }
  int64_t opset_version() const override { return version_; }
  size_t input_count() const override { return inputs_.size(); }
  const Value* input_value(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t output_count() const override { return outputs_.size(); }
  bool output_wanted(size_t i) const override { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  Value& output(size_t i) override {
    if (i >= outputs_.size()) fail("kernel wrote output " + std::to_string(i) + " but the node has " + std::to_string(outputs_.size()));
    if (i < 64) {
      written_mask_ |= uint64_t{1} << i;
    } else {
      written_.resize(outputs_.size());
      written_[i] = true;
    }
    return outputs_[i];
  }
  bool written(size_t i) const {
    return i < 64 ? ((written_mask_ >> i) & 1) != 0 : i < written_.size() && written_[i];
  }
  std::vector<Value> run_graph(const Graph& g, std::vector<Value> inputs) override {
    ++subgraph_runs_;
    return in_.exec_subgraph(g, std::move(inputs), frame_, path_ + "/" + where_.node, opsets_,
                             subgraph_runs_ - 1);
  }
  uint64_t seed() const override { return in_.options().seed; }
  uint64_t max_tensor_bytes() const override { return in_.max_tensor_bytes(); }
  Location location() const override { return where_; }
  const Graph& graph() const override { return graph_; }
  std::shared_ptr<Buffer> reusable_input_buffer(size_t i) override {
    if (i >= inputs_.size() || !inputs_[i] || !inputs_[i]->is_tensor() || index_ >= graph_.nodes.size()) return nullptr;
    // An observer that reads values is shown the node's inputs after the node ran.
    if (in_.options().observer && in_.options().observer->reads_values()) return nullptr;
    const std::string& name = node_.inputs[i];
    for (size_t k = 0; k < node_.inputs.size(); ++k)
      if (k != i && node_.inputs[k] == name) return nullptr;  // read twice by this node
    const auto& dead = in_.dead_after(graph_)[index_];
    if (std::find(dead.begin(), dead.end(), name) == dead.end()) return nullptr;  // read later
    // This graph's own value, not an outer scope's or an initializer.
    const int32_t slot = i < reads_.size() ? reads_[i].slot : -1;
    if (slot < 0 || !frame_.slots[static_cast<size_t>(slot)] || &*frame_.slots[static_cast<size_t>(slot)] != inputs_[i])
      return nullptr;
    const std::shared_ptr<Buffer>& b = inputs_[i]->tensor().buffer();
    if (!b || b.use_count() != 1 || !b->owns_bytes()) return nullptr;
    return b;
  }
  std::shared_ptr<void>* kernel_state() const override {
    if (!kernels_ || !kernel_def()) return nullptr;
    for (size_t k = 0; k < kernels_->candidates.size(); ++k)
      if (kernels_->candidates[k] == kernel_def()) return &kernels_->states[k];
    return nullptr;
  }
  void set_node_kernels(Interpreter::NodeKernels* k) { kernels_ = k; }
  bool input_is_initializer(size_t i) const override { return i < reads_.size() && reads_[i].constant != nullptr; }

 private:
  Interpreter::NodeKernels* kernels_ = nullptr;
  Interpreter& in_;
  Interpreter::Frame& frame_;
  const Graph& graph_;
  const Node& node_;
  size_t index_;  // in graph_.nodes
  int64_t version_;
  const Location& where_;  // the interpreter's cached location of this node
  const std::vector<const Value*>& inputs_;
  std::vector<Value>& outputs_;
  const std::vector<OpsetImport>& opsets_;
  const std::string& path_;
  [[maybe_unused]] int64_t iteration_;
  const std::vector<Interpreter::GraphPlan::Read>& reads_;
  int64_t subgraph_runs_ = 0;
  uint64_t written_mask_ = 0;   // outputs 0-63 (no allocation per node)
  std::vector<bool> written_;  // outputs from 64 on
};

// Sparse initializers become dense tensors for the kernels (size-checked).
Tensor densify(const SparseTensor& s, uint64_t limit, const Location& where) {
  auto count = checked_element_count(s.dims);
  auto bytes = count ? storage_bytes(s.values.dtype(), *count) : std::nullopt;
  if (!bytes || *bytes > limit || s.values.is_string() || is_packed_dtype(s.values.dtype()))
    fail_at(where, "sparse-initializer", "cannot densify sparse initializer of shape " + shape_to_string(s.dims));
  Tensor dense = Tensor::zeros(s.values.dtype(), s.dims);
  const uint64_t elem = *storage_bytes(s.values.dtype(), 1);
  const uint64_t nnz = s.values.element_count();
  const bool linear = s.indices.rank() == 1;
  auto strides = std::vector<uint64_t>(s.dims.size(), 1);
  for (size_t d = s.dims.size(); d-- > 1;) strides[d - 1] = strides[d] * static_cast<uint64_t>(s.dims[d]);
  for (uint64_t k = 0; k < nnz; ++k) {
    uint64_t pos = 0;
    if (linear) {
      pos = static_cast<uint64_t>(s.indices.element_as_int64(k));
    } else {
      for (size_t d = 0; d < s.dims.size(); ++d)
        pos += static_cast<uint64_t>(s.indices.element_as_int64(k * s.dims.size() + d)) * strides[d];
    }
    std::memcpy(dense.mutable_raw() + pos * elem, s.values.raw() + k * elem, elem);
  }
  return dense;
}

}  // namespace

uint64_t default_max_tensor_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{8} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2;
}

uint64_t default_max_live_bytes() { return default_max_tensor_bytes() / 2 * 3; }

uint64_t value_bytes(const Value& v) {
  if (v.is_tensor()) return v.tensor().byte_size();
  if (v.is_sequence()) {
    uint64_t n = 0;
    for (const auto& item : v.items()) n += value_bytes(item);
    return n;
  }
  if (v.is_map()) return v.map_keys().byte_size() + v.map_values().byte_size();
  return 0;
}

const Value* Interpreter::Frame::find(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent) {
    if (auto it = f->plan->slot_of.find(name); it != f->plan->slot_of.end())
      if (const auto& v = f->slots[static_cast<size_t>(it->second)]) return &*v;
    if (auto it = f->plan->constant_of.find(name); it != f->plan->constant_of.end()) return it->second;
  }
  return nullptr;
}

Interpreter::Interpreter(std::shared_ptr<const Model> model, const KernelRegistry& kernels, uint64_t max_tensor_bytes)
    : Interpreter(std::move(model), kernels, RunLimits{max_tensor_bytes, 0, 0}) {}

Interpreter::Interpreter(std::shared_ptr<const Model> model, const KernelRegistry& kernels, const RunLimits& limits)
    : model_(std::move(model)), kernels_(kernels), limits_(limits) {
  if (!limits_.max_tensor_bytes) limits_.max_tensor_bytes = default_max_tensor_bytes();
  if (!limits_.max_live_bytes) limits_.max_live_bytes = default_max_live_bytes();
  max_tensor_bytes_ = limits_.max_tensor_bytes;
}

void Interpreter::count_live(int64_t delta, const Location& where) {
  live_bytes_ = delta < 0 && static_cast<uint64_t>(-delta) > live_bytes_ ? 0 : live_bytes_ + static_cast<uint64_t>(delta);
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live_bytes_);
  if (delta > 0 && live_bytes_ > limits_.max_live_bytes)
    fail_at(where, "live-bytes-limit",
            "the values alive after this node take " + std::to_string(live_bytes_) + " bytes, more than the limit of " +
                std::to_string(limits_.max_live_bytes) + " bytes (raise it with --max-live-bytes)");
}

namespace {
std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}
}  // namespace

void Interpreter::check_deadline(const Location& where) const {
  if (limits_.timeout_seconds > 0 && std::chrono::steady_clock::now() > deadline_)
    fail_at(where, "timeout",
            "the run took longer than the limit of " + seconds_text(limits_.timeout_seconds) +
                " s (raise it with --timeout)");
}

std::vector<NodeSupport> Interpreter::supports() const {
  std::vector<NodeSupport> out;
  for (size_t i = 0; i < model_->graph.nodes.size(); ++i) {
    const Node& n = model_->graph.nodes[i];
    NodeSupport s{"main", i, false, {}};
    int64_t v = model_->opset_version(n.domain);
    auto c = kernels_.candidates(n.domain, n.op_type, v);
    if (!c.empty()) {
      s.supported = true;
      s.detail = c.front()->impl;
    } else if (model_->function(n.domain, n.op_type, n.overload)) {
      s.supported = true;
      s.detail = "function";
    } else if (const OpSchema* schema = find_schema(n.domain, n.op_type, v);
               schema && find_function_body(*schema, model_->opset_version(""))) {
      s.supported = true;
      s.detail = "schema-function";
    } else {
      s.detail = "no kernel for " + std::string(domain_display_name(n.domain)) + " " + n.op_type + " at opset " +
                 std::to_string(v);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void Interpreter::cache_shape_values(const std::function<bool(const Node&)>& follows_input_shapes) {
  shape_nodes_ = shape_determined_nodes(*model_, follows_input_shapes);
  bool any = false;
  for (uint8_t b : shape_nodes_) any = any || b;
  if (!any) {
    shape_nodes_.clear();
    return;
  }
  const Graph& g = model_->graph;
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  shape_readers_.assign(g.nodes.size(), {});
  for (size_t j = 0; j < g.nodes.size(); ++j)
    detail::for_each_read(g.nodes[j], free_names_, [&](const std::string& v) {
      if (auto it = producer.find(v); it != producer.end() && shape_nodes_[it->second])
        shape_readers_[it->second].push_back(static_cast<uint32_t>(j));
    });
  for (const auto& o : g.outputs)
    if (auto it = producer.find(o.name); it != producer.end()) shape_readers_[it->second].push_back(kAnyReader);
}

bool Interpreter::kept_values_needed(size_t node) const {
  if (node >= shape_readers_.size()) return true;
  for (uint32_t r : shape_readers_[node])
    if (r == kAnyReader || !shape_cache_.find(r)) return true;
  return false;
}

void Interpreter::load_sparse_initializers(const Graph& g, Frame& frame) const {
  for (size_t k = 0; k < g.sparse_initializers.size(); ++k)
    frame.slots[static_cast<size_t>(frame.plan->sparse_slots[k])] =
        Value(densify(g.sparse_initializers[k], max_tensor_bytes_, Location{model_->source, "main", -1, {}, {}, g.sparse_initializer_names[k]}));
}

NamedValues Interpreter::run(const NamedValues& inputs, const RunOptions& options) {
  options_ = options;
  stats_ = {};
  live_bytes_ = 0;
  if (limits_.timeout_seconds > 0)
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limits_.timeout_seconds));
  const DeadlineScope deadline(limits_.timeout_seconds > 0 ? deadline_ : std::chrono::steady_clock::time_point::max());
  // The main graph's dense initializers are its plan's constants, made
  // once: a run reads them there instead of copying each into its frame.
  const Graph& main = model_->graph;
  Frame frame(graph_plan(main, model_->opset_imports), nullptr);
  load_sparse_initializers(main, frame);
  for (const auto& [name, value] : inputs) {
    size_t k = 0;
    while (k < main.inputs.size() && main.inputs[k].name != name) ++k;
    if (k == main.inputs.size())
      fail_at(Location{model_->source, "main", -1, {}, {}, name}, "unknown-input",
              "the model has no input named '" + name + "'");
    frame.slots[static_cast<size_t>(frame.plan->input_slots[k])] = value;  // a given input overrides an initializer default
  }
  for (const auto& v : model_->graph.inputs)
    if (!frame.find(v.name))
      fail_at(Location{model_->source, "main", -1, {}, {}, v.name}, "missing-input",
              "input '" + v.name + "' (" + v.type.to_string() + ") was not given");
  if (!shape_nodes_.empty() && !options_.observer) {
    std::vector<const Value*> given;
    for (const auto& v : model_->graph.inputs) given.push_back(frame.find(v.name));
    shape_cache_.begin_run(given, model_->graph.nodes.size());
  } else {
    shape_cache_.pause();
  }
  auto outs = exec_graph(model_->graph, frame, "main", model_->opset_imports, -1);
  NamedValues result;
  for (size_t i = 0; i < outs.size(); ++i) result.emplace_back(model_->graph.outputs[i].name, std::move(outs[i]));
  return result;
}

void Interpreter::plan_ahead() { plan_graph(model_->graph, "main"); }

void Interpreter::plan_graph(const Graph& g, const std::string& path) {
  // Subgraphs run with the main graph's opsets and at the path run_graph gives them.
  graph_plan(g, model_->opset_imports);
  node_locations(g, path);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& a : g.nodes[i].attributes) {
      const std::string sub = path + "/" + g.nodes[i].label(i);
      if (a.g) plan_graph(*a.g, sub);
      for (const auto& one : a.graphs)
        if (one) plan_graph(*one, sub);
    }
}

const std::vector<std::vector<std::string>>& Interpreter::dead_after(const Graph& g) {
  if (auto it = dead_after_.find(&g); it != dead_after_.end()) return it->second;
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    detail::for_each_read(g.nodes[i], free_names_, [&](const std::string& v) { last[v] = i; });
  // Gradient recomputes part of its graph from values it names in attributes:
  // keep everything produced before it alive until it has run.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op_type == "Gradient")
      for (auto& [name, at] : last)
        if (at < i) at = i;
  for (const auto& o : g.outputs) last.erase(o.name);
  std::vector<std::vector<std::string>> dead(g.nodes.size());
  for (auto& [name, i] : last) dead[i].push_back(name);
  return dead_after_[&g] = std::move(dead);
}

const Interpreter::GraphPlan& Interpreter::graph_plan(const Graph& g, const std::vector<OpsetImport>& opsets) {
  GraphPlan& plan = plans_[&g];
  if (plan.opsets == &opsets && plan.versions.size() == g.nodes.size()) return plan;
  plan = GraphPlan{};
  plan.opsets = &opsets;
  auto slot = [&](const std::string& name) {  // a name defined twice has one slot, as it is held once
    auto [it, fresh] = plan.slot_of.try_emplace(name, static_cast<int32_t>(plan.value_slots));
    if (fresh) ++plan.value_slots;
    return it->second;
  };
  for (const auto& v : g.inputs) plan.input_slots.push_back(slot(v.name));
  for (const auto& name : g.sparse_initializer_names) plan.sparse_slots.push_back(slot(name));
  for (const auto& init : g.initializers)
    plan.constant_of[init.name] = &plan.constants.emplace_back(Value(init.value));  // (a later one of a name wins, as before)
  for (const Node& n : g.nodes) {
    plan.versions.push_back(version_in(opsets, n.domain));
    plan.kernels.push_back(&node_kernels(n, plan.versions.back()));
    std::vector<int32_t> outs;
    for (const auto& o : n.outputs) outs.push_back(o.empty() ? -1 : slot(o));
    plan.output_slots.push_back(std::move(outs));
  }
  for (const Node& n : g.nodes) {
    std::vector<GraphPlan::Read> reads(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k].empty()) continue;
      if (auto it = plan.slot_of.find(n.inputs[k]); it != plan.slot_of.end()) reads[k].slot = it->second;
      if (auto it = plan.constant_of.find(n.inputs[k]); it != plan.constant_of.end()) reads[k].constant = it->second;
    }
    plan.reads.push_back(std::move(reads));
  }
  for (const auto& names : dead_after(g)) {
    std::vector<int32_t> d;
    for (const auto& name : names)
      if (auto it = plan.slot_of.find(name); it != plan.slot_of.end()) d.push_back(it->second);
    plan.dead.push_back(std::move(d));
  }
  return plan;
}

std::vector<Value> Interpreter::exec_graph(const Graph& g, Frame& frame, const std::string& path,
                                           const std::vector<OpsetImport>& opsets, int64_t iteration) {
  const GraphPlan& plan = *frame.plan;
  // Bytes of each node output of this graph still held in `frame`, for
  // live-bytes accounting; kNotHeld where none is (inputs are not counted).
  constexpr uint64_t kNotHeld = ~uint64_t{0};
  std::vector<uint64_t> held(plan.value_slots, kNotHeld);
  struct Release {  // whatever is left when the graph ends (or fails) stops counting
    Interpreter& in;
    const std::vector<uint64_t>& held;
    ~Release() {
      uint64_t n = 0;
      for (uint64_t b : held)
        if (b != kNotHeld) n += b;
      in.live_bytes_ = n > in.live_bytes_ ? 0 : in.live_bytes_ - n;
    }
  } release{*this, held};
  const std::vector<Location>& where = node_locations(g, path);
  const bool cache_here = shape_cache_.active() && &g == &model_->graph && iteration < 0 && shape_nodes_.size() == g.nodes.size();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (options_.observer && options_.observer->should_stop()) fail_at(where[i], "cancelled", "run cancelled");
    check_deadline(where[i]);
    if (options_.observer) options_.observer->on_node_start(path, i, g.nodes[i]);
    const auto& outs = g.nodes[i].outputs;
    const bool shape_node = cache_here && shape_nodes_[i];
    const std::vector<Value>* kept = shape_node ? shape_cache_.find(i) : nullptr;
    const std::vector<int32_t>& out_slots = plan.output_slots[i];
    if (kept) {
      ++stats_.shape_nodes_reused;
      if (kept_values_needed(i))  // (else only kept nodes read them: nothing asks for the values)
        for (size_t k = 0; k < outs.size(); ++k)
          if (out_slots[k] >= 0 && !(*kept)[k].is_none())  // (none: never produced)
            frame.slots[static_cast<size_t>(out_slots[k])] = (*kept)[k];
    } else {
      exec_node(g, plan, i, frame, path, opsets, iteration, where[i]);
      if (shape_node) {
        std::vector<const Value*> made;
        for (int32_t slot : out_slots) {
          const auto* v = slot < 0 ? nullptr : &frame.slots[static_cast<size_t>(slot)];
          made.push_back(v && *v ? &**v : nullptr);
        }
        shape_cache_.keep(i, made);
      }
    }
    uint64_t added = 0;
    for (int32_t slot : out_slots) {
      if (slot < 0 || held[static_cast<size_t>(slot)] != kNotHeld) continue;  // a name written twice counts once
      const auto& v = frame.slots[static_cast<size_t>(slot)];
      if (!v) continue;
      held[static_cast<size_t>(slot)] = value_bytes(*v);
      added += held[static_cast<size_t>(slot)];
    }
    count_live(static_cast<int64_t>(added), where[i]);
    // Free what no later node reads, so peak memory follows liveness.
    for (int32_t slot : plan.dead[i]) {
      if (held[static_cast<size_t>(slot)] != kNotHeld) {
        count_live(-static_cast<int64_t>(held[static_cast<size_t>(slot)]), where[i]);
        held[static_cast<size_t>(slot)] = kNotHeld;
      }
      frame.slots[static_cast<size_t>(slot)].reset();
    }
  }
  std::vector<Value> outs;
  outs.reserve(g.outputs.size());
  for (const auto& o : g.outputs) {
    const Value* v = frame.find(o.name);
    if (!v) fail_at(Location{model_->source, path, -1, {}, {}, o.name}, "missing-output", "graph output '" + o.name + "' was never produced");
    outs.push_back(*v);
  }
  return outs;
}

std::vector<Value> Interpreter::exec_subgraph(const Graph& g, std::vector<Value> inputs, const Frame& parent,
                                              const std::string& path, const std::vector<OpsetImport>& opsets,
                                              int64_t iteration) {
  if (inputs.size() != g.inputs.size())
    fail_at(Location{model_->source, path, -1, {}, {}, {}}, "subgraph-inputs",
            "subgraph takes " + std::to_string(g.inputs.size()) + " inputs but was given " + std::to_string(inputs.size()));
  Frame frame(graph_plan(g, opsets), &parent);
  load_sparse_initializers(g, frame);
  for (size_t i = 0; i < inputs.size(); ++i) frame.slots[static_cast<size_t>(frame.plan->input_slots[i])] = std::move(inputs[i]);
  return exec_graph(g, frame, path, opsets, iteration);
}

void Interpreter::exec_node(const Graph& g, const GraphPlan& plan, size_t index, Frame& frame, const std::string& path,
                            const std::vector<OpsetImport>& opsets, int64_t iteration, const Location& where) {
  const Node& node = g.nodes[index];
  const int64_t version = plan.versions[index];
  NodeKernels& nk = *plan.kernels[index];
  const std::vector<GraphPlan::Read>& reads = plan.reads[index];
  // The input and output slots come from a pool, one pair per nesting depth
  // (a kernel may run a subgraph), kept from node to node and run to run.
  if (depth_ == slots_.size()) slots_.emplace_back();  // a deque: deeper levels never move shallower ones
  NodeSlots& slots = slots_[depth_];
  struct Nest {
    size_t& depth;
    NodeSlots& s;
    ~Nest() {
      --depth;
      s.outputs.clear();  // values not handed to the frame (a failed node) are not kept
    }
  } nest{++depth_, slots};
  std::vector<const Value*>& inputs = slots.inputs;
  inputs.assign(node.inputs.size(), nullptr);
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (node.inputs[k].empty()) continue;
    // This graph's value, else its initializer, else an enclosing scope's.
    const GraphPlan::Read& r = reads[k];
    if (r.slot >= 0 && frame.slots[static_cast<size_t>(r.slot)])
      inputs[k] = &*frame.slots[static_cast<size_t>(r.slot)];
    else if (r.constant)
      inputs[k] = r.constant;
    else
      inputs[k] = frame.parent ? frame.parent->find(node.inputs[k]) : nullptr;
    if (!inputs[k]) {
      Location at = where;
      at.value = node.inputs[k];
      fail_at(at, "missing-value", "input '" + node.inputs[k] + "' has no value (it was never produced)");
    }
  }
  std::vector<Value>& outputs = slots.outputs;
  outputs.clear();
  outputs.resize(node.outputs.size());
  std::string impl;
  // Timed only for an observer (NodeEvent::seconds): two clock reads per node otherwise.
  const auto start = options_.observer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  NodeContext ctx(*this, frame, g, node, version, where, inputs, outputs, opsets, path, iteration, reads);
  ctx.set_node_kernels(&nk);
  const KernelDef* chosen = nullptr;
  for (const KernelDef* k : nk.candidates) {
    ctx.set_kernel_def(k);
    if (!k->accepts || k->accepts(ctx)) {
      chosen = k;
      break;
    }
  }
  ctx.set_kernel_def(chosen);
  try {
    if (chosen) {
      impl = chosen->impl;
      chosen->fn(ctx);
    } else if (const Function* f = model_->function(node.domain, node.op_type, node.overload)) {
      impl = "function";
      call_function(*f, node, inputs, outputs, path + "/" + where.node);
    } else if (const Function* body = schema_function(node, version, opsets)) {
      impl = "schema-function";
      call_function(*body, node, inputs, outputs, path + "/" + where.node);
    } else {
      fail_at(where, "no-kernel",
              "no kernel for " + std::string(domain_display_name(node.domain)) + " " + node.op_type + " at opset " +
                  std::to_string(version));
    }
  } catch (const Error&) {
    throw;
  } catch (const DeadlineExceeded&) {
    check_deadline(where);  // the deadline is past: this reports it as the run's timeout
    throw;
  } catch (const std::bad_alloc&) {
    fail_at(where, "out-of-memory", "ran out of memory");
  } catch (const std::exception& e) {
    fail_at(where, "kernel", e.what());
  }
  const double seconds =
      options_.observer ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() : 0.0;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (chosen && ctx.output_wanted(k) && !ctx.written(k))
      fail_at(where, "kernel", impl + " kernel produced no value for output " + std::to_string(k) + " ('" +
                                   node.outputs[k] + "')");
  if (options_.observer && (iteration < 0 || options_.observe_subgraphs)) {
    NodeEvent e;
    e.graph_path = path;
    e.node_index = index;
    e.node = &node;
    e.kernel = impl;
    e.inputs = inputs;
    e.outputs = outputs;
    e.seconds = seconds;
    e.iteration = iteration;
    options_.observer->on_node(e);
  }
  const std::vector<int32_t>& out_slots = plan.output_slots[index];
  for (size_t k = 0; k < outputs.size(); ++k)
    if (out_slots[k] >= 0) frame.slots[static_cast<size_t>(out_slots[k])] = std::move(outputs[k]);
}

const std::vector<Location>& Interpreter::node_locations(const Graph& g, const std::string& path) {
  auto [it, fresh] = locations_.try_emplace({&g, path});
  if (fresh || it->second.size() != g.nodes.size()) {  // (a graph made at a freed one's address)
    it->second.clear();
    it->second.reserve(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
      it->second.push_back(Location{model_->source, path, static_cast<int64_t>(i), g.nodes[i].label(i), g.nodes[i].op_type, {}});
  }
  return it->second;
}

Interpreter::NodeKernels& Interpreter::node_kernels(const Node& node, int64_t version) {
  NodeKernels& nk = node_kernels_[&node];
  if (nk.version != version) {  // first call (a node's opset version does not change)
    nk.version = version;
    nk.candidates = kernels_.candidates(node.domain, node.op_type, version);
    nk.states.assign(nk.candidates.size(), nullptr);
  }
  return nk;
}

const Function* Interpreter::schema_function(const Node& node, int64_t version, const std::vector<OpsetImport>& opsets) {
  const OpSchema* schema = find_schema(node.domain, node.op_type, version);
  if (!schema) return nullptr;
  const FunctionBodyBytes* body = find_function_body(*schema, version_in(opsets, ""));
  if (!body) return nullptr;
  auto& slot = schema_functions_[body];
  if (!slot) slot = detail::parse_function_proto(body->data, body->size, std::string("function body of ") + schema->name);
  return slot.get();
}

const Graph& Interpreter::expanded_body(const Function& f, const Node& call) {
  if (auto it = function_bodies_.find(&call); it != function_bodies_.end()) return *it->second;
  auto body = std::make_unique<Graph>();
  body->name = f.name;
  for (const auto& in : f.inputs) body->inputs.push_back({in, {}, {}});
  for (const auto& out : f.outputs) body->outputs.push_back({out, {}, {}});
  // Attributes that refer to the caller's (ref_attr_name) take its value, or
  // the function's default, or are dropped so the kernel uses the spec default.
  std::function<void(std::vector<Node>&)> substitute = [&](std::vector<Node>& nodes) {
    for (auto& n : nodes) {
      std::vector<Attribute> resolved;
      for (auto& a : n.attributes) {
        if (a.ref_attr_name.empty()) {
          resolved.push_back(a);
          continue;
        }
        const Attribute* from = call.attribute(a.ref_attr_name);
        if (!from)
          for (const auto& d : f.attribute_defaults)
            if (d.name == a.ref_attr_name) from = &d;
        if (!from) continue;
        Attribute copy = *from;
        copy.name = a.name;
        copy.ref_attr_name.clear();
        resolved.push_back(std::move(copy));
      }
      n.attributes = std::move(resolved);
    }
  };
  body->nodes = f.nodes;
  substitute(body->nodes);
  return *(function_bodies_[&call] = std::move(body));
}

void Interpreter::call_function(const Function& f, const Node& call, std::vector<const Value*>& inputs,
                                std::vector<Value>& outputs, const std::string& path) {
  const Graph& body = expanded_body(f, call);
  const auto& opsets = f.opset_imports.empty() ? model_->opset_imports : f.opset_imports;
  Frame frame(graph_plan(body, opsets), nullptr);  // functions see only their own inputs
  // An omitted optional input is bound as none, which kernels treat as absent.
  for (size_t i = 0; i < f.inputs.size(); ++i)
    frame.slots[static_cast<size_t>(frame.plan->input_slots[i])] = i < inputs.size() && inputs[i] ? *inputs[i] : Value::none();
  auto outs = exec_graph(body, frame, path, opsets, 0);
  for (size_t i = 0; i < outputs.size() && i < outs.size(); ++i) outputs[i] = std::move(outs[i]);
}

}  // namespace onnxscope::ref
