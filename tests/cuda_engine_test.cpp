// The CUDA engine. Without a GPU (CI, this project's development machine)
// only its refusal is checked and the device tests skip, saying why; on a
// GPU machine the kernels run against the reference engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model_builder.h"
#include "onnxscope/cuda.h"
#include "onnxscope/diff.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

std::string no_gpu_reason() {
  const CudaStatus s = cuda_status();
  return s.devices.empty() ? (s.reason.empty() ? std::string("no CUDA device") : s.reason) : std::string();
}

// Runs `prepared` on `in`, expecting an Error whose message holds every one of `needles`.
void expect_refused(PreparedModel& prepared, const NamedValues& in, const std::vector<std::string>& needles) {
  try {
    prepared.run(in);
    ADD_FAILURE() << "the run was not refused (expected: " << needles.back() << ")";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what;
  }
}

struct Kernels : Observer {
  std::map<std::string, std::string> of;  // node name -> kernel
  void on_node(const NodeEvent& e) override { of[e.node->name] = std::string(e.kernel); }
};

// Every kernel family once: unary, broadcast binary, MatMul (B a matrix and
// batched), the view ops, and a MeanVarianceNormalization that falls back
// to the CPU engine.
std::shared_ptr<const Model> model() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{8}});
  b.input("y", DataType::Float, {int64_t{8}});
  b.input("q", DataType::Float, {int64_t{2}, int64_t{8}, int64_t{5}});
  std::vector<float> w(8 * 6);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(static_cast<int>(i % 9) - 4);
  b.initializer(make_float_tensor("w", {8, 6}, w));
  b.initializer(make_int64_tensor("flat", {2}, {0, -1}));
  b.initializer(make_int64_tensor("axes", {1}, {1}));
  const char* unary[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf"};
  std::string v = "x";
  for (const char* op : unary) {
    b.node(op, {v}, {std::string("u_") + op}, op);
    v = std::string("u_") + op;
  }
  b.node("Add", {v, "y"}, {"add"}, "add");
  b.node("Mul", {"add", "x"}, {"mul"}, "mul");
  b.node("Div", {"mul", "y"}, {"div"}, "div");
  b.node("Sub", {"div", "x"}, {"sub"}, "sub");
  b.node("MatMul", {"sub", "w"}, {"mm"}, "matmul");
  b.node("MatMul", {"sub", "q"}, {"bmm"}, "batched_matmul");
  b.node("Reshape", {"mm", "flat"}, {"r"}, "reshape");
  b.node("Unsqueeze", {"r", "axes"}, {"un"}, "unsqueeze");
  b.node("Squeeze", {"un", "axes"}, {"sq"}, "squeeze");
  attr_ints(b.node("MeanVarianceNormalization", {"sq"}, {"top"}, "mvn"), "axes", {1});
  b.output("top", DataType::Float, {int64_t{2}, int64_t{18}});
  b.output("bmm", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

}  // namespace

TEST(CudaEngine, WithoutAGpuItSaysWhy) {
  const std::string reason = no_gpu_reason();
  if (reason.empty()) GTEST_SKIP() << "this machine has a GPU: " << cuda_status().devices[0].name;
  try {
    make_engine("cuda");
    FAIL() << "make_engine(\"cuda\") should throw without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "no-device");
    EXPECT_NE(e.diagnostic().message.find(reason), std::string::npos) << e.diagnostic().message;
  }
  const auto names = engine_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "cuda"), 0);
}

