// The onnxscope executable as a user runs it: exit codes, text and JSON
// output, and clear errors for bad input (never a signal).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};

CliRun run_cli(const std::string& args) {
  fs::path err_file = fs::temp_directory_path() / ("onnxscope-cli-err-" + std::to_string(getpid()));
  std::string cmd = std::string(ONNXSCOPE_CLI) + " " + args + " 2>" + err_file.string();
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.signaled = WIFSIGNALED(status);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err_file);
  return r;
}

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
