// Repeated runs on the CUDA engine, checked through cuda-sim (the same
// operators over the host runtime): device memory planned by liveness from
// the first run of each input shape (cuda/arena.h), the whole run captured
// on the second and replayed from the third (a CUDA graph on a GPU, the
// recorded calls on the host). Every run, whatever its way, gives the
// reference engine's outputs for its own inputs; what cannot be captured
// runs without capture; the runtime keeps a capture honest (no wait, no
// copy to the host, no allocation outside the plan, copies' bytes kept);
// and indices the device reads are checked there, in every kind of run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda/arena.h"
#include "cuda/fault_log.h"
#include "cuda/runtime.h"
#include "model_builder.h"
#include "onnxscope/cuda.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// Conv + BatchNormalization + Relu (folded and fused for the device),
// MaxPool, the exporters' flatten (Shape, Gather, Unsqueeze, Concat: shape
// arithmetic on the host) into Reshape, Gemm with alpha and beta, a Gather
// of constant indices (uploaded when the model is prepared), Softmax.
std::shared_ptr<const Model> cnn() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {std::string("n"), int64_t{3}, int64_t{8}, int64_t{8}});
  auto floats = [](size_t n, float scale, int phase) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(static_cast<float>(i) * 0.7f + static_cast<float>(phase));
    return v;
  };
  b.initializer(make_float_tensor("w", {4, 3, 3, 3}, floats(108, 0.4f, 1)));
  b.initializer(make_float_tensor("cb", {4}, floats(4, 0.1f, 2)));
  b.initializer(make_float_tensor("scale", {4}, {1.1f, 0.9f, 1.3f, 0.7f}));
  b.initializer(make_float_tensor("shift", {4}, floats(4, 0.2f, 3)));
  b.initializer(make_float_tensor("mean", {4}, floats(4, 0.1f, 4)));
  b.initializer(make_float_tensor("var", {4}, {0.5f, 1.5f, 1.f, 2.f}));
  b.initializer(make_int64_tensor("zero", {}, {0}));
  b.initializer(make_int64_tensor("axes", {1}, {0}));
  b.initializer(make_int64_tensor("minus_one", {1}, {-1}));
  b.initializer(make_float_tensor("gw", {5, 64}, floats(320, 0.2f, 5)));
  b.initializer(make_float_tensor("gb", {5}, floats(5, 0.3f, 6)));
  b.initializer(make_int64_tensor("pick", {3}, {4, 0, -3}));
  attr_ints(b.node("Conv", {"x", "w", "cb"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}, "bn");
  b.node("Relu", {"bn"}, {"r"}, "relu");
  auto& pool = b.node("MaxPool", {"r"}, {"p"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  b.node("Shape", {"p"}, {"shape"}, "shape");
  b.node("Gather", {"shape", "zero"}, {"batch"}, "batch");
  b.node("Unsqueeze", {"batch", "axes"}, {"batch1"}, "unsqueeze");
  attr_int(b.node("Concat", {"batch1", "minus_one"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"p", "target"}, {"flat"}, "flatten");
  auto& gemm = b.node("Gemm", {"flat", "gw", "gb"}, {"logits"}, "gemm");
  attr_int(gemm, "transB", 1);
  attr_float(gemm, "alpha", 0.5f);
  attr_float(gemm, "beta", 2.f);
  attr_int(b.node("Gather", {"logits", "pick"}, {"picked"}, "pick"), "axis", 1);
  b.node("Softmax", {"picked"}, {"probs"}, "softmax");
  b.output("probs", DataType::Float, {std::string("n"), int64_t{3}});
  b.output("logits", DataType::Float, {std::string("n"), int64_t{5}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

NamedValues inputs_for(const Model& m, int64_t batch, uint64_t seed) {
  InputSpec spec;
  spec.seed = seed;
  spec.dims["n"] = batch;
  return make_inputs(m, spec);
}

void expect_matches(const NamedValues& got, const NamedValues& want, const std::string& what, double rtol = 1e-4) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& g = got[i].second.tensor();
    const Tensor& w = want[i].second.tensor();
    ASSERT_EQ(g.shape(), w.shape()) << what << ": " << want[i].first;
    for (uint64_t e = 0; e < g.element_count(); ++e)
      ASSERT_NEAR(g.data<float>()[e], w.data<float>()[e], 1e-4 + rtol * std::abs(w.data<float>()[e]))
          << what << ": " << want[i].first << "[" << e << "]";
  }
}

}  // namespace

namespace {

// Batch 2 three times, batch 3 twice, batch 2 and 3 again: each input shape
// has its own plan and capture; new values every run.
void check_repeated_runs(Engine& engine, double rtol) {
  auto m = cnn();
  ASSERT_TRUE(m);
  auto prepared = engine.prepare(m);
  auto reference = make_reference_engine()->prepare(m);
  EXPECT_NE(prepared->placement().find("from the second, the whole run captured once"), std::string::npos)
      << prepared->placement();
  const std::vector<std::pair<int64_t, std::string>> runs = {
      {2, "memory recorded for planning"}, {2, "planned memory, run captured"}, {2, "captured run replayed"},
      {3, "memory recorded for planning"}, {3, "planned memory, run captured"}, {2, "captured run replayed"},
      {3, "captured run replayed"}};
  uint64_t seed = 1;
  for (const auto& [batch, how] : runs) {
    const std::string what = "run " + std::to_string(seed) + " (batch " + std::to_string(batch) + ")";
    const NamedValues in = inputs_for(*m, batch, seed++);
    expect_matches(prepared->run(in), reference->run(in), what, rtol);
    const RunStats stats = prepared->last_run_stats();
    EXPECT_EQ(stats.how, how) << what;
    EXPECT_GT(stats.peak_live_bytes, 0u) << what;
    if (how != "memory recorded for planning") {
      EXPECT_GT(stats.arena_bytes, 0u) << what;
    }
  }
}

}  // namespace

TEST(CudaSteadyState, EveryRunMatchesTheReferenceRecordedCapturedOrReplayed) {
  check_repeated_runs(*make_cuda_sim_engine(), 1e-4);
}

// The same on a GPU: the arena over cudaMallocAsync, CUDA graphs.
TEST(CudaSteadyState, OnAGpuEveryRunMatchesTheReference) {
  const CudaStatus status = cuda_status();
  if (status.devices.empty()) GTEST_SKIP() << "no GPU to run on: " << (status.reason.empty() ? "no CUDA device" : status.reason);
  check_repeated_runs(*make_cuda_engine(), 1e-4);  // fp32: no tensor cores
}

TEST(CudaSteadyState, AnObservedRunIsNeitherPlannedNorCaptured) {
  auto m = cnn();
  auto prepared = make_cuda_sim_engine()->prepare(m);
  struct Count : Observer {
    int nodes = 0;
    void on_node(const NodeEvent&) override { ++nodes; }
  } count;
  RunOptions o;
  o.observer = &count;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const NamedValues in = inputs_for(*m, 2, seed);
    expect_matches(prepared->run(in, o), make_reference_engine()->prepare(m)->run(in), "observed run");
    EXPECT_EQ(prepared->last_run_stats().how, "");
  }
  EXPECT_GT(count.nodes, 0);
}

// MeanVarianceNormalization has no CUDA kernel: it runs on the host, on values that
// change from run to run, so runs are planned but never captured, and say why.
TEST(CudaSteadyState, ARunWithHostWorkOnChangingValuesIsPlannedButNotCaptured) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{7}});
  b.node("Relu", {"x"}, {"r"}, "relu");
  attr_ints(b.node("MeanVarianceNormalization", {"r"}, {"v"}, "mvn"), "axes", {1});
  b.node("Sigmoid", {"v"}, {"s"}, "sigmoid");
  b.output("s", DataType::Float, {int64_t{3}, int64_t{7}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto prepared = make_cuda_sim_engine()->prepare(m);
  EXPECT_NE(prepared->placement().find("not captured: node mvn (MeanVarianceNormalization) runs on the host on 'r', which may change from run to run"), std::string::npos)
      << prepared->placement();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    InputSpec spec;
    spec.seed = seed;
    const NamedValues in = make_inputs(*m, spec);
    expect_matches(prepared->run(in), make_reference_engine()->prepare(m)->run(in), "run " + std::to_string(seed));
    EXPECT_EQ(prepared->last_run_stats().how, seed == 1 ? "memory recorded for planning" : "planned memory");
  }
}