TEST(CudaEngine, KernelsMatchTheReference) {
  if (const std::string reason = no_gpu_reason(); !reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  auto m = model();
  ASSERT_TRUE(m);
  InputSpec spec;
  spec.seed = 12;
  const NamedValues in = make_inputs(*m, spec);
  const NamedValues want = make_reference_engine()->prepare(m)->run(in);
  for (const char* precision : {"fp32", "tf32"}) {
    SCOPED_TRACE(precision);
    CudaOptions o;
    o.precision = precision;
    auto prepared = make_cuda_engine(o)->prepare(m);
    Kernels k;
    RunOptions ro;
    ro.observer = &k;
    const NamedValues got = prepared->run(in, ro);
    EXPECT_EQ(k.of["add"], "cuda");
    EXPECT_EQ(k.of["matmul"], std::string(precision) == "tf32" ? "cublas-tf32" : "cublas");
    EXPECT_EQ(k.of["reshape"], "cuda-view");
    EXPECT_EQ(k.of["mvn"].rfind("cpu/", 0), 0u) << k.of["mvn"];
    // TF32 keeps 10 mantissa bits: its tolerance is that of half precision's,
    // taken relative to the output's scale (its root mean square) as well as
    // to each element: MeanVarianceNormalization subtracts the mean, so an
    // element near zero carries the rounding error of the whole row (seen on
    // an H100: 2.6e-4 at an element of 0.049 in a row of unit variance).
    const bool tf32 = std::string(precision) == "tf32";
    const double rtol = tf32 ? 5e-3 : 1e-5;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const Tensor& g = got[i].second.tensor();
      const Tensor& w = want[i].second.tensor();
      ASSERT_EQ(g.shape(), w.shape()) << want[i].first;
      double sq = 0;
      for (uint64_t e = 0; e < w.element_count(); ++e) sq += double(w.data<float>()[e]) * w.data<float>()[e];
      const double rms = w.element_count() ? std::sqrt(sq / static_cast<double>(w.element_count())) : 0.0;
      for (uint64_t e = 0; e < g.element_count(); ++e) {
        const double scale = tf32 ? std::max<double>(std::abs(w.data<float>()[e]), rms) : std::abs(w.data<float>()[e]);
        EXPECT_NEAR(g.data<float>()[e], w.data<float>()[e], 1e-5 + rtol * scale) << want[i].first << "[" << e << "]";
      }
    }
  }
}

// What `onnxscope run --explain` prints under "placement, fallbacks and
// copies": checked on cuda-sim, which places nodes by the same table.
TEST(CudaEngine, PlacementNamesFallbacksAndCopies) {
  auto m = model();
  ASSERT_TRUE(m);
  auto prepared = make_cuda_sim_engine()->prepare(m);
  const std::string p = prepared->placement();
  // The 11 elementwise nodes are two chains for the device (8 ops and 3, fuse-elementwise).
  EXPECT_NE(p.find("7 of 8 nodes on the device, 1 on the host (CPU engine); 5 copies per run, 1 uploads at prepare"), std::string::npos) << p;
  EXPECT_NE(p.find("device  add_Chain (FusedElementwise)"), std::string::npos) << p;
  EXPECT_NE(p.find("host    mvn (MeanVarianceNormalization): no CUDA kernel for MeanVarianceNormalization"), std::string::npos) << p;
  EXPECT_NE(p.find("copy    'sq' to the host"), std::string::npos) << p;
  EXPECT_NE(p.find("upload  'w' once, when the model is prepared"), std::string::npos) << p;
  EXPECT_NE(p.find("device  matmul (MatMul)"), std::string::npos) << p;
  // An engine that runs everything itself has nothing to say here.
  EXPECT_EQ(make_reference_engine()->prepare(m)->placement(), "");
}

