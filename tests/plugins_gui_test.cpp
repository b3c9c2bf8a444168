// The GUI with plugins (QT_QPA_PLATFORM=offscreen): ONNXSCOPE_PLUGIN_PATH is
// read when the Plugins menu is made, Load plugin... adds a plugin and lists
// it, a bad one is refused with its message, and the main window loads a
// model that uses a plugin operator with the plugin's shape function.
#include <gtest/gtest.h>

#include <QApplication>
#include <QMenuBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <fstream>

#include "model_builder.h"

#include "onnxscope/engines.h"
#include "onnxscope/plugin_abi.h"
#include "onnxscope/viewer/debug_session.h"
#include "onnxscope/viewer/debugger_panel.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/gui_engines.h"
#include "onnxscope/viewer/main_window.h"
#include "onnxscope/viewer/plugins_menu.h"

using namespace onnxscope;
using namespace onnxscope::viewer;
using namespace onnxscope::test;

namespace {

QStringList action_texts(const QMenu& m) {
  QStringList out;
  for (const QAction* a : m.actions()) out << a->text();
  return out;
}

PluginsMenu* plugins_menu_of(const MainWindow& w) {
  for (QAction* a : w.menuBar()->actions())
    if (auto* m = qobject_cast<PluginsMenu*>(a->menu())) return m;
  return nullptr;
}

}  // namespace

TEST(PluginsGui, EnvironmentPathIsLoadedWhenTheMenuIsMade) {
  // main() set ONNXSCOPE_PLUGIN_PATH to the fast_gelu example before any menu existed.
  PluginsMenu menu(nullptr);
  ASSERT_EQ(gui_plugins().plugins().size(), 1u) << menu.last_error().toStdString();
  EXPECT_EQ(gui_plugins().plugins()[0].name, "example_fast_gelu");
  EXPECT_TRUE(action_texts(menu).contains("example_fast_gelu 1.0")) << action_texts(menu).join(" | ").toStdString();
}

TEST(PluginsGui, LoadPluginListsItAndRefusesABadOne) {
  PluginsMenu menu(nullptr);
  QSignalSpy changed(&menu, &PluginsMenu::plugins_changed);
  EXPECT_TRUE(menu.load(ONNXSCOPE_PLUGIN_RMS_NORM, true)) << menu.last_error().toStdString();
  EXPECT_EQ(changed.count(), 1);
  EXPECT_TRUE(action_texts(menu).contains("example_rms_norm 1.0")) << action_texts(menu).join(" | ").toStdString();
  EXPECT_FALSE(menu.load(ONNXSCOPE_PLUGIN_BAD_ABI, true));
  EXPECT_TRUE(menu.last_error().contains(ONNXSCOPE_PLUGIN_BAD_ABI)) << menu.last_error().toStdString();
  EXPECT_TRUE(menu.last_error().contains("speaks version " + QString::number(ONNXSCOPE_PLUGIN_ABI_VERSION)))
      << menu.last_error().toStdString();
  EXPECT_EQ(changed.count(), 1);
}

TEST(PluginsGui, MainWindowLoadsAPluginModelWithItsShapes) {
  MainWindow w;
  ASSERT_NE(plugins_menu_of(w), nullptr);
  plugins_menu_of(w)->load(ONNXSCOPE_PLUGIN_RMS_NORM, true);  // already loaded by the test above, or now
  QSignalSpy loaded(&w, &MainWindow::model_loaded);
  w.open_model(ONNXSCOPE_SOURCE_DIR "/plugins/examples/rms_norm/rms_norm.onnx");
  ASSERT_TRUE(loaded.wait(30000));
  EXPECT_TRUE(loaded.takeFirst().at(0).toBool()) << w.load_errors().join("\n").toStdString();
  ASSERT_TRUE(w.model());
  const TypeInfo* n = w.model()->graph.type_of("n");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->to_string(), "float[batch,16]");
  // Engines the GUI makes (debugger, inspector) run the plugin kernel without being told.
  for (const char* engine : {"reference", "cpu"}) {
    auto e = make_engine(engine);
    ASSERT_TRUE(e);
    auto support = e->supports(*w.model());
    ASSERT_EQ(support.size(), 3u);
    EXPECT_TRUE(support[1].supported) << engine;
    EXPECT_EQ(support[1].detail, "plugin:example_rms_norm") << engine;
  }
}

TEST(PluginsGui, ACrashingPluginKernelCostsOneRunNotTheWindow) {
  set_engine_worker(ONNXSCOPE_WORKER);
  QTemporaryDir dir;
  ModelBuilder b(17);
  b.opset("com.test", 1);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{8}});
  b.node("Relu", {"x"}, {"a"}, "r");
  b.node("Crash", {"a"}, {"c"}, "bad", "com.test");
  b.node("Neg", {"c"}, {"y"}, "n");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{8}});
  const QString path = dir.filePath("crash.onnx");
  std::ofstream(path.toStdString(), std::ios::binary) << b.bytes();

  MainWindow w;
  ASSERT_TRUE(plugins_menu_of(w)->load(ONNXSCOPE_PLUGIN_CRASH, true)) << plugins_menu_of(w)->last_error().toStdString();
  QSignalSpy loaded(&w, &MainWindow::model_loaded);
  w.open_model(path);
  ASSERT_TRUE(loaded.wait(30000));
  ASSERT_TRUE(loaded.takeFirst().at(0).toBool()) << w.load_errors().join("\n").toStdString();
  QSignalSpy selected(w.graph_view(), &GraphView::node_selected);
  DebuggerPanel* panel = w.debugger_panel();
  ASSERT_TRUE(panel->choose_engines("cpu", ""));
  QSignalSpy finished(panel->session(), &DebugSession::finished);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second run gets a fresh worker
    panel->run();
    ASSERT_TRUE(finished.wait(60000));
    const QList<QVariant> f = finished.takeFirst();
    EXPECT_FALSE(f.at(0).toBool());
    EXPECT_TRUE(f.at(1).toString().contains("worker process")) << f.at(1).toString().toStdString();
    EXPECT_TRUE(f.at(1).toString().contains("'bad'")) << f.at(1).toString().toStdString();
    QCoreApplication::processEvents();
    ASSERT_FALSE(selected.isEmpty());  // the failing node is shown
    EXPECT_EQ(selected.last().at(1).toInt(), 1);
    EXPECT_TRUE(w.statusBar()->currentMessage().contains("failed")) << w.statusBar()->currentMessage().toStdString();
  }
  // The window goes on: another model runs to the end.
  w.open_model(ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx");
  ASSERT_TRUE(loaded.wait(30000));
  ASSERT_TRUE(panel->choose_engines("cpu", ""));
  panel->run();
  ASSERT_TRUE(finished.wait(60000));
  EXPECT_TRUE(finished.takeFirst().at(0).toBool());
  set_engine_worker({});
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  qputenv("ONNXSCOPE_PLUGIN_PATH", ONNXSCOPE_PLUGIN_FAST_GELU);
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
