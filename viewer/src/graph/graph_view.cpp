#include "onnxscope/viewer/graph_view.h"

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QFutureWatcher>
#include <QGraphicsSimpleTextItem>
#include <QKeyEvent>
#include <QMenu>
#include <QScrollBar>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>

#include "graph/graph_paths.h"
#include "graph/graph_scene.h"
#include "graph/heat_legend.h"
#include "graph/minimap.h"
#include "onnxscope/ir.h"

namespace onnxscope::viewer {

namespace graph {

// One layout's output, made on a worker thread.
struct Prepared {
  QString path;
  VisibleGraph vg;
  LayoutResult layout;
};

struct ViewState {
  std::shared_ptr<const Model> model;
  std::optional<GraphRef> current;
  QHash<QString, GroupingState> grouping;  // per graph path
  int grouping_threshold = 300;
  GraphScene* scene = nullptr;
  QGraphicsScene* placeholder = nullptr;
  QFutureWatcher<Prepared> watcher;
  QList<QFuture<Prepared>> inflight;  // waited for on destruction
  std::shared_ptr<std::atomic<bool>> cancel;
  bool in_flight = false;  // from start_layout until its result is handled
  bool keep_view = false;
  // Applied when the layout in flight lands.
  std::optional<std::pair<QString, int>> pending_select;
  int pending_center_node = -1;
  QString pending_tensor;
  // Overlays, re-applied to every new scene.
  QHash<int, double> heat;
  QString heat_metric;
  QString current_path;
  int current_node = -1;
  QSet<int> breakpoints;
  HeatLegend* legend = nullptr;
};

namespace {

Prepared prepare(std::shared_ptr<const Model> model, GraphRef ref, GroupingState gs,
                 std::shared_ptr<std::atomic<bool>> cancel, GraphView* view) {
  Prepared out;
  out.path = ref.path;
  emit view->layout_progress(5, "grouping nodes");
  out.vg = build_visible_graph(*model, *ref.graph, gs, ref.outer);
  measure_boxes(out.vg);
  if (cancel->load()) {
    out.layout.error = "cancelled";
    return out;
  }
  emit view->layout_progress(20, QString("laying out %1 boxes").arg(out.vg.boxes.size()));
  out.layout = GraphLayout::run(out.vg, cancel.get());
  emit view->layout_progress(90, "drawing");
  return out;
}

// The engine's interpreter names a body by its node only ("main/If_3");
// the view's paths also name the attribute ("main/If_3:then_branch").
QString without_attributes(const QString& path) {
  QString out;
  for (const QString& part : path.split('/')) {
    if (!out.isEmpty()) out += '/';
    const int c = part.lastIndexOf(':');
    out += c < 0 ? part : part.left(c);
  }
  return out;
}

bool same_graph(const QString& view_path, const QString& engine_path) {
  return view_path == engine_path || without_attributes(view_path) == engine_path;
}

constexpr double kMinScale = 0.02, kMaxScale = 4.0;

}  // namespace

}  // namespace graph

using namespace graph;

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent), d_(std::make_unique<ViewState>()) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setBackgroundBrush(QColor(0xfb, 0xfb, 0xfc));
  setFocusPolicy(Qt::StrongFocus);
  d_->placeholder = new QGraphicsScene(this);
  auto* hint = d_->placeholder->addSimpleText("Open a model (File > Open, or drop an .onnx file here)");
  hint->setBrush(QColor(0x70, 0x70, 0x70));
  setScene(d_->placeholder);
  minimap_ = new Minimap(this, this);
  minimap_->hide();
  d_->legend = new HeatLegend(viewport());
  d_->legend->move(8, 8);
  d_->legend->hide();
  connect(&d_->watcher, &QFutureWatcher<Prepared>::finished, this, &GraphView::on_layout_done);
}

GraphView::~GraphView() {
  if (d_->cancel) d_->cancel->store(true);
  for (auto& f : d_->inflight) f.waitForFinished();
  // Deleting selected items emits selectionChanged: not into a half-destroyed view.
  setScene(nullptr);
  minimap_->setScene(nullptr);
  if (d_->scene) {
    d_->scene->disconnect(this);
    delete d_->scene;
  }
}

GraphScene* GraphView::graph_scene() const { return d_->scene; }
std::shared_ptr<const Model> GraphView::model() const { return d_->model; }
QString GraphView::current_graph_path() const { return d_->current ? d_->current->path : QString(); }
QStringList GraphView::breadcrumb() const { return d_->current ? d_->current->crumbs : QStringList(); }
QStringList GraphView::breadcrumb_paths() const { return d_->current ? d_->current->crumb_paths : QStringList(); }
bool GraphView::is_laying_out() const { return d_->in_flight; }