// Dropout runs on the device only in inference, which depends on the
// model's opset: before 7 is_test defaults to training; from 12 a
// training_mode input trains unless it is a constant false.
TEST(CudaEngine, DropoutLeavesTrainingToTheCpuEngine) {
  struct Form {
    int64_t opset;
    int is_test;       // -1: no attribute
    int training;      // -1: no input, 0: constant false, 1: a graph input
    bool on_device;
  };
  for (const Form f : {Form{6, -1, -1, false}, Form{6, 0, -1, false}, Form{6, 1, -1, true}, Form{7, -1, -1, true},
                       Form{13, -1, -1, true}, Form{13, -1, 0, true}, Form{13, -1, 1, false}}) {
    SCOPED_TRACE("opset " + std::to_string(f.opset) + " is_test " + std::to_string(f.is_test) + " training " +
                 std::to_string(f.training));
    ModelBuilder b(f.opset);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
    std::vector<std::string> in = {"x"};
    if (f.training == 0) {
      b.initializer(make_float_tensor("ratio", {}, {0.5f}));
      b.initializer(make_tensor_raw("training", DataType::Bool, {}, std::string(1, '\0')));
      in.insert(in.end(), {"ratio", "training"});
    } else if (f.training == 1) {
      b.input("training", DataType::Bool, {});
      in.insert(in.end(), {"", "training"});
    }
    auto& n = b.node("Dropout", in, {"y"}, "drop");
    if (f.is_test >= 0) attr_int(n, "is_test", f.is_test);
    b.output_untyped("y");
    auto r = b.load();
    ASSERT_TRUE(r.ok()) << dump(r);
    std::shared_ptr<const Model> m(std::move(r.model));
    const std::string p = make_cuda_sim_engine()->prepare(m)->placement();
    if (f.on_device) {
      EXPECT_NE(p.find("device  drop (Dropout)"), std::string::npos) << p;
    } else {
      EXPECT_NE(p.find("host    drop (Dropout): Dropout"), std::string::npos) << p;
      EXPECT_NE(p.find("draws random numbers on the CPU engine"), std::string::npos) << p;
    }
  }
}

// OneHot's device kernel loads indices of 8 bits or more: packed int4
// indices (which dtype_info also calls integer) stay with the CPU engine.
TEST(CudaEngine, OneHotLeavesPackedIndicesToTheCpuEngine) {
  for (const DataType t : {DataType::Int8, DataType::Int4}) {
    ModelBuilder b(21);
    b.input("i", t, {int64_t{3}});
    b.initializer(make_int64_tensor("depth", {}, {4}));
    b.initializer(make_float_tensor("values", {2}, {0.f, 1.f}));
    b.node("OneHot", {"i", "depth", "values"}, {"y"}, "onehot");
    b.output_untyped("y");
    auto r = b.load();
    ASSERT_TRUE(r.ok()) << dump(r);
    std::shared_ptr<const Model> m(std::move(r.model));
    const std::string p = make_cuda_sim_engine()->prepare(m)->placement();
    if (t == DataType::Int8) EXPECT_NE(p.find("device  onehot (OneHot)"), std::string::npos) << p;
    else EXPECT_NE(p.find("host    onehot (OneHot): the CUDA OneHot takes integer indices of 8 bits or more"), std::string::npos) << p;
  }
}

// NonMaxSuppression ranks each box against its whole line on the device:
// a known count of boxes up to 4096 runs there, more (or an unknown count)
// on the CPU engine, which sorts.
TEST(CudaEngine, NonMaxSuppressionOfManyOrUncountedBoxesGoesToTheCpuEngine) {
  const std::vector<DimSpec> counts = {int64_t{4096}, int64_t{4097}, std::string("boxes")};
  for (const DimSpec& n : counts) {
    ModelBuilder b(11);
    b.input("boxes", DataType::Float, {int64_t{1}, n, int64_t{4}});
    b.input("scores", DataType::Float, {int64_t{1}, int64_t{2}, n});
    b.node("NonMaxSuppression", {"boxes", "scores"}, {"kept"}, "nms");
    b.output_untyped("kept");
    auto r = b.load();
    ASSERT_TRUE(r.ok()) << dump(r);
    std::shared_ptr<const Model> m(std::move(r.model));
    const std::string p = make_cuda_sim_engine()->prepare(m)->placement();
    if (n == DimSpec{int64_t{4096}}) EXPECT_NE(p.find("device  nms (NonMaxSuppression)"), std::string::npos) << p;
    else EXPECT_NE(p.find("host    nms (NonMaxSuppression): NonMaxSuppression on the device takes a known number of boxes up to 4096"), std::string::npos) << p;
  }
}

