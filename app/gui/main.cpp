// onnxscope-gui [MODEL]: the Qt desktop client.
// onnxscope-gui --screenshot out.png [--select NODE] [--size WxH] MODEL:
// opens the model, waits for load and layout, applies the actions, writes the
// main window to a PNG and exits (0 ok, 1 bad model or node, 2 usage).
// onnxscope-gui A.onnx --against B.onnx: the two models side by side
// (viewer/include/onnxscope/viewer/model_compare.h); with --screenshot too.
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTimer>
#include <cstdio>
#include <optional>

#include "omp_defaults.h"
#include "onnxscope/viewer/debug_actions.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/gui_engines.h"
#include "onnxscope/viewer/main_window.h"
#include "onnxscope/viewer/model_compare.h"

using onnxscope::viewer::GraphView;
using onnxscope::viewer::MainWindow;

namespace {

struct GuiOptions {
  QString model;
  QString screenshot;
  QString select;
  QSize size{1400, 900};
  QStringList engines;  // --engines a,b: run them side by side before the screenshot
  int step = -1;        // --step N: step N nodes instead
  QString inputs;       // --inputs F.npz (and NAME=FILE): what the engines run on
  QString dims;         // --dim NAME=V: symbolic dims
  QString against;      // --against B.onnx: compare MODEL with B side by side
  int group_above = -1;  // -1: the view's default
  bool timings = false;
  bool in_process = false;
};

[[noreturn]] void usage_error(const QString& message) {
  std::fprintf(stderr, "onnxscope-gui: %s\n", qPrintable(message));
  std::exit(2);
}

GuiOptions parse_options(QCommandLineParser& parser, const QApplication& app) {
  parser.setApplicationDescription("onnxscope: step through, inspect and diff ONNX models");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("model", "ONNX model to open", "[MODEL]");
  parser.addOption({"screenshot", "Render the main window to FILE (PNG) once loaded, then exit.", "FILE"});
  parser.addOption({"select", "With --screenshot: select the node named NODE first.", "NODE"});
  parser.addOption({"size", "With --screenshot: window size (default 1400x900).", "WxH"});
  parser.addOption({"timings", "With --screenshot: print load and layout times."});
  parser.addOption({"engines", "With --screenshot: run engines A,B (or one) in the debugger; with two the divergence overlay colours the graph.", "A,B"});
  parser.addOption({"step", "With --screenshot: step N nodes in the debugger and show the current node.", "N"});
  parser.addOption({"inputs", "With --engines or --step: inputs from an .npz archive (arrays by input name) or NAME=FILE.pb|.npy; "
                              "repeatable, else seeded random.", "FILE"});
  parser.addOption({"dim", "With --engines or --step: a symbolic input dimension, NAME=V (repeatable).", "NAME=V"});
  parser.addOption({"in-process", "Run engines inside the GUI process instead of an onnxscope-worker process each "
                                  "(a crashing kernel then takes the GUI down)."});
  parser.addOption({"group-above", "Collapse scope groups of graphs with more than N nodes (default 300).", "N"});
  parser.addOption({"against", "Open MODEL and B side by side: values paired, selection and scrolling in step, "
                               "unpaired nodes dimmed, the divergence as heat on both (--engines: the one engine both run on).",
                    "B"});
  parser.process(app);

  GuiOptions o;
  const QStringList pos = parser.positionalArguments();
  if (pos.size() > 1) usage_error("one model at a time");
  if (!pos.isEmpty()) o.model = pos.front();
  o.screenshot = parser.value("screenshot");
  o.select = parser.value("select");
  o.timings = parser.isSet("timings");
  o.in_process = parser.isSet("in-process");
  if (parser.isSet("size")) {
    const auto m = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value("size"));
    if (!m.hasMatch()) usage_error("--size wants WxH, e.g. 1600x1000");
    o.size = QSize(m.captured(1).toInt(), m.captured(2).toInt());
    if (o.size.width() < 200 || o.size.height() < 150 || o.size.width() > 8000 || o.size.height() > 8000)
      usage_error("--size between 200x150 and 8000x8000");
  }
  if (parser.isSet("group-above")) {
    bool ok = false;
    o.group_above = parser.value("group-above").toInt(&ok);
    if (!ok || o.group_above < 0) usage_error("--group-above wants a node count");
  }
  if (parser.isSet("engines")) o.engines = parser.value("engines").split(',', Qt::SkipEmptyParts);
  if (parser.isSet("engines") && (o.engines.isEmpty() || o.engines.size() > 2))
    usage_error("--engines wants one or two engine names, e.g. reference,cpu");
  if (parser.isSet("step")) {
    bool ok = false;
    o.step = parser.value("step").toInt(&ok);
    if (!ok || o.step < 0) usage_error("--step wants a node count");
  }
  if (o.screenshot.isEmpty() && !parser.isSet("against") && (parser.isSet("engines") || parser.isSet("step")))
    usage_error("--engines and --step go with --screenshot");
  o.inputs = parser.values("inputs").join(",");
  o.dims = parser.values("dim").join(",");
  if ((parser.isSet("inputs") || parser.isSet("dim")) && !parser.isSet("engines") && !parser.isSet("step") &&
      !parser.isSet("against"))
    usage_error("--inputs and --dim go with --engines or --step");
  if (!o.screenshot.isEmpty() && o.model.isEmpty()) usage_error("--screenshot needs a MODEL");
  o.against = parser.value("against");
  if (!o.against.isEmpty()) {
    if (o.model.isEmpty()) usage_error("--against needs a MODEL to compare with");
    if (o.step >= 0) usage_error("--step is for the debugger of one model, not --against");
    if (o.engines.size() > 1) usage_error("with --against, --engines is the one engine both models run on");
  }
  if (o.screenshot.isEmpty() && (!o.select.isEmpty() || parser.isSet("size") || o.timings))
    usage_error("--select, --size and --timings go with --screenshot");
  return o;
}

