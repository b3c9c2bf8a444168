// The conformance gate must gate: comparisons catch wrong outputs, a changed
// status shows up as drift with a non-zero exit, and a matching run exits 0.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "model_builder.h"
#include "onnxscope/conformance/compare.h"
#include "onnxscope/conformance/expectations.h"
#include "onnxscope/conformance/runner.h"
#include "onnxscope/cuda.h"
#include "onnxscope/engines.h"
#include "onnxscope/proto_io.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::conformance;
using namespace onnxscope::test;
namespace fs = std::filesystem;

namespace {

Tensor floats(Shape shape, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// A backend-style test folder: y = x + x, with the given expected output.
void make_case(const fs::path& dir, const std::vector<float>& expected) {
  fs::create_directories(dir / "test_data_set_0");
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{3}});
  b.node("Add", {"x", "x"}, {"y"});
  b.output("y", DataType::Float, {int64_t{3}});
  write(dir / "model.onnx", b.bytes());
  write(dir / "test_data_set_0" / "input_0.pb", tensor_to_proto_bytes(floats({3}, {1, 2, 3}), "x"));
  write(dir / "test_data_set_0" / "output_0.pb", tensor_to_proto_bytes(floats({3}, expected), "y"));
}

struct CliRun {
  int exit_code = -1;
  std::string out;
};

CliRun run_cli(const std::string& args) {
  CliRun r;
  FILE* p = popen((std::string(ONNXSCOPE_CLI) + " " + args + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class Gate : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("onnxscope-gate-" + std::to_string(getpid()));
    fs::remove_all(root);
    make_case(root / "suite" / "node" / "test_good", {2, 4, 6});
    make_case(root / "suite" / "node" / "test_wrong", {2, 4, 7});  // deliberately wrong expected output
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path root;
};

}  // namespace

TEST(Compare, ToleranceNanAndShapes) {
  Tolerance tol;
  EXPECT_FALSE(compare_values(floats({2}, {1, NAN}), floats({2}, {1.0005f, NAN}), tol));
  auto d = compare_values(floats({2}, {1, 2}), floats({2}, {1, 2.01f}), tol);
  ASSERT_TRUE(d);
  EXPECT_NE(d->find("worst at [1]"), std::string::npos) << *d;
  EXPECT_TRUE(compare_values(floats({2}, {1, NAN}), floats({2}, {1, 0}), tol));
  EXPECT_TRUE(compare_values(floats({2}, {1, 2}), floats({1, 2}, {1, 2}), tol));  // shape differs
  EXPECT_TRUE(compare_values(floats({1}, {INFINITY}), floats({1}, {-INFINITY}), tol));
  EXPECT_FALSE(compare_values(floats({1}, {INFINITY}), floats({1}, {INFINITY}), tol));
  Tensor i64 = Tensor::zeros(DataType::Int64, {1});
  EXPECT_TRUE(compare_values(floats({1}, {0}), i64, tol));  // dtype differs
  EXPECT_TRUE(compare_values(Value::sequence({floats({1}, {1})}), Value::sequence({}), tol));
  EXPECT_FALSE(compare_values(Value::none(), Value::none(), tol));
}

TEST_F(Gate, WrongExpectedOutputFailsAndDriftExitsNonZero) {
  const fs::path exp = root / "expect.toml";
  // Claim both pass: the wrong one must show up as a regression, exit 3.
  std::ofstream(exp) << "[suite]\nonnx_version = \"test\"\ntest_count = 2\n\n"
                        "[tests.\"node/test_good\"]\nstatus = \"pass\"\n\n"
                        "[tests.\"node/test_wrong\"]\nstatus = \"pass\"\n";
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string());
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("REGRESSION node/test_wrong"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected 7"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("node/test_good:"), std::string::npos) << r.out;

  // Record reality; the next run has no drift and exits 0.
  CliRun u = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string() +
                     " --update-expectations");
  EXPECT_EQ(u.exit_code, 0) << u.out;
  Expectations e = load_expectations(exp);
  EXPECT_EQ(e.tests.at("node/test_good").status, Status::Pass);
  EXPECT_EQ(e.tests.at("node/test_wrong").status, Status::Fail);
  EXPECT_FALSE(e.tests.at("node/test_wrong").reason.empty());
  CliRun again = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string() +
                         " --junit " + (root / "j.xml").string() + " --report " + (root / "r.md").string());
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("conformance: 1 passed, 1 failed, 0 skipped"), std::string::npos) << again.out;
  EXPECT_TRUE(fs::exists(root / "j.xml"));
  EXPECT_TRUE(fs::exists(root / "r.md"));

  // A test that newly passes is drift too (the file must be kept honest).
  make_case(root / "suite" / "node" / "test_wrong", {2, 4, 6});
  CliRun fixed = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string());
  EXPECT_EQ(fixed.exit_code, 3) << fixed.out;
  EXPECT_NE(fixed.out.find("NEW PASS node/test_wrong"), std::string::npos) << fixed.out;
}