// The debugger's blame re-runs each node alone: with the cuda engines that
// must place the node as the whole run did (here: on the device, in fp16),
// or the error a half-precision Conv introduces is blamed on nothing.
TEST(CudaEngine, BlameSeesTheErrorAnFp16ConvIntroduces) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
  std::vector<float> w(8 * 4 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.37f * std::sin(static_cast<float>(i));
  b.initializer(make_float_tensor("w", {8, 4, 3, 3}, w));
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Conv", {"r", "w"}, {"y"}, "conv");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{8}, int64_t{6}, int64_t{6}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  InputSpec spec;
  spec.seed = 3;
  const NamedValues in = make_inputs(*m, spec);
  auto ref = make_reference_engine();
  CudaOptions o;
  o.precision = "fp16";
  auto sim = make_cuda_sim_engine(o);
  const Capture a = capture_run(*ref, m, in);
  const Capture c = capture_run(*sim, m, in);
  DiffTolerance tol;
  DiffReport report = diff_captures(*m, a, c, tol);
  ASSERT_TRUE(blame_nodes(*m, a, *sim, tol, report, {}));
  ASSERT_FALSE(report.blame_order.empty());
  const NodeDiff& top = report.nodes[report.blame_order[0]];
  EXPECT_EQ(top.node, "conv");
  EXPECT_GT(top.introduced_score, 1e-4);  // float16 keeps 11 significant bits
}

// The limits of a run bound the device's memory too (on cuda-sim the
// "device" is host memory): a tensor past --max-tensor-bytes, or past
// --max-live-bytes with what is already alive, fails at its node, before any
// memory is touched; memory given back counts no more, so the next run of
// the same engine goes through.
TEST(CudaEngine, SimHonoursTheTensorAndLiveLimits) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{256}, int64_t{256}});  // 256 KiB
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Exp", {"r"}, {"e"}, "exp");
  b.node("Concat", {"r", "e"}, {"big"}, "concat");  // 512 KiB
  auto& cat = b.graph().mutable_node()->Mutable(2)[0];
  attr_int(cat, "axis", 0);
  b.output("big", DataType::Float, {int64_t{512}, int64_t{256}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  InputSpec spec;
  const NamedValues in = make_inputs(*m, spec);
  auto run_with = [&](uint64_t max_tensor, uint64_t max_live) -> std::string {
    CudaOptions o;
    o.host.max_tensor_bytes = max_tensor;
    o.host.max_live_bytes = max_live;
    o.host.opt_level = 0;  // keep Relu and Exp apart: three tensors alive at the Concat
    auto prepared = make_cuda_sim_engine(o)->prepare(m);
    try {
      prepared->run(in);
    } catch (const Error& e) {
      return e.what();
    }
    prepared->run(in);  // a second run of the same plan: what the first gave back is free again
    return "ran";
  };
  const std::string tensor = run_with(400 << 10, 0);
  EXPECT_NE(tensor.find("node 'concat'"), std::string::npos) << tensor;
  EXPECT_NE(tensor.find("a device tensor of 524288 bytes is more than the limit of 409600 bytes for one tensor (--max-tensor-bytes)"),
            std::string::npos) << tensor;
  // r and e alive (512 KiB; x is given back after its one reader) when the
  // Concat asks for 512 KiB.
  const std::string live = run_with(0, 900 << 10);
  EXPECT_NE(live.find("node 'concat'"), std::string::npos) << live;
  EXPECT_NE(live.find("a device tensor of 524288 bytes with 524288 bytes already alive is more than the limit of 921600 "
                      "bytes alive at once (--max-live-bytes)"),
            std::string::npos) << live;
  EXPECT_EQ(run_with(0, 1024 << 10), "ran");
  EXPECT_EQ(run_with(600 << 10, 0), "ran");
}

// RotaryEmbedding's position ids are read on the device: one outside the
// cache fails the run at the node, in the words of a position (no negative
// counting from the end, unlike an index).
TEST(CudaEngine, SimChecksRotaryPositionIds) {
  ModelBuilder b(23);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}});
  b.input("pos", DataType::Int64, {int64_t{1}, int64_t{3}});
  b.initializer(make_float_tensor("cos", {4, 2}, std::vector<float>(8, 0.5f)));
  b.initializer(make_float_tensor("sin", {4, 2}, std::vector<float>(8, 0.25f)));
  b.node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"}, "rope");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  InputSpec spec;
  NamedValues in = make_inputs(*m, spec);
  auto prepared = make_cuda_sim_engine()->prepare(m);
  for (const int64_t bad : {int64_t{4}, int64_t{-1}}) {
    Tensor pos = Tensor::zeros(DataType::Int64, {1, 3});
    pos.mutable_data<int64_t>()[0] = 0;
    pos.mutable_data<int64_t>()[1] = bad;
    pos.mutable_data<int64_t>()[2] = 3;
    in[1].second = Value(std::move(pos));
    expect_refused(*prepared, in, {"node 'rope'", "position id " + std::to_string(bad) + " (at 1) is outside [0, 3]"});
  }
}

