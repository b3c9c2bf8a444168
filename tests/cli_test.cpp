// The onnxscope executable as a user runs it: exit codes, text and JSON
// output, and clear errors for bad input (never a signal).
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "model_builder.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using onnxscope::test::CliRun;
using onnxscope::test::run_cli;

namespace {


const std::string kSample = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";

}  // namespace

TEST(Cli, InspectSampleText) {
  CliRun r = run_cli("inspect " + kSample);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("IR version: 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("image: float[batch,3,32,32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("logits: float[batch,10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ai.onnx=17"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Validation: 0 error(s), 0 warning(s)"), std::string::npos) << r.out;
}

TEST(Cli, InspectJsonIsOneDocument) {
  CliRun r = run_cli("inspect --json " + kSample);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ir_version"], 8);
  EXPECT_EQ(j["opset_imports"]["ai.onnx"], 17);
  EXPECT_EQ(j["inputs"][0]["name"], "image");
  EXPECT_EQ(j["inputs"][0]["shape"][0], "batch");
  EXPECT_EQ(j["inputs"][0]["shape"][1], 3);
  EXPECT_EQ(j["nodes"]["main_graph"], 13);
  EXPECT_EQ(j["parameters"]["count"], 1596);  // weights, biases, BN stats and the two int64 constants
  EXPECT_EQ(j["validation"]["valid"], true);
  bool saw_conv = false;
  for (const auto& c : j["op_counts"])
    if (c["op_type"] == "Conv") saw_conv = c["count"] == 2;
  EXPECT_TRUE(saw_conv);
}

TEST(Cli, ControlFlowSampleListsSubgraphsAndFunctions) {
  CliRun r = run_cli("inspect --json " ONNXSCOPE_SOURCE_DIR "/resources/models/control_flow.onnx");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["subgraphs"].size(), 3u);
  EXPECT_EQ(j["functions"][0]["path"], "function onnxscope.samples::SquarePlus");
}

TEST(Cli, CorruptModelExitsOneWithLocatedError) {
  fs::path bad = fs::temp_directory_path() / ("onnxscope-bad-" + std::to_string(getpid()) + ".onnx");
  {
    std::ifstream in(kSample, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  CliRun r = run_cli("inspect " + bad.string());
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(bad.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("corrupt or truncated"), std::string::npos) << r.err;
  CliRun j = run_cli("inspect --json " + bad.string());
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(j.out)["validation"]["valid"], false);
  fs::remove(bad);
}

TEST(Cli, MissingFileAndUsageErrors) {
  CliRun missing = run_cli("inspect /nonexistent/model.onnx");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model.onnx"), std::string::npos);
  EXPECT_EQ(run_cli("inspect").exit_code, 2);
  EXPECT_EQ(run_cli("no-such-command").exit_code, 2);
  EXPECT_EQ(run_cli("inspect --bogus-flag " + kSample).exit_code, 2);
  EXPECT_EQ(run_cli("--help").exit_code, 0);
}

TEST(Cli, DiffSampleBetweenEngines) {
  CliRun same = run_cli("diff " + kSample + " --engines reference,reference --dim batch=2");
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("no divergence"), std::string::npos) << same.out;
  CliRun j = run_cli("diff " + kSample + " --engines reference,cpu --dim batch=1 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["nodes"].size(), 13u);
  EXPECT_EQ(doc["a"], "reference");
  EXPECT_EQ(doc["b"], "cpu");
  EXPECT_EQ(run_cli("diff " + kSample + " --engines reference").exit_code, 2);
  EXPECT_EQ(run_cli("diff " + kSample + " --engines reference,nope").exit_code, 2);
  // A symbolic dim without a value is a clear input error, not a crash.
  CliRun nodim = run_cli("diff " + kSample + " --engines reference,cpu");
  EXPECT_EQ(nodim.exit_code, 1);
  EXPECT_NE(nodim.err.find("--dim batch=N"), std::string::npos) << nodim.err;
}

TEST(Cli, BisectPassesOnACleanModelAndItsErrors) {
  CliRun r = run_cli("bisect-passes " + kSample + " --dim batch=1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_GT(doc["rewrites"].get<int>(), 0);
  EXPECT_TRUE(doc["all"]["within"].get<bool>());
  EXPECT_FALSE(doc.contains("culprit"));
  EXPECT_EQ(run_cli("bisect-passes " + kSample + " --dim batch=1 --engine reference").exit_code, 2);
  EXPECT_EQ(run_cli("bisect-passes /nonexistent/model.onnx").exit_code, 1);
}

TEST(Cli, DiffAgainstAnotherModel) {
  // The same file on both sides: every value pairs by name and agrees.
  CliRun r = run_cli("diff " + kSample + " --against " + kSample + " --dim batch=1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["match"]["coverage_a"].get<double>(), 1.0);
  EXPECT_TRUE(doc["match"]["unmatched_a"].empty());
  EXPECT_EQ(doc["diverging"].get<int>(), 0);
  EXPECT_EQ(run_cli("diff " + kSample + " --against /nonexistent/b.onnx --dim batch=1").exit_code, 1);
  EXPECT_EQ(run_cli("diff " + kSample + " --mapping x.tsv").exit_code, 2);
  EXPECT_EQ(run_cli("diff " + kSample + " --against " + kSample + " --engines reference,cpu,cpu --dim batch=1").exit_code, 2);
}

TEST(Cli, DiffAgainstADumpAndItsErrors) {
  const std::string dump = ::testing::TempDir() + "cli_diff_dump.h5";
  ASSERT_EQ(run_cli("dump " + kSample + " --engine reference --dim batch=2 --out " + dump).exit_code, 0);
  // The dump's own inputs are used when none are given; the engine agrees with it.
  CliRun r = run_cli("diff " + kSample + " --engines cpu,dump:" + dump);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no divergence"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("13 of 13 nodes compared"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("re-run alone in A (cpu) on B's inputs"), std::string::npos) << r.out;
  // A dump can be side A too; a Markdown report is written.
  const std::string md = ::testing::TempDir() + "cli_diff_report.md";
  CliRun rev = run_cli("diff " + kSample + " --engines " + dump + ",reference --report " + md);
  EXPECT_EQ(rev.exit_code, 0) << rev.err;
  std::ifstream in(md);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("| nodes compared | 13 of 13 |"), std::string::npos) << text;
  EXPECT_NE(text.find("## Every node"), std::string::npos) << text;
  // Three sources: each compared with the first.
  CliRun three = run_cli("diff " + kSample + " --engines reference,cpu,dump:" + dump + " --json --no-blame");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  auto pairs = nlohmann::json::parse(three.out)["pairs"];
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0]["b"], "cpu");
  EXPECT_EQ(pairs[1]["b"], "dump:" + dump);
  // Only dumps: that is `compare`'s job (usage error); a missing dump is bad input naming it.
  CliRun two = run_cli("diff " + kSample + " --engines " + dump + "," + dump);
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("onnxscope compare"), std::string::npos) << two.err;
  CliRun missing = run_cli("diff " + kSample + " --engines cpu,dump:/nonexistent/x.h5");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/x.h5"), std::string::npos) << missing.err;
}

TEST(Cli, RunExplainListsKernels) {
  CliRun r = run_cli("run " + kSample + " --engine cpu --dim batch=1 --explain");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nodes as run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("probabilities: float[1,10]"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli("run " + kSample + " --engine cpu --disable-pass no-such-pass --dim batch=1").exit_code, 2);
  // --disable-kernel: the next implementation of each op runs (here the fused
  // ops' plain kernels and the reference instead of oneDNN's).
  CliRun off = run_cli("run " + kSample + " --engine cpu --dim batch=1 --explain --disable-kernel onednn");
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(r.out.find("[onednn]"), std::string::npos) << r.out;
  EXPECT_EQ(off.out.find("[onednn]"), std::string::npos) << off.out;
  EXPECT_NE(off.out.find("[fused-reference]"), std::string::npos) << off.out;
  EXPECT_EQ(run_cli("run " + kSample + " --engine cpu --disable-kernel no-such-kernel --dim batch=1").exit_code, 2);
}

TEST(Cli, RunProfileByOperatorAndSlowestNodes) {
  CliRun r = run_cli("run " + kSample + " --engine reference --dim batch=2 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t ops = r.out.find("time by operator and kernel");
  const size_t nodes = r.out.find("slowest nodes (");
  ASSERT_NE(ops, std::string::npos) << r.out;
  ASSERT_NE(nodes, std::string::npos) << r.out;
  EXPECT_LT(ops, nodes);
  // A node's line: graph, node, op and kernel, its inputs' and output's types.
  EXPECT_NE(r.out.find("  main  ", nodes), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[reference]  float[2,", nodes), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" -> float[2,", nodes), std::string::npos) << r.out;
  // --profile-nodes 0: every node, in the order it ran (the sample's first node first).
  CliRun all = run_cli("run " + kSample + " --engine reference --dim batch=2 --profile --profile-nodes 0");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const size_t every = all.out.find("every node, in the order it ran (");
  ASSERT_NE(every, std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("slowest nodes ("), std::string::npos) << all.out;
  CliRun two = run_cli("run " + kSample + " --engine reference --dim batch=2 --profile --profile-nodes 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("slowest nodes (2 of "), std::string::npos) << two.out;
}

TEST(Cli, DumpCompareAndReduceErrorPaths) {
  const std::string dir = fs::temp_directory_path() / ("onnxscope-cli-dump-" + std::to_string(getpid()));
  fs::create_directories(dir);
  CliRun d = run_cli("dump " + kSample + " --dim batch=1 --out " + dir + "/a.h5");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("wrote 13 tensors"), std::string::npos) << d.out;
  CliRun same = run_cli("compare " + dir + "/a.h5 " + dir + "/a.h5 --model " + kSample);
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("no divergence"), std::string::npos) << same.out;
  // Missing, not-HDF5 and truncated dumps: exit 1 naming the file.
  CliRun missing = run_cli("compare " + dir + "/a.h5 " + dir + "/nope.h5");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nope.h5"), std::string::npos) << missing.err;
  std::ofstream(dir + "/junk.h5") << "junk";
  EXPECT_EQ(run_cli("compare " + dir + "/a.h5 " + dir + "/junk.h5").exit_code, 1);
  EXPECT_EQ(run_cli("dump " + kSample + " --dim batch=1 --engine nope --out " + dir + "/b.h5").exit_code, 2);
  EXPECT_EQ(run_cli("dump " + kSample + " --dim batch=1 --only '(' --out " + dir + "/b.h5").exit_code, 2);
  // Writing into a folder that does not exist: a clear error, not a crash.
  CliRun bad_out = run_cli("dump " + kSample + " --dim batch=1 --out /nonexistent/dir/x.h5");
  EXPECT_EQ(bad_out.exit_code, 1);
  EXPECT_NE(bad_out.err.find("/nonexistent/dir/x.h5"), std::string::npos) << bad_out.err;
  CliRun nothing = run_cli("reduce " + kSample + " --engines reference,reference --dim batch=1 --out " + dir + "/r");
  EXPECT_EQ(nothing.exit_code, 0) << nothing.err;
  EXPECT_NE(nothing.out.find("nothing to reduce"), std::string::npos) << nothing.out;
  fs::remove_all(dir);
}

// compare counts tensors one dump lacks from both sides, and warns when the
// dumps come from different model files.
TEST(Cli, CompareCountsOneSidedTensorsBothWaysAndWarnsOnOtherModels) {
  const std::string dir = fs::temp_directory_path() / ("onnxscope-cli-onesided-" + std::to_string(getpid()));
  fs::create_directories(dir);
  ASSERT_EQ(run_cli("dump " + kSample + " --dim batch=1 --out " + dir + "/full.h5").exit_code, 0);
  ASSERT_EQ(run_cli("dump " + kSample + " --dim batch=1 --only Conv --out " + dir + "/conv.h5").exit_code, 0);
  CliRun ab = run_cli("compare " + dir + "/conv.h5 " + dir + "/full.h5");
  EXPECT_EQ(ab.exit_code, 0) << ab.out << ab.err;
  EXPECT_NE(ab.out.find("2 tensors compared, 0 diverge; 0 only in A, 11 only in B"), std::string::npos) << ab.out;
  EXPECT_NE(ab.out.find("only in B   probabilities  (/Softmax)"), std::string::npos) << ab.out;
  CliRun ba = run_cli("compare " + dir + "/full.h5 " + dir + "/conv.h5 --json");
  auto j = nlohmann::json::parse(ba.out);
  EXPECT_EQ(j["only_in_a_count"], 11);
  EXPECT_EQ(j["only_in_b_count"], 0);
  EXPECT_EQ(j["only_in_one"], 11);
  EXPECT_EQ(ba.err.find("different model files"), std::string::npos) << ba.err;
  ASSERT_EQ(run_cli("dump " ONNXSCOPE_SOURCE_DIR "/resources/models/control_flow.onnx --out " + dir + "/other.h5").exit_code, 0);
  CliRun other = run_cli("compare " + dir + "/full.h5 " + dir + "/other.h5");
  EXPECT_NE(other.err.find("were made from different model files"), std::string::npos) << other.err;
  fs::remove_all(dir);
}

// inspect prints each finding once where stdout and stderr are one stream,
// and still on stderr alone when they are apart.
TEST(Cli, InspectPrintsEachFindingOnce) {
  const std::string dir = fs::temp_directory_path() / ("onnxscope-cli-once-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string bad = dir + "/bad.onnx";
  {
    std::ifstream in(kSample, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  // One pipe for both (run_cli's own redirection of stderr then applies to cat).
  CliRun both = run_cli("inspect " + bad + " 2>&1 | cat");
  size_t count = 0;
  for (size_t at = both.out.find("corrupt or truncated"); at != std::string::npos; at = both.out.find("corrupt or truncated", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << both.out;
  CliRun apart = run_cli("inspect " + bad);
  EXPECT_NE(apart.err.find("corrupt or truncated"), std::string::npos) << apart.err;
  EXPECT_NE(apart.out.find("corrupt or truncated"), std::string::npos) << apart.out;
  fs::remove_all(dir);
}

// inspect names the operators no kernel runs (here an ONNX Runtime contrib
// operator onnxscope has none for) before a run is tried.
TEST(Cli, InspectNamesOperatorsWithoutAKernel) {
  onnxscope::test::ModelBuilder b;
  b.opset("com.microsoft", 1);
  b.input("x", onnxscope::DataType::Float, {int64_t{2}, int64_t{4}});
  b.input("g", onnxscope::DataType::Float, {int64_t{4}});
  b.node("GemmaRotaryEmbedding", {"x", "x", "g"}, {"s"}, "skip", "com.microsoft");
  b.node("GemmaRotaryEmbedding", {"s", "x", "g"}, {"t"}, "skip2", "com.microsoft");
  b.node("Relu", {"t"}, {"y"}, "relu");
  b.output("y", onnxscope::DataType::Float, {int64_t{2}, int64_t{4}});
  const fs::path path = fs::temp_directory_path() / "onnxscope_cli_missing_kernel.onnx";
  std::ofstream(path, std::ios::binary) << b.bytes();
  CliRun r = run_cli("inspect --json " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["missing_kernels"].size(), 1u) << r.out;
  EXPECT_EQ(j["missing_kernels"][0]["op"], "com.microsoft GemmaRotaryEmbedding");
  EXPECT_EQ(j["missing_kernels"][0]["nodes"], 2);
  EXPECT_EQ(j["missing_kernels"][0]["first"], "main/skip");
  CliRun t = run_cli("inspect " + path.string());
  EXPECT_NE(t.out.find("operators without a kernel"), std::string::npos) << t.out;
  EXPECT_EQ(nlohmann::json::parse(run_cli("inspect --json " + kSample).out)["missing_kernels"].size(), 0u);
  fs::remove(path);
}
