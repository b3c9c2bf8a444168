// The graph area of the main window: breadcrumb bar (main > node If_3 >
// then_branch), search box with completer and jump-to, and the GraphView.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "graph/graph_search.h"

class QLineEdit;
class QLabel;
class QHBoxLayout;
class QStringListModel;

namespace onnxscope {
struct Model;
}

namespace onnxscope::viewer {

class GraphView;

class GraphPanel : public QWidget {
  Q_OBJECT
 public:
  explicit GraphPanel(QWidget* parent = nullptr);
  GraphView* view() const { return view_; }
  QLineEdit* search_box() const { return search_; }
  void set_model(std::shared_ptr<const onnxscope::Model> model);
  // Jumps to the first hit, or the next one when the query repeats.
  // False when nothing matches.
  bool search(const QString& query);
  const std::vector<graph::SearchHit>& hits() const { return hits_; }
  const graph::GraphSearch& index() const { return index_; }

 private:
  void rebuild_breadcrumb();
  void jump(const graph::SearchHit& hit);

  GraphView* view_;
  QWidget* crumbs_;
  QHBoxLayout* crumbs_layout_;
  QLineEdit* search_;
  QLabel* count_;
  QStringListModel* completions_;
  graph::GraphSearch index_;
  std::vector<graph::SearchHit> hits_;
  QString last_query_;
  size_t hit_pos_ = 0;
};

}  // namespace onnxscope::viewer
