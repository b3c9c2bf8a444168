// The stepping debugger's controller under QT_QPA_PLATFORM=offscreen: node by
// node stepping in graph order, step back through the recorded history,
// run-to, node and condition breakpoints (NaN, divergence against a planted
// fault), kernel errors, cancel and destruction while the worker runs; the
// divergence model; the debugging docks in the main window and the
// --screenshot --engines/--step command line.
#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTest>
#include <QTemporaryDir>
#include <QThread>
#include <chrono>
#include <filesystem>
#include <set>
#include <fstream>
#include <sys/wait.h>

#include <cstdlib>
#include <thread>

#include "fp16_overflow.h"
#include "model_builder.h"
#include "onnxscope/diff.h"
#include "onnxscope/dump.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/reference.h"
#include "onnxscope/viewer/debug_session.h"
#include "onnxscope/viewer/conformance_browser.h"
#include "onnxscope/viewer/debug_actions.h"
#include "onnxscope/viewer/debugger_panel.h"
#include "onnxscope/viewer/divergence_model.h"
#include "onnxscope/viewer/divergence_panel.h"
#include "onnxscope/viewer/main_window.h"
#include "onnxscope/viewer/tensor_view.h"

using namespace onnxscope;
using namespace onnxscope::test;
using onnxscope::viewer::apply_debug_actions;
using onnxscope::viewer::DebugSession;
using onnxscope::viewer::MainWindow;
using onnxscope::viewer::SessionState;

namespace {

template <typename F>
bool wait_for(F done, int ms = 30000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    QThread::msleep(1);
  }
  QCoreApplication::processEvents();  // deliver the queued signals sent so far
  return true;
}

bool wait_paused(DebugSession& s) {
  // A run that ends instead of pausing fails at once rather than at the timeout.
  return wait_for([&] { return s.state() == SessionState::Paused || s.state() == SessionState::Finished; }) &&
         s.state() == SessionState::Paused;
}
bool wait_finished(DebugSession& s) { return wait_for([&] { return s.state() == SessionState::Finished; }); }

std::shared_ptr<const Model> load_shared(LoadResult r) { return std::shared_ptr<const Model>(std::move(r.model)); }

// sample_cnn's input has the symbolic dim 'batch'.
InputSpec cnn_inputs() {
  InputSpec spec;
  spec.dims["batch"] = 1;
  return spec;
}

std::shared_ptr<const Model> sample_cnn() {
  LoadResult r = load_model_file(ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx");
  EXPECT_TRUE(r.ok());
  return std::shared_ptr<const Model>(std::move(r.model));
}

// Relu off by 0.25 wherever it is positive: the planted fault (as in diff_test).
void faulty_relu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    float v = x.data<float>()[i];
    y.mutable_data<float>()[i] = v > 0 ? v + 0.25f : 0.0f;
  }
}

std::unique_ptr<Engine> faulty_engine() {
  static KernelRegistry fault;
  if (fault.all().empty()) fault.add(KernelDef{"", "Relu", 1, INT_MAX, "planted-fault", faulty_relu, nullptr});
  ReferenceOptions o;
  o.extra_kernels = &fault;
  return make_reference_engine(o);
}

std::shared_ptr<const Model> chain_model() {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{4}, int64_t{8}});
  b.initializer(make_float_tensor("two", {}, {2.0f}));
  b.node("Mul", {"x", "two"}, {"m"}, "scale");
  b.node("Relu", {"m"}, {"r"}, "faulty");
  b.node("Add", {"r", "x"}, {"a"}, "residual");
  b.node("Sigmoid", {"a"}, {"y"}, "squash");
  b.output("y", DataType::Float, {int64_t{4}, int64_t{8}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return load_shared(std::move(r));
}

// Log of -|x|: NaN (or -Inf at 0) from node 'log' on.
std::shared_ptr<const Model> nan_model() {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{5}});
  b.node("Abs", {"x"}, {"ax"}, "abs");
  b.node("Neg", {"ax"}, {"n"}, "neg");
  b.node("Log", {"n"}, {"l"}, "log");
  b.node("Identity", {"l"}, {"y"}, "out");
  b.output("y", DataType::Float, {int64_t{3}, int64_t{5}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return load_shared(std::move(r));
}

// A long chain of Relu nodes; with the slow kernel each takes ~5 ms.
std::shared_ptr<const Model> relu_chain(int n) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{2}});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = i + 1 == n ? "y" : "t" + std::to_string(i);
    b.node("Relu", {prev}, {out}, "relu" + std::to_string(i));
    prev = out;
  }
  b.output("y", DataType::Float, {int64_t{2}, int64_t{2}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return load_shared(std::move(r));
}

void slow_relu(KernelContext& ctx) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i) y.mutable_data<float>()[i] = std::max(0.0f, x.data<float>()[i]);
}

