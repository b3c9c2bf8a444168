#include "onnxscope/viewer/divergence_model.h"

#include <QBrush>
#include <QColor>
#include <algorithm>
#include <cmath>

#include "onnxscope/diff_report.h"

namespace onnxscope::viewer {

namespace {
QString num(double v) {
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "nan";
  return QString::number(v, 'g', 3);
}
}  // namespace

DivergenceModel::DivergenceModel(QObject* parent) : QAbstractTableModel(parent) {}

void DivergenceModel::set_report(DiffReport report) {
  beginResetModel();
  report_ = std::move(report);
  endResetModel();
}

void DivergenceModel::clear() {
  beginResetModel();
  report_.reset();
  endResetModel();
}

int DivergenceModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !report_ ? 0 : static_cast<int>(report_->nodes.size());
}

int DivergenceModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

double DivergenceModel::metric(int row, Metric m) const {
  if (!report_ || row < 0 || row >= rowCount()) return 0;
  const NodeDiff& n = report_->nodes[static_cast<size_t>(row)];
  switch (m) {
    case Metric::MaxAbs: return n.total_score;
    case Metric::MaxRel: {
      double r = 0;
      for (const auto& [name, d] : n.outputs) r = std::max(r, d.comparable ? d.max_rel : INFINITY);
      return r;
    }
    case Metric::Cosine: {
      double worst = 0;  // 1 - cosine of the worst output
      for (const auto& [name, d] : n.outputs) worst = std::max(worst, d.comparable ? 1.0 - d.cosine : 1.0);
      return worst;
    }
    case Metric::Introduced: return n.introduced ? n.introduced_score : 0;
  }
  return 0;
}

QVariant DivergenceModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !report_ || index.row() >= rowCount()) return {};
  const NodeDiff& n = report_->nodes[static_cast<size_t>(index.row())];
  const int c = index.column();
  if (role == SortRole) {
    switch (c) {
      case Index: return static_cast<qulonglong>(n.node_index);
      case MaxAbs: return metric(index.row(), Metric::MaxAbs);
      case MaxRel: return metric(index.row(), Metric::MaxRel);
      case Cosine: return 1.0 - metric(index.row(), Metric::Cosine);
      case Introduced: return n.introduced ? n.introduced_score : -1.0;
      case Status: return n.diverges ? 1 : 0;
      default: return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::DisplayRole) {
    switch (c) {
      case Index: return static_cast<qulonglong>(n.node_index);
      case Node: return QString::fromStdString(n.node);
      case Op: return QString::fromStdString(n.op_type);
      case MaxAbs: return num(n.total_score);
      case MaxRel: return num(metric(index.row(), Metric::MaxRel));
      case Cosine: return n.outputs.empty() ? QString("-") : num(1.0 - metric(index.row(), Metric::Cosine));
      case Introduced: return n.introduced ? num(n.introduced_score) : QString("-");
      case Status: {
        if (report_->first_divergence && *report_->first_divergence == static_cast<size_t>(index.row()))
          return QString("FIRST DIVERGENCE");
        return QString::fromStdString(diff_status_text(n));  // the CLI's words
      }
      case Note: return QString::fromStdString(diff_node_note(n));
    }
  }
  if (role == Qt::ForegroundRole && c == Status && n.diverges) return QBrush(QColor(190, 30, 30));
  if (role == Qt::ToolTipRole) {
    if (n.diverges) return QString::fromStdString(diff_divergence_detail(n));
    QString t;
    for (const auto& [name, d] : n.outputs)
      t += QString("%1: %2\n")
               .arg(QString::fromStdString(name))
               .arg(d.comparable ? QString("max|A-B| %1, %2 of %3 out of tolerance")
                                       .arg(num(d.max_abs))
                                       .arg(d.out_of_tolerance)
                                       .arg(d.elements)
                                 : QString::fromStdString(d.problem));
    return t.trimmed();
  }
  return {};
}

QVariant DivergenceModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"#", "node", "op", "max |A-B|", "max rel", "cosine", "introduced", "status", "note"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

int DivergenceModel::first_divergence_row() const {
  return report_ && report_->first_divergence ? static_cast<int>(*report_->first_divergence) : -1;
}

std::vector<int> DivergenceModel::top_blamed(size_t n) const {
  std::vector<int> out;
  if (!report_) return out;
  for (size_t i : report_->blame_order) {
    if (out.size() >= n) break;
    if (report_->nodes[i].introduced_score <= 0) break;  // blame_order is sorted, the rest introduce nothing
    out.push_back(static_cast<int>(report_->nodes[i].node_index));
  }
  return out;
}

int DivergenceModel::node_index_of_row(int row) const {
  if (!report_ || row < 0 || row >= rowCount()) return -1;
  return static_cast<int>(report_->nodes[static_cast<size_t>(row)].node_index);
}

QHash<int, double> DivergenceModel::heat(Metric m) const {
  QHash<int, double> out;
  double top = 0;
  for (int r = 0; r < rowCount(); ++r)
    if (double v = metric(r, m); std::isfinite(v)) top = std::max(top, v);
  for (int r = 0; r < rowCount(); ++r) {
    const double v = metric(r, m);
    out.insert(node_index_of_row(r), std::isfinite(v) ? v : top);
  }
  return out;
}

QString DivergenceModel::metric_name(Metric m) {
  switch (m) {
    case Metric::MaxAbs: return "max |A-B|";
    case Metric::MaxRel: return "max relative error";
    case Metric::Cosine: return "1 - cosine";
    case Metric::Introduced: return "introduced error";
  }
  return {};
}

}  // namespace onnxscope::viewer
