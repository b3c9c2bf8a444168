#include "offload/offload_engine.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/graph_util.h"
#include "core/segment_model.h"
#include "cpu/optimizer.h"
#include "onnxscope/diagnostics.h"

namespace onnxscope::offload {

namespace {

using Clock = std::chrono::steady_clock;

Location where(const Model& m, size_t i) {
  const Node& n = m.graph.nodes[i];
  return Location{m.source, "main", static_cast<int64_t>(i), n.label(i), n.op_type, {}};
}

[[noreturn]] void fail_at(Location at, std::string code, std::string message) {
  throw Error(Diagnostic{Severity::Error, std::move(code), std::move(at), std::move(message), {}});
}

// One main-graph node's outputs to the observer.
void report(Observer& to, size_t i, const Node& n, std::string_view kernel, std::span<const Value* const> ins,
            std::span<const Value> outs, double seconds) {
  NodeEvent e;
  e.graph_path = "main";
  e.node_index = i;
  e.node = &n;
  e.kernel = kernel;
  e.inputs = ins;
  e.outputs = outs;
  e.seconds = seconds;
  to.on_node(e);
}

// A host segment's events under the whole model's node indices, its kernels
// marked as the CPU engine's.
class SegmentObserver final : public Observer {
 public:
  SegmentObserver(Observer& to, size_t offset) : to_(to), offset_(offset) {}
  void on_node(const NodeEvent& e) override {
    NodeEvent f = e;
    const std::string kernel = "cpu/" + std::string(e.kernel);
    f.kernel = kernel;
    if (e.graph_path == "main") f.node_index += offset_;
    to_.on_node(f);
  }
  void on_node_start(std::string_view graph_path, size_t node_index, const Node& node) override {
    to_.on_node_start(graph_path, graph_path == "main" ? node_index + offset_ : node_index, node);
  }
  bool should_stop() override { return to_.should_stop(); }

 private:
  Observer& to_;
  size_t offset_;
};

// The graph passes that leave every node to be placed as it is: no fused
// operator of the CPU engine's own domain (the device has no kernel for
// those), so the device still runs what it can.
const std::set<std::string>& neutral_passes() {
  static const std::set<std::string> p{"eliminate-identity", "constant-folding", "eliminate-dead-nodes",
                                       "common-subexpression-elimination", "cancel-transpose-reshape"};
  return p;
}

class OffloadPrepared final : public PreparedModel {
 public:
  OffloadPrepared(std::shared_ptr<const Model> model, std::shared_ptr<Device> device, const OffloadOptions& options)
      : original_(std::move(model)), device_(std::move(device)), rules_(device_->rules()), options_(options),
        cpu_(make_cpu_engine(options.host)) {
    // Runs without an observer wanting original nodes: the model after the
    // engine-neutral passes (constants folded once, so weights made at run
    // time are uploaded once too) and the fusions the device asks for
    // (Device::passes). Capture runs: the model as written.
    auto fast = std::make_shared<Model>(*original_);
    CpuOptions o = options_.host;
    const std::set<std::string> device_passes = device_->passes();
    for (const auto& p : cpu_passes())
      if (!neutral_passes().count(p.name) && !device_passes.count(p.name)) o.disabled_passes.insert(p.name);
    Diagnostics log;
    cpu::optimize(*fast, o, false, log);
    fast_ = build(std::move(fast));
  }

  // The plan that runs without capture (the model after the engine-neutral
  // passes: its node names are those the observer reports then).
  std::string placement() const override {
    const Graph& g = fast_->m->graph;
    size_t device = 0, host = 0, copies = 0, uploads = 0;
    for (const NodePlace& p : fast_->partition.nodes) (p.side == Side::Device ? device : host) += 1;
    for (const Copy& c : fast_->partition.copies) (c.at_prepare ? uploads : copies) += 1;
    std::ostringstream out;
    out << device_->name() << ": " << device << " of " << g.nodes.size() << " nodes on the device, " << host
        << " on the host (CPU engine); " << copies << " copies per run, " << uploads << " uploads at prepare\n"
        << describe(g, fast_->partition);
    return out.str();
  }