// sequence_lens are read on the device: a length past the sequence (or
// negative) is reported after the run with the node and the batch, as the
// reference refuses it, and a good one after it runs again.
TEST(CudaEngine, SimChecksSequenceLengths) {
  ModelBuilder b(14);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{2}, int64_t{2}});
  b.input("lens", DataType::Int32, {int64_t{2}});
  b.initializer(make_float_tensor("w", {1, 8, 2}, std::vector<float>(16, 0.25f)));
  b.initializer(make_float_tensor("r", {1, 8, 2}, std::vector<float>(16, -0.25f)));
  b.node("LSTM", {"x", "w", "r", "", "lens"}, {"y", "y_h"}, "lstm");
  b.output_untyped("y");
  b.output_untyped("y_h");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  InputSpec spec;
  NamedValues in = make_inputs(*m, spec);
  auto prepared = make_cuda_sim_engine()->prepare(m);
  auto reference = make_reference_engine()->prepare(m);
  auto lengths = [&](int32_t second) {
    Tensor t = Tensor::zeros(DataType::Int32, {2});
    t.mutable_data<int32_t>()[0] = 2;
    t.mutable_data<int32_t>()[1] = second;
    in[1].second = Value(std::move(t));
  };
  for (const int32_t bad : {4, -1}) {
    lengths(bad);
    expect_refused(*prepared, in, {"node 'lstm'", "sequence length " + std::to_string(bad) + " (batch 1) is outside [0, 3]"});
    EXPECT_THROW(reference->run(in), Error);
  }
  lengths(3);
  const NamedValues got = prepared->run(in), want = reference->run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& g = got[i].second.tensor();
    const Tensor& w = want[i].second.tensor();
    ASSERT_EQ(g.shape(), w.shape());
    for (uint64_t k = 0; k < g.element_count(); ++k) EXPECT_NEAR(g.element_as_double(k), w.element_as_double(k), 1e-5) << i << " " << k;
  }
}

