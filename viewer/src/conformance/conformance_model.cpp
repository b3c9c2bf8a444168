#include "onnxscope/viewer/conformance_model.h"

#include <QBrush>
#include <QColor>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <map>
#include <set>

#include "onnxscope/loader.h"

namespace onnxscope::viewer {

using conformance::Status;

namespace {
QString status_text(Status s) { return QString::fromUtf8(conformance::status_name(s).data()); }

QColor status_colour(Status s) {
  switch (s) {
    case Status::Pass: return QColor(30, 130, 50);
    case Status::Skip: return QColor(120, 120, 120);
    default: return QColor(190, 30, 30);
  }
}
}  // namespace

ConformanceModel::ConformanceModel(QObject* parent) : QAbstractTableModel(parent) {}

void ConformanceModel::set_results(std::vector<conformance::CaseResult> results) {
  beginResetModel();
  rows_.clear();
  for (auto& r : results) rows_.push_back(ConformanceRow{std::move(r), std::nullopt, {}, std::nullopt});
  endResetModel();
  if (expectations_) set_expectations(*expectations_);
}

bool ConformanceModel::load_json_report(const std::filesystem::path& path, QString* error) {
  const QString name = QString::fromStdString(path.string());
  QFile f(name);
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = name + ": cannot open: " + f.errorString();
    return false;
  }
  QJsonParseError perr;
  QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &perr);
  if (doc.isNull()) {
    if (error) *error = QString("%1: not JSON at offset %2: %3").arg(name).arg(perr.offset).arg(perr.errorString());
    return false;
  }
  if (!doc.isArray()) {
    if (error) *error = name + ": expected an array of test results (onnxscope conformance --json)";
    return false;
  }
  std::vector<conformance::CaseResult> results;
  int i = 0;
  for (const QJsonValue& v : doc.array()) {
    const QJsonObject o = v.toObject();
    auto status = conformance::status_from_name(o.value("status").toString().toStdString());
    if (!o.value("test").isString() || !status) {
      if (error) *error = QString("%1: entry %2: needs a \"test\" name and a known \"status\"").arg(name).arg(i);
      return false;
    }
    conformance::CaseResult r;
    r.key = o.value("test").toString().toStdString();
    r.status = *status;
    r.detail = o.value("detail").toString().toStdString();
    r.seconds = o.value("seconds").toDouble();
    for (const QJsonValue& op : o.value("ops").toArray()) r.ops.push_back(op.toString().toStdString());
    results.push_back(std::move(r));
    ++i;
  }
  set_results(std::move(results));
  return true;
}

