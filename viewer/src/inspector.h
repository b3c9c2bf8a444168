// The inspector dock's contents: the selected node's operator, domain and
// opset, attributes, inputs and outputs with dtype and shape, previews of
// folded initializers and constants, doc string, and the kernel each engine
// would run it with (Engine::supports); or a selected tensor or scope group.
#pragma once

#include <QHash>
#include <QString>
#include <QWidget>
#include <map>
#include <memory>
#include <string>

class QTextBrowser;

namespace onnxscope {
struct Model;
struct Graph;
}  // namespace onnxscope

namespace onnxscope::viewer {

class Inspector : public QWidget {
  Q_OBJECT
 public:
  explicit Inspector(QWidget* parent = nullptr);
  void set_model(std::shared_ptr<const onnxscope::Model> model);
  // What is shown now, as plain text (tests, copy).
  QString text() const;

 signals:
  // A tensor or node name in the text was clicked.
  void tensor_clicked(QString tensor_name);

 public slots:
  void show_node(QString graph_path, int node_index);
  void show_tensor(QString tensor_name);
  void show_group(QString graph_path, QString scope, int node_count);
  void clear();

 private:
  void show_html(const QString& html);

  std::shared_ptr<const onnxscope::Model> model_;
  QString graph_path_ = "main";
  // engine name -> "main" node index -> kernel or why not
  std::map<std::string, std::map<size_t, QString>> kernels_;
  QTextBrowser* text_;
};

}  // namespace onnxscope::viewer