std::unique_ptr<Engine> slow_engine() {
  static KernelRegistry slow;
  if (slow.all().empty()) slow.add(KernelDef{"", "Relu", 1, INT_MAX, "slow", slow_relu, nullptr});
  ReferenceOptions o;
  o.extra_kernels = &slow;
  return make_reference_engine(o);
}

void throwing_sigmoid(KernelContext&) { throw std::runtime_error("planted kernel failure"); }

bool same_tensor(const Value& a, const Value& b) {
  if (!a.is_tensor() || !b.is_tensor()) return false;
  return diff_values(a, b, DiffTolerance{0, 0, -1}).within();
}

}  // namespace

TEST(DebugSession, StepsSampleCnnNodeByNodeInGraphOrder) {
  auto model = sample_cnn();
  DebugSession s;
  s.set_model(model);
  s.set_inputs(cnn_inputs());
  ASSERT_TRUE(s.set_engines("reference"));
  std::vector<int> reached;
  QObject::connect(&s, &DebugSession::node_reached, [&](const QString& g, int i, const QString&) {
    EXPECT_EQ(g, "main");
    reached.push_back(i);
  });
  const size_t n = model->graph.nodes.size();
  ASSERT_GT(n, 3u);
  for (size_t i = 0; i < n; ++i) {
    s.step();
    ASSERT_TRUE(wait_paused(s)) << "step " << i;
    ASSERT_EQ(s.history_size(), i + 1);
    auto cur = s.current();
    ASSERT_TRUE(cur);
    EXPECT_EQ(cur->node_index, i);
    EXPECT_EQ(cur->node, model->graph.nodes[i].label(i));
    EXPECT_EQ(cur->stop_reason, "step");
    EXPECT_FALSE(cur->outputs.empty());
  }
  bool ok = false;
  QObject::connect(&s, &DebugSession::finished, [&](bool k, const QString&) { ok = k; });
  s.step();  // past the last node: the run ends
  ASSERT_TRUE(wait_finished(s));
  QCoreApplication::processEvents();
  EXPECT_TRUE(ok);
  ASSERT_EQ(reached.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(reached[i], static_cast<int>(i));
}

TEST(DebugSession, StepBackReturnsEarlierTensorsWithoutRerunning) {
  auto model = sample_cnn();
  NamedValues inputs = make_inputs(*model, cnn_inputs());
  auto ref = make_reference_engine();
  Capture truth = capture_run(*ref, model, inputs);

  DebugSession s;
  s.set_model(model);
  s.set_inputs(cnn_inputs());
  ASSERT_TRUE(s.set_engines("reference"));
  for (int i = 0; i < 4; ++i) {
    s.step();
    ASSERT_TRUE(wait_paused(s));
    ASSERT_EQ(s.history_size(), size_t(i + 1));
  }
  EXPECT_EQ(s.cursor(), 3);
  ASSERT_TRUE(s.step_back());
  ASSERT_TRUE(s.step_back());
  EXPECT_EQ(s.cursor(), 1);
  EXPECT_EQ(s.history_size(), 4u);  // nothing re-ran
  auto cur = s.current();
  ASSERT_TRUE(cur);
  EXPECT_EQ(cur->node_index, 1u);
  for (const auto& [name, v] : cur->outputs) EXPECT_TRUE(same_tensor(v, truth.values.at(name))) << name;
  ASSERT_TRUE(s.step_back());
  EXPECT_FALSE(s.step_back());  // at the first record
  // Forward again replays the history before running anything new.
  s.step();
  EXPECT_EQ(s.cursor(), 1);
  EXPECT_EQ(s.history_size(), 4u);
  s.cancel();
  ASSERT_TRUE(wait_finished(s));
}

TEST(DebugSession, RunToNodeStopsThereAndNodeBreakpointsFire) {
  auto model = sample_cnn();
  const int target = static_cast<int>(model->graph.nodes.size()) - 2;
  DebugSession s;
  s.set_model(model);
  s.set_inputs(cnn_inputs());
  ASSERT_TRUE(s.set_engines("reference"));
  s.run_to("main", target);
  ASSERT_TRUE(wait_paused(s));
  ASSERT_TRUE(s.current());
  EXPECT_EQ(s.current()->node_index, size_t(target));
  EXPECT_EQ(s.history_size(), size_t(target + 1));
  s.run();
  ASSERT_TRUE(wait_finished(s));
  EXPECT_EQ(s.history_size(), model->graph.nodes.size());

  DebugSession b;
  b.set_model(model);
  b.set_inputs(cnn_inputs());
  ASSERT_TRUE(b.set_engines("reference"));
  b.set_breakpoint("main", 2, true);
  EXPECT_TRUE(b.has_breakpoint("main", 2));
  b.run();
  ASSERT_TRUE(wait_paused(b));
  EXPECT_EQ(b.current()->node_index, 2u);
  EXPECT_NE(b.current()->stop_reason.find("breakpoint"), std::string::npos);
  b.run();
  ASSERT_TRUE(wait_finished(b));
}

TEST(DebugSession, NanBreakpointFiresWhereTheNanAppears) {
  auto model = nan_model();
  DebugSession plain;
  plain.set_model(model);
  plain.set_engines(make_reference_engine());
  plain.run();
  ASSERT_TRUE(wait_finished(plain));  // no condition set: runs through
  EXPECT_EQ(plain.history_size(), 4u);

  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine());
  s.set_break_on_nan(true);
  QString why;
  QObject::connect(&s, &DebugSession::paused, [&](const QString& r) { why = r; });
  s.run();
  ASSERT_TRUE(wait_paused(s));
  // The worker sets the state before it emits paused (a queued signal): the
  // state can be seen first, so wait for the report itself.
  ASSERT_TRUE(wait_for([&] { return !why.isEmpty(); })) << "no paused signal";
  ASSERT_TRUE(s.current());
  EXPECT_EQ(s.current()->node, "log");
  // The same report as run --check-finite: the node, the output, the inputs that fed it.
  EXPECT_TRUE(why.contains("first non-finite value (A): node 'log' (Log, graph main")) << why.toStdString();
  EXPECT_TRUE(why.contains("made output 'l' hold")) << why.toStdString();
  EXPECT_TRUE(why.contains("its inputs:")) << why.toStdString();
  s.cancel();
  ASSERT_TRUE(wait_finished(s));
}

