// The conformance browser's table: one row per test of a run or of a saved
// JSON report (`onnxscope conformance --json`), with its status, the status
// an expectations file expects, the drift between the two, the operators of
// its model and its error; and a filter proxy by status, operator and drift.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QString>
#include <QStringList>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "onnxscope/conformance/expectations.h"
#include "onnxscope/conformance/runner.h"

namespace onnxscope::viewer {

struct ConformanceRow {
  conformance::CaseResult result;
  std::optional<conformance::Status> expected;
  QString drift;  // "regression", "new pass", "changed", "not in file", ""
  std::optional<conformance::TestCase> test_case;  // when the suite folder is known
};

class ConformanceModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Test, Status, Expected, Drift, Ops, Error, Seconds, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;

  explicit ConformanceModel(QObject* parent = nullptr);

  void set_results(std::vector<conformance::CaseResult> results);
  // Reads a JSON report; false with *error naming the file and the problem.
  bool load_json_report(const std::filesystem::path& path, QString* error);
  // Expected statuses and drift (the conformance library's compute_drift).
  void set_expectations(const conformance::Expectations& e);
  // Links rows to their test folders; fills operators for rows without them
  // (JSON reports do not store them) by reading each model's node list.
  void set_suite(const std::vector<conformance::TestCase>& cases, bool fill_ops = true);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  const ConformanceRow& row(int r) const { return rows_[static_cast<size_t>(r)]; }
  int row_of(const QString& key) const;
  QStringList all_ops() const;
  // "pass 3, fail 1, ..." over every row.
  QString totals() const;

 private:
  std::vector<ConformanceRow> rows_;
  std::optional<conformance::Expectations> expectations_;
};

class ConformanceFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit ConformanceFilter(QObject* parent = nullptr);
  void set_status(const QString& status);  // "" = any
  void set_op(const QString& op);          // exact operator name, "" = any
  void set_drift_only(bool on);
  void set_text(const QString& text);      // substring of the test key

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  QString status_, op_, text_;
  bool drift_only_ = false;
};

}  // namespace onnxscope::viewer
