#include "offload/offload_engine.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/graph_util.h"
#include "core/segment_model.h"
#include "onnxscope/deadline.h"
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
    o.device_fusions = true;
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
    out << "repeated runs: device memory planned by liveness from the first run of each input shape; ";
    if (fast_->no_capture.empty())
      out << "from the second, the whole run captured once (" << device_->name() << ") and replayed\n";
    else
      out << "not captured: " << fast_->no_capture << "\n";
    return out.str();
  }

  NamedValues run(const NamedValues& inputs, const RunOptions& options) override {
    const bool capture = options.observer && options.capture_original;
    if (capture && !capture_) capture_ = build(original_);
    Plan& plan = capture ? *capture_ : *fast_;
    stats_ = {};
    // Runs without an observer are the repeated ones (bench, CI, a
    // service): memory planned per input shapes, and a captured replay.
    Steady* s = options.observer ? nullptr : steady_for(plan, inputs);
    if (!s) {
      NamedValues out = run_plan(plan, inputs, options, nullptr, false);
      stats_.device_kept_bytes = device_->kept_bytes();
      return out;
    }
    NamedValues out;
    if (s->work) {
      out = replay(plan, *s, inputs);
      stats_.how = "captured run replayed";
    } else if (plan.no_capture.empty() && s->no_capture.empty() && s->memory->planned()) {
      try {
        out = run_plan(plan, inputs, options, s, true);
        stats_.how = "planned memory, run captured";
      } catch (const Error& e) {
        if (e.diagnostic().code == "timeout") throw;
        s->forget_capture(e.diagnostic().message);
      } catch (const std::exception& e) {
        s->forget_capture(e.what());
      }
      // The run again, without capture: a real failure shows there, located.
      if (!s->work) {
        out = run_plan(plan, inputs, options, s, false);
        stats_.how = "planned memory";
      }
    } else {
      const bool had_plan = s->memory->planned();
      out = run_plan(plan, inputs, options, s, false);
      stats_.how = had_plan ? "planned memory" : "memory recorded for planning";
    }
    stats_.peak_live_bytes = s->memory->peak_live_bytes();
    stats_.arena_bytes = s->memory->region_bytes();
    stats_.device_kept_bytes = device_->kept_bytes();
    return out;
  }

  RunStats last_run_stats() const override { return stats_; }

 private:
  struct Part {
    Segment segment;
    bool shape_op = false;                     // a Shape or Size node, run here
    std::shared_ptr<Model> model;              // host segments
    std::unique_ptr<PreparedModel> prepared;   // host segments
  };
  // What repeated runs of one plan with one set of input shapes keep
  // (offload/steady_state.h). Members go in reverse order: the captured work
  // and the tensors in the planned memory before the memory.
  struct Steady {
    std::unique_ptr<RunMemory> memory;
    // A captured run: where its inputs go and its outputs are (in `memory`,
    // not owned), and the work.
    std::vector<std::pair<std::string, DeviceTensor>> inputs, outputs;
    std::unique_ptr<CapturedWork> work;
    std::string no_capture;  // why this kind of run is not captured, once found
    void forget_capture(std::string why) {
      work.reset();
      inputs.clear();
      outputs.clear();
      no_capture = std::move(why);
    }
  };
  // One way of running the model: its graph, where each node runs, the host
  // segments prepared, the initializers uploaded.
  struct Plan {
    std::shared_ptr<const Model> m;
    PartitionPlan partition;
    std::vector<Part> parts;
    std::unordered_map<std::string, size_t> last_read;
    std::unordered_map<std::string, DeviceTensor> uploaded;
    std::string no_capture;  // why runs of this plan are not captured (empty: they are)
    // Per input signature ("float[1,3,224,224];..."), the most recent few.
    std::vector<std::pair<std::string, std::unique_ptr<Steady>>> steady;
  };
  static constexpr size_t kSteadyKinds = 4;  // input shapes remembered per plan (each holds device memory)

  std::unique_ptr<Plan> build(std::shared_ptr<const Model> model) {
    auto plan = std::make_unique<Plan>();
    plan->m = std::move(model);
    const Model& m = *plan->m;
    const Graph& g = m.graph;
    plan->partition = partition(g, rules_, m.opset_version(""));
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
      if (c.at_prepare) {
        plan->uploaded[c.value] = device_->upload(g.initializer(c.value)->value);
        plan->uploaded[c.value].constant = true;
      }
    plan->no_capture = why_not_captured(*plan);
    if (plan->no_capture.empty()) {
      // The graph inputs go up first, all of them, so that the captured
      // work starts at the first node and every run uploads in the same order.
      std::set<std::string> graph_inputs;
      for (const auto& in : g.inputs) graph_inputs.insert(in.name);
      for (Copy& c : plan->partition.copies)
        if (!c.at_prepare && c.to == Side::Device && graph_inputs.count(c.value)) c.before = 0;
      std::stable_sort(plan->partition.copies.begin(), plan->partition.copies.end(), [](const Copy& a, const Copy& b) {
        return std::make_pair(!a.at_prepare, a.before) < std::make_pair(!b.at_prepare, b.before);
      });
    }
    return plan;
  }

  // A run can be captured and replayed when nothing in it can change
  // between runs of the same input shapes except what the inputs carry to
  // the device: host nodes may run, at capture, only on values fixed by the
  // shapes (shape arithmetic: Shape, Size, initializers and what is
  // computed from them); nothing comes down to the host before the end.
  std::string why_not_captured(const Plan& p) const {
    if (!device_->can_capture()) return device_->name() + " does not capture its work";
    const Graph& g = p.m->graph;
    if (g.nodes.empty()) return "the graph has no node";
    static const std::set<std::string> random{"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                                              "Multinomial", "Bernoulli"};
    std::set<std::string> fixed;  // host values the input shapes determine
    for (const auto& init : g.initializers) fixed.insert(init.name);
    std::set<std::string> host_made;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (p.partition.nodes[i].side == Side::Device) {
        for (size_t k = 0; k < n.inputs.size(); ++k)
          if (!n.inputs[k].empty() && rules_.reads_on_host && rules_.reads_on_host(n, k) && !fixed.count(n.inputs[k]))
            return "node " + n.label(i) + " reads '" + n.inputs[k] + "' on the host, and it may change from run to run";
        continue;
      }
      if (random.count(n.op_type)) return "node " + n.label(i) + " (" + n.op_type + ") runs on the host";
      for (const auto& a : n.attributes)
        if (a.g || !a.graphs.empty()) return "node " + n.label(i) + " (" + n.op_type + ", with a subgraph) runs on the host";
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!n.inputs[k].empty() && !reads_shape_only(n, k) && !fixed.count(n.inputs[k]))
          return "node " + n.label(i) + " (" + n.op_type + ") runs on the host on '" + n.inputs[k] + "', which may change from run to run";
      for (const auto& o : n.outputs) {
        fixed.insert(o);
        host_made.insert(o);
      }
    }
    for (const auto& o : g.outputs)
      if (host_made.count(o.name)) return "graph output '" + o.name + "' is made on the host";
    for (const Copy& c : p.partition.copies)
      if (!c.at_prepare && c.to == Side::Host && c.before < g.nodes.size())
        return "'" + c.value + "' comes down to the host in the middle of the run";
    return {};
  }

  // This run's kind (plan and input shapes), made on first sight; nullptr
  // when the device plans nothing or an input is missing or no tensor.
  Steady* steady_for(Plan& plan, const NamedValues& inputs) {
    std::string key;
    for (const auto& in : plan.m->graph.inputs) {
      const Value* v = nullptr;
      for (const auto& [name, value] : inputs)
        if (name == in.name) v = &value;
      if (!v) {
        if (plan.m->graph.initializer(in.name)) continue;  // an initializer that is also an input
        return nullptr;
      }
      if (!v->is_tensor()) return nullptr;
      key += std::string(dtype_name(v->tensor().dtype())) + shape_to_string(v->tensor().shape()) + ";";
    }
    for (auto it = plan.steady.begin(); it != plan.steady.end(); ++it)
      if (it->first == key) {
        std::rotate(plan.steady.begin(), it, it + 1);  // most recent first
        return plan.steady.front().second.get();
      }
    auto memory = device_->make_run_memory();
    if (!memory) return nullptr;
    if (plan.steady.size() >= kSteadyKinds) plan.steady.pop_back();
    auto s = std::make_unique<Steady>();
    s->memory = std::move(memory);
    plan.steady.emplace(plan.steady.begin(), std::move(key), std::move(s));
    return plan.steady.front().second.get();
  }

  // Brackets a run with the device's begin_run / end_run.
  class MemoryScope {
   public:
    MemoryScope(Device& d, Steady* s) : d_(d), s_(s) {
      if (s_) d_.begin_run(*s_->memory);
    }
    ~MemoryScope() {
      if (s_) d_.end_run(*s_->memory, std::uncaught_exceptions() == 0);
    }
    MemoryScope(const MemoryScope&) = delete;
    MemoryScope& operator=(const MemoryScope&) = delete;

   private:
    Device& d_;
    Steady* s_;
  };

  static DeviceTensor not_owned(const DeviceTensor& t) { return DeviceTensor{t.dtype, t.shape, t.data, nullptr}; }

  // One run, node by node. With `capture`, the device work is captured
  // after the inputs are up, then replayed once for this run's outputs.
  NamedValues run_plan(const Plan& plan, const NamedValues& inputs, const RunOptions& options, Steady* s, bool capture) {
    const Graph& g = plan.m->graph;
    MemoryScope scope(*device_, s);  // before the run's values: they go first
    device_->take_fault();           // one a failed run left is not this run's
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
    // Host-run kernels (cuda-sim) poll it inside long nodes.
    const DeadlineScope deadline(options_.host.timeout_seconds > 0 ? r.deadline : Clock::time_point::max());
    auto run_parts = [&] {
      for (const Part& p : plan.parts) {
        if (p.segment.side == Side::Device)
          for (size_t i = p.segment.begin; i < p.segment.end; ++i) run_device_node(r, i, options);
        else if (p.shape_op)
          run_shape_node(r, p.segment.begin, options);
        else
          run_host_segment(r, p, options);
      }
    };
    if (!capture) {
      run_parts();
    } else {
      copies_before(r, 1);  // the graph inputs (build() moved their uploads first)
      s->inputs.clear();
      for (const auto& in : g.inputs)
        if (auto it = r.device.find(in.name); it != r.device.end()) s->inputs.emplace_back(in.name, not_owned(it->second));
      // Host nodes run now, once: their results are fixed by the input shapes.
      device_->begin_capture();
      try {
        run_parts();
        s->work = device_->end_capture();
      } catch (...) {
        device_->abort_capture();
        throw;
      }
      s->outputs.clear();
      for (const auto& o : g.outputs)
        if (auto it = r.device.find(o.name); it != r.device.end()) s->outputs.emplace_back(o.name, not_owned(it->second));
      device_->replay(*s->work);
    }
    check_faults(plan);
    copies_before(r, g.nodes.size() + 1);
    device_->synchronize();
    return outputs_of(plan, r.host);
  }

  // A captured run again: the inputs written where the capture read them,
  // the work replayed, the outputs read where it left them.
  NamedValues replay(const Plan& plan, const Steady& s, const NamedValues& inputs) {
    const Graph& g = plan.m->graph;
    std::unordered_map<std::string, Value> host(inputs.begin(), inputs.end());
    for (const auto& init : g.initializers) host.emplace(init.name, Value(init.value));
    try {
      device_->take_fault();  // one a failed run left is not this run's
      for (const auto& [name, t] : s.inputs) device_->write(t, host.at(name).tensor());
      device_->replay(*s.work);
      check_faults(plan);
      for (const auto& [name, t] : s.outputs) host[name] = Value(device_->download(t));
      device_->synchronize();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail_at(Location{plan.m->source, "main", -1, {}, {}, {}}, "kernel", device_->name() + ": replaying the captured run: " + e.what());
    }
    return outputs_of(plan, host);
  }

  // A fault the device's kernels found as they ran (an index out of range),
  // as the error of the node that found it; asked before anything the device
  // computed is read on the host, since a later node's failure on the zeros
  // a faulty read gave would hide the cause.
  void check_faults(const Plan& plan) {
    auto f = device_->take_fault();
    if (!f) return;
    const Graph& g = plan.m->graph;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& o : g.nodes[i].outputs)
        if (!o.empty() && o == f->node_output) fail_at(where(*plan.m, i), "kernel", device_->name() + ": " + f->message);
    fail_at(Location{plan.m->source, "main", -1, {}, {}, f->node_output}, "kernel",
            device_->name() + ": the node making '" + f->node_output + "': " + f->message);
  }

  static NamedValues outputs_of(const Plan& plan, const std::unordered_map<std::string, Value>& host) {
    NamedValues out;
    for (const auto& o : plan.m->graph.outputs) {
      auto it = host.find(o.name);
      if (it == host.end())
        fail_at(Location{plan.m->source, "main", -1, {}, {}, o.name}, "missing-output",
                "graph output '" + o.name + "' was never produced");
      out.emplace_back(o.name, it->second);
    }
    return out;
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
        check_faults(*r.plan);
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
    } catch (const CaptureUnsupported&) {
      throw;
    } catch (const DeadlineExceeded&) {
      fail_at(where(*r.plan->m, i), "timeout",
              "the run took longer than the time limit of " + std::to_string(options_.host.timeout_seconds) +
                  " s (raise it with --timeout)");
    } catch (const std::exception& e) {
      fail_at(where(*r.plan->m, i), "kernel", device_->name() + ": " + e.what());
    }
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) r.device[n.outputs[k]] = std::move(out[k]);
    if (options.observer) {
      device_->synchronize();
      check_faults(*r.plan);
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
  RunStats stats_;
};

class OffloadEngine final : public Engine {
 public:
  OffloadEngine(std::string name, std::shared_ptr<Device> device, OffloadOptions options)
      : name_(std::move(name)), device_(std::move(device)), options_(std::move(options)) {}
  std::string_view name() const override { return name_; }
  std::vector<NodeSupport> supports(const Model& model) const override {
    const PartitionPlan plan = partition(model.graph, device_->rules(), model.opset_version(""));
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