TEST(DebugSession, DivergenceBreakpointFiresOnThePlantedFault) {
  auto model = chain_model();
  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine(), faulty_engine());
  s.set_inputs(InputSpec{7});
  s.set_break_on_divergence(true);
  ASSERT_TRUE(s.has_b());
  s.run();
  ASSERT_TRUE(wait_paused(s));
  auto cur = s.current();
  ASSERT_TRUE(cur);
  EXPECT_EQ(cur->node, "faulty");
  EXPECT_NE(cur->stop_reason.find("divergence in 'r'"), std::string::npos) << cur->stop_reason;
  ASSERT_TRUE(cur->outputs_b[0] && cur->diffs[0]);
  EXPECT_NEAR(cur->diffs[0]->max_abs, 0.25, 1e-6);
  // 'scale' before it agreed on both sides.
  auto first = s.record(0);
  ASSERT_TRUE(first && first->diffs[0]);
  EXPECT_TRUE(first->diffs[0]->within());
  s.set_break_on_divergence(false);
  s.run();
  ASSERT_TRUE(wait_finished(s));
  auto rep = s.report();
  ASSERT_TRUE(rep && rep->first_divergence);
  EXPECT_EQ(rep->nodes[*rep->first_divergence].node, "faulty");
  ASSERT_FALSE(rep->blame_order.empty());
  EXPECT_EQ(rep->nodes[rep->blame_order.front()].node, "faulty");

  // Export repro from the selected node writes a backend-style folder.
  QTemporaryDir dir;
  QString err;
  ReduceResult red = s.export_repro(1, std::filesystem::path(dir.path().toStdString()) / "repro", &err);
  EXPECT_TRUE(red.reproduced) << err.toStdString();
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir.path().toStdString()) / "repro" / "model.onnx"));
}

