#include "onnxscope/viewer/model_overview.h"

#include <QBrush>
#include <QColor>

namespace onnxscope::viewer {

ModelOverview::Item* ModelOverview::Item::add(QString k, QString v, int sev) {
  auto child = std::make_unique<Item>();
  child->key = std::move(k);
  child->value = std::move(v);
  child->severity = sev;
  child->parent = this;
  child->row = static_cast<int>(children.size());
  children.push_back(std::move(child));
  return children.back().get();
}

ModelOverview::ModelOverview(QObject* parent) : QAbstractItemModel(parent) {}

void ModelOverview::clear() {
  beginResetModel();
  root_.children.clear();
  endResetModel();
}

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

void ModelOverview::set_summary(const ModelSummary& s) {
  beginResetModel();
  root_.children.clear();
  Item* model = root_.add("Model", q(s.file));
  if (s.loaded) {
    model->add("IR version", QString::number(s.ir_version));
    model->add("Producer", q(s.producer_name + (s.producer_version.empty() ? "" : " " + s.producer_version)));
    QString opsets;
    for (const auto& o : s.opset_imports)
      opsets += (opsets.isEmpty() ? "" : ", ") + q(std::string(domain_display_name(o.domain))) + "=" + QString::number(o.version);
    model->add("Opset imports", opsets);
    model->add("Nodes", QString("%1 in the main graph, %2 in all").arg(s.main_nodes).arg(s.total_nodes));
    model->add("Parameters", QString("%1 in %2 initializers (%3 bytes)").arg(s.parameter_count).arg(s.initializer_count).arg(s.parameter_bytes));
    for (const auto& [k, v] : s.metadata) model->add(q(k), q(v));
    Item* in = root_.add("Inputs", QString::number(s.inputs.size()));
    for (const auto& v : s.inputs) in->add(q(v.name), q(v.type.to_string()));
    Item* out = root_.add("Outputs", QString::number(s.outputs.size()));
    for (const auto& v : s.outputs) out->add(q(v.name), q(v.type.to_string()));
    Item* ops = root_.add("Operators", QString::number(s.op_counts.size()));
    for (const auto& c : s.op_counts)
      ops->add(q((c.domain == "ai.onnx" ? "" : c.domain + "::") + c.op_type), QString::number(c.count));
    if (!s.subgraphs.empty()) {
      Item* sub = root_.add("Subgraphs", QString::number(s.subgraphs.size()));
      for (const auto& g : s.subgraphs) sub->add(q(g.path), QString("%1 nodes").arg(g.nodes));
    }
    if (!s.functions.empty()) {
      Item* fn = root_.add("Functions", QString::number(s.functions.size()));
      for (const auto& f : s.functions) fn->add(q(f.path), QString("%1 nodes").arg(f.nodes));
    }
  }
  Item* findings = root_.add("Validation", QString("%1 error(s), %2 warning(s)").arg(s.errors).arg(s.warnings));
  for (const auto& d : s.findings)
    findings->add(q(std::string(severity_name(d.severity)) + " " + d.code), q(d.to_string()),
                  static_cast<int>(d.severity));
  endResetModel();
}

QModelIndex ModelOverview::index(int row, int column, const QModelIndex& parent) const {
  const Item* p = parent.isValid() ? static_cast<const Item*>(parent.internalPointer()) : &root_;
  if (row < 0 || row >= static_cast<int>(p->children.size()) || column < 0 || column > 1) return {};
  return createIndex(row, column, p->children[static_cast<size_t>(row)].get());
}

QModelIndex ModelOverview::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const Item* it = static_cast<const Item*>(child.internalPointer());
  if (!it->parent || it->parent == &root_) return {};
  return createIndex(it->parent->row, 0, it->parent);
}

int ModelOverview::rowCount(const QModelIndex& parent) const {
  if (parent.column() > 0) return 0;
  const Item* p = parent.isValid() ? static_cast<const Item*>(parent.internalPointer()) : &root_;
  return static_cast<int>(p->children.size());
}

int ModelOverview::columnCount(const QModelIndex&) const { return 2; }

QVariant ModelOverview::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Item* it = static_cast<const Item*>(index.internalPointer());
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return index.column() == 0 ? it->key : it->value;
  if (role == Qt::ForegroundRole && it->severity >= 0) {
    if (it->severity == static_cast<int>(Severity::Error)) return QBrush(QColor(200, 30, 30));
    if (it->severity == static_cast<int>(Severity::Warning)) return QBrush(QColor(170, 110, 0));
  }
  return {};
}

QVariant ModelOverview::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == 0 ? QString("Item") : QString("Value");
}

}  // namespace onnxscope::viewer
