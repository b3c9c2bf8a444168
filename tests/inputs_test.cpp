// Random inputs that mean what the model means: masks of ones, ids inside the
// table they index, positions in order, --val-range; and inputs that do not
// fit are errors naming the input: an unknown --dim, a dump from another
// model, a value of an unconvertible type.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "model_builder.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/dump.h"
#include "onnxscope/inputs.h"
#include "onnxscope/npy.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace fs = std::filesystem;

namespace {

// A BERT-like front: word, position and token-type embeddings read by Gather,
// plus an additive mask made from attention_mask as transformers exports it.
ModelBuilder encoder_front() {
  ModelBuilder b(17, 8);
  b.input("input_ids", DataType::Int64, {std::string("batch"), std::string("seq")});
  b.input("attention_mask", DataType::Int64, {std::string("batch"), std::string("seq")});
  b.input("token_type_ids", DataType::Int64, {std::string("batch"), std::string("seq")});
  b.input("position_ids", DataType::Int64, {std::string("batch"), std::string("seq")});
  b.input("features", DataType::Float, {std::string("batch"), int64_t{3}});
  b.input("steps", DataType::Int32, {int64_t{4}});
  b.initializer(make_float_tensor("word_embeddings", {30, 2}, std::vector<float>(60, 0.5f)));
  b.initializer(make_float_tensor("token_type_embeddings", {2, 2}, std::vector<float>(4, 0.25f)));
  b.initializer(make_float_tensor("position_embeddings", {6, 2}, std::vector<float>(12, 0.125f)));
  b.node("Gather", {"word_embeddings", "input_ids"}, {"w"}, "word_lookup");
  attr_int(b.node("Cast", {"token_type_ids"}, {"tt32"}, "cast_tt"), "to", 6);
  b.node("Gather", {"token_type_embeddings", "tt32"}, {"t"}, "type_lookup");
  b.node("Gather", {"position_embeddings", "position_ids"}, {"p"}, "position_lookup");
  b.node("Add", {"w", "t"}, {"wt"});
  b.node("Add", {"wt", "p"}, {"y"});
  attr_int(b.node("Cast", {"attention_mask"}, {"mf"}), "to", 1);
  b.node("Identity", {"features"}, {"f"});
  b.node("Identity", {"steps"}, {"s"});
  b.output("y", DataType::Float, {std::string("batch"), std::string("seq"), int64_t{2}});
  b.output("mf", DataType::Float, {std::string("batch"), std::string("seq")});
  b.output("f", DataType::Float, {std::string("batch"), int64_t{3}});
  b.output("s", DataType::Int32, {int64_t{4}});
  return b;
}

const Tensor& input(const NamedValues& in, const std::string& name) {
  for (const auto& [n, v] : in)
    if (n == name) return v.tensor();
  throw std::runtime_error("no input " + name);
}

std::string note_of(const std::vector<InputNote>& notes, const std::string& name) {
  for (const auto& n : notes)
    if (n.input == name) return n.text;
  return {};
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("onnxscope-inputs-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(Inputs, RandomValuesFollowEachInputsRole) {
  auto m = load_model(encoder_front());
  InputSpec spec;
  spec.dims = {{"batch", 3}, {"seq", 8}};
  spec.seed = 4;
  std::vector<InputNote> notes;
  NamedValues in = make_inputs(*m, spec, &notes);
  const Tensor& ids = input(in, "input_ids");
  const Tensor& mask = input(in, "attention_mask");
  const Tensor& types = input(in, "token_type_ids");
  const Tensor& pos = input(in, "position_ids");
  int64_t max_id = 0;
  std::set<int64_t> seen;
  for (uint64_t i = 0; i < ids.element_count(); ++i) {
    const int64_t v = ids.data<int64_t>()[i];
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 30);  // the rows of word_embeddings
    max_id = std::max(max_id, v);
    seen.insert(v);
  }
  EXPECT_GT(max_id, 9);  // not the 0..9 of old
  EXPECT_GT(seen.size(), 5u);
  for (uint64_t i = 0; i < mask.element_count(); ++i) EXPECT_EQ(mask.data<int64_t>()[i], 1);
  for (uint64_t i = 0; i < types.element_count(); ++i) EXPECT_TRUE(types.data<int64_t>()[i] == 0 || types.data<int64_t>()[i] == 1);
  // Positions count along the sequence, capped at the table's last row.
  for (uint64_t i = 0; i < pos.element_count(); ++i) EXPECT_EQ(pos.data<int64_t>()[i], std::min<int64_t>(i % 8, 5));
  // Other integers keep the small default; floats [-1, 1).
  for (uint64_t i = 0; i < 4; ++i) EXPECT_LE(input(in, "steps").data<int32_t>()[i], 9);
  EXPECT_NE(note_of(notes, "input_ids").find("random integers in [0, 29] (the rows of 'word_embeddings' read by Gather 'word_lookup')"),
            std::string::npos)
      << note_of(notes, "input_ids");
  EXPECT_NE(note_of(notes, "token_type_ids").find("[0, 1] (the rows of 'token_type_embeddings' read by Gather 'type_lookup')"),
            std::string::npos)
      << note_of(notes, "token_type_ids");
  EXPECT_NE(note_of(notes, "attention_mask").find("all ones (named like a mask"), std::string::npos);
  EXPECT_NE(note_of(notes, "position_ids").find("0, 1, 2, ... along the last axis"), std::string::npos);
  EXPECT_NE(note_of(notes, "features").find("random values in [-1, 1) (the default)"), std::string::npos);
}

TEST(Inputs, ValueRangesPerInputAndForAll) {
  auto m = load_model(encoder_front());
  InputSpec spec;
  spec.dims = {{"batch", 2}, {"seq", 5}};
  spec.ranges["features"] = {10, 11};
  spec.ranges["input_ids"] = {3, 4};
  spec.range_all = ValueRange{-2, -2};
  std::vector<InputNote> notes;
  NamedValues in = make_inputs(*m, spec, &notes);
  for (uint64_t i = 0; i < 6; ++i) {
    const float f = input(in, "features").data<float>()[i];
    EXPECT_GE(f, 10.0f);
    EXPECT_LT(f, 11.0f);
  }
  for (uint64_t i = 0; i < 10; ++i) {
    const int64_t v = input(in, "input_ids").data<int64_t>()[i];
    EXPECT_TRUE(v == 3 || v == 4) << v;  // integers: both ends included
    EXPECT_EQ(input(in, "attention_mask").data<int64_t>()[i], -2);  // the range overrides the role
  }
  EXPECT_EQ(input(in, "steps").data<int32_t>()[0], -2);
  EXPECT_NE(note_of(notes, "features").find("[10, 11) (--val-range)"), std::string::npos) << note_of(notes, "features");
  spec.ranges["nosuch"] = {0, 1};
  try {
    make_inputs(*m, spec);
    FAIL() << "a range for an input the model lacks must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--val-range names 'nosuch'"), std::string::npos) << e.what();
  }
}