TEST(DebugSession, KernelErrorNamesTheNodeAndEndsTheRun) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{2}});
  b.node("Relu", {"x"}, {"r"}, "first");
  b.node("Sigmoid", {"r"}, {"y"}, "broken");
  b.output("y", DataType::Float, {int64_t{2}});
  auto model = load_shared(b.load());
  static KernelRegistry bad;
  if (bad.all().empty()) bad.add(KernelDef{"", "Sigmoid", 1, INT_MAX, "throws", throwing_sigmoid, nullptr});
  ReferenceOptions o;
  o.extra_kernels = &bad;
  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine(o));
  QString side, msg, final_msg;
  int index = -7;
  bool ok = true;
  QObject::connect(&s, &DebugSession::node_error, [&](const QString& sd, const QString&, int i, const QString& m) {
    side = sd;
    index = i;
    msg = m;
  });
  QObject::connect(&s, &DebugSession::finished, [&](bool k, const QString& m) {
    ok = k;
    final_msg = m;
  });
  s.run();
  ASSERT_TRUE(wait_finished(s));
  QCoreApplication::processEvents();
  EXPECT_FALSE(ok);
  EXPECT_EQ(side, "A");
  EXPECT_EQ(index, 1);
  EXPECT_TRUE(msg.contains("broken")) << msg.toStdString();
  EXPECT_TRUE(msg.contains("planted kernel failure")) << msg.toStdString();
  EXPECT_EQ(s.history_size(), 1u);  // the node before the failure is kept
}

TEST(DebugSession, BadInputsEndTheRunWithTheReason) {
  DebugSession s;
  s.set_model(sample_cnn());
  ASSERT_TRUE(s.set_engines("reference"));
  QString msg;
  bool ok = true;
  QObject::connect(&s, &DebugSession::finished, [&](bool k, const QString& m) {
    ok = k;
    msg = m;
  });
  s.run();  // no value for the symbolic dim 'batch'
  ASSERT_TRUE(wait_finished(s));
  QCoreApplication::processEvents();
  EXPECT_FALSE(ok);
  EXPECT_TRUE(msg.contains("batch")) << msg.toStdString();
  EXPECT_EQ(s.history_size(), 0u);
  EXPECT_FALSE(s.set_engines("no-such-engine"));
  EXPECT_TRUE(s.last_error().contains("no-such-engine"));
}

TEST(DebugSession, StepsIntoLoopBodiesWhenAsked) {
  LoadResult r = load_model_file(ONNXSCOPE_SOURCE_DIR "/resources/models/control_flow.onnx");
  ASSERT_TRUE(r.ok());
  auto model = load_shared(std::move(r));
  InputSpec spec;
  spec.seed = 3;
  // Three loop iterations: random int64 trip counts could be anything.
  Tensor trip = Tensor::zeros(DataType::Int64, {});
  trip.mutable_data<int64_t>()[0] = 3;
  spec.from_dump["trip"] = trip;
  for (bool into : {false, true}) {
    DebugSession s;
    s.set_model(model);
    s.set_engines(make_reference_engine());
    s.set_inputs(spec);
    s.set_step_into_subgraphs(into);
    s.run();
    ASSERT_TRUE(wait_finished(s));
    size_t body = 0, main = 0;
    std::set<int64_t> iterations;
    for (size_t i = 0; i < s.history_size(); ++i) {
      auto rec = s.record(i);
      if (rec->graph_path == "main") {
        ++main;
      } else {
        ++body;
        // The interpreter names a body by its node: "main//accumulate/Loop".
        if (rec->graph_path.ends_with("/accumulate/Loop")) iterations.insert(rec->iteration);
      }
    }
    EXPECT_EQ(main, model->graph.nodes.size());
    if (into) {
      // A breakpoint in the body, named the graph view's way, stops at iteration 0.
      DebugSession b;
      b.set_model(model);
      b.set_engines(make_reference_engine());
      b.set_inputs(spec);
      b.set_step_into_subgraphs(true);
      b.set_breakpoint("main//accumulate/Loop:body", 1, true);
      b.run();
      ASSERT_TRUE(wait_paused(b));
      EXPECT_TRUE(b.current()->graph_path.ends_with("/accumulate/Loop"));
      EXPECT_EQ(b.current()->node_index, 1u);
      EXPECT_EQ(b.current()->iteration, 0);
      b.run();  // the next iteration stops there again
      ASSERT_TRUE(wait_paused(b));
      EXPECT_EQ(b.current()->iteration, 1);
      b.cancel();
      ASSERT_TRUE(wait_finished(b));
    }
    if (!into) {
      EXPECT_EQ(body, 0u);
    } else {
      EXPECT_GT(body, 0u);
      EXPECT_EQ(iterations, (std::set<int64_t>{0, 1, 2})) << "one record per body node and iteration";
    }
  }
}