// A subfolder of the suite keeps the keys it has in the whole suite, and is
// not the whole suite: expectations of the other folders are not drift.
TEST_F(Gate, ASubfolderSuiteKeepsItsKeys) {
  const fs::path exp = root / "expect.toml";
  std::ofstream(exp) << "[tests.\"node/test_good\"]\nstatus = \"pass\"\n\n"
                        "[tests.\"node/test_wrong\"]\nstatus = \"fail\"\nreason = \"a planted wrong output\"\n\n"
                        "[tests.\"light/light_other\"]\nstatus = \"pass\"\n";
  CliRun sub = run_cli("conformance --suite " + (root / "suite" / "node").string() + " --expectations " + exp.string());
  EXPECT_EQ(sub.exit_code, 0) << sub.out;
  EXPECT_EQ(sub.out.find("NOT IN"), std::string::npos) << sub.out;
  CliRun one = run_cli("conformance --suite " + (root / "suite" / "node" / "test_good").string() + " --expectations " +
                       exp.string() + " --json " + (root / "one.json").string());
  EXPECT_EQ(one.exit_code, 0) << one.out;
  std::ifstream in(root / "one.json");
  const std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(json.find("\"node/test_good\""), std::string::npos) << json;
  // The whole suite still reports what it lacks.
  CliRun whole = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string());
  EXPECT_EQ(whole.exit_code, 3) << whole.out;
  EXPECT_NE(whole.out.find("NOT IN SUITE light/light_other"), std::string::npos) << whole.out;
}

// JUnit: a failure the expectations name (with its reason) is a skipped test,
// so a run with no drift is green on a dashboard; a drift is a failure.
// The Markdown report keeps a detail's '|' (escaped).
TEST_F(Gate, JUnitSkipsExpectedFailuresAndFailsDrift) {
  const fs::path exp = root / "expect.toml";
  std::ofstream(exp) << "[tests.\"node/test_good\"]\nstatus = \"pass\"\n\n"
                        "[tests.\"node/test_wrong\"]\nstatus = \"fail\"\nreason = \"a planted wrong output\"\n";
  const fs::path xml = root / "j.xml", md = root / "r.md";
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string() + " --junit " +
                     xml.string() + " --report " + md.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  std::string j = read(xml);
  EXPECT_NE(j.find("failures=\"0\" errors=\"0\" skipped=\"1\""), std::string::npos) << j;
  EXPECT_NE(j.find("<skipped message=\"expected fail: a planted wrong output ("), std::string::npos) << j;
  EXPECT_EQ(j.find("<failure"), std::string::npos) << j;
  std::string report = read(md);
  EXPECT_NE(report.find("(\\|diff\\| 1,"), std::string::npos) << report;
  // The same failure, expected to pass: drift, and a failure in JUnit.
  std::ofstream(exp) << "[tests.\"node/test_good\"]\nstatus = \"pass\"\n\n[tests.\"node/test_wrong\"]\nstatus = \"pass\"\n";
  CliRun d = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string() + " --junit " +
                     xml.string());
  EXPECT_EQ(d.exit_code, 3) << d.out;
  j = read(xml);
  EXPECT_NE(j.find("failures=\"1\""), std::string::npos) << j;
  EXPECT_NE(j.find("<failure message="), std::string::npos) << j;
}

