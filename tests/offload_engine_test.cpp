// The offload engine (offload/offload_engine.h) on a device made of host
// memory: its "kernels" run one node at a time on the reference engine over
// copies it keeps apart, and it counts every copy. So the engine's part, the
// partition, the copies, the host segments on the CPU engine, freeing, the
// observer's view, errors and cancel, is checked in CI; only the CUDA
// device's own kernels need a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/segment_model.h"
#include "model_builder.h"
#include "offload/offload_engine.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::offload;
using namespace onnxscope::test;

namespace {

// Device memory: a tensor of its own (a deep copy), never the host's bytes.
Tensor deep_copy(const Tensor& t) {
  Tensor c = Tensor::zeros(t.dtype(), t.shape());
  if (t.byte_size()) std::memcpy(c.mutable_raw(), t.raw(), t.byte_size());
  return c;
}

class HostMemoryDevice final : public Device {
 public:
  explicit HostMemoryDevice(std::shared_ptr<const Model> m) : m_(std::move(m)) {}
  int uploads = 0, downloads = 0;
  std::set<std::string> fail_on;  // node names whose kernel throws
  // Repeated runs: a memory plan after the first run, and captures that fail
  // at these nodes (CaptureUnsupported), to check the fallback.
  bool plans = false;
  std::set<std::string> refuse_capture_on;
  int captures_begun = 0, captures_aborted = 0;

  struct Memory final : RunMemory {
    bool recorded = false;
    bool planned() const override { return recorded; }
    uint64_t region_bytes() const override { return recorded ? 64 : 0; }
    uint64_t peak_live_bytes() const override { return 64; }
  };
  std::unique_ptr<RunMemory> make_run_memory() override { return plans ? std::make_unique<Memory>() : nullptr; }
  void end_run(RunMemory& m, bool ok) override { static_cast<Memory&>(m).recorded |= ok; }
  bool can_capture() const override { return plans; }
  void begin_capture() override {
    ++captures_begun;
    capturing_ = true;
  }
  std::unique_ptr<CapturedWork> end_capture() override {
    capturing_ = false;
    return std::make_unique<CapturedWork>();
  }
  void abort_capture() override {
    ++captures_aborted;
    capturing_ = false;
  }

  std::string name() const override { return "host-memory device"; }
  PlacementRules rules() const override {
    PlacementRules r;
    r.refuse = [](const Graph& g, const Node& n, int64_t) -> std::optional<std::string> {
      static const std::set<std::string> ops{"Relu", "Add", "Mul", "MatMul", "Reshape", "Sigmoid", "Gather", "Concat", "Unsqueeze"};
      if (!ops.count(n.op_type)) return "no device kernel for " + n.op_type;
      return std::nullopt;
    };
    r.reads_on_host = [](const Node& n, size_t i) { return n.op_type == "Reshape" && i == 1; };
    return r;
  }
  DeviceTensor upload(const Tensor& t) override {
    ++uploads;
    auto held = std::make_shared<Tensor>(deep_copy(t));
    return DeviceTensor{t.dtype(), t.shape(), held->mutable_raw(), held};
  }
  void write(const DeviceTensor& to, const Tensor& from) override { std::memcpy(to.data, from.raw(), from.byte_size()); }
  Tensor download(const DeviceTensor& t) override {
    ++downloads;
    return deep_copy(*static_cast<const Tensor*>(t.storage.get()));
  }
  void run(const Node& n, int64_t, std::span<const DeviceTensor* const> inputs, std::span<const Tensor* const> host_args,
           std::vector<DeviceTensor>& outputs) override {
    if (fail_on.count(n.name)) throw std::runtime_error("the kernel failed on purpose");
    if (capturing_ && refuse_capture_on.count(n.name)) throw CaptureUnsupported(n.name + " waits for the device");
    // The node alone, as a model, on the reference engine (the node it is
    // given: after the engine's graph passes it may not be in the model).
    auto one = std::make_shared<Model>();
    one->ir_version = m_->ir_version;
    one->opset_imports = m_->opset_imports;
    one->source = m_->source;
    one->graph.nodes = {n};
    NamedValues feeds;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k].empty() || (!inputs[k] && !host_args[k])) continue;
      const Tensor& t = inputs[k] ? *static_cast<const Tensor*>(inputs[k]->storage.get()) : *host_args[k];
      one->graph.inputs.push_back({n.inputs[k], {}, {}});
      feeds.emplace_back(n.inputs[k], Value(deep_copy(t)));
    }
    for (const auto& o : n.outputs)
      if (!o.empty()) one->graph.outputs.push_back({o, {}, {}});
    NamedValues outs = make_reference_engine()->prepare(one)->run(feeds);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      for (auto& [name, v] : outs)
        if (name == n.outputs[k]) {
          auto held = std::make_shared<Tensor>(deep_copy(v.tensor()));
          outputs[k] = DeviceTensor{held->dtype(), held->shape(), held->mutable_raw(), held};
        }
  }
  std::string kernel_name(const Node&) const override { return "host-memory"; }
  void synchronize() override {}

 private:
  std::shared_ptr<const Model> m_;
  bool capturing_ = false;
};