TEST(Inputs, AnUnknownDimIsAnErrorNamingTheKnownOnes) {
  auto m = load_model(encoder_front());
  InputSpec spec;
  spec.dims = {{"batch", 1}, {"seq", 2}, {"sequence", 4}};
  try {
    make_inputs(*m, spec);
    FAIL() << "--dim sequence=4 names no dimension";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no input of the model has a dimension named 'sequence' (its symbolic dimensions: batch, seq)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Inputs, ADumpThatDoesNotFitIsAnErrorNotRandomValues) {
  auto m = load_model(encoder_front());
  InputSpec spec;
  spec.dims = {{"batch", 1}, {"seq", 2}};
  spec.from_dump["image"] = Tensor::zeros(DataType::Float, {1, 3});
  spec.dump_must_cover = true;
  try {
    make_inputs(*m, spec);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the dump holds an input 'image' the model does not have"), std::string::npos) << e.what();
  }
  spec.from_dump.clear();
  spec.from_dump["input_ids"] = Tensor::zeros(DataType::Int64, {1, 2});
  try {
    make_inputs(*m, spec);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'attention_mask' is not among the dump's inputs"), std::string::npos) << e.what();
  }
}

// The command line: the generator of each input is printed, --save-inputs
// writes what ran, an unknown --dim is a usage error (2), and `run
// --inputs-from` a dump of another model is an error naming the input (1).
TEST(Inputs, CommandLine) {
  TempDir dir;
  const std::string model = (dir.path / "front.onnx").string();
  std::ofstream(model, std::ios::binary) << encoder_front().bytes();
  CliRun r = run_cli("run " + model + " --dim batch=2 --dim seq=4 --save-inputs " + (dir.path / "in.npz").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("input 'input_ids': int64[2,4], random integers in [0, 29]"), std::string::npos) << r.err;
  auto saved = read_npz(dir.path / "in.npz");
  ASSERT_EQ(saved.size(), 6u);
  EXPECT_EQ(saved[1].first, "attention_mask");
  EXPECT_EQ(saved[1].second.data<int64_t>()[7], 1);
  CliRun again = run_cli("run " + model + " --inputs " + (dir.path / "in.npz").string());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.substr(0, again.out.find("engine ")), r.out.substr(0, r.out.find("engine ")));

  CliRun dim = run_cli("run " + model + " --dim batch=2 --dim seq=4 --dim nosuch=3");
  EXPECT_EQ(dim.exit_code, 2);
  EXPECT_NE(dim.err.find("--dim: no input of the model has a dimension named 'nosuch' (its symbolic dimensions: batch, seq)"), std::string::npos) << dim.err;

  const std::string sample = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";
  const std::string dump = (dir.path / "cnn.h5").string();
  ASSERT_EQ(run_cli("dump " + sample + " --dim batch=1 --out " + dump).exit_code, 0);
  CliRun other = run_cli("run " + model + " --dim batch=2 --dim seq=4 --inputs-from " + dump);
  EXPECT_EQ(other.exit_code, 1) << other.out;
  EXPECT_NE(other.err.find("the dump holds an input 'image' the model does not have"), std::string::npos) << other.err;

  CliRun range = run_cli("run " + model + " --dim batch=1 --dim seq=2 --val-range 'features:[5,6' ");
  EXPECT_EQ(range.exit_code, 2) << range.err;
  // The form for every input, alone and with a named one (CLI11 had split
  // "[lo,hi]" into two values and refused it).
  CliRun every = run_cli("run " + model + " --dim batch=1 --dim seq=2 --val-range '[0,1]' --val-range 'input_ids:[3,4]'");
  EXPECT_EQ(every.exit_code, 0) << every.err;
  EXPECT_NE(every.err.find("input 'features': float[1,3], random values in [0, 1) (--val-range)"), std::string::npos)
      << every.err;
  EXPECT_NE(every.err.find("random integers in [3, 4] (--val-range)"), std::string::npos) << every.err;
  CliRun tol = run_cli("diff " + sample + " --dim batch=1 --rtol float16:x");
  EXPECT_EQ(tol.exit_code, 2) << tol.err;
}