// --tests-per-child and --progress-log from the command line: the same
// results, and a line per test in the log as each finishes.
TEST_F(Gate, ProgressLogAndTestsPerChildFromTheCommandLine) {
  const fs::path log = root / "progress.tsv";
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " --tests-per-child 8 --progress-log " +
                     log.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("conformance: 1 passed, 1 failed, 0 skipped"), std::string::npos) << r.out;
  std::ifstream in(log);
  std::map<std::string, std::string> lines;  // test -> status
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find('\t'), b = line.find('\t', a + 1), c = line.find('\t', b + 1);
    ASSERT_NE(c, std::string::npos) << line;
    lines[line.substr(b + 1, c - b - 1)] = line.substr(0, a);
  }
  EXPECT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines["node/test_good"], "pass");
  EXPECT_EQ(lines["node/test_wrong"], "fail");
  EXPECT_EQ(run_cli("conformance --suite " + (root / "suite").string() + " --tests-per-child 0").exit_code, 2);
  EXPECT_EQ(run_cli("conformance --suite " + (root / "suite").string() + " --progress-log " + (root / "no/such/dir/x").string())
                .exit_code,
            1);
}

// Without a GPU, the cuda engine is refused once, before any test runs.
TEST_F(Gate, CudaWithoutAGpuIsOneError) {
  if (!cuda_status().devices.empty()) GTEST_SKIP() << "this machine has a GPU: " << cuda_status().devices[0].name;
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " --engine cuda --progress-log " +
                     (root / "p.tsv").string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the cuda engine cannot run"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("node/test_good"), std::string::npos) << r.out;  // no test ran
}

TEST_F(Gate, TestsMissingFromEitherSideAreDrift) {
  const fs::path exp = root / "expect.toml";
  std::ofstream(exp) << "[tests.\"node/test_good\"]\nstatus = \"pass\"\n\n"
                        "[tests.\"node/test_gone\"]\nstatus = \"fail\"\nreason = \"was removed upstream\"\n";
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("NOT IN EXPECTATIONS node/test_wrong"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NOT IN SUITE node/test_gone"), std::string::npos) << r.out;
}

TEST_F(Gate, NonPassWithoutReasonIsRejected) {
  const fs::path exp = root / "expect.toml";
  std::ofstream(exp) << "[tests.\"node/test_wrong\"]\nstatus = \"fail\"\n";
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " --expectations " + exp.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("needs a reason"), std::string::npos) << r.out;
}

TEST_F(Gate, EngineErrorIsReportedAndRunContinues) {
  // A model the engine refuses (no kernel) is an error, and the other tests still run.
  fs::create_directories(root / "suite" / "node" / "test_nokernel" / "test_data_set_0");
  ModelBuilder b(17, 8);
  b.opset("com.example", 1);
  b.input("x", DataType::Float, {int64_t{3}});
  b.node("Mystery", {"x"}, {"y"}, "m", "com.example");
  b.output("y", DataType::Float, {int64_t{3}});
  write(root / "suite" / "node" / "test_nokernel" / "model.onnx", b.bytes());
  CliRun r = run_cli("conformance --suite " + (root / "suite").string() + " -v");
  EXPECT_EQ(r.exit_code, 0) << r.out;  // no expectations file: report only
  EXPECT_NE(r.out.find("error node/test_nokernel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 passed, 2 failed"), std::string::npos) << r.out;
}

namespace {
void crash_kernel(KernelContext&) { std::abort(); }
void hang_kernel(KernelContext&) {
  for (;;) pause();
}
void make_custom_case(const fs::path& dir, const std::string& op) {
  fs::create_directories(dir / "test_data_set_0");
  ModelBuilder b(17, 8);
  b.opset("com.example", 1);
  b.input("x", DataType::Float, {int64_t{3}});
  b.node(op, {"x"}, {"y"}, "n", "com.example");
  b.output("y", DataType::Float, {int64_t{3}});
  write(dir / "model.onnx", b.bytes());
  write(dir / "test_data_set_0" / "input_0.pb", tensor_to_proto_bytes(floats({3}, {1, 2, 3}), "x"));
  write(dir / "test_data_set_0" / "output_0.pb", tensor_to_proto_bytes(floats({3}, {1, 2, 3}), "y"));
}
}  // namespace

