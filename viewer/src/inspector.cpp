#include "inspector.h"

#include <QRegularExpression>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

#include "graph/graph_paths.h"
#include "graph/visible_graph.h"
#include "onnxscope/engines.h"
#include "onnxscope/ir.h"

namespace onnxscope::viewer {

namespace {

constexpr int kPreviewValues = 8;

QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }
QString esc(const QString& s) { return s.toHtmlEscaped(); }

QString tensor_preview(const Tensor& t) {
  QString out = QString::fromStdString(std::string(dtype_name(t.dtype())) + shape_to_string(t.shape())) + " = ";
  const uint64_t n = std::min<uint64_t>(t.element_count(), kPreviewValues);
  QStringList vals;
  for (uint64_t i = 0; i < n; ++i) {
    if (t.is_string()) vals << "\"" + QString::fromStdString(t.strings()[i]) + "\"";
    else if (dtype_info(t.dtype()).is_float) vals << QString::number(t.element_as_double(i), 'g', 5);
    else vals << QString::number(t.element_as_int64(i));
  }
  out += "[" + vals.join(", ") + (t.element_count() > n ? ", ...]" : "]");
  return out;
}

QString attribute_value(const Attribute& a) {
  auto list = [](const auto& v, auto fmt) {
    QStringList parts;
    for (size_t i = 0; i < v.size() && i < 16; ++i) parts << fmt(v[i]);
    return "[" + parts.join(", ") + (v.size() > 16 ? ", ...]" : "]");
  };
  if (!a.ref_attr_name.empty()) return "= caller's " + QString::fromStdString(a.ref_attr_name);
  switch (a.type) {
    case AttrType::Float: return QString::number(a.f, 'g', 6);
    case AttrType::Int: return QString::number(a.i);
    case AttrType::String: return "\"" + QString::fromStdString(a.s) + "\"";
    case AttrType::Tensor: return tensor_preview(a.t);
    case AttrType::Graph: return QString("graph (%1 nodes)").arg(a.g ? a.g->nodes.size() : 0);
    case AttrType::Floats: return list(a.floats, [](float f) { return QString::number(f, 'g', 6); });
    case AttrType::Ints: return list(a.ints, [](int64_t i) { return QString::number(i); });
    case AttrType::Strings: return list(a.strings, [](const std::string& s) { return "\"" + QString::fromStdString(s) + "\""; });
    case AttrType::Graphs: return QString("%1 graphs").arg(a.graphs.size());
    default: return QString::fromStdString(std::string(attr_type_name(a.type)));
  }
}

const char* kStyle =
    "<style>h3{margin:2px 0 4px 0} h4{margin:8px 0 2px 0;color:#445} td{padding:1px 6px 1px 0}"
    " .k{color:#556} .mono{font-family:monospace} .err{color:#b00}</style>";

// One input/output row: name (a link), dtype and shape, and a preview when
// the value is an initializer or a Constant's output.
QString tensor_row(const graph::GraphRef& ref, const std::string& name) {
  const Graph& g = *ref.graph;
  if (name.empty()) return "<tr><td class='k'>(omitted)</td><td></td></tr>";
  const TypeInfo* t = graph::find_type(ref, name);
  const Initializer* init = g.initializer(name);
  QString type = t ? QString::fromStdString(t->to_string()) : "?";
  if (type == "?" && init)
    type = QString::fromStdString(std::string(dtype_name(init->value.dtype())) + shape_to_string(init->value.shape()));
  QString row = "<tr><td><a href='tensor:" + QUrl::toPercentEncoding(QString::fromStdString(name)) + "'>" + esc(name) +
                "</a></td><td class='mono'>" + esc(type) + "</td></tr>";
  if (init)
    row += "<tr><td></td><td class='mono'>initializer " + esc(tensor_preview(init->value)) + "</td></tr>";
  else
    for (const Node& n : g.nodes)
      if (n.op_type == "Constant" && !n.outputs.empty() && n.outputs[0] == name) {
        for (const Attribute& a : n.attributes)
          if (a.type == AttrType::Tensor)
            row += "<tr><td></td><td class='mono'>constant " + esc(tensor_preview(a.t)) + "</td></tr>";
        break;
      }
  return row;
}

}  // namespace

Inspector::Inspector(QWidget* parent) : QWidget(parent) {
  text_ = new QTextBrowser(this);
  text_->setOpenLinks(false);
  text_->setMinimumWidth(200);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(text_);
  connect(text_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() == "tensor") emit tensor_clicked(QUrl::fromPercentEncoding(url.path().toUtf8()));
  });
  clear();
}

void Inspector::set_model(std::shared_ptr<const Model> model) {
  model_ = std::move(model);
  kernels_.clear();
  if (model_) {
    // Supports() only looks kernels up (no preparation): cheap even for big models.
    for (const std::string name : {"reference", "cpu"}) {
      EngineSettings settings;
      settings.threads = 1;
      auto engine = make_engine(name, settings);
      if (!engine) continue;
      auto& per_node = kernels_[name];
      for (const NodeSupport& s : engine->supports(*model_))
        if (s.graph_path == "main")
          per_node[s.node_index] = s.supported ? QString::fromStdString(s.detail)
                                               : "<span class='err'>unsupported: " + esc(s.detail) + "</span>";
    }
  }
  clear();
}

