// The comparison rules of diff and compare (docs/dump-format.md, "How two
// runs are compared"): non-finite values are differences, the worst element
// is the largest violation, types are compared in double under the looser
// tolerance, tolerances by type and by tensor; and the command line that
// reports them: text, JSON, Markdown and exit codes, on a float16 model whose
// reduction overflows in one runtime only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fp16_overflow.h"
#include "model_builder.h"
#include "onnxscope/diff.h"
#include "onnxscope/diff_report.h"
#include "onnxscope/dump.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace fs = std::filesystem;

namespace {

Tensor floats(Shape s, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

Tensor halves(Shape s, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float16, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = float_to_half(v[i]);
    std::memcpy(t.mutable_raw() + 2 * i, &h, 2);
  }
  return t;
}

Tensor int64s(Shape s, std::vector<int64_t> v) {
  Tensor t = Tensor::zeros(DataType::Int64, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<int64_t>()[i] = v[i];
  return t;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("onnxscope-diff-rules-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

const nlohmann::json& node_named(const nlohmann::json& doc, const std::string& name) {
  for (const auto& n : doc["nodes"])
    if (n["node"] == name) return n;
  static const nlohmann::json none;
  ADD_FAILURE() << "no node " << name;
  return none;
}

}  // namespace

TEST(DiffRules, NonFiniteValuesAreDifferencesWhateverTheTolerance) {
  DiffTolerance loose;
  loose.rtol = 1e6;
  loose.atol = 1e6;
  // A: inf, finite, -inf, NaN, 2 ; B: finite, inf, inf, 3, NaN.
  TensorDiff d = diff_tensors(floats({5}, {INFINITY, 1, -INFINITY, NAN, 2}), floats({5}, {7, INFINITY, INFINITY, 3, NAN}), loose);
  EXPECT_FALSE(d.within());
  EXPECT_EQ(d.out_of_tolerance, 5u);
  EXPECT_EQ(d.inf_only_a.count, 1u);
  EXPECT_EQ(d.inf_only_a.first, 0u);
  EXPECT_EQ(d.inf_only_b.count, 1u);
  EXPECT_EQ(d.inf_only_b.first, 1u);
  EXPECT_EQ(d.inf_opposite.count, 1u);
  EXPECT_EQ(d.inf_opposite.first, 2u);
  EXPECT_EQ(d.nan_only_a.count, 1u);
  EXPECT_EQ(d.nan_only_a.first, 3u);
  EXPECT_EQ(d.nan_only_b.count, 1u);
  EXPECT_EQ(d.nan_only_b.first, 4u);
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_EQ(d.worst_index, 0u);  // the first of the infinite violations
  EXPECT_EQ(nonfinite_mismatch_text(d),
            "A holds 1 inf where B is finite (first at flat index 0); B holds 1 inf where A is finite (first at flat "
            "index 1); A holds 1 NaN where B holds a number (first at flat index 3); B holds 1 NaN where A holds a "
            "number (first at flat index 4); 1 infinity of opposite sign in A and B (first at flat index 2)");
  // The same infinity and NaN against NaN agree, as upstream's comparison has it; the counts still show.
  DiffTolerance exact;
  exact.rtol = exact.atol = 0;
  TensorDiff same = diff_tensors(floats({3}, {INFINITY, NAN, -INFINITY}), floats({3}, {INFINITY, NAN, -INFINITY}), exact);
  EXPECT_TRUE(same.within());
  EXPECT_EQ(same.max_abs, 0);
  EXPECT_EQ(same.inf_a, 2u);
  EXPECT_EQ(nonfinite_counts_text(same), "NaN A=1 B=1, inf A=2 B=2");
  EXPECT_EQ(nonfinite_mismatch_text(same), "");
}

TEST(DiffRules, MaxRelIsOverNonZeroBaselinesAndIntegersCompareExactly) {
  DiffTolerance tol;
  // A zero baseline has no relative error: 1e+30 was printed for it before.
  TensorDiff ints = diff_tensors(int64s({3}, {0, 4, 10}), int64s({3}, {1, 4, 11}), tol);
  EXPECT_DOUBLE_EQ(ints.max_rel, 0.1);
  EXPECT_DOUBLE_EQ(ints.max_abs, 1);
  // int64 values past 2^53 that double would round together.
  const int64_t big = (int64_t{1} << 60) + 1;
  TensorDiff wide = diff_tensors(int64s({1}, {big}), int64s({1}, {big - 1}), DiffTolerance{0, 0});
  EXPECT_FALSE(wide.within());
  EXPECT_DOUBLE_EQ(wide.max_abs, 1);
  TensorDiff zero_base = diff_tensors(floats({2}, {0, 2}), floats({2}, {0.5f, 2}), tol);
  EXPECT_DOUBLE_EQ(zero_base.max_rel, 0);
}

TEST(DiffRules, DifferentFloatTypesAreComparedInDoubleUnderTheLooserTolerance) {
  DiffTolerance tol = default_tolerance();
  // float32 A against float16 B: rounding to half is within float16's tolerance.
  TensorDiff d = diff_tensors(floats({3}, {1.0001f, -2.5f, 1000.3f}), halves({3}, {1.0001f, -2.5f, 1000.3f}), tol);
  EXPECT_TRUE(d.comparable) << d.problem;
  EXPECT_TRUE(d.types_differ());
  EXPECT_TRUE(d.within()) << d.max_abs;
  EXPECT_DOUBLE_EQ(d.rule.rtol, 4e-3);
  TensorDiff off = diff_tensors(floats({1}, {1.0f}), halves({1}, {1.5f}), tol);
  EXPECT_FALSE(off.within());
  EXPECT_EQ(format_value(off.worst_b, off.dtype_b), "1.5");
  // A float against an integer, or a string, stays incomparable.
  TensorDiff mixed = diff_tensors(floats({1}, {1}), int64s({1}, {1}), tol);
  EXPECT_FALSE(mixed.comparable);
  EXPECT_NE(mixed.problem.find("dtype int64 vs float"), std::string::npos) << mixed.problem;
  // ULPs across types are counted on the coarser grid.
  DiffTolerance ulp;
  ulp.max_ulp = 1;
  const float next_half = half_to_float(static_cast<uint16_t>(float_to_half(1.0f) + 1));
  EXPECT_TRUE(diff_tensors(floats({1}, {1.0f}), halves({1}, {next_half}), ulp).within());
}

TEST(DiffRules, ToleranceRulesByTensorThenTypeThenGlobal) {
  DiffTolerance t;
  t.rtol = 1e-4;
  t.atol = 1e-5;
  t.by_dtype[DataType::Float16] = {1e-2, 1e-3};
  t.by_tensor["logits"] = {0.5, 0.25};
  EXPECT_DOUBLE_EQ(t.rule_for("x", DataType::Float, DataType::Float).rtol, 1e-4);
  EXPECT_DOUBLE_EQ(t.rule_for("x", DataType::Float16, DataType::Float16).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(t.rule_for("x", DataType::Float, DataType::Float16).atol, 1e-3);  // the looser type's
  EXPECT_DOUBLE_EQ(t.rule_for("logits", DataType::Float16, DataType::Float16).rtol, 0.5);
  TensorDiff d = diff_tensors(floats({1}, {1}), floats({1}, {1.2f}), t, "logits");
  EXPECT_TRUE(d.within());
  EXPECT_FALSE(diff_tensors(floats({1}, {1}), floats({1}, {1.2f}), t, "other").within());
  EXPECT_EQ(t.describe(), "rtol 0.0001, atol 1e-05; float16: rtol 0.01, atol 0.001; 'logits': rtol 0.5, atol 0.25");
}

TEST(DiffRules, NumbersAreWrittenWithEnoughDigitsForTheirType) {
  EXPECT_EQ(format_value(5.94000006f, DataType::Float), "5.94000006");
  EXPECT_EQ(format_value(0.1, DataType::Double), "0.10000000000000001");
  EXPECT_EQ(format_value(INFINITY, DataType::Float16), "inf");
  EXPECT_EQ(format_value(-INFINITY, DataType::Float), "-inf");
  EXPECT_EQ(format_value(NAN, DataType::Float), "nan");
  EXPECT_EQ(format_value(9007199254740993.0, DataType::Int64), "9007199254740992");
}

// The case: the float16 mean overflows in one runtime. Whichever side
// holds the inf, diff and compare name node_mean as the first divergence with
// the inf counts, in text, JSON and Markdown, and exit 3.
TEST(DiffRules, Fp16OverflowOnOneSideIsTheFirstDivergenceInDiffAndCompare) {
  TempDir dir;
  const Fp16Overflow f = write_fp16_overflow(dir.path);
  const std::string model = f.model.string();

  CliRun text = run_cli("diff " + model + " --engines reference,dump:" + f.overflow_dump.string());
  EXPECT_FALSE(text.signaled);
  EXPECT_EQ(text.exit_code, 3) << text.out << text.err;
  EXPECT_NE(text.out.find("first divergence: node 'node_mean' (ReduceMean #1); output 'm': B holds 1 inf where A is "
                          "finite (first at flat index 0)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("DIVERGES  inf A=0 B=1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("first non-finite value: node 'node_mean'"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("A=500 B=inf"), std::string::npos) << text.out;

  // The baseline holding the inf: the case that read "ok" before.
  const std::string md = (dir.path / "report.md").string();
  CliRun rev = run_cli("diff " + model + " --engines dump:" + f.overflow_dump.string() + ",reference --json --report " + md);
  EXPECT_EQ(rev.exit_code, 3) << rev.err;
  auto doc = nlohmann::json::parse(rev.out);
  EXPECT_EQ(doc["first_divergence"], "node_mean");
  EXPECT_EQ(doc["first_nonfinite"], "node_mean");
  const auto& mean = node_named(doc, "node_mean");
  EXPECT_EQ(mean["status"], "DIVERGES");
  EXPECT_EQ(mean["outputs"][0]["max_abs"], "inf");
  EXPECT_EQ(mean["outputs"][0]["inf_a"], 1);
  EXPECT_EQ(mean["outputs"][0]["nonfinite_mismatch"]["inf_only_a"]["count"], 1);
  EXPECT_EQ(mean["outputs"][0]["worst_a"], "inf");
  EXPECT_EQ(mean["outputs"][0]["worst_b"], 500.0);
  EXPECT_EQ(node_named(doc, "node_scale")["status"], "ok");
  EXPECT_EQ(node_named(doc, "node_sub")["outputs"][0]["nonfinite_mismatch"]["nan_only_a"]["count"], 1);
  std::ifstream in(md);
  const std::string report((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(report.find("Node **node_mean** (ReduceMean, #1)"), std::string::npos) << report;
  EXPECT_NE(report.find("A holds 1 inf where B is finite"), std::string::npos) << report;
  EXPECT_NE(report.find("| 1 | node_mean | ReduceMean | inf |"), std::string::npos) << report;

  // compare: the same in either order.
  CliRun cmp = run_cli("compare " + f.finite_dump.string() + " " + f.overflow_dump.string() + " --model " + model);
  EXPECT_EQ(cmp.exit_code, 3) << cmp.out << cmp.err;
  EXPECT_NE(cmp.out.find("first divergence: tensor 'm' (node node_mean); output 'm': B holds 1 inf where A is finite"),
            std::string::npos)
      << cmp.out;
  EXPECT_NE(cmp.out.find("DIVERGES    m  (node_mean)  max|A-B| inf  inf A=0 B=1"), std::string::npos) << cmp.out;
  CliRun cmp_json = run_cli("compare " + f.overflow_dump.string() + " " + f.finite_dump.string() + " --json");
  EXPECT_EQ(cmp_json.exit_code, 3) << cmp_json.err;
  auto cj = nlohmann::json::parse(cmp_json.out);
  EXPECT_EQ(cj["first_divergence"], "m");
  EXPECT_EQ(cj["first_divergence_node"], "node_mean");
  EXPECT_EQ(cj["first_nonfinite"], "m");
  EXPECT_EQ(cj["compared"], 4);

  // The same dump on both sides agrees, non-finite values and all: exit 0, the counts still shown.
  CliRun same = run_cli("compare " + f.overflow_dump.string() + " " + f.overflow_dump.string());
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_NE(same.out.find("ok          m  (node_mean)  max|A-B| 0  inf A=1 B=1"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("first non-finite value: tensor 'm'"), std::string::npos) << same.out;

  // The float32 inputs feed the float16 model, converted with a note.
  CliRun run = run_cli("run " + model + " --inputs " + f.inputs.string() + " --validate");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("float converted to float16"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("no NaN or Inf in any node's outputs"), std::string::npos) << run.out;
}

// diff --fail-fast ends B's run at the first divergent node; compare --fail-fast
// at the first divergent tensor.
TEST(DiffRules, FailFastStopsAtTheFirstDivergence) {
  TempDir dir;
  const Fp16Overflow f = write_fp16_overflow(dir.path);
  CliRun r = run_cli("diff " + f.model.string() + " --engines dump:" + f.overflow_dump.string() + ",reference --fail-fast --json");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["stopped_early"].get<bool>());
  ASSERT_EQ(doc["nodes"].size(), 2u);  // node_scale, node_mean
  EXPECT_EQ(doc["first_divergence"], "node_mean");
  CliRun c = run_cli("compare " + f.finite_dump.string() + " " + f.overflow_dump.string() + " --fail-fast");
  EXPECT_EQ(c.exit_code, 3);
  EXPECT_NE(c.out.find("stopped at the first divergence"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("node_add"), std::string::npos) << c.out;

  // Two engines: B's run is stopped at the first node out of a zero tolerance.
  const std::string sample = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";
  CliRun e = run_cli("diff " + sample + " --engines reference,cpu --dim batch=2 --rtol 0 --atol 0 --fail-fast --json --no-blame");
  ASSERT_EQ(e.exit_code, 3) << e.err;
  auto ed = nlohmann::json::parse(e.out);
  EXPECT_EQ(ed["nodes"].size(), ed["nodes"].back()["index"].get<size_t>() + 1);
  EXPECT_EQ(ed["first_divergence"], ed["nodes"].back()["node"]);
  EXPECT_LT(ed["nodes"].size(), 13u);
  // Without --fail-fast every node is compared; with a tolerance met, exit 0.
  CliRun all = run_cli("diff " + sample + " --engines reference,cpu --dim batch=2 --rtol 0 --atol 0 --json --no-blame");
  EXPECT_EQ(nlohmann::json::parse(all.out)["nodes"].size(), 13u);
  EXPECT_EQ(run_cli("diff " + sample + " --engines reference,cpu --dim batch=2 --no-blame").exit_code, 0);
}

// The worst element is the largest violation, not the largest |A-B|: a large
// value a little off is within the relative tolerance, a small one is not.
TEST(DiffRules, WorstElementIsTheLargestViolation) {
  DiffTolerance tol;  // rtol 1e-4, atol 1e-5
  // Element 0: |A-B| 3e-4 against 5.94 (allowed 6.04e-4): within. Element 1:
  // |A-B| 1.2e-5 against 0.000991 (allowed 1.01e-5): out.
  TensorDiff d = diff_tensors(floats({2}, {5.94f, 0.000991f}), floats({2}, {5.9403f, 0.001003f}), tol);
  EXPECT_EQ(d.out_of_tolerance, 1u);
  EXPECT_EQ(d.worst_index, 1u);
  EXPECT_GT(d.worst_violation, 0);
  EXPECT_GT(d.max_abs, 2.9e-4);  // the largest |A-B| is element 0's
}

// Tensors longer than the diff's decode chunk: counts, the first non-finite
// mismatch and the worst element are found past the first chunk, and int64
// values past 2^53 still compare exactly there.
TEST(DiffRules, LongTensorsAreComparedElementByElementPastTheFirstChunk) {
  std::vector<float> a(10000), b(10000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = b[i] = static_cast<float>(i % 97) * 0.5f;
  b[4100] = a[4100] + 3.0f;  // the worst
  b[2500] = a[2500] + 0.5f;
  a[9999] = INFINITY;        // one-sided Inf in the last chunk
  b[6000] = NAN;
  TensorDiff d = diff_tensors(floats({100, 100}, a), floats({100, 100}, b), DiffTolerance{});
  EXPECT_EQ(d.elements, 10000u);
  EXPECT_EQ(d.out_of_tolerance, 4u);
  EXPECT_EQ(d.nan_b, 1u);
  EXPECT_EQ(d.nan_only_b.count, 1u);
  EXPECT_EQ(d.nan_only_b.first, 6000u);
  EXPECT_EQ(d.inf_only_a.count, 1u);
  EXPECT_EQ(d.inf_only_a.first, 9999u);
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_TRUE(std::isinf(d.worst_violation));

  std::vector<int64_t> x(5000, int64_t{1} << 60), y = x;
  y[4999] += 1;  // one apart, past 2^53: equal in double
  TensorDiff ints = diff_tensors(int64s({5000}, x), int64s({5000}, y), DiffTolerance{0, 0});
  EXPECT_EQ(ints.out_of_tolerance, 1u);
  EXPECT_EQ(ints.worst_index, 4999u);
  EXPECT_EQ(ints.max_abs, 1.0);
}

// Every node row, the first-divergence line and the status column say the
// same in the GUI as in the report (diff_report.h's helpers).
TEST(DiffRules, ReportPiecesAgree) {
  TempDir dir;
  const Fp16Overflow f = write_fp16_overflow(dir.path);
  LoadResult lr = load_model_file(f.model);
  ASSERT_TRUE(lr.ok());
  std::shared_ptr<const Model> m(std::move(lr.model));
  DumpFile dump = read_dump(f.overflow_dump);
  NamedValues inputs;
  for (const auto& e : dump.inputs) inputs.emplace_back(e.name, *e.data);
  Capture a = capture_run(*make_reference_engine(), m, inputs);
  Capture b = capture_from_dump(dump, m.get(), "dump");
  DiffReport r = diff_captures(*m, a, b, default_tolerance());
  ASSERT_TRUE(r.first_divergence);
  EXPECT_EQ(*r.first_divergence, 1u);
  EXPECT_EQ(diff_status_text(r.nodes[1]), "DIVERGES");
  EXPECT_EQ(diff_node_note(r.nodes[1]), "inf A=0 B=1");
  EXPECT_EQ(diff_status_text(r.nodes[0]), "ok");
  EXPECT_NE(diff_divergence_detail(r.nodes[1]).find("B holds 1 inf where A is finite"), std::string::npos);
  EXPECT_EQ(r.diverging(), 3u);
  EXPECT_EQ(markdown_cell("max |diff| a\nb"), "max \\|diff\\| a b");
}

// An fp16 dump against an fp32 dump of the same network: compared in double
// (not "DIVERGES max|A-B| 0" on every tensor), within float16's tolerance,
// and the report says the types differ.
TEST(DiffRules, DumpsOfTwoPrecisionsCompareByValue) {
  TempDir dir;
  const Fp16Overflow f = write_fp16_overflow(dir.path);
  const fs::path f32 = dir.path / "fp32.h5";
  {
    DumpWriter w(f32, DumpHeader{});
    std::vector<float> x(256, 500.0f);
    w.write_input("x", Value(floats({1, 256}, x)));
    w.write_tensor("xs", Value(floats({1, 256}, x)), "node_scale", "Mul", 0);
    w.write_tensor("m", Value(floats({1, 1}, {500.1f})), "node_mean", "ReduceMean", 1);
    w.write_tensor("z", Value(floats({1, 1}, {0})), "node_sub", "Sub", 2);
    w.write_tensor("y", Value(floats({1, 1}, {500.1f})), "node_add", "Add", 3);
    w.close({"y"});
  }
  CliRun r = run_cli("compare " + f32.string() + " " + f.finite_dump.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ok          m  (node_mean)  max|A-B| 0.1  B float16, A float"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 compared tensor(s) differ in element type"), std::string::npos) << r.out;
  // Held to float32's tolerance for every type, the 0.1 is a divergence.
  CliRun strict = run_cli("compare " + f32.string() + " " + f.finite_dump.string() + " --rtol 1e-6 --json");
  EXPECT_EQ(strict.exit_code, 3);
  EXPECT_EQ(nlohmann::json::parse(strict.out)["first_divergence"], "m");
}

// run names NaN and Inf in its outputs; --validate names the node that made
// the first one and exits 3.
TEST(DiffRules, RunSaysWhereNonFiniteValuesAppear) {
  TempDir dir;
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{5}});
  b.node("Abs", {"x"}, {"ax"}, "abs");
  b.node("Neg", {"ax"}, {"n"}, "neg");
  b.node("Log", {"n"}, {"l"}, "log");
  b.node("Identity", {"l"}, {"y"}, "out");
  b.output("y", DataType::Float, {int64_t{3}, int64_t{5}});
  const std::string model = (dir.path / "nan.onnx").string();
  std::ofstream(model, std::ios::binary) << b.bytes();
  CliRun r = run_cli("run " + model);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("(15 NaN of 15 elements)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: output 'y' holds 15 NaN of 15 elements"), std::string::npos) << r.err;
  CliRun v = run_cli("run " + model + " --validate");
  EXPECT_EQ(v.exit_code, 3);
  EXPECT_NE(v.out.find("first non-finite value: node 'log' (Log, graph main, node 2, kernel reference) made output 'l' "
                       "hold 15 NaN of 15"),
            std::string::npos)
      << v.out;
}

// --check-finite stops at the first node whose output holds NaN or Inf,
// names it, the output and every input that fed it (finite or not), and
// exits 1, on both engines; dump --check-finite keeps the dump up to it.
TEST(DiffRules, CheckFiniteStopsAtTheFirstNodeAndNamesItsInputs) {
  TempDir dir;
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{5}});
  b.initializer(make_float_tensor("huge", {}, {std::numeric_limits<float>::infinity()}));
  b.node("Abs", {"x"}, {"ax"}, "abs");
  b.node("Neg", {"ax"}, {"n"}, "neg");
  b.node("Log", {"n"}, {"l"}, "log");
  b.node("Relu", {"l"}, {"r"}, "relu");  // keeps the NaN (as onnxruntime and the spec's Max)
  b.node("Identity", {"r"}, {"y"}, "out");
  b.output("y", DataType::Float, {int64_t{3}, int64_t{5}});
  const std::string model = (dir.path / "nan.onnx").string();
  std::ofstream(model, std::ios::binary) << b.bytes();
  for (const char* engine : {"reference", "cpu"}) {
    SCOPED_TRACE(engine);
    CliRun c = run_cli("run " + model + " --engine " + engine + " --check-finite");
    EXPECT_EQ(c.exit_code, 1) << c.out << c.err;
    EXPECT_NE(c.out.find("first non-finite value: node 'log' (Log, graph main, node 2"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("made output 'l' hold 15 NaN of 15"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("0 'n' float[3,5]: finite, in [-"), std::string::npos) << c.out;
    EXPECT_EQ(c.out.find("y: float"), std::string::npos) << "the run went on past it: " << c.out;
  }
  // A node fed a value that is not finite: the input is marked.
  ModelBuilder f(17, 8);
  f.input("x", DataType::Float, {int64_t{2}});
  f.initializer(make_float_tensor("huge", {}, {std::numeric_limits<float>::infinity()}));
  f.node("Abs", {"x"}, {"ax"}, "abs");
  f.node("Mul", {"ax", "huge"}, {"m"}, "scale");
  f.output_untyped("m");
  const std::string fed = (dir.path / "fed.onnx").string();
  std::ofstream(fed, std::ios::binary) << f.bytes();
  CliRun c = run_cli("run " + fed + " --check-finite");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("node 'scale' (Mul"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("1 'huge' float[]: 1 +Inf of 1  <- not finite"), std::string::npos) << c.out;
  // Nothing to find: the run goes on, says so, exits 0.
  ModelBuilder g(17, 8);
  g.input("x", DataType::Float, {int64_t{2}});
  g.node("Abs", {"x"}, {"y"}, "abs");
  g.output_untyped("y");
  const std::string clean = (dir.path / "clean.onnx").string();
  std::ofstream(clean, std::ios::binary) << g.bytes();
  CliRun none = run_cli("run " + clean + " --check-finite");
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("no NaN or Inf in any node's outputs"), std::string::npos) << none.out;
  // dump: stops there, and the dump holds what came before.
  const std::string h5 = (dir.path / "nan.h5").string();
  CliRun d = run_cli("dump " + model + " --out " + h5 + " --check-finite");
  EXPECT_EQ(d.exit_code, 1) << d.out << d.err;
  EXPECT_NE(d.out.find("(up to the first non-finite value)"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("node 'log' (Log"), std::string::npos) << d.out;
  DumpFile df = read_dump(h5);
  std::vector<std::string> names;
  for (const auto& t : df.tensors) names.push_back(t.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "n"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "r"), names.end()) << "written past the stop";
}

// Tensors with quantization parameters are compared in steps: a QDQ pair's
// uint8 tensor counts whole steps, its dequantized output steps of its
// scale. Every report says how many steps apart they are; --quant-steps N
// lets up to N pass ("within 1 quantization step"), and N + 1 still differ.
TEST(DiffRules, QuantizedTensorsAreComparedInQuantizationSteps) {
  ModelBuilder b(13);
  b.input("x", DataType::Float, {int64_t{4}});
  b.initializer(make_float_tensor("scale", {}, {0.1f}));
  const uint8_t zp = 128;
  b.initializer(make_tensor_raw("zp", DataType::Uint8, {}, std::string(reinterpret_cast<const char*>(&zp), 1)));
  b.initializer(make_float_tensor("per_axis", {4}, {0.1f, 0.2f, 0.3f, 0.4f}));
  b.node("QuantizeLinear", {"x", "scale", "zp"}, {"q"}, "quant");
  b.node("DequantizeLinear", {"q", "scale", "zp"}, {"y"}, "dequant");
  b.node("DequantizeLinear", {"q", "per_axis"}, {"z"}, "per_axis_dequant");  // not one scale: left out
  b.output_untyped("y");
  b.output_untyped("z");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  const std::map<std::string, double> steps = quantization_steps(*r.model);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_DOUBLE_EQ(steps.at("q"), 1);
  EXPECT_DOUBLE_EQ(steps.at("y"), static_cast<double>(0.1f));

  auto u8 = [](std::vector<uint8_t> v) {
    Tensor t = Tensor::zeros(DataType::Uint8, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.mutable_data<uint8_t>()[i] = v[i];
    return t;
  };
  auto dq = [](const Tensor& q) {  // (q - 128) * 0.1 in float, as DequantizeLinear computes it
    std::vector<float> v;
    for (uint64_t i = 0; i < q.element_count(); ++i) v.push_back((static_cast<float>(q.data<uint8_t>()[i]) - 128.0f) * 0.1f);
    return floats({static_cast<int64_t>(v.size())}, v);
  };
  Capture a, b1, b2;
  a.source = "A";
  b1.source = b2.source = "B";
  const Tensor qa = u8({120, 128, 140, 200}), q1 = u8({120, 129, 140, 199}), q2 = u8({120, 130, 140, 200});
  a.values = {{"q", Value(qa)}, {"y", Value(dq(qa))}};
  b1.values = {{"q", Value(q1)}, {"y", Value(dq(q1))}};
  b2.values = {{"q", Value(q2)}, {"y", Value(dq(q2))}};
  DiffTolerance tol = default_tolerance();
  tol.quant_step = steps;
  // Without --quant-steps: one step is a difference, and said to be one step.
  DiffReport plain = diff_captures(*r.model, a, b1, tol);
  ASSERT_TRUE(plain.first_divergence.has_value());
  EXPECT_EQ(plain.nodes[0].node, "quant");
  EXPECT_NE(diff_node_note(plain.nodes[0]).find("1 quantization step"), std::string::npos) << diff_node_note(plain.nodes[0]);
  EXPECT_EQ(diff_node_note(plain.nodes[0]).find("within"), std::string::npos);
  EXPECT_NE(diff_node_note(plain.nodes[1]).find("1 quantization step of 0.1"), std::string::npos)
      << diff_node_note(plain.nodes[1]);
  // --quant-steps 1: within, and said so.
  tol.quant_steps = 1;
  DiffReport one = diff_captures(*r.model, a, b1, tol);
  EXPECT_FALSE(one.first_divergence.has_value());
  EXPECT_NE(diff_node_note(one.nodes[0]).find("within 1 quantization step"), std::string::npos)
      << diff_node_note(one.nodes[0]);
  EXPECT_NE(diff_node_note(one.nodes[1]).find("within 1 quantization step of 0.1"), std::string::npos)
      << diff_node_note(one.nodes[1]);
  // Two steps apart: still a divergence at --quant-steps 1.
  DiffReport two = diff_captures(*r.model, a, b2, tol);
  ASSERT_TRUE(two.first_divergence.has_value());
  EXPECT_NE(diff_node_note(two.nodes[0]).find("2 quantization steps"), std::string::npos) << diff_node_note(two.nodes[0]);
  // The JSON names the step and the count.
  const auto doc = nlohmann::json::parse(diff_report_json(two, DiffReportContext{}));
  EXPECT_DOUBLE_EQ(doc["nodes"][0]["outputs"][0]["quant_steps"].get<double>(), 2.0);
  // An ordinary float tensor has no step.
  EXPECT_EQ(diff_tensors(floats({1}, {1}), floats({1}, {1.5f}), tol, "x").quant_step, 0);
}
