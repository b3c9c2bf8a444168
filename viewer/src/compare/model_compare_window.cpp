// Two models side by side (onnxscope/viewer/model_compare.h).
#include "onnxscope/viewer/model_compare.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <cmath>

#include "graph/graph_items.h"
#include "graph/graph_panel.h"
#include "graph/graph_scene.h"
#include "onnxscope/loader.h"
#include "onnxscope/model_diff.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/gui_engines.h"

namespace onnxscope::viewer {

struct ModelCompareWindow::Result {
  bool ok = false;
  QString message;
  std::shared_ptr<const Model> a, b;
  GraphMatch match;
  DiffReport report;
  QHash<int, double> heat_a, heat_b;
  QHash<int, int> a_to_b, b_to_a;
};

namespace {

std::shared_ptr<const Model> load(const QString& path, QString& error) {
  LoadResult r = load_model_file(path.toStdString());
  if (!r.ok()) {
    error = path + ": " + QString::fromStdString(r.diagnostics.items().empty() ? std::string("cannot be read")
                                                                             : r.diagnostics.items().front().to_string());
    return nullptr;
  }
  return std::shared_ptr<const Model>(std::move(r.model));
}

std::map<std::string, int> producers(const Model& m) {
  std::map<std::string, int> out;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i)
    for (const auto& o : m.graph.nodes[i].outputs)
      if (!o.empty()) out[o] = static_cast<int>(i);
  return out;
}

QWidget* side(QLabel* title, GraphPanel* panel, QWidget* parent) {
  auto* w = new QWidget(parent);
  auto* l = new QVBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  title->setWordWrap(true);
  l->addWidget(title);
  l->addWidget(panel, 1);
  return w;
}

}  // namespace

ModelCompareWindow::ModelCompareWindow(QWidget* parent)
    : QMainWindow(parent), a_(new GraphPanel(this)), b_(new GraphPanel(this)), title_a_(new QLabel(this)),
      title_b_(new QLabel(this)), status_(new QLabel(this)), cancel_button_(new QPushButton("Cancel", this)) {
  setWindowTitle("onnxscope: compare two models");
  resize(1600, 900);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(side(title_a_, a_, split));
  split->addWidget(side(title_b_, b_, split));
  setCentralWidget(split);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(cancel_button_);
  cancel_button_->hide();
  connect(cancel_button_, &QPushButton::clicked, this, &ModelCompareWindow::cancel);
  // Selection in step: a node chosen on one side selects its partner on the other.
  connect(a_->view(), &GraphView::node_selected, this, [this](QString path, int n) {
    if (path == "main") follow(true, n);
  });
  connect(b_->view(), &GraphView::node_selected, this, [this](QString path, int n) {
    if (path == "main") follow(false, n);
  });
  // Scrolling in step: the node nearest the middle of one view is centred in the other.
  for (bool from_a : {true, false}) {
    GraphView* v = (from_a ? a_ : b_)->view();
    auto sync = [this, from_a] { follow_scroll(from_a); };
    connect(v->horizontalScrollBar(), &QScrollBar::valueChanged, this, sync);
    connect(v->verticalScrollBar(), &QScrollBar::valueChanged, this, sync);
  }
}

ModelCompareWindow::~ModelCompareWindow() {
  cancel();
  // The views outlive this object's members (QWidget deletes its children
  // after): a scroll they emit while going must not reach them.
  for (GraphPanel* p : {a_, b_}) {
    p->view()->horizontalScrollBar()->disconnect(this);
    p->view()->verticalScrollBar()->disconnect(this);
    p->view()->disconnect(this);
  }
}

GraphView* ModelCompareWindow::view_a() const { return a_->view(); }
GraphView* ModelCompareWindow::view_b() const { return b_->view(); }

void ModelCompareWindow::cancel() {
  if (cancelled_) cancelled_->store(true);
}