// RoiAlign's rois and batch indices are read on the host and checked there
// as the reference checks them: a batch index out of range, a corner that
// is not finite, an adaptive sampling grid too large to loop over, and an
// empty image each fail the run at the node; good rois run again after.
TEST(CudaEngine, SimChecksRoiAlignRois) {
  ModelBuilder b(16);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{2}, std::string("h"), int64_t{4}});
  b.input("rois", DataType::Float, {int64_t{1}, int64_t{4}});
  b.input("batch", DataType::Int64, {int64_t{1}});
  auto& n = b.node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "roi");
  attr_int(n, "output_height", 2);
  attr_int(n, "output_width", 2);
  b.output_untyped("y");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto prepared = make_cuda_sim_engine()->prepare(m);
  auto reference = make_reference_engine()->prepare(m);
  auto inputs = [](int64_t h, std::vector<float> box, int64_t batch) {
    Tensor x = Tensor::zeros(DataType::Float, {1, 2, h, 4});
    for (uint64_t i = 0; i < x.element_count(); ++i) x.mutable_data<float>()[i] = static_cast<float>(i % 7) - 3.f;
    Tensor idx = Tensor::zeros(DataType::Int64, {1});
    idx.mutable_data<int64_t>()[0] = batch;
    Tensor rois = Tensor::zeros(DataType::Float, {1, 4});
    for (int q = 0; q < 4; ++q) rois.mutable_data<float>()[q] = box[static_cast<size_t>(q)];
    return NamedValues{{"x", Value(std::move(x))}, {"rois", Value(std::move(rois))}, {"batch", Value(std::move(idx))}};
  };
  const std::vector<float> good = {0.5f, 0.25f, 3.f, 2.5f};
  expect_refused(*prepared, inputs(3, good, 1), {"node 'roi'", "batch index 1 is out of range [0, 1)"});
  EXPECT_THROW(reference->run(inputs(3, good, 1)), Error);
  expect_refused(*prepared, inputs(3, {0.f, NAN, 1.f, 1.f}, 0), {"node 'roi'", "rois must be finite"});
  expect_refused(*prepared, inputs(3, {0.f, 0.f, 1e9f, 1e9f}, 0), {"node 'roi'", "the sampling grid of roi 0 is too large"});
  expect_refused(*prepared, inputs(0, good, 0), {"node 'roi'", "cannot sample from an empty image"});
  EXPECT_THROW(reference->run(inputs(0, good, 0)), Error);
  const NamedValues got = prepared->run(inputs(3, good, 0)), want = reference->run(inputs(3, good, 0));
  ASSERT_EQ(got.size(), 1u);
  const Tensor& g = got[0].second.tensor();
  const Tensor& w = want[0].second.tensor();
  ASSERT_EQ(g.shape(), w.shape());
  for (uint64_t k = 0; k < g.element_count(); ++k) EXPECT_EQ(g.data<float>()[k], w.data<float>()[k]) << k;
}

// A loss's targets are read on the device: a class outside [0, C) that is
// not ignore_index is reported after the run with the node and the element,
// as the reference refuses it; good targets run again after it.
TEST(CudaEngine, SimChecksLossTargets) {
  ModelBuilder b(13);
  b.input("scores", DataType::Float, {int64_t{2}, int64_t{3}});
  b.input("target", DataType::Int64, {int64_t{2}});
  attr_int(b.node("SoftmaxCrossEntropyLoss", {"scores", "target"}, {"loss"}, "sce"), "ignore_index", -1);
  b.output_untyped("loss");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto prepared = make_cuda_sim_engine()->prepare(m);
  auto reference = make_reference_engine()->prepare(m);
  auto inputs = [](int64_t second) {
    Tensor s = Tensor::zeros(DataType::Float, {2, 3});
    for (int i = 0; i < 6; ++i) s.mutable_data<float>()[i] = 0.5f * static_cast<float>(i) - 1.f;
    Tensor t = Tensor::zeros(DataType::Int64, {2});
    t.mutable_data<int64_t>()[0] = 2;
    t.mutable_data<int64_t>()[1] = second;
    return NamedValues{{"scores", Value(std::move(s))}, {"target", Value(std::move(t))}};
  };
  for (const int64_t bad : {int64_t{3}, int64_t{-2}}) {
    expect_refused(*prepared, inputs(bad), {"node 'sce'", "target value " + std::to_string(bad) + " (at 1) is outside [0, 2]"});
    EXPECT_THROW(reference->run(inputs(bad)), Error);
  }
  for (const int64_t good : {int64_t{0}, int64_t{-1}}) {  // -1: ignored
    const NamedValues got = prepared->run(inputs(good)), want = reference->run(inputs(good));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].second.tensor().data<float>()[0], want[0].second.tensor().data<float>()[0]) << good;
  }
}

