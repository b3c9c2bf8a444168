// The graph view: a model's graph laid out by Graphviz (off the UI thread)
// and drawn in a QGraphicsScene, with pan/zoom/fit, a minimap, scope groups
// that collapse on large models, and nested views for If/Loop/Scan bodies and
// model-local functions.
//
// graph_path follows the loader's convention: "main" for the main graph,
// "main/NODE:ATTR" for a subgraph held by attribute ATTR of node NODE (label
// as Node::label), "main/NODE" for the body of a model-local function called
// by NODE. Node indices are positions in that graph's node list.
// set_current_node also takes the interpreter's NodeEvent paths, which name a
// body by its node only ("main/NODE").
#pragma once

#include <QGraphicsView>
#include <QHash>
#include <QString>
#include <QStringList>
#include <memory>

namespace onnxscope {
struct Model;
}

namespace onnxscope::viewer {

namespace graph {
class GraphScene;
class Minimap;
struct ViewState;
}

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;

  // Shows the model's main graph; layout runs on a worker thread
  // (layout_started / layout_progress / layout_finished). Null clears.
  void set_graph(std::shared_ptr<const onnxscope::Model> model);
  std::shared_ptr<const onnxscope::Model> model() const;

  // The graph shown now ("main", or a nested body) and the breadcrumb to it:
  // display labels such as {"main", "node If_3", "then_branch"}.
  QString current_graph_path() const;
  QStringList breadcrumb() const;
  bool is_laying_out() const;
  // Graph paths of the crumbs in breadcrumb() order (the node crumb maps to
  // the graph it sits in).
  QStringList breadcrumb_paths() const;

  // Graphs with more nodes than this open with their scope groups collapsed
  // (default 300); applies to graphs opened after the call.
  void set_grouping_threshold(int nodes);

  // Scope groups ("/encoder/layer.3/attention") collapsed right now.
  QStringList collapsed_groups() const;

  // The scene as drawn now (items for nodes, groups, edges), for tests and
  // for overlays built on top of the view.
  graph::GraphScene* graph_scene() const;

 signals:
  void node_selected(QString graph_path, int node_index);
  void tensor_selected(QString tensor_name);
  // A collapsed scope group was clicked (for the inspector).
  void group_selected(QString graph_path, QString scope, int node_count);
  void layout_started();
  void layout_progress(int percent, QString stage);
  // ok is false when the layout failed or was cancelled; message says why.
  void layout_finished(bool ok, QString message);
  void current_graph_changed(QString graph_path);

 public slots:
  // Centers and selects; expands the node's group and opens its nested view
  // when needed. Emits node_selected.
  void select_node(QString graph_path, int node_index);
  void select_tensor(QString tensor_name);
  // The node the debugger is at (outlined); -1 clears.
  void set_current_node(QString graph_path, int node_index);
  // Colours the main graph's nodes by a metric, with a legend; a collapsed
  // group takes its members' maximum.
  void set_node_heat(QHash<int, double> values, QString metric);
  void clear_heat();
  void set_breakpoint_marker(int node_index, bool on);

  // Navigation.
  void open_graph(QString graph_path);  // a nested body, or "main"
  void expand_group(QString scope);
  void collapse_group(QString scope);
  void cancel_layout();
  void zoom_in();
  void zoom_out();
  void fit();

 protected:
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void contextMenuEvent(QContextMenuEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  void scale_by(double factor);
  void place_minimap();
  void start_layout(bool keep_view);
  void on_layout_done();
  void apply_overlays();
  void on_selection();
  bool step_selection(bool up);
  void initial_view();
  void reveal(int node_index);

  std::unique_ptr<graph::ViewState> d_;
  graph::Minimap* minimap_;
};

}  // namespace onnxscope::viewer
