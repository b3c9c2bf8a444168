// Plugins through the onnxscope executable: --plugin on every subcommand and
// ONNXSCOPE_PLUGIN_PATH; the example plugins' models through run, diff,
// inspect and conformance; every refusal exits 1 with a message naming the
// file (never a signal).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "model_builder.h"

namespace fs = std::filesystem;
using onnxscope::test::CliRun;
using onnxscope::test::run_cli;

namespace {

const std::string kRmsNorm = ONNXSCOPE_PLUGIN_RMS_NORM;
const std::string kFastGelu = ONNXSCOPE_PLUGIN_FAST_GELU;
const std::string kRmsModel = ONNXSCOPE_SOURCE_DIR "/plugins/examples/rms_norm/rms_norm.onnx";
const std::string kGeluModel = ONNXSCOPE_SOURCE_DIR "/plugins/examples/fast_gelu/fast_gelu.onnx";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A bad-input run: exit 1, no signal, stderr containing every part.
void expect_refused(const CliRun& r, const std::vector<std::string>& parts) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  for (const auto& p : parts) EXPECT_TRUE(has(r.err, p)) << "missing '" << p << "' in:\n" << r.err;
}

// A model written to a temporary file, removed at the end of the test.
struct TempModel {
  fs::path path;
  explicit TempModel(const onnxscope::test::ModelBuilder& b, const std::string& tag) {
    path = fs::temp_directory_path() / ("onnxscope-plugin-" + tag + "-" + std::to_string(getpid()) + ".onnx");
    std::ofstream(path, std::ios::binary) << b.bytes();
  }
  ~TempModel() { fs::remove(path); }
};

onnxscope::test::ModelBuilder rms_model(int64_t scale_len, float epsilon) {
  using namespace onnxscope;
  test::ModelBuilder b(17);
  b.opset("com.example", 1);
  b.input("x", DataType::Float, {2, 16});
  b.output("y", DataType::Float, {2, 16});
  b.initializer(test::make_float_tensor("scale", {scale_len}, std::vector<float>(static_cast<size_t>(scale_len), 1.0f)));
  auto& n = b.node("RMSNorm", {"x", "scale"}, {"y"}, "rms", "com.example");
  test::attr_float(n, "epsilon", epsilon);
  return b;
}

}  // namespace

TEST(PluginCli, RunShowsThePluginKernelOnBothEngines) {
  for (const char* engine : {"reference", "cpu"}) {
    CliRun r = run_cli("run " + kRmsModel + " --plugin " + kRmsNorm + " --engine " + engine + " --dim batch=2 --explain");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "y: float[2,16]")) << r.out;
    EXPECT_TRUE(has(r.out, "rms  RMSNorm  [plugin:example_rms_norm]")) << r.out;
    EXPECT_TRUE(has(r.out, "plugin:example_rms_norm = " + kRmsNorm)) << r.out;
  }
}

TEST(PluginCli, WithoutThePluginTheCustomOpHasNoKernel) {
  CliRun r = run_cli("run " + kRmsModel + " --dim batch=2");
  expect_refused(r, {"node 'rms'", "no kernel for com.example RMSNorm"});
}

TEST(PluginCli, EnvironmentVariableLoadsPlugins) {
  // Colon-separated, empty entries skipped; the same file also given by --plugin loads once.
  setenv("ONNXSCOPE_PLUGIN_PATH", (":" + kFastGelu + ":" + kRmsNorm).c_str(), 1);
  CliRun r = run_cli("run " + kRmsModel + " --dim batch=2 --explain");
  CliRun both = run_cli("run " + kRmsModel + " --dim batch=2 --plugin " + kRmsNorm);
  CliRun bad = run_cli("inspect " + kRmsModel + " --plugin " ONNXSCOPE_PLUGIN_DUP);
  unsetenv("ONNXSCOPE_PLUGIN_PATH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "[plugin:example_rms_norm]")) << r.out;
  EXPECT_EQ(both.exit_code, 0) << both.err;
  expect_refused(bad, {ONNXSCOPE_PLUGIN_DUP, "already registered"});
}

TEST(PluginCli, DiffOfTheCustomOpAcrossEngines) {
  CliRun r = run_cli("diff " + kRmsModel + " --plugin " + kRmsNorm + " --engines reference,cpu --dim batch=3");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "no divergence")) << r.out;
}

TEST(PluginCli, DiffPutsThePluginKernelAgainstTheFunctionExpansion) {
  // reference without the plugin expands the model-local function; cpu runs the plugin kernel.
  const std::string common = kGeluModel + " --plugin " + kFastGelu + " --plugin-engines cpu --dim batch=3";
  CliRun ref = run_cli("run " + common + " --engine reference --explain");
  ASSERT_EQ(ref.exit_code, 0) << ref.out << ref.err;
  EXPECT_TRUE(has(ref.out, "gelu  FastGelu  [function]")) << ref.out;
  CliRun cpu = run_cli("run " + common + " --engine cpu --explain");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.out << cpu.err;
  EXPECT_TRUE(has(cpu.out, "gelu  FastGelu  [plugin:example_fast_gelu]")) << cpu.out;

  CliRun d = run_cli("diff " + common + " --engines reference,cpu");
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_TRUE(has(d.out, "gelu")) << d.out;
  EXPECT_TRUE(has(d.out, "no divergence")) << d.out;
}

