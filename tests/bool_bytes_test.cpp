// Bool bytes other than 0 and 1 (a bit flip in a mask initializer made a
// reference Where index its branches with the byte, and segfault): every
// entry point reads them as true, as numpy and ONNX Runtime do, and hands the
// engines 0s and 1s; the kernels that choose by a bool take any nonzero byte
// as true too (a BitCast can make such bytes inside a run). Each engine gives
// numpy's answer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "model_builder.h"
#include "onnxscope/dump.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/npy.h"
#include "onnxscope/plugin.h"
#include "onnxscope/proto_io.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kOdd = std::string("\x00\x07\x01\xff", 4);  // false, true, true, true
const std::vector<float> kExpected = {20, 1, 2, 3};            // Where(mask, [0,1,2,3], 20)

Tensor odd_bools() {
  Tensor t = Tensor::zeros(DataType::Bool, {4});
  std::memcpy(t.mutable_raw(), kOdd.data(), 4);
  return t;
}

Tensor floats4(std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, {4});
  std::memcpy(t.mutable_raw(), v.data(), 16);
  return t;
}

std::vector<float> values(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
}

void add_where_tail(ModelBuilder& b, const std::string& cond) {
  b.initializer(make_float_tensor("xs", {4}, {0, 1, 2, 3}));
  b.initializer(make_float_tensor("twenty", {}, {20}));
  b.node("Where", {cond, "xs", "twenty"}, {"y"}, "where");
  b.output("y", DataType::Float, {int64_t{4}});
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("onnxscope-bool-bytes-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

const char* kEngines[] = {"reference", "cpu", "cuda-sim"};

}  // namespace

// A mask initializer with bytes 7 and 255: a warning naming it, 0/1 in the
// loaded model, and the cpu engine's constant folding (which runs the
// reference Where on it) gives numpy's answer, as do the other engines.
TEST(BoolBytes, InAnInitializer) {
  ModelBuilder b(17, 8);
  b.input("unused", DataType::Float, {int64_t{1}});
  b.initializer(make_tensor_raw("mask", DataType::Bool, {4}, kOdd));
  add_where_tail(b, "mask");
  LoadResult r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_TRUE(has_code(r, "bool-bytes", Severity::Warning)) << dump(r);
  const Initializer* mask = r.model->graph.initializer("mask");
  ASSERT_TRUE(mask);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(mask->value.raw()), 4), std::string("\x00\x01\x01\x01", 4));
  std::shared_ptr<const Model> m(std::move(r.model));
  for (const char* engine : kEngines) {
    NamedValues out = make_engine(engine)->prepare(m)->run({{"unused", Value(Tensor::zeros(DataType::Float, {1}))}});
    EXPECT_EQ(values(out[0].second), kExpected) << engine;
  }
}

// A Constant node's value attribute: the same.
TEST(BoolBytes, InAConstantAttribute) {
  ModelBuilder b(17, 8);
  b.input("unused", DataType::Float, {int64_t{1}});
  attr_tensor(b.node("Constant", {}, {"mask"}, "const_mask"), "value", make_tensor_raw("", DataType::Bool, {4}, kOdd));
  add_where_tail(b, "mask");
  LoadResult r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_TRUE(has_code(r, "bool-bytes", Severity::Warning)) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  for (const char* engine : kEngines) {
    NamedValues out = make_engine(engine)->prepare(m)->run({{"unused", Value(Tensor::zeros(DataType::Float, {1}))}});
    EXPECT_EQ(values(out[0].second), kExpected) << engine;
  }
}

// Inputs from .npz, .npy and .pb files, and from a dump.
TEST(BoolBytes, InInputFilesAndDumps) {
  TempDir dir;
  ModelBuilder b(17, 8);
  b.input("cond", DataType::Bool, {int64_t{4}});
  add_where_tail(b, "cond");
  auto m = std::shared_ptr<const Model>(load_model(b));
  write_npz(dir.path / "in.npz", {{"cond", Value(odd_bools())}});
  {
    auto arrays = read_npz(dir.path / "in.npz");
    ASSERT_EQ(arrays.size(), 1u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(arrays[0].second.raw()), 4), std::string("\x00\x01\x01\x01", 4));
  }
  std::ofstream(dir.path / "cond.pb", std::ios::binary) << tensor_to_proto_bytes(odd_bools(), "cond");
  {
    DumpWriter w(dir.path / "d.h5", DumpHeader{});
    w.write_input("cond", Value(odd_bools()));
    w.close({});
  }
  std::vector<InputSpec> specs(3);
  specs[0].archives = {dir.path / "in.npz"};
  specs[1].files["cond"] = dir.path / "cond.pb";
  for (auto& e : read_dump(dir.path / "d.h5").inputs) {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(e.data->raw()), 4), std::string("\x00\x01\x01\x01", 4));
    specs[2].from_dump[e.name] = *e.data;
  }
  for (const auto& spec : specs) {
    NamedValues in = make_inputs(*m, spec);
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(in[0].second.tensor().raw()), 4), std::string("\x00\x01\x01\x01", 4));
    for (const char* engine : kEngines) EXPECT_EQ(values(make_engine(engine)->prepare(m)->run(in)[0].second), kExpected) << engine;
  }
  // A given tensor that still holds odd bytes (an API user's own): the kernels read them as true.
  for (const char* engine : kEngines)
    EXPECT_EQ(values(make_engine(engine)->prepare(m)->run({{"cond", Value(odd_bools())}})[0].second), kExpected) << engine;
}