// A token embedding: Gather of a table by the token ids (a model input, read
// and checked on the device), then GatherND picking rows by another input.
// Every run is captured or replayed; a run with an index out of range fails
// at the node that read it, whether it ran plainly, was captured or was
// replayed, and the next good run is right again.
namespace {

std::shared_ptr<const Model> embedding() {
  ModelBuilder b(17);
  b.input("ids", DataType::Int64, {int64_t{2}, int64_t{4}});
  b.input("rows", DataType::Int64, {int64_t{3}, int64_t{2}});
  std::vector<float> table(10 * 3);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.25f * static_cast<float>(i) - 3.f;
  b.initializer(make_float_tensor("table", {10, 3}, table));
  b.node("Gather", {"table", "ids"}, {"embedded"}, "embed");  // [2, 4, 3]
  b.node("GatherND", {"embedded", "rows"}, {"picked"}, "pick_rows");  // [3, 3]
  b.node("Relu", {"picked"}, {"out"}, "relu");
  b.output("out", DataType::Float, {int64_t{3}, int64_t{3}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

Tensor int64s(const Shape& s, const std::vector<int64_t>& v) {
  Tensor t = Tensor::zeros(DataType::Int64, s);
  std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  return t;
}

NamedValues tokens(const std::vector<int64_t>& ids, const std::vector<int64_t>& rows) {
  return {{"ids", Value(int64s({2, 4}, ids))}, {"rows", Value(int64s({3, 2}, rows))}};
}

// Runs `in` expecting the fault of node `node` with `words` in its message.
void expect_fault(PreparedModel& p, const NamedValues& in, const std::string& node, const std::string& words) {
  try {
    p.run(in);
    ADD_FAILURE() << "an index out of range was not reported (" << words << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().where.node, node) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

void check_indices(Engine& engine) {
  auto m = embedding();
  ASSERT_TRUE(m);
  auto reference = make_reference_engine()->prepare(m);
  auto prepared = engine.prepare(m);
  EXPECT_NE(prepared->placement().find("from the second, the whole run captured once"), std::string::npos)
      << prepared->placement();
  const NamedValues good[] = {tokens({0, 9, -1, 3, 5, -10, 2, 7}, {0, 1, 1, 3, -1, -4}),
                              tokens({1, 1, 8, -2, 4, 6, 0, -5}, {1, 0, 0, 2, 1, -1}),
                              tokens({7, 3, 3, 9, -9, 2, 5, 5}, {-2, 3, 0, 0, 1, 1})};
  expect_fault(*prepared, tokens({0, 1, 2, 3, 4, 10, 6, 7}, {0, 0, 0, 0, 0, 0}), "embed", "index 10 (at 5) is outside [-10, 9]");
  for (int i = 0; i < 3; ++i) {
    expect_matches(prepared->run(good[i]), reference->run(good[i]), "good run " + std::to_string(i));
    EXPECT_EQ(prepared->last_run_stats().how, i == 0 ? "memory recorded for planning" : i == 1 ? "planned memory, run captured" : "captured run replayed");
  }
  expect_fault(*prepared, tokens({0, 1, 2, 3, 4, 5, 6, -11}, {0, 0, 0, 0, 0, 0}), "embed", "index -11 (at 7) is outside [-10, 9]");
  expect_matches(prepared->run(good[0]), reference->run(good[0]), "a good run after a fault");
  EXPECT_EQ(prepared->last_run_stats().how, "captured run replayed");
  expect_fault(*prepared, tokens({0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 1, 4, 0, 0}), "pick_rows", "index 4 (at 3) is outside [-4, 3]");
  expect_matches(prepared->run(good[1]), reference->run(good[1]), "a good run after a GatherND fault");
}

// A scatter-add of updates at positions from a model input, read back by
// GatherElements at the same positions: a bad position is reported at the
// node that used it (the scatter first), in a plain run and a replayed one.
std::shared_ptr<const Model> scatter_and_gather() {
  ModelBuilder b(18);
  b.input("at", DataType::Int64, {int64_t{2}, int64_t{3}});
  b.input("upd", DataType::Float, {int64_t{2}, int64_t{3}});
  std::vector<float> base(4 * 3);
  for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i);
  b.initializer(make_float_tensor("base", {4, 3}, base));
  attr_string(b.node("ScatterElements", {"base", "at", "upd"}, {"scattered"}, "scatter"), "reduction", "add");
  b.node("GatherElements", {"scattered", "at"}, {"out"}, "gather_back");
  b.output("out", DataType::Float, {int64_t{2}, int64_t{3}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

void check_scatter_indices(Engine& engine) {
  auto m = scatter_and_gather();
  ASSERT_TRUE(m);
  auto reference = make_reference_engine()->prepare(m);
  auto prepared = engine.prepare(m);
  EXPECT_NE(prepared->placement().find("2 of 2 nodes on the device"), std::string::npos) << prepared->placement();
  auto in = [](const std::vector<int64_t>& at) {
    Tensor u = Tensor::zeros(DataType::Float, {2, 3});
    for (int i = 0; i < 6; ++i) u.mutable_data<float>()[i] = 0.5f * static_cast<float>(i) - 1.f;
    return NamedValues{{"at", Value(int64s({2, 3}, at))}, {"upd", Value(std::move(u))}};
  };
  expect_fault(*prepared, in({0, 1, 2, 3, 4, 0}), "scatter", "index 4 (at 4) is outside [-4, 3]");
  const NamedValues good[] = {in({0, 1, 2, 3, -1, 0}), in({1, 1, 1, 1, 1, 1}), in({-4, 2, 3, 0, 0, -1})};
  for (int i = 0; i < 3; ++i) {
    expect_matches(prepared->run(good[i]), reference->run(good[i]), "good run " + std::to_string(i));
    EXPECT_EQ(prepared->last_run_stats().how, i == 0 ? "memory recorded for planning" : i == 1 ? "planned memory, run captured" : "captured run replayed");
  }
  expect_fault(*prepared, in({0, 0, -5, 0, 0, 0}), "scatter", "index -5 (at 2) is outside [-4, 3]");
  expect_matches(prepared->run(good[1]), reference->run(good[1]), "a good run after a fault");
}

// A decoding step's cache write: TensorScatter of one token's row into a
// cache at positions from a model input. The write indices stay on the
// device, so the run is captured and replayed with new positions each time
// (a replay that kept the first positions would differ from the reference);
// a position past the cache is reported at the node in any kind of run.
void check_cache_writes(Engine& engine) {
  ModelBuilder b(24);
  b.input("past", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{3}});
  b.input("token", DataType::Float, {int64_t{2}, int64_t{1}, int64_t{3}});
  b.input("pos", DataType::Int64, {int64_t{2}});
  b.node("TensorScatter", {"past", "token", "pos"}, {"present"}, "cache_write");
  b.output("present", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{3}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto reference = make_reference_engine()->prepare(m);
  auto prepared = engine.prepare(m);
  EXPECT_NE(prepared->placement().find("1 of 1 nodes on the device"), std::string::npos) << prepared->placement();
  auto in = [](const std::vector<int64_t>& pos) {
    Tensor past = Tensor::zeros(DataType::Float, {2, 4, 3}), token = Tensor::zeros(DataType::Float, {2, 1, 3});
    for (int i = 0; i < 24; ++i) past.mutable_data<float>()[i] = static_cast<float>(i);
    for (int i = 0; i < 6; ++i) token.mutable_data<float>()[i] = -1.f - static_cast<float>(i);
    return NamedValues{{"past", Value(std::move(past))}, {"token", Value(std::move(token))}, {"pos", Value(int64s({2}, pos))}};
  };
  expect_fault(*prepared, in({0, 4}), "cache_write", "write index 4 (batch 1) is outside [0, 3]");
  const std::vector<int64_t> positions[] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
  for (int i = 0; i < 4; ++i) {
    const NamedValues good = in(positions[i]);
    expect_matches(prepared->run(good), reference->run(good), "run " + std::to_string(i));
    EXPECT_EQ(prepared->last_run_stats().how, i == 0 ? "memory recorded for planning" : i == 1 ? "planned memory, run captured" : "captured run replayed");
  }
  expect_fault(*prepared, in({-1, 0}), "cache_write", "write index -1 (batch 0) is outside [0, 3]");
  expect_matches(prepared->run(in({1, 1})), reference->run(in({1, 1})), "a good run after a fault");
}

}  // namespace

TEST(CudaSteadyState, IndicesAreCheckedOnTheDeviceInEveryKindOfRun) {
  check_indices(*make_cuda_sim_engine());
  check_scatter_indices(*make_cuda_sim_engine());
  check_cache_writes(*make_cuda_sim_engine());
}

// The same on a GPU: the fault record written by atomicCAS, read after a graph launch.
TEST(CudaSteadyState, OnAGpuIndicesAreCheckedInEveryKindOfRun) {
  const CudaStatus status = cuda_status();
  if (status.devices.empty()) GTEST_SKIP() << "no GPU to run on: " << (status.reason.empty() ? "no CUDA device" : status.reason);
  check_indices(*make_cuda_engine());
  check_scatter_indices(*make_cuda_engine());
  check_cache_writes(*make_cuda_engine());
}

// --- the arena and the runtime's capture rules, directly

namespace {

using cuda::Arena;
using cuda::DeviceMemory;

}  // namespace

// NonZero on the device: its count is read back mid-run, so the capture is
// refused once (the run is done again without it) and never tried again;
// counts that change between runs of one input shape change the sizes the
// memory plan recorded, and every run still gives the reference's outputs.
TEST(CudaSteadyState, NonZeroRunsArePlannedButNotCapturedWhateverTheirCounts) {
  ModelBuilder b(13);
  b.input("x", DataType::Float, {int64_t{4}, int64_t{5}});
  b.node("NonZero", {"x"}, {"where"}, "nonzero");
  attr_ints(b.node("Transpose", {"where"}, {"pairs"}, "pairs"), "perm", {1, 0});
  b.node("Relu", {"x"}, {"relu"}, "relu");
  b.output_untyped("pairs");
  b.output_untyped("relu");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto reference = make_reference_engine()->prepare(m);
  auto prepared = make_cuda_sim_engine()->prepare(m);
  EXPECT_NE(prepared->placement().find("3 of 3 nodes on the device"), std::string::npos) << prepared->placement();
  auto input = [](int nonzero) {
    Tensor x = Tensor::zeros(DataType::Float, {4, 5});
    for (int i = 0; i < nonzero; ++i) x.mutable_data<float>()[(i * 7) % 20] = static_cast<float>(i) - 2.5f;
    return NamedValues{{"x", Value(std::move(x))}};
  };
  const int counts[] = {3, 3, 7, 3, 0, 20, 3};
  for (size_t i = 0; i < std::size(counts); ++i) {
    const NamedValues in = input(counts[i]);
    expect_matches(prepared->run(in), reference->run(in), "run " + std::to_string(i) + " with " + std::to_string(counts[i]) + " non-zero");
    EXPECT_EQ(prepared->last_run_stats().how, i == 0 ? "memory recorded for planning" : "planned memory") << "run " << i;
  }
}

// NonMaxSuppression likewise: the boxes kept per class are read back
// mid-run, and how many are kept changes with the scores.
TEST(CudaSteadyState, NonMaxSuppressionRunsArePlannedButNotCapturedWhateverTheyKeep) {
  ModelBuilder b(11);
  b.input("boxes", DataType::Float, {int64_t{1}, int64_t{6}, int64_t{4}});
  b.input("scores", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{6}});
  b.initializer(make_int64_tensor("max_out", {1}, {4}));
  b.initializer(make_float_tensor("iou", {1}, {0.5f}));
  b.initializer(make_float_tensor("score", {1}, {0.1f}));
  b.node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou", "score"}, {"kept"}, "nms");
  b.output_untyped("kept");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto reference = make_reference_engine()->prepare(m);
  auto prepared = make_cuda_sim_engine()->prepare(m);
  EXPECT_NE(prepared->placement().find("1 of 1 nodes on the device"), std::string::npos) << prepared->placement();
  auto input = [](float spread) {  // boxes further apart overlap less: more are kept
    Tensor boxes = Tensor::zeros(DataType::Float, {1, 6, 4});
    Tensor scores = Tensor::zeros(DataType::Float, {1, 2, 6});
    for (int i = 0; i < 6; ++i) {
      float* p = boxes.mutable_data<float>() + i * 4;
      p[0] = p[1] = spread * static_cast<float>(i);
      p[2] = p[3] = p[0] + 1.f;
      scores.mutable_data<float>()[i] = 0.9f - 0.1f * static_cast<float>(i);
      scores.mutable_data<float>()[6 + i] = i % 2 ? 0.05f : 0.5f;
    }
    return NamedValues{{"boxes", Value(std::move(boxes))}, {"scores", Value(std::move(scores))}};
  };
  const float spreads[] = {0.f, 0.f, 2.f, 0.1f, 0.4f, 0.f};
  for (size_t i = 0; i < std::size(spreads); ++i) {
    const NamedValues in = input(spreads[i]);
    expect_matches(prepared->run(in), reference->run(in), "run " + std::to_string(i) + " with boxes " + std::to_string(spreads[i]) + " apart");
    EXPECT_EQ(prepared->last_run_stats().how, i == 0 ? "memory recorded for planning" : "planned memory") << "run " << i;
  }
}

TEST(CudaArena, LaterRunsGetThePlannedPlacesAndNeverBytesInUse) {
  auto rt = cuda::make_host_runtime();
  Arena arena(rt);
  // a(1000) b(3000); a released; c(1000); all released by the end.
  auto one_run = [&](bool keep_a) {
    arena.begin_run();
    rt->set_arena(&arena);
    DeviceMemory a = rt->allocate(1000), b = rt->allocate(3000);
    std::memset(a.get(), 0xAA, 1000);
    DeviceMemory kept = keep_a ? a : nullptr;
    a.reset();
    DeviceMemory c = rt->allocate(1000);
    std::memset(c.get(), 0xCC, 1000);
    if (keep_a) {
      EXPECT_EQ(static_cast<unsigned char*>(kept.get())[999], 0xAA) << "c was given a's bytes while a was in use";
    }
    std::vector<const void*> where = {b.get(), c.get()};
    rt->set_arena(nullptr);
    b.reset();
    c.reset();
    kept.reset();
    arena.end_run(true);
    return where;
  };
  one_run(false);
  ASSERT_TRUE(arena.planned());
  EXPECT_EQ(arena.peak_live_bytes(), 4000u);
  EXPECT_EQ(arena.region_bytes(), 1024u + 3072u);  // c takes a's place
  const auto second = one_run(false);
  const auto third = one_run(false);
  EXPECT_EQ(second, third) << "a steady run's addresses are the same every run";
  one_run(true);  // differs from the plan: must not share a's bytes (checked inside)
}

TEST(CudaArena, ACaptureKeepsItsRulesAndReplaysItsCopies) {
  auto rt = cuda::make_host_runtime();
  DeviceMemory buf = rt->allocate_unplanned(3 * sizeof(float));
  std::vector<float> values = {1.f, 2.f, 3.f};
  std::vector<float> big(3000);  // past the inline size: copied in chunks
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
  DeviceMemory big_buf = rt->allocate_unplanned(big.size() * sizeof(float));

  rt->begin_capture();
  rt->copy_in(buf.get(), values.data(), 3 * sizeof(float));
  rt->copy_in(big_buf.get(), big.data(), big.size() * sizeof(float));
  float out = 0;
  EXPECT_THROW(rt->copy_out(&out, buf.get(), sizeof(float)), offload::CaptureUnsupported);
  EXPECT_THROW(rt->synchronize(), offload::CaptureUnsupported);
  EXPECT_THROW(rt->allocate(64), offload::CaptureUnsupported) << "no arena: nowhere planned to allocate from";
  auto work = rt->end_capture();
  ASSERT_TRUE(work);
  values = {9.f, 9.f, 9.f};  // the capture kept the bytes, not the address
  std::fill(big.begin(), big.end(), -1.f);
  EXPECT_TRUE(std::isnan(static_cast<float*>(buf.get())[0])) << "captured work is not done until replayed";
  for (int replay = 0; replay < 2; ++replay) {
    rt->zero(buf.get(), 3 * sizeof(float));
    rt->replay(*work);
    std::vector<float> got(3), got_big(3000);
    rt->copy_out(got.data(), buf.get(), 3 * sizeof(float));
    rt->copy_out(got_big.data(), big_buf.get(), got_big.size() * sizeof(float));
    EXPECT_EQ(got, (std::vector<float>{1.f, 2.f, 3.f}));
    EXPECT_EQ(got_big[0], 0.f);
    EXPECT_EQ(got_big[2999], 2999.f);
  }
}

TEST(CudaArena, InsideACaptureAnAllocationOffThePlanIsRefused) {
  auto rt = cuda::make_host_runtime();
  Arena arena(rt);
  arena.begin_run();
  rt->set_arena(&arena);
  rt->allocate(256).reset();
  rt->set_arena(nullptr);
  arena.end_run(true);
  ASSERT_TRUE(arena.planned());

  arena.begin_run();
  rt->set_arena(&arena);
  rt->begin_capture();
  EXPECT_THROW(rt->allocate(512), offload::CaptureUnsupported) << "another size than the recorded run's";
  rt->abort_capture();
  EXPECT_FALSE(rt->capturing());
  rt->set_arena(nullptr);
  arena.end_run(false);
}

// Two kernels find faults in one run: the first one's is the one reported,
// once; a run with no checking kernel reads nothing back.
TEST(CudaFaultLog, TheFirstFaultOfARunIsReportedOnce) {
  auto rt = cuda::make_host_runtime();
  cuda::FaultLog log(rt);
  EXPECT_FALSE(log.take()) << "no checking kernel has run";
  auto x = rt->allocate_unplanned(4 * sizeof(float));
  auto idx = rt->allocate_unplanned(2 * sizeof(int64_t));
  auto y = rt->allocate_unplanned(2 * sizeof(float));
  const int64_t bad[2] = {1, 7};
  rt->copy_in(idx.get(), bad, sizeof(bad));
  for (const char* node : {"first", "second"}) {
    const cuda::FaultLog::Site site = log.site(node);
    cuda::GatherKernel<uint32_t> k{4, 2, 1, static_cast<const uint32_t*>(x.get()), idx.get(), false,
                                   static_cast<uint32_t*>(y.get()), site.record, site.id};
    cuda::launch(*rt, k, 2);
  }
  const auto f = log.take();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->node, "first");
  EXPECT_EQ(cuda::describe_fault(*f), "index 7 (at 1) is outside [-4, 3]");
  EXPECT_EQ(static_cast<const float*>(y.get())[1], 0.f) << "a bad index gives zero, not a read outside x";
  EXPECT_FALSE(log.take()) << "a fault is reported once";
}