// MaxUnpool's indices and ReverseSequence's lengths are read on the device:
// a flat index outside the unpooled shape and a length past the sequence
// are reported after the run at their node, as the reference refuses them.
TEST(CudaEngine, SimChecksUnpoolIndicesAndReversedLengths) {
  ModelBuilder b(11);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{2}});
  b.input("i", DataType::Int64, {int64_t{1}, int64_t{1}, int64_t{2}});
  b.input("lens", DataType::Int64, {int64_t{1}});
  auto& unpool = b.node("MaxUnpool", {"x", "i"}, {"up"}, "unpool");
  attr_ints(unpool, "kernel_shape", {2});
  attr_ints(unpool, "strides", {2});
  attr_int(b.node("ReverseSequence", {"up", "lens"}, {"rev"}, "reverse"), "batch_axis", 1);
  b.output_untyped("rev");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto prepared = make_cuda_sim_engine()->prepare(m);
  auto reference = make_reference_engine()->prepare(m);
  auto inputs = [](int64_t second_index, int64_t len) {
    Tensor x = Tensor::zeros(DataType::Float, {1, 1, 2});
    x.mutable_data<float>()[0] = 5.f;
    x.mutable_data<float>()[1] = -7.f;
    Tensor i = Tensor::zeros(DataType::Int64, {1, 1, 2});
    i.mutable_data<int64_t>()[0] = 1;
    i.mutable_data<int64_t>()[1] = second_index;
    Tensor l = Tensor::zeros(DataType::Int64, {1});
    l.mutable_data<int64_t>()[0] = len;
    return NamedValues{{"x", Value(std::move(x))}, {"i", Value(std::move(i))}, {"lens", Value(std::move(l))}};
  };
  expect_refused(*prepared, inputs(4, 1), {"node 'unpool'", "index 4 (at 1) is outside [0, 3]"});
  EXPECT_THROW(reference->run(inputs(4, 1)), Error);
  expect_refused(*prepared, inputs(2, 2), {"node 'reverse'", "sequence length 2 (batch 0) is outside [0, 1]"});
  EXPECT_THROW(reference->run(inputs(2, 2)), Error);
  const NamedValues got = prepared->run(inputs(2, 1)), want = reference->run(inputs(2, 1));
  ASSERT_EQ(got.size(), 1u);
  const Tensor& g = got[0].second.tensor();
  const Tensor& w = want[0].second.tensor();
  ASSERT_EQ(g.shape(), w.shape());
  for (uint64_t k = 0; k < g.element_count(); ++k) EXPECT_EQ(g.data<float>()[k], w.data<float>()[k]) << k;
}

// Integer Div and Mod run on the device: a zero divisor is not divided by
// but reported after the run with the node and the output element, as the
// reference refuses it; good divisors run again after it.
TEST(CudaEngine, SimReportsIntegerDivisionByZero) {
  for (const char* op : {"Div", "Mod"}) {
    SCOPED_TRACE(op);
    ModelBuilder b(13);
    b.input("a", DataType::Int16, {int64_t{2}, int64_t{3}});
    b.input("d", DataType::Int16, {int64_t{3}});
    b.node(op, {"a", "d"}, {"q"}, "divide");
    b.output_untyped("q");
    auto r = b.load();
    ASSERT_TRUE(r.ok()) << dump(r);
    std::shared_ptr<const Model> m(std::move(r.model));
    auto prepared = make_cuda_sim_engine()->prepare(m);
    auto reference = make_reference_engine()->prepare(m);
    Tensor a = Tensor::zeros(DataType::Int16, {2, 3});
    for (int i = 0; i < 6; ++i) a.mutable_data<int16_t>()[i] = static_cast<int16_t>(7 * i - 20);
    auto inputs = [&](int16_t d2) {
      Tensor d = Tensor::zeros(DataType::Int16, {3});
      d.mutable_data<int16_t>()[0] = 3;
      d.mutable_data<int16_t>()[1] = -4;
      d.mutable_data<int16_t>()[2] = d2;
      return NamedValues{{"a", Value(a)}, {"d", Value(std::move(d))}};
    };
    expect_refused(*prepared, inputs(0), {"node 'divide'", "integer division by zero (output element 2)"});
    EXPECT_THROW(reference->run(inputs(0)), Error);
    const NamedValues got = prepared->run(inputs(5)), want = reference->run(inputs(5));
    ASSERT_EQ(got.size(), 1u);
    const Tensor& g = got[0].second.tensor();
    const Tensor& w = want[0].second.tensor();
    ASSERT_EQ(g.shape(), w.shape());
    for (uint64_t k = 0; k < g.element_count(); ++k) EXPECT_EQ(g.element_as_int64(k), w.element_as_int64(k)) << k;
  }
}