// Runs the event loop until `signal` fires or `ms` pass; false on timeout.
template <typename Sender, typename Signal>
bool wait_for(const Sender* sender, Signal signal, int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, [&] { loop.exit(1); });
  auto c = QObject::connect(sender, signal, &loop, [&] { loop.exit(0); });
  const int rc = loop.exec();
  QObject::disconnect(c);
  return rc == 0;
}

// Waits for the layout in flight: "" once the graph is drawn, else why not.
QString wait_for_layout(GraphView* view) {
  if (!view->is_laying_out()) return view->graph_scene() ? QString() : QString("the graph was not laid out");
  bool ok = false;
  QString message = "layout timed out";
  auto c = QObject::connect(view, &GraphView::layout_finished, [&](bool k, const QString& m) {
    ok = k;
    message = "layout failed: " + m;
  });
  const bool done = wait_for(view, &GraphView::layout_finished, 600000);
  QObject::disconnect(c);
  return done && ok ? QString() : message;
}

int fail(const QString& message) {
  std::fprintf(stderr, "onnxscope-gui: %s\n", qPrintable(message));
  return 1;
}

// Mean time to draw the graph viewport while panning (scrolled 40 px a
// frame) at the current zoom, and after fitting the whole graph in.
std::pair<double, double> frame_ms(GraphView* v) {
  constexpr int kFrames = 30;
  QElapsedTimer t;
  t.start();
  for (int i = 0; i < kFrames; ++i) {
    QScrollBar* bar = v->verticalScrollBar();
    bar->setValue(bar->value() + (i < kFrames / 2 ? 40 : -40));
    v->viewport()->grab();
  }
  const double pan = t.nsecsElapsed() / 1e6 / kFrames;
  v->fit();
  t.restart();
  for (int i = 0; i < kFrames; ++i) v->viewport()->grab();
  return {pan, t.nsecsElapsed() / 1e6 / kFrames};
}

int take_screenshot(MainWindow& window, const GuiOptions& o) {
  window.setMinimumSize(200, 150);  // the size asked for, even below the docks' preferred minimum
  window.resize(o.size);
  window.show();
  QElapsedTimer timer;
  timer.start();
  bool ok = false;
  auto c = QObject::connect(&window, &MainWindow::model_loaded, [&ok](bool v) { ok = v; });
  window.open_model(o.model);
  if (!wait_for(&window, &MainWindow::model_loaded, 600000)) return fail(o.model + ": loading timed out");
  QObject::disconnect(c);
  const double load_s = timer.nsecsElapsed() / 1e9;
  if (!ok || !window.model()) {
    QString why = window.load_errors().isEmpty() ? QString("not a readable ONNX model") : window.load_errors().front();
    return fail(o.model + ": " + why);
  }
  if (const QString why = wait_for_layout(window.graph_view()); !why.isEmpty())
    return fail(o.model + ": " + why);
  const double layout_s = timer.nsecsElapsed() / 1e9 - load_s;
  if (!o.select.isEmpty()) {
    if (!window.select_node_named(o.select)) return fail(o.model + ": no node named '" + o.select + "'");
    if (const QString why = wait_for_layout(window.graph_view()); !why.isEmpty())
      return fail(o.model + ": " + why);
  }
  if (!o.engines.isEmpty() || o.step >= 0) {
    const QString why = onnxscope::viewer::apply_debug_actions(window, {o.engines, o.step, o.inputs, o.dims});
    if (!why.isEmpty()) return fail(o.model + ": " + why);
    // Selecting the focus node may expand its group: wait for that layout too.
    if (const QString why = wait_for_layout(window.graph_view()); !why.isEmpty())
      return fail(o.model + ": " + why);
  }
  QApplication::processEvents();
  const QImage image = window.grab().toImage();
  if (!image.save(o.screenshot, "PNG")) return fail("cannot write " + o.screenshot);
  if (o.timings) {
    const double total_s = timer.nsecsElapsed() / 1e9;
    const auto [pan_ms, fit_ms] = frame_ms(window.graph_view());
    std::printf("load %.3f s, layout %.3f s, total %.3f s, pan_frame %.1f ms, fit_frame %.1f ms\n", load_s, layout_s,
                total_s, pan_ms, fit_ms);
  }
  return 0;
}