QStringList GraphView::collapsed_groups() const {
  if (!d_->current) return {};
  QStringList out = d_->grouping.value(d_->current->path).collapsed.values();
  out.sort();
  return out;
}

void GraphView::set_grouping_threshold(int nodes) { d_->grouping_threshold = std::max(0, nodes); }

void GraphView::set_graph(std::shared_ptr<const Model> model) {
  cancel_layout();
  d_->model = std::move(model);
  d_->current.reset();
  d_->grouping.clear();
  d_->pending_select.reset();
  d_->pending_center_node = -1;
  d_->pending_tensor.clear();
  d_->heat.clear();
  d_->current_node = -1;
  d_->breakpoints.clear();
  d_->legend->hide();
  setScene(d_->placeholder);
  minimap_->setScene(nullptr);
  minimap_->hide();
  if (d_->scene) {
    d_->scene->disconnect(this);
    d_->scene->deleteLater();
  }
  d_->scene = nullptr;
  if (d_->model) open_graph("main");
}

void GraphView::open_graph(QString graph_path) {
  if (!d_->model) return;
  auto ref = resolve_graph(*d_->model, graph_path);
  if (!ref) {
    emit layout_finished(false, "no graph at " + graph_path);
    return;
  }
  d_->current = std::move(*ref);
  if (!d_->grouping.contains(d_->current->path))
    d_->grouping.insert(d_->current->path, default_grouping(*d_->current->graph, d_->grouping_threshold));
  emit current_graph_changed(d_->current->path);
  start_layout(false);
}

void GraphView::start_layout(bool keep_view) {
  if (!d_->model || !d_->current) return;
  if (d_->cancel) d_->cancel->store(true);  // the layout in flight is dropped
  d_->cancel = std::make_shared<std::atomic<bool>>(false);
  d_->keep_view = keep_view && d_->scene && d_->scene->graph_path() == d_->current->path;
  for (auto it = d_->inflight.begin(); it != d_->inflight.end();)
    it = it->isFinished() ? d_->inflight.erase(it) : std::next(it);
  d_->in_flight = true;
  emit layout_started();
  auto future = QtConcurrent::run(prepare, d_->model, *d_->current, d_->grouping.value(d_->current->path),
                                  d_->cancel, this);
  d_->inflight.push_back(future);
  d_->watcher.setFuture(future);
}

void GraphView::cancel_layout() {
  if (!d_->in_flight) return;
  d_->in_flight = false;
  if (d_->cancel) d_->cancel->store(true);
  // The worker cannot stop Graphviz midway; its result is dropped on arrival.
  d_->watcher.disconnect(this);
  d_->watcher.setFuture(QFuture<Prepared>());
  connect(&d_->watcher, &QFutureWatcher<Prepared>::finished, this, &GraphView::on_layout_done);
  d_->pending_select.reset();
  emit layout_finished(false, "cancelled");
}

void GraphView::on_layout_done() {
  if (d_->watcher.future().isCanceled() || d_->watcher.future().resultCount() == 0) return;
  Prepared r = d_->watcher.result();
  if (!d_->current || r.path != d_->current->path) return;  // superseded
  d_->in_flight = false;
  if (!r.layout.ok) {
    emit layout_finished(false, r.layout.error);
    return;
  }
  const QTransform old_transform = transform();
  const QPointF old_center = mapToScene(viewport()->rect().center());
  const size_t boxes = r.vg.boxes.size();
  auto* s = new GraphScene(r.path, std::move(r.vg), r.layout, this);
  connect(s, &QGraphicsScene::selectionChanged, this, &GraphView::on_selection);
  setScene(s);
  minimap_->setScene(s);
  minimap_->show();
  if (d_->scene) {
    d_->scene->disconnect(this);
    d_->scene->deleteLater();
  }
  d_->scene = s;
  apply_overlays();
  if (d_->keep_view) {
    setTransform(old_transform);
    centerOn(old_center);
  } else {
    initial_view();
  }
  if (d_->pending_center_node >= 0) {
    if (BoxItem* b = s->item_for_node(d_->pending_center_node)) centerOn(b);
    d_->pending_center_node = -1;
  }
  place_minimap();
  minimap_->refresh();
  const QString msg = QString("%1: %2 boxes laid out in %3 s")
                          .arg(r.path)
                          .arg(boxes)
                          .arg(r.layout.seconds, 0, 'f', 2);
  emit layout_finished(true, msg);
  if (auto p = std::exchange(d_->pending_select, std::nullopt)) select_node(p->first, p->second);
  if (!d_->pending_tensor.isEmpty()) select_tensor(std::exchange(d_->pending_tensor, QString()));
}