// Relu and MatMul on the device, TopK (no device kernel) on the host, a
// shape chain kept on the host, a residual Add and a Reshape on the device.
std::shared_ptr<const Model> model() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{6}});
  std::vector<float> w(36);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(static_cast<int>(i % 7) - 3);
  b.initializer(make_float_tensor("w", {6, 6}, w));
  b.initializer(make_int64_tensor("k", {1}, {6}));
  b.initializer(make_int64_tensor("zero", {}, {0}));
  b.initializer(make_int64_tensor("axes", {1}, {0}));
  b.initializer(make_int64_tensor("minus_one", {1}, {-1}));
  b.node("MatMul", {"x", "w"}, {"h"}, "matmul");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.node("TopK", {"r", "k"}, {"v", "i"}, "topk");
  b.node("Add", {"v", "r"}, {"s"}, "residual");
  b.node("Shape", {"s"}, {"shape"}, "shape");
  b.node("Gather", {"shape", "zero"}, {"n"}, "gather");
  b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsqueeze");
  attr_int(b.node("Concat", {"minus_one", "n1"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"s", "target"}, {"y"}, "reshape");
  b.node("Sigmoid", {"y"}, {"z"}, "sigmoid");
  b.output("z", DataType::Float, {int64_t{6}, int64_t{2}});
  b.output("i", DataType::Int64, {int64_t{2}, int64_t{6}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

NamedValues inputs(const Model& m) {
  InputSpec spec;
  spec.seed = 4;
  return make_inputs(m, spec);
}

struct Log : Observer {
  std::vector<std::pair<size_t, std::string>> ran;  // node index, kernel
  std::map<std::string, Value> values;
  int stop_after = -1;
  void on_node(const NodeEvent& e) override {
    ran.emplace_back(e.node_index, std::string(e.kernel));
    for (size_t k = 0; k < e.outputs.size(); ++k) values[e.node->outputs[k]] = e.outputs[k];
  }
  bool should_stop() override { return stop_after >= 0 && static_cast<int>(ran.size()) >= stop_after; }
};

void expect_close(const Value& a, const Value& b, const std::string& what) {
  const Tensor& x = a.tensor();
  const Tensor& y = b.tensor();
  ASSERT_EQ(x.shape(), y.shape()) << what;
  ASSERT_EQ(x.dtype(), y.dtype()) << what;
  if (x.dtype() != DataType::Float) {
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.byte_size()), 0) << what;
    return;
  }
  for (uint64_t e = 0; e < x.element_count(); ++e)
    EXPECT_NEAR(x.data<float>()[e], y.data<float>()[e], 1e-5 + 1e-5 * std::abs(y.data<float>()[e])) << what << " element " << e;
}

}  // namespace

TEST(OffloadEngine, DeviceAndHostPartsGiveTheReferencesOutputs) {
  auto m = model();
  ASSERT_TRUE(m);
  auto device = std::make_shared<HostMemoryDevice>(m);
  auto engine = make_offload_engine("test-device", device);
  auto prepared = engine->prepare(m);
  EXPECT_EQ(device->uploads, 1);  // the MatMul weights, once
  const NamedValues in = inputs(*m);
  const NamedValues want = make_reference_engine()->prepare(m)->run(in);
  for (int run = 0; run < 2; ++run) {
    device->uploads = device->downloads = 0;
    const NamedValues got = prepared->run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) expect_close(got[k].second, want[k].second, want[k].first);
    // Per run: x up; r down for TopK; v up for the Add; z down at the end.
    EXPECT_EQ(device->uploads, 2) << "run " << run;
    EXPECT_EQ(device->downloads, 2) << "run " << run;
  }
}