// fp16 on cuda-sim: weights given as initializers (converted to float16
// once, cuda/half_cache.h) and the same weights fed as inputs (converted
// at every call) give the same bits, in the recorded, captured and
// replayed runs alike; and they are float16 results (not float32's).
TEST(CudaEngine, SimFp16WeightsConvertedOnceGiveTheSameBits) {
  auto build = [](bool as_initializers) {
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{6}, int64_t{6}});
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> weights = {
        {"w", {{4, 3, 3, 3}, {}}}, {"wt", {{4, 2, 2, 2}, {}}}, {"m", {{2 * 5 * 5, 3}, {}}}, {"g", {{7, 3}, {}}}};
    uint32_t seed = 1;
    for (auto& [name, w] : weights) {
      int64_t n = 1;
      for (int64_t d : w.first) n *= d;
      for (int64_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        w.second.push_back(static_cast<float>(seed >> 8) / 16777216.f - 0.5f);
      }
      if (as_initializers) {
        b.initializer(make_float_tensor(name, w.first, w.second));
      } else {
        b.input(name, DataType::Float, std::vector<DimSpec>(w.first.begin(), w.first.end()));
      }
    }
    b.node("Conv", {"x", "w"}, {"c"}, "conv");
    b.node("ConvTranspose", {"c", "wt"}, {"ct"}, "conv_transpose");
    b.node("Flatten", {"ct"}, {"f"}, "flatten");
    b.node("MatMul", {"f", "m"}, {"mm"}, "matmul");
    auto& gemm = b.node("Gemm", {"mm", "g"}, {"y"}, "gemm");
    attr_int(gemm, "transB", 1);
    b.output("y", DataType::Float, {int64_t{2}, int64_t{7}});
    auto r = b.load();
    EXPECT_TRUE(r.ok()) << dump(r);
    return std::make_pair(std::shared_ptr<const Model>(std::move(r.model)), weights);
  };
  auto [constant, weights] = build(true);
  auto fed = build(false).first;
  CudaOptions o;
  o.precision = "fp16";
  auto with_cache = make_cuda_sim_engine(o)->prepare(constant);
  auto without = make_cuda_sim_engine(o)->prepare(fed);
  auto fp32 = make_cuda_sim_engine()->prepare(constant);
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(run);
    NamedValues in = make_inputs(*constant, spec);
    NamedValues all = in;
    for (const auto& [name, w] : weights) {
      Tensor t = Tensor::zeros(DataType::Float, w.first);
      std::copy(w.second.begin(), w.second.end(), t.mutable_data<float>());
      all.emplace_back(name, Value(std::move(t)));
    }
    const Tensor a = with_cache->run(in)[0].second.tensor();
    const Tensor b = without->run(all)[0].second.tensor();
    const Tensor c = fp32->run(in)[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    bool differs_from_fp32 = false;
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
      differs_from_fp32 = differs_from_fp32 || a.data<float>()[i] != c.data<float>()[i];
    }
    EXPECT_TRUE(differs_from_fp32) << "fp16 gave float32's results";
    if (run > 0) {
      EXPECT_EQ(with_cache->last_run_stats().how, without->last_run_stats().how);
    }
    // One float16 copy of each weight (w, wt, m, g: 108 + 32 + 150 + 21
    // elements), none of the fed ones.
    EXPECT_EQ(with_cache->last_run_stats().device_kept_bytes, (108u + 32u + 150u + 21u) * 2);
    EXPECT_EQ(without->last_run_stats().device_kept_bytes, 0u);
  }
  EXPECT_EQ(with_cache->last_run_stats().how, "captured run replayed");
}
