// Conformance browser under QT_QPA_PLATFORM=offscreen, on a tiny suite built
// here: the model loads the JSON report `onnxscope conformance --json` wrote,
// expectations add expected status and drift, filters by status, operator and
// drift work; a run on the worker thread matches the CLI and can be
// cancelled; opening a failing test shows expected versus actual outputs.
#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "model_builder.h"
#include "onnxscope/proto_io.h"
#include "onnxscope/viewer/conformance_browser.h"
#include "onnxscope/viewer/conformance_model.h"
#include "onnxscope/viewer/conformance_run.h"
#include "onnxscope/viewer/tensor_table_model.h"
#include "onnxscope/viewer/tensor_view.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::viewer;
namespace fs = std::filesystem;

namespace {

template <typename F>
bool wait_for(F done, int ms = 60000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    QThread::msleep(1);
  }
  QCoreApplication::processEvents();
  return true;
}

Tensor floats(Shape s, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// One backend-style test folder: model.onnx + test_data_set_0.
void unary_case(const fs::path& root, const std::string& name, const std::string& op, std::vector<float> in,
                std::vector<float> expected) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{4}});
  b.node(op, {"x"}, {"y"}, "n0");
  b.output("y", DataType::Float, {int64_t{4}});
  const fs::path dir = root / "node" / name;
  write(dir / "model.onnx", b.bytes());
  write(dir / "test_data_set_0" / "input_0.pb", tensor_to_proto_bytes(floats({4}, in), "x"));
  write(dir / "test_data_set_0" / "output_0.pb", tensor_to_proto_bytes(floats({4}, expected), "y"));
}

void add_case(const fs::path& root) {
  ModelBuilder b(17, 8);
  b.input("a", DataType::Float, {int64_t{4}});
  b.input("b", DataType::Float, {int64_t{4}});
  b.node("Add", {"a", "b"}, {"y"}, "sum");
  b.output("y", DataType::Float, {int64_t{4}});
  const fs::path dir = root / "node" / "test_add";
  write(dir / "model.onnx", b.bytes());
  write(dir / "test_data_set_0" / "input_0.pb", tensor_to_proto_bytes(floats({4}, {1, 2, 3, 4}), "a"));
  write(dir / "test_data_set_0" / "input_1.pb", tensor_to_proto_bytes(floats({4}, {1, 1, 1, 1}), "b"));
  write(dir / "test_data_set_0" / "output_0.pb", tensor_to_proto_bytes(floats({4}, {2, 3, 4, 5}), "y"));
}

struct TinySuite {
  QTemporaryDir tmp;
  fs::path root, expectations, report;
  TinySuite() {
    root = fs::path(tmp.path().toStdString()) / "suite";
    unary_case(root, "test_relu_ok", "Relu", {-1, 2, -3, 4}, {0, 2, 0, 4});
    unary_case(root, "test_relu_wrong", "Relu", {-1, 2, -3, 4}, {0, 2, 0, 5});  // expected value planted wrong
    add_case(root);
    expectations = fs::path(tmp.path().toStdString()) / "exp.toml";
    // The wrong test is expected to pass (a regression); test_add is missing.
    std::ofstream(expectations) << "[suite]\nonnx_version = \"test\"\ntest_count = 3\n\n"
                                << "[tests.\"node/test_relu_ok\"]\nstatus = \"pass\"\n\n"
                                << "[tests.\"node/test_relu_wrong\"]\nstatus = \"pass\"\n";
    report = fs::path(tmp.path().toStdString()) / "report.json";
  }
};

int visible_rows(const ConformanceFilter& f) { return f.rowCount(); }

}  // namespace