TEST(DebugSession, CancelStopsARunningWorker) {
  auto model = relu_chain(2000);  // ~10 s with the slow kernel
  DebugSession s;
  s.set_model(model);
  s.set_engines(slow_engine());
  QString msg;
  QObject::connect(&s, &DebugSession::finished, [&](bool, const QString& m) { msg = m; });
  s.run();
  ASSERT_TRUE(wait_for([&] { return s.history_size() >= 3; }));
  EXPECT_EQ(s.state(), SessionState::Running);
  EXPECT_FALSE(s.set_engines(make_reference_engine()));  // not while the worker uses them
  QElapsedTimer t;
  t.start();
  s.cancel();
  ASSERT_TRUE(wait_finished(s));
  EXPECT_LT(t.elapsed(), 2000);
  EXPECT_LT(s.history_size(), 2000u);
  QCoreApplication::processEvents();
  EXPECT_EQ(msg, "cancelled");
  // The UI thread stayed free: a paused session cancels too.
  s.step();
  ASSERT_TRUE(wait_paused(s));
  s.cancel();
  ASSERT_TRUE(wait_finished(s));
}

TEST(DebugSession, DestroyedMidRunStopsTheWorkerCleanly) {
  auto model = relu_chain(2000);
  for (bool paused : {false, true}) {
    auto s = std::make_unique<DebugSession>();
    s->set_model(model);
    s->set_engines(slow_engine());
    if (paused) s->step();
    else s->run();
    ASSERT_TRUE(wait_for([&] { return s->history_size() >= 1; }));
    QElapsedTimer t;
    t.start();
    s.reset();  // must cancel and join, not hang or crash
    EXPECT_LT(t.elapsed(), 2000);
    QCoreApplication::processEvents();  // signals queued before destruction are dropped
  }
}

TEST(DivergenceModel, RanksThePlantedNodeFirstAndGivesHeat) {
  auto model = chain_model();
  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine(), faulty_engine());
  s.run();
  ASSERT_TRUE(wait_finished(s));
  ASSERT_TRUE(s.report());
  onnxscope::viewer::DivergenceModel m;
  m.set_report(*s.report());
  using M = onnxscope::viewer::DivergenceModel;
  ASSERT_EQ(m.rowCount(), 4);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(m.node_index_of_row(r), r);  // topological order
  EXPECT_EQ(m.first_divergence_row(), 1);
  EXPECT_EQ(m.index(1, M::Node).data().toString(), "faulty");
  EXPECT_EQ(m.index(1, M::Status).data().toString(), "FIRST DIVERGENCE");
  EXPECT_EQ(m.index(0, M::Status).data().toString(), "ok");
  auto top = m.top_blamed(3);
  ASSERT_EQ(top.size(), 1u);  // only the fault introduces error
  EXPECT_EQ(top[0], 1);
  EXPECT_NEAR(m.metric(1, M::Metric::Introduced), 0.25, 1e-6);
  auto heat = m.heat(M::Metric::Introduced);
  EXPECT_NEAR(heat.value(1), 0.25, 1e-6);
  EXPECT_DOUBLE_EQ(heat.value(0), 0.0);
  EXPECT_DOUBLE_EQ(heat.value(3), 0.0);
  // Observed error reaches downstream nodes, so their max-abs heat is nonzero.
  EXPECT_GT(m.heat(M::Metric::MaxAbs).value(2), 0.0);
  // Sorted by the introduced column, descending, the planted node comes first.
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&m);
  proxy.setSortRole(M::SortRole);
  proxy.sort(M::Introduced, Qt::DescendingOrder);
  EXPECT_EQ(proxy.index(0, M::Node).data().toString(), "faulty");
}