  NamedValues run(const NamedValues& inputs, const RunOptions& options) override {
    const bool capture = options.observer && options.capture_original;
    if (capture && !capture_) capture_ = build(original_);
    const Plan& plan = capture ? *capture_ : *fast_;
    const Graph& g = plan.m->graph;
    Run r{&plan, std::unordered_map<std::string, Value>(inputs.begin(), inputs.end()), plan.uploaded, 0, {}};
    for (const auto& init : g.initializers) r.host.emplace(init.name, Value(init.value));
    for (const auto& in : g.inputs)
      if (!r.host.count(in.name))
        fail_at(Location{plan.m->source, "main", -1, {}, {}, in.name}, "missing-input",
                "input '" + in.name + "' (" + in.type.to_string() + ") was not given");
    while (r.next_copy < plan.partition.copies.size() && plan.partition.copies[r.next_copy].at_prepare) ++r.next_copy;
    if (options_.host.timeout_seconds > 0)
      r.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.host.timeout_seconds));
    for (const Part& p : plan.parts) {
      if (p.segment.side == Side::Device)
        for (size_t i = p.segment.begin; i < p.segment.end; ++i) run_device_node(r, i, options);
      else if (p.shape_op)
        run_shape_node(r, p.segment.begin, options);
      else
        run_host_segment(r, p, options);
    }
    copies_before(r, g.nodes.size() + 1);
    device_->synchronize();
    NamedValues out;
    for (const auto& o : g.outputs) {
      auto it = r.host.find(o.name);
      if (it == r.host.end())
        fail_at(Location{plan.m->source, "main", -1, {}, {}, o.name}, "missing-output",
                "graph output '" + o.name + "' was never produced");
      out.emplace_back(o.name, it->second);
    }
    return out;
  }

 private:
  struct Part {
    Segment segment;
    bool shape_op = false;                     // a Shape or Size node, run here
    std::shared_ptr<Model> model;              // host segments
    std::unique_ptr<PreparedModel> prepared;   // host segments
  };
  // One way of running the model: its graph, where each node runs, the host
  // segments prepared, the initializers uploaded.
  struct Plan {
    std::shared_ptr<const Model> m;
    PartitionPlan partition;
    std::vector<Part> parts;
    std::unordered_map<std::string, size_t> last_read;
    std::unordered_map<std::string, DeviceTensor> uploaded;
  };

  std::unique_ptr<Plan> build(std::shared_ptr<const Model> model) {
    auto plan = std::make_unique<Plan>();
    plan->m = std::move(model);
    const Model& m = *plan->m;
    const Graph& g = m.graph;
    plan->partition = partition(g, rules_);
    // The last node that reads each value (subgraph captures included);
    // graph outputs are kept to the end.
    detail::FreeNames free;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      detail::for_each_read(g.nodes[i], free, [&](const std::string& v) { plan->last_read[v] = i; });
    for (const auto& o : g.outputs) plan->last_read[o.name] = g.nodes.size();
    for (const Segment& s : plan->partition.segments) {
      if (s.side == Side::Device) {
        plan->parts.push_back(Part{s, false, nullptr, nullptr});
        continue;
      }
      // Shape and Size run here, from the shape alone (their input may be a
      // device tensor that never comes down); the rest of a host segment
      // runs on the CPU engine.
      size_t from = s.begin;
      auto flush = [&](size_t to) {
        if (from == to) return;
        Part part{{Side::Host, from, to}, false, nullptr, nullptr};
        part.model = segment_model(m, from, to, values_read_after(m, from, to));
        part.prepared = cpu_->prepare(part.model);
        plan->parts.push_back(std::move(part));
      };
      for (size_t i = s.begin; i < s.end; ++i)
        if (reads_shape_only(g.nodes[i], 0)) {
          flush(i);
          plan->parts.push_back(Part{{Side::Host, i, i + 1}, true, nullptr, nullptr});
          from = i + 1;
        }
      flush(s.end);
    }
    for (const Copy& c : plan->partition.copies)
      if (c.at_prepare) plan->uploaded[c.value] = device_->upload(g.initializer(c.value)->value);
    return plan;
  }

  struct Run {
    const Plan* plan;
    std::unordered_map<std::string, Value> host;
    std::unordered_map<std::string, DeviceTensor> device;
    size_t next_copy;
    Clock::time_point deadline;
  };