void ConformanceModel::set_expectations(const conformance::Expectations& e) {
  expectations_ = e;
  std::vector<conformance::CaseResult> results;
  for (const auto& r : rows_) results.push_back(r.result);
  conformance::Drift d = conformance::compute_drift(e, results, {}, false);
  std::map<std::string, QString> kind;
  for (const auto& x : d.regressions) kind[x.key] = "regression";
  for (const auto& x : d.new_passes) kind[x.key] = "new pass";
  for (const auto& x : d.changed) kind[x.key] = "changed";
  for (const auto& k : d.not_in_file) kind[k] = "not in file";
  for (auto& r : rows_) {
    auto it = e.tests.find(r.result.key);
    r.expected = it == e.tests.end() ? std::nullopt : std::optional<conformance::Status>(it->second.status);
    auto k = kind.find(r.result.key);
    r.drift = k == kind.end() ? QString() : k->second;
  }
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

void ConformanceModel::set_suite(const std::vector<conformance::TestCase>& cases, bool fill_ops) {
  std::map<std::string, const conformance::TestCase*> by_key;
  for (const auto& c : cases) by_key[conformance::case_key(c)] = &c;
  for (auto& r : rows_) {
    auto it = by_key.find(r.result.key);
    if (it == by_key.end()) continue;
    r.test_case = *it->second;
    if (fill_ops && r.result.ops.empty()) {
      LoadOptions o;
      o.infer_shapes = false;  // only the node list is needed
      LoadResult lr = load_model_file(it->second->model, o);
      if (lr.model)
        for (const auto& n : lr.model->graph.nodes)
          r.result.ops.push_back(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
    }
  }
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int ConformanceModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ConformanceModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ConformanceModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const ConformanceRow& r = rows_[static_cast<size_t>(index.row())];
  if (role == SortRole && index.column() == Seconds) return r.result.seconds;
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (index.column()) {
      case Test: return QString::fromStdString(r.result.key);
      case Status: return status_text(r.result.status);
      case Expected: return r.expected ? status_text(*r.expected) : QString();
      case Drift: return r.drift;
      case Ops: {
        // Distinct operators in first-seen order.
        QStringList ops;
        for (const auto& op : r.result.ops)
          if (!ops.contains(QString::fromStdString(op))) ops << QString::fromStdString(op);
        return ops.join(", ");
      }
      case Error: {
        if (r.result.status == conformance::Status::Pass) return QString();
        QString d = QString::fromStdString(r.result.detail);
        return role == SortRole ? d : d.left(200).replace('\n', ' ');
      }
      case Seconds: return QString::number(r.result.seconds, 'f', 3);
    }
  }
  if (role == Qt::ForegroundRole && index.column() == Status) return QBrush(status_colour(r.result.status));
  if (role == Qt::ForegroundRole && index.column() == Drift && !r.drift.isEmpty()) return QBrush(QColor(190, 30, 30));
  if (role == Qt::ToolTipRole && index.column() == Error) return QString::fromStdString(r.result.detail);
  return {};
}

QVariant ConformanceModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"test", "status", "expected", "drift", "operators", "error", "seconds"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

int ConformanceModel::row_of(const QString& key) const {
  const std::string k = key.toStdString();
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].result.key == k) return static_cast<int>(i);
  return -1;
}

QStringList ConformanceModel::all_ops() const {
  std::set<std::string> ops;
  for (const auto& r : rows_) ops.insert(r.result.ops.begin(), r.result.ops.end());
  QStringList out;
  for (const auto& op : ops) out << QString::fromStdString(op);
  return out;
}

QString ConformanceModel::totals() const {
  std::map<conformance::Status, int> n;
  for (const auto& r : rows_) ++n[r.result.status];
  QStringList parts;
  for (const auto& [s, c] : n) parts << QString("%1 %2").arg(status_text(s)).arg(c);
  int drift = 0;
  for (const auto& r : rows_) drift += !r.drift.isEmpty();
  if (expectations_) parts << QString("drift %1").arg(drift);
  return QString("%1 test(s): ").arg(rows_.size()) + parts.join(", ");
}

// ------------------------------------------------------------------ filter

ConformanceFilter::ConformanceFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(ConformanceModel::SortRole);
}

void ConformanceFilter::set_status(const QString& status) {
  status_ = status;
  invalidateFilter();
}

void ConformanceFilter::set_op(const QString& op) {
  op_ = op;
  invalidateFilter();
}

void ConformanceFilter::set_drift_only(bool on) {
  drift_only_ = on;
  invalidateFilter();
}

void ConformanceFilter::set_text(const QString& text) {
  text_ = text;
  invalidateFilter();
}

bool ConformanceFilter::filterAcceptsRow(int source_row, const QModelIndex&) const {
  auto* m = qobject_cast<const ConformanceModel*>(sourceModel());
  if (!m || source_row >= m->rowCount()) return false;
  const ConformanceRow& r = m->row(source_row);
  if (!status_.isEmpty() && status_text(r.result.status) != status_) return false;
  if (drift_only_ && r.drift.isEmpty()) return false;
  if (!text_.isEmpty() && !QString::fromStdString(r.result.key).contains(text_, Qt::CaseInsensitive)) return false;
  if (!op_.isEmpty()) {
    bool found = false;
    for (const auto& op : r.result.ops) found = found || QString::fromStdString(op) == op_;
    if (!found) return false;
  }
  return true;
}

}  // namespace onnxscope::viewer