// The float16 mean that overflows in one runtime: the overlay's table marks
// it as the first divergence with the inf counts, in the CLI's words, and the
// panel's summary says where the inf appeared.
TEST(DivergenceModel, Fp16OverflowIsTheFirstDivergenceInTheOverlay) {
  QTemporaryDir dir;
  const Fp16Overflow f = write_fp16_overflow(dir.path().toStdString());
  LoadResult lr = load_model_file(f.model);
  ASSERT_TRUE(lr.ok()) << dump(lr);
  auto model = load_shared(std::move(lr));
  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine());
  s.set_dump_b(f.overflow_dump);
  InputSpec spec;
  for (auto& e : read_dump(f.overflow_dump).inputs) spec.from_dump[e.name] = *e.data;
  s.set_inputs(spec);
  onnxscope::viewer::DivergencePanel panel(&s);
  s.run();
  ASSERT_TRUE(wait_finished(s));
  ASSERT_TRUE(wait_for([&] { return panel.model()->report().has_value(); }));
  using M = onnxscope::viewer::DivergenceModel;
  const M& m = *panel.model();
  ASSERT_EQ(m.rowCount(), 4);
  EXPECT_EQ(m.first_divergence_row(), 1);
  EXPECT_EQ(m.index(0, M::Status).data().toString(), "ok");
  EXPECT_EQ(m.index(1, M::Status).data().toString(), "FIRST DIVERGENCE");
  EXPECT_EQ(m.index(1, M::MaxAbs).data().toString(), "inf");
  EXPECT_EQ(m.index(1, M::Note).data().toString(), "inf A=0 B=1");
  EXPECT_EQ(m.index(2, M::Status).data().toString(), "DIVERGES");
  EXPECT_EQ(m.index(2, M::Note).data().toString(), "NaN A=0 B=1");
  EXPECT_TRUE(m.index(1, M::Node).data(Qt::ToolTipRole).toString().contains("B holds 1 inf where A is finite"));
  const QString summary = panel.summary_text();
  EXPECT_TRUE(summary.contains("first divergence at <b>node_mean</b> (ReduceMean): output 'm': B holds 1 inf where A is finite"))
      << summary.toStdString();
  EXPECT_TRUE(summary.contains("first non-finite value at <b>node_mean</b>")) << summary.toStdString();
}

TEST(DebugSession, DumpAsSideBAndItsInputs) {
  // Dump the faulty engine's run, then debug the good engine against that dump.
  auto model = chain_model();
  QTemporaryDir dir;
  const std::filesystem::path h5 = std::filesystem::path(dir.path().toStdString()) / "faulty.h5";
  NamedValues inputs = make_inputs(*model, InputSpec{11});
  {
    DumpWriter w(h5, DumpHeader{});
    for (const auto& [n, v] : inputs) w.write_input(n, v);
    DumpObserver obs(w);
    RunOptions ro;
    ro.observer = &obs;
    faulty_engine()->prepare(model)->run(inputs, ro);
    w.close({"y"});
  }
  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine());
  s.set_dump_b(h5);
  // The dump's own inputs feed A, so only the planted fault differs.
  InputSpec spec;
  for (auto& e : read_dump(h5).inputs) spec.from_dump[e.name] = *e.data;
  s.set_inputs(spec);
  EXPECT_TRUE(s.has_b());
  EXPECT_EQ(s.name_b(), "faulty.h5");
  s.set_break_on_divergence(true);
  s.run();
  ASSERT_TRUE(wait_paused(s));
  EXPECT_EQ(s.current()->node, "faulty");
  s.set_break_on_divergence(false);
  s.run();
  ASSERT_TRUE(wait_finished(s));
  auto rep = s.report();
  ASSERT_TRUE(rep && rep->first_divergence);
  EXPECT_EQ(rep->nodes[*rep->first_divergence].node, "faulty");
  EXPECT_TRUE(rep->blame_order.empty());  // a dump cannot re-run nodes: no blame
  QString err;
  EXPECT_FALSE(s.export_repro(1, std::filesystem::path(dir.path().toStdString()) / "r", &err).reproduced);
  EXPECT_FALSE(err.isEmpty());

  // A dump that is not HDF5 ends the run with an error naming it.
  std::ofstream(std::filesystem::path(dir.path().toStdString()) / "junk.h5") << "not hdf5";
  DebugSession bad;
  bad.set_model(model);
  bad.set_engines(make_reference_engine());
  bad.set_dump_b(std::filesystem::path(dir.path().toStdString()) / "junk.h5");
  QString side, msg;
  QObject::connect(&bad, &DebugSession::node_error, [&](const QString& sd, const QString&, int, const QString& m) {
    side = sd;
    msg = m;
  });
  bad.run();
  ASSERT_TRUE(wait_finished(bad));
  QCoreApplication::processEvents();
  EXPECT_EQ(side, "B");
  EXPECT_TRUE(msg.contains("junk.h5")) << msg.toStdString();
}

