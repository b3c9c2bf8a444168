// onnxscope-gui [MODEL]: the Qt desktop client.
#include <QApplication>
#include <QCommandLineParser>

#include "onnxscope/viewer/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("onnxscope");
  QApplication::setApplicationVersion(ONNXSCOPE_VERSION);
  QCommandLineParser parser;
  parser.setApplicationDescription("onnxscope: step through, inspect and diff ONNX models");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("model", "ONNX model to open", "[MODEL]");
  parser.process(app);

  onnxscope::viewer::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty()) window.open_model(parser.positionalArguments().front());
  return app.exec();
}