void GraphView::initial_view() {
  fit();
  // Too small to read: start at a legible zoom on the graph's inputs instead;
  // the minimap shows the rest.
  if (transform().m11() < 0.55 && scene()) {
    setTransform(QTransform::fromScale(0.9, 0.9));
    const QRectF r = scene()->sceneRect();
    const QRectF vis = mapToScene(viewport()->rect()).boundingRect();
    double x = r.center().x();  // the top box's column: where reading starts
    if (d_->scene && !d_->scene->box_items().empty()) {
      const auto* top = *std::min_element(d_->scene->box_items().begin(), d_->scene->box_items().end(),
                                          [](auto* a, auto* b) { return a->pos().y() < b->pos().y(); });
      x = top->pos().x();
    }
    centerOn(x, r.top() + vis.height() / 2);
  }
}

void GraphView::apply_overlays() {
  GraphScene* s = d_->scene;
  if (!s) return;
  const bool main = s->graph_path() == "main";
  s->set_heat(main ? d_->heat : QHash<int, double>());
  d_->legend->setVisible(main && !d_->heat.isEmpty());
  s->set_current_node(same_graph(s->graph_path(), d_->current_path) ? d_->current_node : -1);
  if (main)
    for (int n : d_->breakpoints) s->set_breakpoint(n, true);
}

void GraphView::on_selection() {
  GraphScene* s = d_->scene;
  if (!s) return;
  const auto items = s->selectedItems();
  if (items.size() != 1) return;
  QGraphicsItem* it = items.front();
  if (it->type() == kBoxItem) {
    const graph::Box& b = static_cast<BoxItem*>(it)->data();
    switch (b.kind) {
      case graph::Box::Kind::Node: emit node_selected(s->graph_path(), b.node_index); break;
      case graph::Box::Kind::Group: emit group_selected(s->graph_path(), b.scope, static_cast<int>(b.members.size())); break;
      default: emit tensor_selected(b.tensor); break;
    }
  } else if (it->type() == kEdgeItem) {
    emit tensor_selected(static_cast<EdgeItem*>(it)->tensor());
  }
}

void GraphView::reveal(int node_index) {
  const Graph& g = *d_->current->graph;
  GroupingState& gs = d_->grouping[d_->current->path];
  for (QString grp; !(grp = hiding_group(gs, g, node_index)).isEmpty();) expand_scope(g, gs, grp);
}

void GraphView::select_node(QString graph_path, int node_index) {
  if (!d_->model) return;
  if (!d_->current || graph_path != d_->current->path) {
    d_->pending_select = {graph_path, node_index};
    open_graph(graph_path);
    return;
  }
  const Graph& g = *d_->current->graph;
  if (node_index < 0 || node_index >= static_cast<int>(g.nodes.size())) return;
  if (!hiding_group(d_->grouping.value(graph_path), g, node_index).isEmpty()) {
    reveal(node_index);
    d_->pending_select = {graph_path, node_index};
    start_layout(true);
    return;
  }
  if (is_laying_out() || !d_->scene) {
    d_->pending_select = {graph_path, node_index};
    return;
  }
  d_->scene->clearSelection();
  BoxItem* item = d_->scene->item_for_node(node_index);
  if (!item) {  // a folded Constant: nothing to draw, still inspectable
    emit node_selected(graph_path, node_index);
    return;
  }
  item->setSelected(true);  // emits node_selected through on_selection
  if (transform().m11() < 0.8) setTransform(QTransform::fromScale(1.0, 1.0));
  centerOn(item);
  minimap_->refresh();
}

void GraphView::select_tensor(QString tensor_name) {
  if (!d_->model || !d_->current) return;
  if (is_laying_out()) {
    d_->pending_tensor = tensor_name;
    return;
  }
  const Graph& g = *d_->current->graph;
  const std::string name = tensor_name.toStdString();
  int producer = -1, consumer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& o : g.nodes[i].outputs)
      if (o == name) producer = static_cast<int>(i);
    if (consumer < 0)
      for (const auto& in : g.nodes[i].inputs)
        if (in == name) consumer = static_cast<int>(i);
  }
  GraphScene* s = d_->scene;
  if (BoxItem* io = s ? s->item_for_io(tensor_name) : nullptr) {
    s->clearSelection();
    io->setSelected(true);
    centerOn(io);
    return;
  }
  const int node = producer >= 0 ? producer : consumer;
  if (node < 0) return;
  if (!hiding_group(d_->grouping.value(d_->current->path), g, node).isEmpty()) {
    reveal(node);
    d_->pending_tensor = tensor_name;
    start_layout(true);
    return;
  }
  auto edges = s ? s->items_for_tensor(tensor_name) : std::vector<EdgeItem*>{};
  if (!edges.empty()) {
    s->clearSelection();
    edges.front()->setSelected(true);  // emits tensor_selected
    centerOn(edges.front());
    return;
  }
  select_node(d_->current->path, node);
  emit tensor_selected(tensor_name);
}