TEST(OffloadEngine, TheObserverSeesEveryNodeOnceWhereItRan) {
  auto m = model();
  ASSERT_TRUE(m);
  auto device = std::make_shared<HostMemoryDevice>(m);
  auto prepared = make_offload_engine("test-device", device)->prepare(m);
  Log log;
  RunOptions o;
  o.observer = &log;
  prepared->run(inputs(*m), o);
  ASSERT_EQ(log.ran.size(), m->graph.nodes.size());
  std::vector<std::string> kernels;
  for (size_t i = 0; i < log.ran.size(); ++i) {
    EXPECT_EQ(log.ran[i].first, i);
    kernels.push_back(log.ran[i].second.substr(0, 4));
  }
  // matmul relu | topk | residual | shape (from the device tensor's shape) |
  // gather unsqueeze concat | reshape sigmoid
  EXPECT_EQ(kernels, (std::vector<std::string>{"host", "host", "cpu/", "host", "shap", "cpu/", "cpu/", "cpu/", "host", "host"}));
  const NamedValues all = make_reference_engine()->prepare(m)->run(inputs(*m));
  expect_close(log.values.at("z"), all[0].second, "z");
  ASSERT_TRUE(log.values.count("h"));  // a device node's output, downloaded for the observer
  EXPECT_EQ(make_offload_engine("test-device", device)->supports(*m)[2].detail, "cpu fallback: no device kernel for TopK");
}

TEST(OffloadEngine, AFailingDeviceKernelIsLocatedAndCancelStops) {
  auto m = model();
  ASSERT_TRUE(m);
  auto device = std::make_shared<HostMemoryDevice>(m);
  device->fail_on = {"residual"};
  auto prepared = make_offload_engine("test-device", device)->prepare(m);
  try {
    prepared->run(inputs(*m));
    FAIL() << "the run should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "kernel");
    EXPECT_EQ(e.diagnostic().where.node_index, 3);
    EXPECT_EQ(e.diagnostic().where.node, "residual");
    EXPECT_NE(e.diagnostic().message.find("the kernel failed on purpose"), std::string::npos);
  }
  device->fail_on.clear();
  Log log;
  log.stop_after = 4;
  RunOptions o;
  o.observer = &log;
  try {
    prepared->run(inputs(*m), o);
    FAIL() << "the run should have been cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "cancelled");
    EXPECT_EQ(e.diagnostic().where.node_index, 4);  // the Shape node, the next to run
  }
}