  // Every copy the plan makes before node `before` (exclusive bound).
  void copies_before(Run& r, size_t before) {
    for (; r.next_copy < r.plan->partition.copies.size() && r.plan->partition.copies[r.next_copy].before < before; ++r.next_copy) {
      const Copy& c = r.plan->partition.copies[r.next_copy];
      const Location at = c.before < r.plan->m->graph.nodes.size() ? where(*r.plan->m, c.before) : Location{r.plan->m->source, "main", -1, {}, {}, c.value};
      if (c.to == Side::Device) {
        auto it = r.host.find(c.value);
        if (it == r.host.end() || !it->second.is_tensor())
          fail_at(at, "device-copy", "value '" + c.value + "' is not a tensor on the host, so it cannot go to the " + device_->name());
        r.device[c.value] = device_->upload(it->second.tensor());
      } else {
        auto it = r.device.find(c.value);
        if (it == r.device.end()) fail_at(at, "missing-value", "value '" + c.value + "' is not on the device");
        r.host[c.value] = Value(device_->download(it->second));
      }
    }
  }

  void between_nodes(Run& r, size_t i, const RunOptions& options) {
    if (options.observer && options.observer->should_stop()) fail_at(where(*r.plan->m, i), "cancelled", "run cancelled");
    if (options_.host.timeout_seconds > 0 && Clock::now() > r.deadline)
      fail_at(where(*r.plan->m, i), "timeout",
              "the run took longer than the time limit of " + std::to_string(options_.host.timeout_seconds) +
                  " s (raise it with --timeout)");
  }

  void free_dead(Run& r, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      for (const auto& in : r.plan->m->graph.nodes[i].inputs) {
        auto it = r.plan->last_read.find(in);
        if (it != r.plan->last_read.end() && it->second < to) {
          r.device.erase(in);
          if (!r.plan->m->graph.initializer(in)) r.host.erase(in);
        }
      }
  }