void GraphView::set_current_node(QString graph_path, int node_index) {
  d_->current_path = graph_path;
  d_->current_node = node_index;
  if (!d_->scene) return;
  const bool here = same_graph(d_->scene->graph_path(), graph_path);
  d_->scene->set_current_node(here ? node_index : -1);
  // Follow the debugger: scroll the node (or its group) into view.
  if (BoxItem* b = here ? d_->scene->item_for_node(node_index) : nullptr) ensureVisible(b, 60, 60);
}

void GraphView::set_node_heat(QHash<int, double> values, QString metric) {
  d_->heat = std::move(values);
  d_->heat_metric = std::move(metric);
  double lo = INFINITY, hi = -INFINITY;
  for (double v : d_->heat)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (!std::isfinite(lo)) lo = hi = 0;
  d_->legend->set_range(d_->heat_metric, lo, hi, static_cast<int>(d_->heat.size()));
  apply_overlays();
}

void GraphView::clear_heat() { set_node_heat({}, {}); }

void GraphView::set_breakpoint_marker(int node_index, bool on) {
  if (on == d_->breakpoints.contains(node_index)) return;
  if (on) d_->breakpoints.insert(node_index);
  else d_->breakpoints.remove(node_index);
  if (d_->scene && d_->scene->graph_path() == "main") d_->scene->set_breakpoint(node_index, on);
}

void GraphView::expand_group(QString scope) {
  if (!d_->current) return;
  GroupingState& gs = d_->grouping[d_->current->path];
  if (!gs.collapsed.contains(scope)) return;
  const Graph& g = *d_->current->graph;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (hiding_group(gs, g, i) == scope) {
      d_->pending_center_node = static_cast<int>(i);
      break;
    }
  expand_scope(g, gs, scope);
  start_layout(true);
}

void GraphView::collapse_group(QString scope) {
  if (!d_->current) return;
  GroupingState& gs = d_->grouping[d_->current->path];
  gs.enabled = true;
  collapse_scope(gs, scope);
  start_layout(true);
}

void GraphView::scale_by(double factor) {
  const double s = transform().m11() * factor;
  if (s < kMinScale || s > kMaxScale) return;
  scale(factor, factor);
  minimap_->refresh();
}

void GraphView::zoom_in() { scale_by(1.25); }
void GraphView::zoom_out() { scale_by(0.8); }

void GraphView::fit() {
  if (!scene()) return;
  fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  if (transform().m11() > 1.5) setTransform(QTransform::fromScale(1.5, 1.5));
  minimap_->refresh();
}

void GraphView::wheelEvent(QWheelEvent* e) {
  scale_by(std::pow(1.0015, e->angleDelta().y()));
  e->accept();
}

void GraphView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoom_in(); return;
    case Qt::Key_Minus: zoom_out(); return;
    case Qt::Key_F: fit(); return;
    case Qt::Key_Backspace: {
      const QStringList paths = breadcrumb_paths();
      if (paths.size() >= 3) open_graph(paths[paths.size() - 3]);  // up past the node crumb
      return;
    }
    case Qt::Key_Up:
    case Qt::Key_Down:
      if (step_selection(e->key() == Qt::Key_Up)) return;
      [[fallthrough]];
    default: QGraphicsView::keyPressEvent(e);
  }
}