TEST(OffloadEngine, AHostSegmentsErrorKeepsTheWholeModelsNodeIndex) {
  // TopK with k larger than the axis: the CPU engine fails at its node.
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  b.initializer(make_int64_tensor("k", {1}, {5}));
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Relu", {"r"}, {"r2"}, "relu2");
  b.node("TopK", {"r2", "k"}, {"v", "i"}, "topk");
  b.output("v", DataType::Float, {int64_t{2}, int64_t{5}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto prepared = make_offload_engine("test-device", std::make_shared<HostMemoryDevice>(m))->prepare(m);
  try {
    prepared->run(inputs(*m));
    FAIL() << "TopK with k = 5 on an axis of 3 should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().where.node_index, 2);
    EXPECT_EQ(e.diagnostic().where.node, "topk");
  }
}

// Shape (with start/end) and Size of a tensor that lives on the device: from
// its shape, with no copy of it.
TEST(OffloadEngine, ShapeAndSizeOfADeviceTensorNeedNoCopy) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  b.node("Relu", {"x"}, {"r"}, "relu");
  auto& sh = b.node("Shape", {"r"}, {"tail"}, "shape");
  attr_int(sh, "start", -2);
  b.node("Size", {"r"}, {"count"}, "size");
  b.output("tail", DataType::Int64, {int64_t{2}});
  b.output("count", DataType::Int64, {});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto device = std::make_shared<HostMemoryDevice>(m);
  const NamedValues got = make_offload_engine("test-device", device)->prepare(m)->run(inputs(*m));
  EXPECT_EQ(device->downloads, 0);
  ASSERT_EQ(got.size(), 2u);
  const Tensor& tail = got[0].second.tensor();
  ASSERT_EQ(tail.shape(), (Shape{2}));
  EXPECT_EQ(tail.data<int64_t>()[0], 3);
  EXPECT_EQ(tail.data<int64_t>()[1], 4);
  EXPECT_EQ(got[1].second.tensor().data<int64_t>()[0], 24);
}

// Weights made at run time (ConstantOfShape, as upstream's light models make
// theirs) are folded when the model is prepared and uploaded once; a capture
// run (observer wanting original nodes) runs the model as written and reports
// every node, ConstantOfShape included.
TEST(OffloadEngine, ConstantsAreFoldedOnceAndCaptureSeesTheModelAsWritten) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{4}});
  b.initializer(make_int64_tensor("wshape", {2}, {4, 5}));
  auto& c = b.node("ConstantOfShape", {"wshape"}, {"w"}, "make_weights");
  attr_tensor(c, "value", make_float_tensor("", {1}, {0.25f}));
  b.node("MatMul", {"x", "w"}, {"h"}, "matmul");
  b.node("Relu", {"h"}, {"y"}, "relu");
  b.output("y", DataType::Float, {int64_t{3}, int64_t{5}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto device = std::make_shared<HostMemoryDevice>(m);
  auto prepared = make_offload_engine("test-device", device)->prepare(m);
  EXPECT_EQ(device->uploads, 1);  // the folded weights
  const NamedValues in = inputs(*m);
  const NamedValues want = make_reference_engine()->prepare(m)->run(in);
  device->uploads = device->downloads = 0;
  expect_close(prepared->run(in)[0].second, want[0].second, "y");
  EXPECT_EQ(device->uploads, 1);    // x only
  EXPECT_EQ(device->downloads, 1);  // y
  Log log;
  RunOptions o;
  o.observer = &log;
  expect_close(prepared->run(in, o)[0].second, want[0].second, "y (capture)");
  ASSERT_EQ(log.ran.size(), 3u);
  EXPECT_EQ(log.ran[0].second.substr(0, 4), "cpu/");  // ConstantOfShape has no device kernel here
  EXPECT_EQ(log.ran[1].second, "host-memory");
  Tensor quarter = Tensor::zeros(DataType::Float, {4, 5});
  for (uint64_t e = 0; e < quarter.element_count(); ++e) quarter.mutable_data<float>()[e] = 0.25f;
  expect_close(log.values.at("w"), Value(std::move(quarter)), "w");
}

// A capture that fails (the device cannot capture some node's work) costs
// one rerun without capture, never a failed run, and is not tried again.
TEST(OffloadEngine, ACaptureThatFailsFallsBackToAPlainRunOnce) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{6}});
  std::vector<float> w(36);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(static_cast<int>(i % 5) - 2);
  b.initializer(make_float_tensor("w", {6, 6}, w));
  b.node("MatMul", {"x", "w"}, {"h"}, "matmul");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.node("Sigmoid", {"r"}, {"z"}, "sigmoid");
  b.output("z", DataType::Float, {int64_t{2}, int64_t{6}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto device = std::make_shared<HostMemoryDevice>(m);
  device->plans = true;
  device->refuse_capture_on = {"relu"};
  auto prepared = make_offload_engine("test-device", device)->prepare(m);
  EXPECT_NE(prepared->placement().find("from the second, the whole run captured once"), std::string::npos) << prepared->placement();
  const std::vector<std::string> how = {"memory recorded for planning", "planned memory", "planned memory"};
  for (uint64_t run = 0; run < how.size(); ++run) {
    InputSpec spec;
    spec.seed = 10 + run;
    const NamedValues in = make_inputs(*m, spec);
    const NamedValues got = prepared->run(in);
    expect_close(got[0].second, make_reference_engine()->prepare(m)->run(in)[0].second, "run " + std::to_string(run));
    EXPECT_EQ(prepared->last_run_stats().how, how[run]) << "run " << run;
  }
  EXPECT_EQ(device->captures_begun, 1);
  EXPECT_EQ(device->captures_aborted, 1);
}