TEST(PluginCli, InspectShowsWhichPluginSuppliesANode) {
  CliRun plain = run_cli("inspect " + kRmsModel);
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(has(plain.out, "custom-domain")) << plain.out;

  CliRun r = run_cli("inspect " + kRmsModel + " --plugin " + kRmsNorm);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(has(r.out, "custom-domain")) << r.out;
  EXPECT_TRUE(has(r.out, "rms  com.example::RMSNorm  <- plugin 'example_rms_norm' (" + kRmsNorm + ")")) << r.out;

  CliRun j = run_cli("inspect --json " + kRmsModel + " --plugin " + kRmsNorm);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_TRUE(has(j.out, "\"plugin_nodes\"")) << j.out;
  EXPECT_TRUE(has(j.out, "\"plugin\": \"example_rms_norm\"")) << j.out;
}

TEST(PluginCli, EveryRunningSubcommandTakesPlugins) {
  for (const char* sub : {"inspect", "run", "diff", "dump", "compare", "conformance", "bench", "reduce"}) {
    CliRun r = run_cli(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub << r.err;
    EXPECT_TRUE(has(r.out, "--plugin")) << sub << ":\n" << r.out;
  }
  const fs::path h5 = fs::temp_directory_path() / ("onnxscope-plugin-dump-" + std::to_string(getpid()) + ".h5");
  CliRun d = run_cli("dump " + kRmsModel + " --plugin " + kRmsNorm + " --engine cpu --dim batch=2 --out " + h5.string());
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  fs::remove(h5);
}

TEST(PluginCli, ConformanceRunsATestFolderWithPlugins) {
  const std::string suite = ONNXSCOPE_SOURCE_DIR "/plugins/examples/rms_norm/tests";
  CliRun with = run_cli("conformance --suite " + suite + " --plugin " + kRmsNorm + " --engine cpu");
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err;
  EXPECT_TRUE(has(with.out, "conformance: 1 passed, 0 failed")) << with.out;
  CliRun without = run_cli("conformance --suite " + suite + " --engine cpu");
  EXPECT_TRUE(has(without.out, "conformance: 0 passed, 1 failed")) << without.out;
}

TEST(PluginCli, UsageErrorsExitTwo) {
  CliRun bad_engine = run_cli("run " + kRmsModel + " --plugin " + kRmsNorm + " --plugin-engines gpu");
  EXPECT_EQ(bad_engine.exit_code, 2) << bad_engine.err;
  EXPECT_TRUE(has(bad_engine.err, "unknown engine 'gpu'")) << bad_engine.err;
  CliRun no_path = run_cli("inspect " + kRmsModel + " --plugin");
  EXPECT_EQ(no_path.exit_code, 2) << no_path.err;
}

TEST(PluginCli, MissingPluginFile) {
  expect_refused(run_cli("run " + kRmsModel + " --plugin /nonexistent/libx.so"), {"/nonexistent/libx.so", "not found"});
}

TEST(PluginCli, FileThatIsNotASharedLibrary) {
  expect_refused(run_cli("inspect " + kRmsModel + " --plugin " + kRmsModel),
                 {kRmsModel, "cannot load the plugin as a shared library"});
}

TEST(PluginCli, LibraryWithoutTheEntryPoint) {
  expect_refused(run_cli("run " + kRmsModel + " --plugin " ONNXSCOPE_PLUGIN_NO_ENTRY),
                 {ONNXSCOPE_PLUGIN_NO_ENTRY, "no entry point 'onnxscope_plugin_entry'"});
}

TEST(PluginCli, WrongAbiVersion) {
  expect_refused(run_cli("diff " + kRmsModel + " --plugin " ONNXSCOPE_PLUGIN_BAD_ABI),
                 {ONNXSCOPE_PLUGIN_BAD_ABI, "built for plugin ABI version", "this onnxscope speaks version"});
}

TEST(PluginCli, DuplicateRegistration) {
  expect_refused(run_cli("run " + kRmsModel + " --plugin " + kRmsNorm + " --plugin " ONNXSCOPE_PLUGIN_DUP),
                 {ONNXSCOPE_PLUGIN_DUP, "com.example::RMSNorm", "already registered by plugin 'example_rms_norm'"});
}

TEST(PluginCli, KernelErrorNamesThePluginAndTheNode) {
  TempModel m(rms_model(16, -2.0f), "eps");
  for (const char* engine : {"reference", "cpu"})
    expect_refused(run_cli("run " + m.path.string() + " --plugin " + kRmsNorm + " --engine " + engine),
                   {"node 'rms'", "plugin 'example_rms_norm' (" + kRmsNorm + ")", "epsilon must be > 0, got -2"});
}

TEST(PluginCli, ShapeFunctionRejectingTheInputs) {
  TempModel m(rms_model(4, 1e-5f), "shape");
  expect_refused(run_cli("run " + m.path.string() + " --plugin " + kRmsNorm),
                 {"plugin-shape", "node 'rms'", "example_rms_norm", "scale has 4 elements but X's last axis has 16"});
}