// BitCast keeps bytes (uint8 7 is a bool byte 7, as numpy's view): Where, Not
// and a comparison downstream read it as true on every engine.
TEST(BoolBytes, MadeInsideARunByBitCast) {
  ModelBuilder b(26, 11);
  b.input("u", DataType::Uint8, {int64_t{4}});
  attr_int(b.node("BitCast", {"u"}, {"mask"}, "bitcast"), "to", static_cast<int64_t>(DataType::Bool));
  b.node("Not", {"mask"}, {"not_mask"}, "not");
  b.output("not_mask", DataType::Bool, {int64_t{4}});
  b.initializer(make_tensor_raw("trues", DataType::Bool, {4}, std::string("\x01\x01\x01\x01", 4)));
  b.node("Equal", {"mask", "trues"}, {"eq"}, "equal");
  b.output("eq", DataType::Bool, {int64_t{4}});
  add_where_tail(b, "mask");
  auto m = std::shared_ptr<const Model>(load_model(b));
  Tensor u = Tensor::zeros(DataType::Uint8, {4});
  std::memcpy(u.mutable_raw(), kOdd.data(), 4);
  for (const char* engine : kEngines) {
    NamedValues out = make_engine(engine)->prepare(m)->run({{"u", Value(u)}});
    ASSERT_EQ(out.size(), 3u);
    for (int k = 0; k < 2; ++k) {
      const Tensor& t = out[static_cast<size_t>(k)].second.tensor();
      const std::string want = k == 0 ? std::string("\x01\x00\x00\x00", 4) : std::string("\x00\x01\x01\x01", 4);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.raw()), 4), want) << engine << " output " << k;
    }
    EXPECT_EQ(values(out[2].second), kExpected) << engine;
  }
}

// A plugin that writes 7 and 255 into a bool output: the run sees 0/1.
TEST(BoolBytes, FromAPluginKernel) {
  PluginSet set;
  set.load(ONNXSCOPE_PLUGIN_ODD_BOOL);
  ModelBuilder b(17, 8);
  b.opset("com.test", 1);
  b.input("x", DataType::Float, {int64_t{4}});
  b.node("OddBool", {"x"}, {"mask"}, "odd", "com.test");
  add_where_tail(b, "mask");
  b.output("mask", DataType::Bool, {int64_t{4}});
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = b.load(o);
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  for (const char* engine : {"reference", "cpu"}) {
    EngineSettings s;
    s.extra_kernels = &set.kernels();
    NamedValues out = make_engine(engine, s)->prepare(m)->run({{"x", Value(floats4({0, 2, 5, -1}))}});
    EXPECT_EQ(values(out[0].second), kExpected) << engine;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out[1].second.tensor().raw()), 4), std::string("\x00\x01\x01\x01", 4))
        << engine;
  }
}

// The command line: inspect names the oddity as a warning and the model is valid.
TEST(BoolBytes, InspectWarnsAndRunWorks) {
  TempDir dir;
  ModelBuilder b(17, 8);
  b.input("unused", DataType::Float, {int64_t{1}});
  b.initializer(make_tensor_raw("attention_bias_mask", DataType::Bool, {4}, kOdd));
  add_where_tail(b, "attention_bias_mask");
  const std::string model = (dir.path / "odd.onnx").string();
  std::ofstream(model, std::ios::binary) << b.bytes();
  CliRun i = run_cli("inspect " + model);
  EXPECT_EQ(i.exit_code, 0) << i.out;
  EXPECT_NE(i.out.find("warning[bool-bytes]"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("2 of 4 bool bytes of tensor 'attention_bias_mask' are neither 0 nor 1"), std::string::npos) << i.out;
  for (const char* engine : kEngines) {
    CliRun r = run_cli(std::string("run ") + model + " --engine " + engine);
    EXPECT_EQ(r.exit_code, 0) << engine << r.err;
    EXPECT_NE(r.out.find("y: float[4]  [20, 1, 2, 3]"), std::string::npos) << engine << r.out;
  }
}

// Three mutants of a real export (transformers Llama by the torch.export-based
// exporter, whose causal mask is a bool initializer [1,1,199,199]) made by the
// mutation sweep's seeded mutations (scripts/mutate_models.py --seed 1,
// copies 36, 43 and 92): each holds bool bytes other than 0/1 in a mask. They
// load with the warning and end cleanly on every engine (fuzz_replay_model
// replays them in process too).
TEST(BoolBytes, MutatedRealExportsFromTheSweep) {
  const std::string dir = ONNXSCOPE_SOURCE_DIR "/tests/fuzz/regressions/fuzz_model/";
  for (const char* copy : {"36", "43", "92"}) {
    const std::string f = dir + "bool-mask-llama_dynamo_mask199-seed1-copy" + copy + ".onnx";
    CliRun i = run_cli("inspect " + f);
    EXPECT_FALSE(i.signaled);
    EXPECT_EQ(i.exit_code, 0) << f << i.err;
    EXPECT_NE(i.out.find("warning[bool-bytes]"), std::string::npos) << f;
    for (const char* engine : kEngines) {
      CliRun r = run_cli("run " + f + " --engine " + engine + " --timeout 60");
      EXPECT_FALSE(r.signaled) << f << " " << engine;
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << f << " " << engine << ": " << r.exit_code << r.err;
      if (std::string(copy) != "36") {  // 36 also flipped an index: a clean error
        EXPECT_EQ(r.exit_code, 0) << f << " " << engine << r.err;
      }
    }
  }
}