void ModelCompareWindow::open(const QString& a_path, const QString& b_path, const QString& engine, const InputSpec& spec) {
  cancel();
  cancelled_ = std::make_shared<std::atomic<bool>>(false);
  title_a_->setText("<b>A</b> " + a_path);
  title_b_->setText("<b>B</b> " + b_path);
  status_->setText("loading, pairing and running both models on " + engine + "...");
  cancel_button_->show();
  auto stop = cancelled_;
  auto* watcher = new QFutureWatcher<std::shared_ptr<Result>>(this);
  connect(watcher, &QFutureWatcher<std::shared_ptr<Result>>::finished, this, [this, watcher] {
    watcher->deleteLater();
    on_done(watcher->result());
  });
  watcher->setFuture(QtConcurrent::run([a_path, b_path, engine, spec, stop]() {
    auto r = std::make_shared<Result>();
    try {
      QString error;
      r->a = load(a_path, error);
      if (r->a) r->b = load(b_path, error);
      if (!r->a || !r->b) {
        r->message = error;
        return r;
      }
      // Symbolic dims nobody gave a value: 1 (what the window says in its status).
      InputSpec given = spec;
      for (const auto& in : r->a->graph.inputs)
        if (in.type.shape)
          for (const auto& d : *in.type.shape)
            if (d.is_symbolic() && !given.dims.count(d.param)) given.dims[d.param] = 1;
      const NamedValues inputs = make_inputs(*r->a, given);
      const NamedValues inputs_b = inputs_for_other(*r->a, *r->b, inputs);
      std::unique_ptr<Engine> e = make_gui_engine(engine.toStdString());
      if (!e) {
        r->message = "unknown engine '" + engine + "'";
        return r;
      }
      if (stop->load()) return r;
      const Capture ca = capture_run(*e, r->a, inputs);
      if (stop->load()) return r;
      const Capture cb = capture_run(*e, r->b, inputs_b);
      if (stop->load()) return r;
      MatchOptions mo;
      mo.a_values = &ca;
      mo.b_values = &cb;
      r->match = match_graphs(*r->a, *r->b, mo);
      DiffTolerance tol = default_tolerance();
      tol.quant_step = quantization_steps_against(*r->a, *r->b, r->match);
      r->report = diff_against(*r->a, r->match, ca, capture_in_a_names(r->match, cb), tol);
      const auto pa = producers(*r->a), pb = producers(*r->b);
      for (const auto& [ta, tb] : r->match.b_of) {
        auto x = pa.find(ta);
        auto y = pb.find(tb);
        if (x != pa.end() && y != pb.end() && !r->a_to_b.contains(x->second)) r->a_to_b[x->second] = y->second;
      }
      for (const auto& p : r->match.pairs) {
        auto x = pa.find(p.a);
        auto y = pb.find(p.b);
        if (x != pa.end() && y != pb.end() && !r->b_to_a.contains(y->second)) r->b_to_a[y->second] = x->second;
      }
      // Heat: each compared node's max|A-B|, on its partner too; nodes with nothing paired get none (dimmed).
      for (const auto& nd : r->report.nodes) {
        if (nd.outputs.empty()) continue;
        const double v = nd.total_score;
        const int n = static_cast<int>(nd.node_index);
        r->heat_a[n] = v;
        if (auto it = r->a_to_b.find(n); it != r->a_to_b.end())
          r->heat_b[it.value()] = std::max(r->heat_b.value(it.value(), 0.0), v);
      }
      for (auto it = r->b_to_a.begin(); it != r->b_to_a.end(); ++it)
        if (!r->heat_b.contains(it.key()) && r->heat_a.contains(it.value())) r->heat_b[it.key()] = r->heat_a[it.value()];
      r->ok = true;
    } catch (const std::exception& ex) {
      r->message = QString::fromStdString(ex.what());
    }
    return r;
  }));
}

void ModelCompareWindow::on_done(std::shared_ptr<Result> r) {
  cancel_button_->hide();
  if (!r->ok) {
    const QString message = r->message.isEmpty() ? QString("cancelled") : r->message;
    status_->setText(message);
    emit compared(false, message);
    return;
  }
  match_ = std::make_unique<GraphMatch>(std::move(r->match));
  report_ = std::make_unique<DiffReport>(std::move(r->report));
  a_to_b_ = r->a_to_b;
  b_to_a_ = r->b_to_a;
  a_->set_model(r->a);
  b_->set_model(r->b);
  a_->view()->set_node_heat(r->heat_a, "max|A-B|");
  b_->view()->set_node_heat(r->heat_b, "max|A-B| (A's partner)");
  QString status = QString::fromStdString(match_->summary());
  if (report_->first_divergence) {
    const NodeDiff& n = report_->nodes[*report_->first_divergence];
    status += QString(" | first divergence: '%1' (%2)").arg(QString::fromStdString(n.node), QString::fromStdString(n.op_type));
  } else {
    status += " | no divergence";
  }
  status_->setText(status);
  emit compared(true, status);
}

void ModelCompareWindow::follow(bool from_a, int node) {
  if (syncing_) return;
  const int partner = from_a ? partner_in_b(node) : partner_in_a(node);
  if (partner < 0) return;
  syncing_ = true;
  (from_a ? b_ : a_)->view()->select_node("main", partner);
  syncing_ = false;
}

void ModelCompareWindow::follow_scroll(bool from_a) {
  if (syncing_) return;
  GraphView* v = (from_a ? a_ : b_)->view();
  GraphView* w = (from_a ? b_ : a_)->view();
  graph::GraphScene* s = v->graph_scene();
  graph::GraphScene* t = w->graph_scene();
  if (!s || !t || s->graph_path() != "main" || t->graph_path() != "main") return;
  const QPointF middle = v->mapToScene(v->viewport()->rect().center());
  int best = -1;
  double best_d = INFINITY;
  for (graph::BoxItem* box : s->box_items()) {
    const graph::Box& b = box->data();
    if (b.kind != graph::Box::Kind::Node) continue;
    const int partner = from_a ? partner_in_b(b.node_index) : partner_in_a(b.node_index);
    if (partner < 0) continue;
    const QPointF d = box->sceneBoundingRect().center() - middle;
    const double dist = d.x() * d.x() + d.y() * d.y();
    if (dist < best_d) {
      best_d = dist;
      best = partner;
    }
  }
  if (best < 0) return;
  if (graph::BoxItem* item = t->item_for_node(best)) {
    syncing_ = true;
    w->centerOn(item);
    syncing_ = false;
  }
}

}  // namespace onnxscope::viewer
