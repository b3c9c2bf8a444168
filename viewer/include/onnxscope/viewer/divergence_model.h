// The divergence overlay's data: one row per main-graph node of a diff report
// (diff.h) in topological order, with its observed error, cosine and the
// error it introduces (blame); the first divergent node, the top blamed
// nodes, and per-node heat values for colouring the graph.
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QString>
#include <optional>
#include <vector>

#include "onnxscope/diff.h"

namespace onnxscope::viewer {

class DivergenceModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Node, Op, MaxAbs, MaxRel, Cosine, Introduced, Status, Note, ColumnCount };
  enum class Metric { MaxAbs, MaxRel, Cosine, Introduced };
  // Sorting by a numeric column uses this role (the display text is rounded).
  static constexpr int SortRole = Qt::UserRole + 1;

  explicit DivergenceModel(QObject* parent = nullptr);

  void set_report(DiffReport report);
  void clear();
  const std::optional<DiffReport>& report() const { return report_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // Row (== position in report.nodes) of the first divergent node, or -1.
  int first_divergence_row() const;
  // Main-graph node indices with the largest introduced error first (only
  // nodes that introduce some error).
  std::vector<int> top_blamed(size_t n) const;
  int node_index_of_row(int row) const;
  // Raw metric per row (for cosine: 1 - cosine, so larger is worse).
  double metric(int row, Metric m) const;
  // node index -> metric, for GraphView::set_node_heat (which scales and
  // draws the legend); an infinite error (NaN on one side) takes the largest
  // finite value so it shows as hottest.
  QHash<int, double> heat(Metric m) const;
  static QString metric_name(Metric m);

 private:
  std::optional<DiffReport> report_;
};

}  // namespace onnxscope::viewer
