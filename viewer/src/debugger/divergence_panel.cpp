#include "onnxscope/viewer/divergence_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "onnxscope/diff_report.h"
#include "onnxscope/viewer/debug_session.h"

namespace onnxscope::viewer {

DivergencePanel::DivergencePanel(DebugSession* session, QWidget* parent)
    : QWidget(parent), session_(session), model_(new DivergenceModel(this)), proxy_(new QSortFilterProxyModel(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(DivergenceModel::SortRole);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  metric_ = new QComboBox(this);
  using M = DivergenceModel::Metric;
  for (M m : {M::MaxAbs, M::MaxRel, M::Cosine, M::Introduced})
    metric_->addItem(DivergenceModel::metric_name(m), static_cast<int>(m));
  first_ = new QPushButton("First divergence", this);
  export_ = new QPushButton("Export repro...", this);
  top->addWidget(new QLabel("Colour graph by", this));
  top->addWidget(metric_);
  top->addWidget(first_);
  top->addStretch();
  top->addWidget(export_);
  v->addLayout(top);
  summary_ = new QLabel("Run two engines (Debugger: engine A and side B) to see where they part ways", this);
  summary_->setWordWrap(true);
  v->addWidget(summary_);
  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(DivergenceModel::Index, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(DivergenceModel::Index, 40);
  table_->setColumnWidth(DivergenceModel::Node, 280);
  v->addWidget(table_, 3);
  v->addWidget(new QLabel("Top blamed nodes (error each introduces, re-run alone in B on A's inputs):", this));
  blamed_ = new QListWidget(this);
  v->addWidget(blamed_, 1);

  connect(metric_, &QComboBox::currentIndexChanged, this, &DivergencePanel::emit_heat);
  connect(first_, &QPushButton::clicked, this, [this] {
    const int row = model_->first_divergence_row();
    if (row < 0) return;
    select_node(model_->node_index_of_row(row));
    emit node_activated("main", model_->node_index_of_row(row));
  });
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    emit node_activated("main", model_->node_index_of_row(proxy_->mapToSource(i).row()));
  });
  connect(blamed_, &QListWidget::itemClicked, this, [this](QListWidgetItem* it) {
    const int node = it->data(Qt::UserRole).toInt();
    select_node(node);
    emit node_activated("main", node);
  });
  connect(export_, &QPushButton::clicked, this, &DivergencePanel::choose_export);
  connect(session_, &DebugSession::report_ready, this, &DivergencePanel::on_report);
  connect(&watcher_, &QFutureWatcher<std::pair<ReduceResult, QString>>::finished, this, [this] {
    auto [r, err] = watcher_.result();
    export_->setEnabled(true);
    QString msg = r.reproduced ? QString("wrote %1: %2 node(s), %3").arg(export_dir_).arg(r.nodes.size()).arg(QString::fromStdString(r.how))
                               : "nothing written: " + err;
    summary_->setText(msg);
    emit export_done(r.reproduced, msg);
  });
  first_->setEnabled(false);
  export_->setEnabled(false);
}

DivergencePanel::~DivergencePanel() { watcher_.waitForFinished(); }

DivergenceModel::Metric DivergencePanel::metric() const {
  return static_cast<DivergenceModel::Metric>(metric_->currentData().toInt());
}

void DivergencePanel::set_metric(DivergenceModel::Metric m) { metric_->setCurrentIndex(metric_->findData(static_cast<int>(m))); }

void DivergencePanel::on_report() {
  auto rep = session_->report();
  if (!rep) return;
  model_->set_report(*rep);
  const int first = model_->first_divergence_row();
  QString s = QString("A = %1, B = %2: ").arg(QString::fromStdString(rep->a), QString::fromStdString(rep->b));
  s += first >= 0 ? QString("first divergence at <b>%1</b> (%2): %3")
                        .arg(QString::fromStdString(rep->nodes[static_cast<size_t>(first)].node).toHtmlEscaped(),
                             QString::fromStdString(rep->nodes[static_cast<size_t>(first)].op_type),
                             QString::fromStdString(diff_divergence_detail(rep->nodes[static_cast<size_t>(first)]))
                                 .toHtmlEscaped())
                  : QString("every node agrees within the tolerance");
  if (rep->first_nonfinite) {
    const NodeDiff& n = rep->nodes[*rep->first_nonfinite];
    std::string counts;
    for (const auto& [name, d] : n.outputs)
      if (d.comparable && d.any_nonfinite()) counts += (counts.empty() ? "" : "; ") + name + ": " + nonfinite_counts_text(d);
    s += QString("<br>first non-finite value at <b>%1</b> (%2): %3")
             .arg(QString::fromStdString(n.node).toHtmlEscaped(), QString::fromStdString(n.op_type),
                  QString::fromStdString(counts).toHtmlEscaped());
  }
  summary_->setText(s);
  blamed_->clear();
  for (int node : model_->top_blamed(10)) {
    const NodeDiff& n = rep->nodes[static_cast<size_t>(node)];
    auto* it = new QListWidgetItem(QString("%1 (%2): introduced %3, observed %4")
                                       .arg(QString::fromStdString(n.node), QString::fromStdString(n.op_type))
                                       .arg(n.introduced_score, 0, 'g', 3)
                                       .arg(n.total_score, 0, 'g', 3),
                                   blamed_);
    it->setData(Qt::UserRole, node);
  }
  first_->setEnabled(first >= 0);
  export_->setEnabled(session_->has_b() && first >= 0);
  emit_heat();
}

void DivergencePanel::emit_heat() {
  if (!model_->report()) {
    emit heat_cleared();
    return;
  }
  emit heat_changed(model_->heat(metric()), DivergenceModel::metric_name(metric()));
}

QString DivergencePanel::summary_text() const { return summary_->text(); }

int DivergencePanel::selected_node() const {
  const auto rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return -1;
  return model_->node_index_of_row(proxy_->mapToSource(rows.front()).row());
}

void DivergencePanel::select_node(int node_index) {
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->node_index_of_row(r) == node_index) {
      const QModelIndex i = proxy_->mapFromSource(model_->index(r, 0));
      table_->selectRow(i.row());
      table_->scrollTo(i);
      return;
    }
}

void DivergencePanel::export_repro(int node_index, const QString& out_dir) {
  if (watcher_.isRunning() || node_index < 0) return;
  export_dir_ = out_dir;
  export_->setEnabled(false);
  summary_->setText("reducing around node #" + QString::number(node_index) + "...");
  DebugSession* s = session_;
  watcher_.setFuture(QtConcurrent::run([s, node_index, out_dir] {
    QString err;
    ReduceResult r = s->export_repro(static_cast<size_t>(node_index), out_dir.toStdString(), &err);
    return std::make_pair(r, err);
  }));
}

void DivergencePanel::choose_export() {
  int node = selected_node();
  if (node < 0) node = model_->node_index_of_row(model_->first_divergence_row());
  if (node < 0) return;
  const QString dir = QFileDialog::getExistingDirectory(this, "Folder for the repro (a new test_* folder goes inside)");
  if (dir.isEmpty()) return;
  QString name = "test_repro_" + QString::number(node);
  export_repro(node, dir + "/" + name);
}

}  // namespace onnxscope::viewer