QString Inspector::text() const { return text_->toPlainText(); }

void Inspector::clear() {
  show_html(model_ ? "<p class='k'>Select a node, an edge or a group in the graph.</p>" : "<p class='k'>No model.</p>");
}

void Inspector::show_html(const QString& html) { text_->setHtml(kStyle + html); }


void Inspector::show_node(QString graph_path, int node_index) {
  if (!model_) return;
  auto ref = graph::resolve_graph(*model_, graph_path);
  if (!ref || node_index < 0 || node_index >= static_cast<int>(ref->graph->nodes.size())) {
    show_html("<p class='err'>No node " + QString::number(node_index) + " in " + esc(graph_path) + "</p>");
    return;
  }
  graph_path_ = graph_path;
  const Graph& g = *ref->graph;
  const Node& n = g.nodes[node_index];
  QString h = "<h3>" + esc(n.op_type) + "</h3>";
  h += "<table>";
  h += "<tr><td class='k'>name</td><td>" + esc(n.label(node_index)) + "</td></tr>";
  h += "<tr><td class='k'>domain</td><td>" + esc(std::string(domain_display_name(n.domain))) + "</td></tr>";
  h += "<tr><td class='k'>opset</td><td>" + QString::number(model_->opset_version(n.domain)) + "</td></tr>";
  h += "<tr><td class='k'>graph</td><td>" + esc(graph_path) + ", node #" + QString::number(node_index) + "</td></tr>";
  h += "</table>";
  h += "<h4>Kernels</h4><table>";
  for (const auto& [engine, per_node] : kernels_) {
    QString k = "(inside a body: chosen when it runs)";
    if (graph_path == "main")
      if (auto it = per_node.find(static_cast<size_t>(node_index)); it != per_node.end()) k = it->second;
    h += "<tr><td class='k'>" + esc(engine) + "</td><td>" + k + "</td></tr>";
  }
  h += "</table>";
  if (!n.attributes.empty()) {
    h += "<h4>Attributes</h4><table>";
    for (const Attribute& a : n.attributes)
      h += "<tr><td class='k'>" + esc(a.name) + "</td><td class='mono'>" + esc(attribute_value(a)) + "</td></tr>";
    h += "</table>";
  }
  h += "<h4>Inputs</h4><table>";
  for (const auto& in : n.inputs) h += tensor_row(*ref, in);
  h += "</table><h4>Outputs</h4><table>";
  for (const auto& out : n.outputs) h += tensor_row(*ref, out);
  h += "</table>";
  if (!n.doc.empty()) h += "<h4>Doc</h4><p>" + esc(n.doc) + "</p>";
  show_html(h);
}

void Inspector::show_tensor(QString tensor_name) {
  if (!model_) return;
  auto ref = graph::resolve_graph(*model_, graph_path_);
  if (!ref) ref = graph::resolve_graph(*model_, "main");
  const Graph& g = *ref->graph;
  const std::string name = tensor_name.toStdString();
  QString h = "<h3>Tensor</h3><table>" + tensor_row(*ref, name) + "</table>";
  QStringList producers, consumers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const auto& o : n.outputs)
      if (o == name) producers << esc(n.label(i)) + " (" + esc(n.op_type) + ")";
    for (const auto& in : n.inputs)
      if (in == name) {
        consumers << esc(n.label(i)) + " (" + esc(n.op_type) + ")";
        break;
      }
  }
  for (const auto& v : g.inputs)
    if (v.name == name) producers << "graph input";
  h += "<h4>Produced by</h4><p>" + (producers.isEmpty() ? QString("-") : producers.join("<br>")) + "</p>";
  h += "<h4>Consumed by</h4><p>" + (consumers.isEmpty() ? QString("-") : consumers.join("<br>")) + "</p>";
  show_html(h);
}

void Inspector::show_group(QString graph_path, QString scope, int node_count) {
  if (!model_) return;
  auto ref = graph::resolve_graph(*model_, graph_path);
  QString h = "<h3>Group " + esc(scope) + "</h3><p>" + QString::number(node_count) +
              " nodes, collapsed. Double-click it to expand.</p>";
  if (ref) {
    std::map<std::string, int> ops;
    const QString prefix = scope + "/";
    // A run of unscoped nodes ("/nodes 0-99") is named by its index range.
    static const QRegularExpression run("^/nodes (\\d+)-(\\d+)$");
    const auto range = run.match(scope);
    const Graph& g = *ref->graph;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const QString ns = graph::node_scope(g.nodes[i]);
      const bool in_run = range.hasMatch() && ns.isEmpty() && i >= range.captured(1).toULongLong() &&
                          i <= range.captured(2).toULongLong();
      if (in_run || (!ns.isEmpty() && (ns == scope || ns.startsWith(prefix)))) ++ops[g.nodes[i].op_type];
    }
    h += "<h4>Operators</h4><table>";
    for (const auto& [op, count] : ops)
      h += "<tr><td>" + esc(op) + "</td><td>" + QString::number(count) + "</td></tr>";
    h += "</table>";
  }
  show_html(h);
}

}  // namespace onnxscope::viewer