// An abort is a crash, a hang a timeout, each its own test's, and neither
// stops the others: with a process per test, and with children that run
// several tests in turn (the child is replaced and the tests go on).
TEST_F(Gate, CrashAndHangAreIsolated) {
  make_custom_case(root / "suite" / "node" / "test_crash", "Crash");
  make_custom_case(root / "suite" / "node" / "test_hang", "Hang");
  static KernelRegistry extra;
  extra.add(KernelDef{"com.example", "Crash", 1, INT_MAX, "test", crash_kernel, nullptr});
  extra.add(KernelDef{"com.example", "Hang", 1, INT_MAX, "test", hang_kernel, nullptr});
  auto cases = discover_suite(root / "suite");
  ASSERT_EQ(cases.size(), 4u);
  auto open_fds = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  const size_t fds_before = open_fds();
  for (auto [per_child, jobs] : {std::pair{1, 2}, std::pair{4, 1}, std::pair{4, 2}}) {
    SCOPED_TRACE("tests per child " + std::to_string(per_child) + ", jobs " + std::to_string(jobs));
    SuiteOptions opts;
    opts.timeout_seconds = 2;
    opts.jobs = jobs;
    opts.tests_per_child = per_child;
    size_t reported = 0;
    opts.progress = [&](const CaseResult&, size_t, size_t) { ++reported; };
    auto results = run_suite(cases, [] {
      ReferenceOptions o;
      o.extra_kernels = &extra;
      return make_reference_engine(o);
    }, opts);
    ASSERT_EQ(results.size(), cases.size());
    std::map<std::string, Status> by_key;
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(results[i].key, case_key(cases[i]));  // in the order of the cases
      by_key[results[i].key] = results[i].status;
    }
    EXPECT_EQ(by_key["node/test_crash"], Status::Crash);
    EXPECT_EQ(by_key["node/test_hang"], Status::Timeout);
    EXPECT_EQ(by_key["node/test_good"], Status::Pass);
    EXPECT_EQ(by_key["node/test_wrong"], Status::Fail);
    EXPECT_EQ(reported, 4u);  // each once
  }
  EXPECT_EQ(open_fds(), fds_before);  // every child's channels closed
}

// The suite's engine is first made once in a child: an engine that cannot
// start is one clear error, and the parent process makes none itself (a CUDA
// context made there would be unusable in every forked test).
TEST(EngineStart, AnEngineThatCannotStartIsOneErrorFromAChild) {
  const pid_t parent = getpid();
  EXPECT_EQ(engine_start_error([] { return make_reference_engine({}); }, 10), "");
  EXPECT_EQ(engine_start_error([]() -> std::unique_ptr<Engine> { throw std::runtime_error("no GPU here"); }, 10),
            "no GPU here");
  EXPECT_EQ(engine_start_error([]() -> std::unique_ptr<Engine> { return nullptr; }, 10), "no such engine");
  const std::string crashed = engine_start_error([]() -> std::unique_ptr<Engine> { std::abort(); }, 10);
  EXPECT_NE(crashed.find("killed by signal"), std::string::npos) << crashed;
  const std::string hung = engine_start_error(
      []() -> std::unique_ptr<Engine> {
        for (;;) pause();
      },
      1);
  EXPECT_NE(hung.find("did not start within 1 s"), std::string::npos) << hung;
  EXPECT_EQ(getpid(), parent);
  // A name is known without making the engine.
  for (const char* n : {"reference", "cpu", "cuda", "cuda-sim"}) EXPECT_TRUE(is_engine_name(n)) << n;
  for (const char* n : {"", "gpu", "CUDA", "reference "}) EXPECT_FALSE(is_engine_name(n)) << n;
  EXPECT_EQ(make_engine("gpu"), nullptr);
}