TEST(ConformanceModel, LoadsTheCliJsonReportAndFilters) {
  TinySuite s;
  CliRun r = run_cli("conformance --suite " + s.root.string() + " --engine reference --jobs 1 --json " +
                     s.report.string());
  ASSERT_FALSE(r.signaled);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ConformanceModel m;
  QString err;
  ASSERT_TRUE(m.load_json_report(s.report, &err)) << err.toStdString();
  ASSERT_EQ(m.rowCount(), 3);
  const int wrong = m.row_of("node/test_relu_wrong"), ok = m.row_of("node/test_relu_ok"), add = m.row_of("node/test_add");
  ASSERT_GE(wrong, 0);
  ASSERT_GE(ok, 0);
  ASSERT_GE(add, 0);
  EXPECT_EQ(m.index(wrong, ConformanceModel::Status).data().toString(), "fail");
  EXPECT_EQ(m.index(ok, ConformanceModel::Status).data().toString(), "pass");
  EXPECT_FALSE(m.index(wrong, ConformanceModel::Error).data().toString().isEmpty());
  EXPECT_TRUE(m.index(ok, ConformanceModel::Error).data().toString().isEmpty());

  m.set_expectations(conformance::load_expectations(s.expectations));
  EXPECT_EQ(m.index(wrong, ConformanceModel::Expected).data().toString(), "pass");
  EXPECT_EQ(m.index(wrong, ConformanceModel::Drift).data().toString(), "regression");
  EXPECT_EQ(m.index(ok, ConformanceModel::Drift).data().toString(), "");
  EXPECT_EQ(m.index(add, ConformanceModel::Drift).data().toString(), "not in file");
  // Operators come from the models (JSON reports do not store them).
  m.set_suite(conformance::discover_suite(s.root));
  EXPECT_EQ(m.index(add, ConformanceModel::Ops).data().toString(), "Add");
  EXPECT_EQ(m.all_ops(), (QStringList{"Add", "Relu"}));
  EXPECT_TRUE(m.row(wrong).test_case.has_value());

  ConformanceFilter f;
  f.setSourceModel(&m);
  EXPECT_EQ(visible_rows(f), 3);
  f.set_status("fail");
  ASSERT_EQ(visible_rows(f), 1);
  EXPECT_EQ(f.index(0, ConformanceModel::Test).data().toString(), "node/test_relu_wrong");
  f.set_status("");
  f.set_op("Relu");
  EXPECT_EQ(visible_rows(f), 2);
  f.set_op("Add");
  EXPECT_EQ(visible_rows(f), 1);
  f.set_op("");
  f.set_drift_only(true);
  EXPECT_EQ(visible_rows(f), 2);
  f.set_drift_only(false);
  f.set_text("ok");
  EXPECT_EQ(visible_rows(f), 1);
  f.set_text("");
  f.sort(ConformanceModel::Test, Qt::AscendingOrder);
  EXPECT_EQ(f.index(0, ConformanceModel::Test).data().toString(), "node/test_add");
}

TEST(ConformanceModel, RejectsABadReportWithTheReason) {
  QTemporaryDir tmp;
  const fs::path p = fs::path(tmp.path().toStdString()) / "bad.json";
  std::ofstream(p) << "{\"not\": \"an array\"}";
  ConformanceModel m;
  QString err;
  EXPECT_FALSE(m.load_json_report(p, &err));
  EXPECT_TRUE(err.contains("bad.json")) << err.toStdString();
  std::ofstream(p) << "[{\"test\": \"x\", \"status\": \"weird\"}]";
  EXPECT_FALSE(m.load_json_report(p, &err));
  EXPECT_TRUE(err.contains("entry 0")) << err.toStdString();
  EXPECT_FALSE(m.load_json_report(p.parent_path() / "missing.json", &err));
}