  void run_device_node(Run& r, size_t i, const RunOptions& options) {
    const Node& n = r.plan->m->graph.nodes[i];
    between_nodes(r, i, options);
    if (options.observer) options.observer->on_node_start("main", i, n);
    copies_before(r, i + 1);
    const PlacementRules& rules = rules_;
    std::vector<const DeviceTensor*> in(n.inputs.size(), nullptr);
    std::vector<const Tensor*> host_args(n.inputs.size(), nullptr);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& v = n.inputs[k];
      if (v.empty()) continue;
      const bool on_host = reads_shape_only(n, k) || (rules.reads_on_host && rules.reads_on_host(n, k));
      if (on_host) {
        auto it = r.host.find(v);
        if (it == r.host.end() || !it->second.is_tensor()) fail_at(where(*r.plan->m, i), "missing-value", "input '" + v + "' is not on the host");
        host_args[k] = &it->second.tensor();
      } else {
        auto it = r.device.find(v);
        if (it == r.device.end()) fail_at(where(*r.plan->m, i), "missing-value", "input '" + v + "' is not on the device");
        in[k] = &it->second;
      }
    }
    std::vector<DeviceTensor> out(n.outputs.size());
    const auto start = Clock::now();
    try {
      device_->run(n, r.plan->m->opset_version(n.domain), in, host_args, out);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail_at(where(*r.plan->m, i), "kernel", device_->name() + ": " + e.what());
    }
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) r.device[n.outputs[k]] = std::move(out[k]);
    if (options.observer) {
      device_->synchronize();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::vector<Value> downloaded_in(n.inputs.size()), outs(n.outputs.size());
      std::vector<const Value*> ins(n.inputs.size(), nullptr);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k].empty()) continue;
        if (auto h = r.host.find(n.inputs[k]); h != r.host.end()) {
          ins[k] = &h->second;
        } else if (in[k]) {
          downloaded_in[k] = Value(device_->download(*in[k]));
          ins[k] = &downloaded_in[k];
        }
      }
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (!n.outputs[k].empty()) outs[k] = Value(device_->download(r.device[n.outputs[k]]));
      report(*options.observer, i, n, device_->kernel_name(n), ins, outs, seconds);
    }
    free_dead(r, i, i + 1);
  }

  // Shape (opset 15's start/end included) and Size, from the input's shape,
  // wherever the input lives.
  void run_shape_node(Run& r, size_t i, const RunOptions& options) {
    const Node& n = r.plan->m->graph.nodes[i];
    between_nodes(r, i, options);
    if (options.observer) options.observer->on_node_start("main", i, n);
    copies_before(r, i + 1);
    const auto start = Clock::now();
    const std::string& v = n.inputs.empty() ? std::string() : n.inputs[0];
    Shape shape;
    const Value* host_in = nullptr;
    if (auto h = r.host.find(v); h != r.host.end() && h->second.is_tensor()) {
      host_in = &h->second;
      shape = h->second.tensor().shape();
    } else if (auto d = r.device.find(v); d != r.device.end()) {
      shape = d->second.shape;
    } else {
      fail_at(where(*r.plan->m, i), "missing-value", "input '" + v + "' has no value");
    }
    Tensor out;
    const auto rank = static_cast<int64_t>(shape.size());
    if (n.op_type == "Size") {
      out = Tensor::zeros(DataType::Int64, {});
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      out.mutable_data<int64_t>()[0] = count;
    } else {
      auto clamp = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
      const Attribute* sa = n.attribute("start");
      const Attribute* ea = n.attribute("end");
      const int64_t b = clamp(sa ? sa->i : 0), e = clamp(ea ? ea->i : rank);
      out = Tensor::zeros(DataType::Int64, {std::max<int64_t>(0, e - b)});
      for (int64_t k = b; k < e; ++k) out.mutable_data<int64_t>()[k - b] = shape[static_cast<size_t>(k)];
    }
    r.host[n.outputs[0]] = Value(out);
    if (options.observer) {
      Value downloaded;
      if (!host_in) {
        downloaded = Value(device_->download(r.device.at(v)));
        host_in = &downloaded;
      }
      const Value* ins[] = {host_in};
      const Value outs[] = {Value(out)};
      report(*options.observer, i, n, "shape", ins, outs, std::chrono::duration<double>(Clock::now() - start).count());
    }
    free_dead(r, i, i + 1);
  }

  void run_host_segment(Run& r, const Part& p, const RunOptions& options) {
    between_nodes(r, p.segment.begin, options);
    copies_before(r, p.segment.end);
    NamedValues feeds;
    for (const auto& in : p.model->graph.inputs) {
      auto it = r.host.find(in.name);
      if (it == r.host.end()) fail_at(where(*r.plan->m, p.segment.begin), "missing-value", "value '" + in.name + "' is not on the host");
      feeds.emplace_back(in.name, it->second);
    }
    RunOptions o = options;
    SegmentObserver forward(options.observer ? *options.observer : null_observer_, p.segment.begin);
    if (options.observer) o.observer = &forward;
    NamedValues outs;
    try {
      outs = p.prepared->run(feeds, o);
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();  // located in the segment: move it to the whole model's numbering
      if (d.where.graph == "main" && d.where.node_index >= 0) d.where.node_index += static_cast<int64_t>(p.segment.begin);
      throw Error(std::move(d));
    }
    for (auto& [name, v] : outs) r.host[name] = std::move(v);
    free_dead(r, p.segment.begin, p.segment.end);
  }


  struct NullObserver final : Observer {
    void on_node(const NodeEvent&) override {}
  };

  std::shared_ptr<const Model> original_;
  std::shared_ptr<Device> device_;
  const PlacementRules rules_;  // what the device runs, asked once
  OffloadOptions options_;
  std::unique_ptr<Engine> cpu_;
  std::unique_ptr<Plan> fast_, capture_;
  NullObserver null_observer_;
};

class OffloadEngine final : public Engine {
 public:
  OffloadEngine(std::string name, std::shared_ptr<Device> device, OffloadOptions options)
      : name_(std::move(name)), device_(std::move(device)), options_(std::move(options)) {}
  std::string_view name() const override { return name_; }
  std::vector<NodeSupport> supports(const Model& model) const override {
    const PartitionPlan plan = partition(model.graph, device_->rules());
    std::vector<NodeSupport> out;
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      const NodePlace& p = plan.nodes[i];
      out.push_back({"main", i, true,
                     p.side == Side::Device ? device_->kernel_name(model.graph.nodes[i]) : "cpu fallback: " + p.reason});
    }
    return out;
  }
  std::unique_ptr<PreparedModel> prepare(std::shared_ptr<const Model> model) override {
    return std::make_unique<OffloadPrepared>(std::move(model), device_, options_);
  }

 private:
  std::string name_;
  std::shared_ptr<Device> device_;
  OffloadOptions options_;
};

}  // namespace

std::unique_ptr<Engine> make_offload_engine(std::string engine_name, std::shared_ptr<Device> device,
                                            OffloadOptions options) {
  return std::make_unique<OffloadEngine>(std::move(engine_name), std::move(device), std::move(options));
}

}  // namespace onnxscope::offload
