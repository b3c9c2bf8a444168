// `onnxscope bench` as a user runs it: what it reports (never how fast: no
// timing thresholds here), --batch sizing, saved outputs, exit codes.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "onnxscope/ir.h"
#include "onnxscope/proto_io.h"

namespace fs = std::filesystem;
using onnxscope::test::CliRun;
using onnxscope::test::run_cli;

namespace {


const std::string kSample = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";

}  // namespace

TEST(BenchCli, JsonReportsEveryFieldForBothEngines) {
  for (const char* engine : {"cpu", "reference"}) {
    CliRun r = run_cli(std::string("bench ") + kSample + " --engine " + engine +
                       " --batch 4 --warmup 1 --iterations 3 --threads 1 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["engine"], engine);
    EXPECT_EQ(j["batch"], 4);
    EXPECT_EQ(j["warmup"], 1);
    EXPECT_EQ(j["iterations"], 3);
    EXPECT_EQ(j["inputs"]["image"], "float[4,3,32,32]");
    const auto& lat = j["latency_ms"];
    EXPECT_GT(lat["median"].get<double>(), 0);
    EXPECT_LE(lat["min"].get<double>(), lat["median"].get<double>());
    EXPECT_LE(lat["median"].get<double>(), lat["p90"].get<double>());
    EXPECT_LE(lat["p90"].get<double>(), lat["max"].get<double>());
    // Throughput counts the batch: 4 inferences per median run.
    EXPECT_NEAR(j["throughput_per_s"].get<double>(), 4000.0 / lat["median"].get<double>(),
                1e-6 * j["throughput_per_s"].get<double>());
    EXPECT_GT(j["peak_rss_mib"].get<double>(), 1.0);
    EXPECT_GT(j["baseline_rss_mib"].get<double>(), 1.0);
    EXPECT_LT(j["baseline_rss_mib"].get<double>(), j["peak_rss_mib"].get<double>());
    EXPECT_GE(j["prepare_ms"].get<double>(), 0);
  }
}

TEST(BenchCli, TextReport) {
  CliRun r = run_cli("bench " + kSample + " --batch 2 --warmup 0 --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"prepare ", "latency     median ", "p90 ", "inferences/s (batch 2)", "peak RSS ", "image: float[2,3,32,32]"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(BenchCli, SavedOutputsReadBackWithTheirShapes) {
  fs::path dir = fs::temp_directory_path() / ("onnxscope-bench-out-" + std::to_string(getpid()));
  fs::remove_all(dir);
  CliRun r = run_cli("bench " + kSample + " --batch 3 --warmup 0 --iterations 1 --json --save-outputs " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["name"], "logits");
  onnxscope::Value v = onnxscope::read_value_file(j["outputs"][0]["file"].get<std::string>(),
                                                  onnxscope::TypeInfo::tensor(onnxscope::DataType::Float));
  ASSERT_TRUE(v.is_tensor());
  EXPECT_EQ(v.tensor().shape(), (onnxscope::Shape{3, 10}));
  fs::remove_all(dir);
}

TEST(BenchCli, WithoutBatchARunCountsOneInference) {
  // --dim sizes the batch dimension; only --batch makes throughput count rows.
  CliRun r = run_cli("bench " + kSample + " --dim batch=2 --warmup 0 --iterations 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["batch"], 1);
}

TEST(BenchCli, ExitCodes) {
  EXPECT_EQ(run_cli("bench " + kSample + " --batch 2 --dim batch=4").exit_code, 2);  // contradiction
  EXPECT_EQ(run_cli("bench " + kSample + " --iterations 0").exit_code, 2);
  EXPECT_EQ(run_cli("bench " + kSample + " --engine nope").exit_code, 2);
  EXPECT_EQ(run_cli("bench /nonexistent/model.onnx").exit_code, 1);
  CliRun r = run_cli("bench " + kSample);  // symbolic batch with no value
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--dim batch=N"), std::string::npos) << r.err;
}