// Up: the node producing the selected node's first drawn input; Down: the
// first node reading its outputs. False when nothing is selected or there.
bool GraphView::step_selection(bool up) {
  GraphScene* s = d_->scene;
  if (!s || !d_->current || s->selectedItems().size() != 1 || s->selectedItems().front()->type() != kBoxItem) return false;
  const graph::Box& b = static_cast<BoxItem*>(s->selectedItems().front())->data();
  if (b.kind != graph::Box::Kind::Node) return false;
  const Graph& g = *d_->current->graph;
  const Node& n = g.nodes[b.node_index];
  if (up) {
    for (const auto& in : n.inputs) {
      if (in.empty() || s->visible().folded_values.contains(QString::fromStdString(in))) continue;
      for (int i = b.node_index - 1; i >= 0; --i)
        for (const auto& o : g.nodes[i].outputs)
          if (o == in) {
            select_node(d_->current->path, i);
            return true;
          }
    }
    return false;
  }
  for (size_t i = b.node_index + 1; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs)
      for (const auto& o : n.outputs)
        if (!o.empty() && in == o) {
          select_node(d_->current->path, static_cast<int>(i));
          return true;
        }
  return false;
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* e) {
  GraphScene* s = d_->scene;
  if (!s || !d_->current) return QGraphicsView::mouseDoubleClickEvent(e);
  const QPointF at = mapToScene(e->pos());
  for (QGraphicsItem* it : items(e->pos())) {
    if (it->type() == kBoxItem) {
      const graph::Box& b = static_cast<BoxItem*>(it)->data();
      if (b.kind == graph::Box::Kind::Group) return expand_group(b.scope);
      if (b.kind != graph::Box::Kind::Node || !b.has_body) return;
      auto bodies = nested_bodies(*d_->model, *d_->current->graph, d_->current->path, b.node_index);
      if (bodies.size() == 1) return open_graph(bodies.front().path);
      QMenu menu(this);
      for (const auto& body : bodies) menu.addAction(body.label, this, [this, p = body.path] { open_graph(p); });
      menu.exec(e->globalPosition().toPoint());
      return;
    }
    if (it->type() == kClusterItem && static_cast<ClusterItem*>(it)->in_title(at))
      return collapse_group(static_cast<ClusterItem*>(it)->scope());
  }
  QGraphicsView::mouseDoubleClickEvent(e);
}

// The same actions as double-clicks, findable: open a body, expand this
// group, collapse the scope around a node, copy a name; fit.
void GraphView::contextMenuEvent(QContextMenuEvent* e) {
  GraphScene* s = d_->scene;
  if (!s || !d_->current) return QGraphicsView::contextMenuEvent(e);
  QMenu menu(this);
  for (QGraphicsItem* it : items(e->pos())) {
    if (it->type() == kEdgeItem) {
      const QString tensor = static_cast<EdgeItem*>(it)->tensor();
      menu.addAction("Copy tensor name", this, [tensor] { QApplication::clipboard()->setText(tensor); });
      break;
    }
    if (it->type() != kBoxItem) continue;
    const graph::Box& b = static_cast<BoxItem*>(it)->data();
    if (b.kind == graph::Box::Kind::Group) {
      menu.addAction("Expand group " + b.scope, this, [this, sc = b.scope] { expand_group(sc); });
    } else if (b.kind == graph::Box::Kind::Node) {
      for (const auto& body : nested_bodies(*d_->model, *d_->current->graph, d_->current->path, b.node_index))
        menu.addAction("Open " + body.label, this, [this, p = body.path] { open_graph(p); });
      const QString name = QString::fromStdString(d_->current->graph->nodes[b.node_index].label(b.node_index));
      menu.addAction("Copy node name", this, [name] { QApplication::clipboard()->setText(name); });
    } else {
      menu.addAction("Copy tensor name", this, [t = b.tensor] { QApplication::clipboard()->setText(t); });
    }
    if (!b.cluster.isEmpty())
      menu.addAction("Collapse group " + b.cluster, this, [this, sc = b.cluster] { collapse_group(sc); });
    break;
  }
  if (!menu.isEmpty()) menu.addSeparator();
  menu.addAction("Fit graph (F)", this, &GraphView::fit);
  if (breadcrumb_paths().size() >= 3)
    menu.addAction("Up to " + breadcrumb_paths()[breadcrumb_paths().size() - 3] + " (Backspace)", this,
                   [this] { open_graph(breadcrumb_paths()[breadcrumb_paths().size() - 3]); });
  menu.exec(e->globalPos());
}

void GraphView::place_minimap() {
  const QRect vp = viewport()->geometry();
  const QRectF sr = scene() ? scene()->sceneRect() : QRectF(0, 0, 4, 3);
  const int max_w = std::clamp(vp.width() / 5, 120, 240), max_h = std::clamp(vp.height() / 4, 90, 200);
  const double aspect = sr.height() > 0 ? sr.width() / sr.height() : 1.0;
  int w = max_w, h = static_cast<int>(w / aspect);
  if (h > max_h) {
    h = max_h;
    w = std::max(40, static_cast<int>(h * aspect));
  }
  h = std::max(h, 40);
  minimap_->setGeometry(vp.right() - w - 8, vp.bottom() - h - 8, w, h);
}

void GraphView::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  place_minimap();
  minimap_->refresh();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  // Scrolling moves the viewport's child widgets with the picture: the legend stays in its corner.
  d_->legend->move(8, 8);
  minimap_->viewport()->update();
}

}  // namespace onnxscope::viewer
