#include "graph/graph_panel.h"

#include <QCompleter>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QStringListModel>
#include <QToolButton>
#include <QVBoxLayout>

#include "onnxscope/ir.h"
#include "onnxscope/viewer/graph_view.h"

namespace onnxscope::viewer {

GraphPanel::GraphPanel(QWidget* parent) : QWidget(parent) {
  view_ = new GraphView(this);
  crumbs_ = new QWidget(this);
  crumbs_layout_ = new QHBoxLayout(crumbs_);
  crumbs_layout_->setContentsMargins(0, 0, 0, 0);
  crumbs_layout_->setSpacing(2);
  search_ = new QLineEdit(this);
  search_->setPlaceholderText("Search node, tensor or op type (Enter: next)");
  search_->setClearButtonEnabled(true);
  search_->setMinimumWidth(180);
  completions_ = new QStringListModel(this);
  auto* completer = new QCompleter(completions_, this);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setFilterMode(Qt::MatchContains);
  completer->setMaxVisibleItems(15);
  search_->setCompleter(completer);
  count_ = new QLabel(this);
  count_->setMinimumWidth(60);

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 4, 6, 4);
  bar->addWidget(crumbs_, 1);
  bar->addWidget(count_);
  bar->addWidget(search_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addLayout(bar);
  layout->addWidget(view_, 1);

  connect(search_, &QLineEdit::returnPressed, this, [this] { search(search_->text()); });
  connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& s) { search(s); });
  connect(view_, &GraphView::current_graph_changed, this, &GraphPanel::rebuild_breadcrumb);
  rebuild_breadcrumb();
}

void GraphPanel::set_model(std::shared_ptr<const Model> model) {
  hits_.clear();
  last_query_.clear();
  count_->clear();
  if (model) index_.build(*model);
  else index_ = {};
  completions_->setStringList(model ? index_.completions() : QStringList());
  view_->set_graph(std::move(model));
}

bool GraphPanel::search(const QString& query) {
  if (query != last_query_ || hits_.empty()) {
    hits_ = index_.find(query);
    last_query_ = query;
    hit_pos_ = 0;
  } else {
    hit_pos_ = (hit_pos_ + 1) % hits_.size();
  }
  if (hits_.empty()) {
    count_->setText("no match");
    return false;
  }
  count_->setText(QString("%1/%2").arg(hit_pos_ + 1).arg(hits_.size()));
  jump(hits_[hit_pos_]);
  return true;
}

void GraphPanel::jump(const graph::SearchHit& hit) {
  if (hit.kind == graph::SearchHit::Kind::Node) {
    view_->select_node(hit.graph_path, hit.node_index);
    return;
  }
  if (view_->current_graph_path() != hit.graph_path) view_->open_graph(hit.graph_path);
  view_->select_tensor(hit.tensor);
}

void GraphPanel::rebuild_breadcrumb() {
  while (QLayoutItem* item = crumbs_layout_->takeAt(0)) {
    if (QWidget* w = item->widget()) {  // may be the crumb whose click got us here
      w->hide();
      w->deleteLater();
    }
    delete item;
  }
  const QStringList crumbs = view_->breadcrumb();
  const QStringList paths = view_->breadcrumb_paths();
  for (int i = 0; i < crumbs.size(); ++i) {
    if (i > 0) crumbs_layout_->addWidget(new QLabel(">", crumbs_));
    auto* b = new QToolButton(crumbs_);
    b->setText(crumbs[i]);
    b->setAutoRaise(true);
    b->setEnabled(i + 1 < crumbs.size());
    const QString path = paths.value(i);
    // "node If_3" goes back to the graph holding that node and selects it.
    int node = -1;
    if (crumbs[i].startsWith("node "))
      for (const auto& hit : index_.find_node(crumbs[i].mid(5)))
        if (hit.graph_path == path) node = hit.node_index;
    connect(b, &QToolButton::clicked, this, [this, path, node] {
      if (node >= 0) view_->select_node(path, node);
      else view_->open_graph(path);
    });
    crumbs_layout_->addWidget(b);
  }
  crumbs_layout_->addStretch(1);
}

}  // namespace onnxscope::viewer