TEST(ConformanceRun, RunsOnTheWorkerThreadLikeTheCliAndCancels) {
  TinySuite s;
  ConformanceRun run;
  SuiteRunRequest req;
  req.suite = s.root;
  req.jobs = 1;
  std::vector<int> seen;
  const QMetaObject::Connection counting =
      QObject::connect(&run, &ConformanceRun::progress, [&](int done, int total, const QString&, const QString&) {
        EXPECT_EQ(total, 3);
        seen.push_back(done);
      });
  bool cancelled = true;
  bool done = false;
  QObject::connect(&run, &ConformanceRun::finished, [&](bool c) {
    cancelled = c;
    done = true;
  });
  QString err;
  ASSERT_TRUE(run.start(req, &err)) << err.toStdString();
  ASSERT_TRUE(wait_for([&] { return done; }));
  EXPECT_FALSE(cancelled);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  ASSERT_EQ(run.results().size(), 3u);
  for (const auto& r : run.results())
    EXPECT_EQ(r.status, r.key == "node/test_relu_wrong" ? conformance::Status::Fail : conformance::Status::Pass) << r.key;

  QObject::disconnect(counting);  // the runs below have other totals

  // Bad requests are refused with a reason, nothing started (right after
  // finished too: the worker may not have returned yet).
  req.engine = "nope";
  EXPECT_FALSE(run.start(req, &err));
  EXPECT_TRUE(err.contains("nope"));
  req.engine = "reference";
  req.filter = "(";
  EXPECT_FALSE(run.start(req, &err));

  // Cancel: a suite of many cases stops early with partial results. (Enough
  // cases that the worker cannot finish them all before cancel() lands: with
  // 30 it once did, under a loaded ctest -j2.)
  for (int i = 0; i < 300; ++i) unary_case(s.root, "test_more_" + std::to_string(i), "Relu", {1, 2, 3, 4}, {1, 2, 3, 4});
  req.filter = "";
  done = false;
  ASSERT_TRUE(run.start(req, &err));
  run.cancel();
  ASSERT_TRUE(wait_for([&] { return done; }));
  EXPECT_TRUE(cancelled);
  EXPECT_LT(run.results().size(), 303u);
}

TEST(ConformanceBrowser, OpeningAFailingTestShowsExpectedAgainstActual) {
  TinySuite s;
  ASSERT_EQ(run_cli("conformance --suite " + s.root.string() + " --jobs 1 --json " + s.report.string()).exit_code, 0);
  ConformanceBrowser b;
  b.show();
  QString err;
  ASSERT_TRUE(b.open_report(s.report, s.root, s.expectations, &err)) << err.toStdString();
  QString model_path;
  QStringList inputs;
  QObject::connect(&b, &ConformanceBrowser::open_model_requested, [&](const QString& m, const QStringList& in) {
    model_path = m;
    inputs = in;
  });
  bool shown = false;
  QObject::connect(&b, &ConformanceBrowser::case_outputs_shown, [&](const QString&) { shown = true; });
  b.open_test(b.model()->row_of("node/test_relu_wrong"));
  ASSERT_TRUE(wait_for([&] { return shown; }));
  EXPECT_TRUE(model_path.endsWith("test_relu_wrong/model.onnx")) << model_path.toStdString();
  ASSERT_EQ(inputs.size(), 1);
  EXPECT_TRUE(inputs[0].endsWith("input_0.pb"));
  const CaseOutputs* out = b.shown_outputs();
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->error.empty()) << out->error;
  ASSERT_EQ(out->outputs.size(), 1u);
  EXPECT_TRUE(out->outputs[0].mismatch.has_value());
  // Expected (A) 5 against actual (B) 4 at index 3: B - A = -1 there.
  auto* diff = b.tensor_panel()->view_diff()->table_model();
  ASSERT_TRUE(diff->has_tensor());
  EXPECT_DOUBLE_EQ(diff->index(3, 0).data(TensorTableModel::ValueRole).toDouble(), -1.0);
  EXPECT_DOUBLE_EQ(diff->index(1, 0).data(TensorTableModel::ValueRole).toDouble(), 0.0);
  if (!qEnvironmentVariableIsEmpty("ONNXSCOPE_SCREENSHOT_DIR")) {
    EXPECT_TRUE(b.grab().save(qEnvironmentVariable("ONNXSCOPE_SCREENSHOT_DIR") + "/conformance_browser.png"));
  }
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