// --dim NAME=V and --inputs FILE.npz / NAME=FILE for the compare window.
onnxscope::InputSpec compare_inputs(const GuiOptions& o) {
  onnxscope::InputSpec spec;
  for (const QString& d : o.dims.split(',', Qt::SkipEmptyParts)) {
    const auto kv = d.split('=');
    bool ok = false;
    const qlonglong v = kv.size() == 2 ? kv[1].toLongLong(&ok) : 0;
    if (!ok) usage_error("--dim wants NAME=V, got '" + d + "'");
    spec.dims[kv[0].toStdString()] = v;
  }
  for (const QString& f : o.inputs.split(',', Qt::SkipEmptyParts)) {
    const auto kv = f.split('=');
    if (kv.size() == 2) spec.files[kv[0].toStdString()] = kv[1].toStdString();
    else spec.archives.push_back(f.toStdString());
  }
  return spec;
}

int compare(const GuiOptions& o, QApplication& app) {
  onnxscope::viewer::ModelCompareWindow window;
  const QString engine = o.engines.isEmpty() ? QString("reference") : o.engines.front();
  if (o.screenshot.isEmpty()) {
    window.show();
    window.open(o.model, o.against, engine, compare_inputs(o));
    return app.exec();
  }
  window.setMinimumSize(200, 150);
  window.resize(o.size);
  window.show();
  bool ok = false;
  QString message;
  auto c = QObject::connect(&window, &onnxscope::viewer::ModelCompareWindow::compared, [&](bool k, const QString& m) {
    ok = k;
    message = m;
  });
  window.open(o.model, o.against, engine, compare_inputs(o));
  if (!wait_for(&window, &onnxscope::viewer::ModelCompareWindow::compared, 600000)) return fail("comparing timed out");
  QObject::disconnect(c);
  if (!ok) return fail(message);
  for (GraphView* v : {window.view_a(), window.view_b()})
    if (const QString why = wait_for_layout(v); !why.isEmpty()) return fail(why);
  if (!o.select.isEmpty()) {
    const auto& nodes = window.view_a()->model()->graph.nodes;
    int found = -1;
    for (size_t i = 0; i < nodes.size() && found < 0; ++i)
      if (QString::fromStdString(nodes[i].label(i)) == o.select) found = static_cast<int>(i);
    if (found < 0) return fail(o.model + ": no node named '" + o.select + "'");
    window.view_a()->select_node("main", found);
    for (GraphView* v : {window.view_a(), window.view_b()})
      if (const QString why = wait_for_layout(v); !why.isEmpty()) return fail(why);
  }
  QApplication::processEvents();
  if (!window.grab().toImage().save(o.screenshot, "PNG")) return fail("cannot write " + o.screenshot);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  onnxscope::app::apply_openmp_defaults(argv, /*spin_when_idle=*/false);
  QApplication app(argc, argv);
  QApplication::setApplicationName("onnxscope");
  QApplication::setApplicationVersion(ONNXSCOPE_VERSION);
  QCommandLineParser parser;
  const GuiOptions options = parse_options(parser, app);

  if (options.in_process) {
    onnxscope::viewer::set_engine_worker({});
  } else if (onnxscope::viewer::engine_worker().empty()) {
    std::fprintf(stderr, "onnxscope-gui: onnxscope-worker was not found beside this program (or in $ONNXSCOPE_WORKER): "
                         "engines run inside the GUI process, where a crashing kernel takes the GUI down\n");
  }
  if (!options.against.isEmpty()) return compare(options, app);
  MainWindow window;
  if (options.group_above >= 0) window.graph_view()->set_grouping_threshold(options.group_above);
  if (!options.screenshot.isEmpty()) return take_screenshot(window, options);
  window.show();
  if (!options.model.isEmpty()) window.open_model(options.model);
  return app.exec();
}
