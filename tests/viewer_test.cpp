// The GUI under QT_QPA_PLATFORM=offscreen: a real window loads a model on its
// worker thread and shows its overview; a corrupt file shows its errors.
#include <gtest/gtest.h>

#include <QApplication>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <fstream>

#include "onnxscope/viewer/main_window.h"
#include "onnxscope/viewer/model_overview.h"

using onnxscope::viewer::MainWindow;

namespace {

// Text of the top-level row whose first column is `key`, second column.
QString section_value(const QAbstractItemModel& m, const QString& key) {
  for (int r = 0; r < m.rowCount(); ++r)
    if (m.index(r, 0).data().toString() == key) return m.index(r, 1).data().toString();
  return "<missing>";
}

bool load_and_wait(MainWindow& w, const QString& path, bool& ok) {
  QSignalSpy spy(&w, &MainWindow::model_loaded);
  w.open_model(path);
  EXPECT_TRUE(w.is_loading() || spy.count() == 1);
  if (!spy.wait(30000)) return false;
  ok = spy.takeFirst().at(0).toBool();
  return true;
}

}  // namespace

TEST(Viewer, OpensSampleModelOffTheUiThread) {
  MainWindow w;
  w.show();
  bool ok = false;
  ASSERT_TRUE(load_and_wait(w, ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx", ok));
  EXPECT_TRUE(ok);
  const auto& m = *w.overview();
  EXPECT_EQ(section_value(m, "Inputs"), "1");
  EXPECT_EQ(section_value(m, "Outputs"), "2");
  EXPECT_EQ(section_value(m, "Validation"), "0 error(s), 0 warning(s)");
  EXPECT_TRUE(w.windowTitle().contains("sample_cnn.onnx"));
  // For looking at the window by eye: ONNXSCOPE_SCREENSHOT_DIR=/tmp ctest -R Viewer
  if (!qEnvironmentVariableIsEmpty("ONNXSCOPE_SCREENSHOT_DIR")) {
    EXPECT_TRUE(w.grab().save(qEnvironmentVariable("ONNXSCOPE_SCREENSHOT_DIR") + "/viewer_sample.png"));
  }
}

TEST(Viewer, CorruptModelListsErrorsInsteadOfCrashing) {
  QTemporaryDir dir;
  const QString path = dir.filePath("broken.onnx");
  std::ofstream(path.toStdString(), std::ios::binary) << "\x08\x07\x3a\xff\xff\xff\x0f garbage";
  MainWindow w;
  w.show();
  bool ok = true;
  ASSERT_TRUE(load_and_wait(w, path, ok));
  EXPECT_FALSE(ok);
  EXPECT_TRUE(section_value(*w.overview(), "Validation").startsWith("1 error")) << section_value(*w.overview(), "Validation").toStdString();
}

// QApplication must outlive every widget and die before Qt's own globals, so
// it lives on main's stack rather than in a static.
int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