TEST(DivergencePanel, ColoursTheGraphAndExportsAReproFromTheSelectedNode) {
  auto model = chain_model();
  DebugSession s;
  s.set_model(model);
  s.set_engines(make_reference_engine(), faulty_engine());
  onnxscope::viewer::DivergencePanel panel(&s);
  QHash<int, double> heat;
  QString metric;
  QObject::connect(&panel, &onnxscope::viewer::DivergencePanel::heat_changed, [&](QHash<int, double> h, QString m) {
    heat = h;
    metric = m;
  });
  s.run();
  ASSERT_TRUE(wait_finished(s));
  ASSERT_TRUE(wait_for([&] { return !heat.isEmpty(); }));
  EXPECT_EQ(metric, "max |A-B|");
  EXPECT_EQ(heat.value(0), 0.0);
  EXPECT_GT(heat.value(1), 0.2);
  panel.set_metric(onnxscope::viewer::DivergenceModel::Metric::Introduced);
  EXPECT_EQ(metric, "introduced error");
  EXPECT_EQ(heat.value(2), 0.0);  // 'residual' inherits but introduces nothing
  panel.select_node(1);
  EXPECT_EQ(panel.selected_node(), 1);
  QTemporaryDir dir;
  bool done = false, ok = false;
  QObject::connect(&panel, &onnxscope::viewer::DivergencePanel::export_done, [&](bool k, QString) {
    done = true;
    ok = k;
  });
  panel.export_repro(panel.selected_node(), dir.filePath("test_repro"));
  ASSERT_TRUE(wait_for([&] { return done; }));
  EXPECT_TRUE(ok);
  EXPECT_TRUE(std::filesystem::exists(dir.filePath("test_repro/test_data_set_0/input_0.pb").toStdString()));
}

TEST(DebuggerPanel, ButtonsDriveTheSessionAsAPersonWould) {
  auto model = sample_cnn();
  onnxscope::viewer::DebuggerPanel p;
  p.set_model(model, "sample_cnn.onnx");
  p.show();
  auto button = [&](const QString& text) {
    for (auto* b : p.findChildren<QPushButton*>())
      if (b->text() == text) return b;
    ADD_FAILURE() << "no button " << text.toStdString();
    return static_cast<QPushButton*>(nullptr);
  };
  DebugSession* s = p.session();
  std::vector<int> current;
  QObject::connect(&p, &onnxscope::viewer::DebuggerPanel::current_node_changed,
                   [&](const QString&, int i) { current.push_back(i); });
  std::vector<std::pair<int, bool>> marks;
  QObject::connect(&p, &onnxscope::viewer::DebuggerPanel::breakpoint_changed,
                   [&](int i, bool on) { marks.emplace_back(i, on); });
  QTest::mouseClick(button("Step"), Qt::LeftButton);  // dims were defaulted to batch=1
  ASSERT_TRUE(wait_paused(*s));
  QTest::mouseClick(button("Step"), Qt::LeftButton);
  ASSERT_TRUE(wait_for([&] { return s->history_size() == 2 && s->state() == SessionState::Paused; }));
  EXPECT_EQ(s->cursor(), 1);
  ASSERT_TRUE(button("Step back")->isEnabled());
  QTest::mouseClick(button("Step back"), Qt::LeftButton);
  QCoreApplication::processEvents();
  EXPECT_EQ(s->cursor(), 0);
  EXPECT_EQ(current, (std::vector<int>{0, 1, 0}));
  p.on_node_selected("main", 5);
  QTest::mouseClick(button("Toggle breakpoint"), Qt::LeftButton);
  EXPECT_TRUE(s->has_breakpoint("main", 5));
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0], std::make_pair(5, true));
  QTest::mouseClick(button("Run"), Qt::LeftButton);
  ASSERT_TRUE(wait_for([&] { return s->history_size() == 6 && s->state() == SessionState::Paused; }));
  EXPECT_EQ(s->current()->node_index, 5u);
  ASSERT_TRUE(button("Cancel")->isEnabled());
  QTest::mouseClick(button("Cancel"), Qt::LeftButton);
  ASSERT_TRUE(wait_finished(*s));
}

TEST(MainWindowDebugging, DocksRunThePairAndStepFromTheWindow) {
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  bool loaded = false;
  QObject::connect(&w, &MainWindow::model_loaded, [&](bool ok) { loaded = ok; });
  w.open_model(ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx");
  ASSERT_TRUE(wait_for([&] { return loaded; }));
  ASSERT_TRUE(w.debugger_panel() && w.divergence_panel() && w.tensor_panel());
  // The symbolic dim got a default, so a plain run works: reference against cpu.
  EXPECT_EQ(apply_debug_actions(w, {{"reference", "cpu"}, -1}), "");
  const auto* dm = w.divergence_panel()->model();
  EXPECT_EQ(dm->rowCount(), static_cast<int>(w.model()->graph.nodes.size()));
  EXPECT_TRUE(dm->report().has_value());
  EXPECT_FALSE(w.tensor_panel()->current_name().isEmpty());
  EXPECT_TRUE(w.tensor_panel()->view_b()->isVisibleTo(w.tensor_panel()));  // A, B and B-A
  // Stepping: a fresh run stops after 3 nodes, the tensor dock shows node 2's output.
  EXPECT_EQ(apply_debug_actions(w, {{"reference"}, 3}), "");
  auto* s = w.debugger_panel()->session();
  EXPECT_EQ(s->state(), SessionState::Paused);
  ASSERT_TRUE(s->current());
  EXPECT_EQ(s->current()->node_index, 2u);
  EXPECT_EQ(w.tensor_panel()->current_name().toStdString(), s->current()->outputs.front().first);
  EXPECT_NE(apply_debug_actions(w, {{"nope"}, -1}), "");
  if (!qEnvironmentVariableIsEmpty("ONNXSCOPE_SCREENSHOT_DIR")) {
    EXPECT_TRUE(w.grab().save(qEnvironmentVariable("ONNXSCOPE_SCREENSHOT_DIR") + "/debugger_step.png"));
  }
}

TEST(MainWindowDebugging, AConformanceTestOpensWithItsInputFiles) {
  MainWindow w;
  w.show();
  bool loaded = false;
  QObject::connect(&w, &MainWindow::model_loaded, [&](bool ok) { loaded = ok; });
  // What the browser asks for when a test is opened: its model and input_K.pb files.
  emit w.conformance_browser()->open_model_requested(ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx",
                                                     {"/suite/test_x/test_data_set_0/input_0.pb"});
  ASSERT_TRUE(wait_for([&] { return loaded; }));
  EXPECT_EQ(w.debugger_panel()->input_files(), "image=/suite/test_x/test_data_set_0/input_0.pb");
}

TEST(MainWindowDebugging, ScreenshotCommandLineRunsTheDebugger) {
  QTemporaryDir dir;
  const std::string model = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";
  const std::string png = dir.filePath("diff.png").toStdString();
  auto gui = [](const std::string& args) {
    return std::system(("QT_QPA_PLATFORM=offscreen " ONNXSCOPE_GUI " " + args + " >/dev/null 2>&1").c_str());
  };
  int rc = gui("--screenshot " + png + " --engines reference,cpu " + model);
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  QImage img(QString::fromStdString(png));
  EXPECT_EQ(img.size(), QSize(1400, 900));
  rc = gui("--screenshot " + png + " --step 2 " + model);
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  rc = gui("--screenshot " + png + " --engines reference,nope " + model);
  EXPECT_EQ(WEXITSTATUS(rc), 1);  // bad input: unknown engine
  rc = gui("--step 2 " + model);
  EXPECT_EQ(WEXITSTATUS(rc), 2);  // usage: --step needs --screenshot
  rc = gui("--screenshot " + png + " --step x " + model);
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  // --inputs feeds the engines: float32 arrays for a float16 model, converted.
  const Fp16Overflow f = write_fp16_overflow(dir.path().toStdString());
  rc = gui("--screenshot " + png + " --engines reference,cpu --inputs " + f.inputs.string() + " " + f.model.string());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  rc = gui("--screenshot " + png + " --engines reference --inputs " + dir.filePath("none.npz").toStdString() + " " +
           f.model.string());
  EXPECT_EQ(WEXITSTATUS(rc), 1);  // an archive that is not there
  rc = gui("--screenshot " + png + " --inputs " + f.inputs.string() + " " + f.model.string());
  EXPECT_EQ(WEXITSTATUS(rc), 2);  // --inputs needs --engines or --step
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
