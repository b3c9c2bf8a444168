// The graph view under QT_QPA_PLATFORM=offscreen: Graphviz layout, folding
// of initializers and constants, scope groups, search, selection and the
// inspector, nested bodies, overlays, and the --screenshot command line.
#include <gtest/gtest.h>

#include <QApplication>
#include <QFileInfo>
#include <QImage>
#include <QLineEdit>
#include <QProcess>
#include <QSignalSpy>
#include <QContextMenuEvent>
#include <QMenu>
#include <QTest>
#include <QTimer>
#include <QToolButton>
#include <QTemporaryDir>

#include "graph/graph_layout.h"
#include "graph/graph_panel.h"
#include "graph/graph_scene.h"
#include "graph/graph_search.h"
#include "graph/visible_graph.h"
#include "inspector.h"
#include "model_builder.h"
#include "onnxscope/loader.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/main_window.h"

using namespace onnxscope;
using namespace onnxscope::viewer;
using namespace onnxscope::viewer::graph;

namespace {

const char* kSample = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";
const char* kControlFlow = ONNXSCOPE_SOURCE_DIR "/resources/models/control_flow.onnx";

std::shared_ptr<const Model> load(const char* path) {
  LoadResult r = load_model_file(path);
  EXPECT_TRUE(r.ok()) << path;
  return std::shared_ptr<const Model>(std::move(r.model));
}

std::shared_ptr<const Model> load(const test::ModelBuilder& b) {
  LoadResult r = b.load();
  EXPECT_TRUE(r.ok()) << test::dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

// A transformer-like stack: `layers` layers of `per_layer` nodes named
// "/encoder/layer.K/{attention,mlp}/Op_j", a chain through all of them.
test::ModelBuilder scoped_model(int layers, int per_layer) {
  test::ModelBuilder b;
  b.input("x", DataType::Float, {1, 8});
  b.initializer(test::make_float_tensor("w", {8, 8}, std::vector<float>(64, 0.5f)));
  std::string prev = "x";
  for (int l = 0; l < layers; ++l)
    for (int j = 0; j < per_layer; ++j) {
      const std::string block = j < per_layer / 2 ? "attention" : "mlp";
      const std::string name = "/encoder/layer." + std::to_string(l) + "/" + block + "/Op_" + std::to_string(j);
      const std::string out = name + "_output_0";
      if (j % 3 == 0) b.node("MatMul", {prev, "w"}, {out}, name);
      else b.node("Relu", {prev}, {out}, name);
      prev = out;
    }
  b.node("Identity", {prev}, {"y"}, "/head/Identity");
  b.output("y", DataType::Float, {1, 8});
  return b;
}

bool wait_layout(GraphView& v) {
  if (!v.is_laying_out()) return v.graph_scene() != nullptr;
  QSignalSpy spy(&v, &GraphView::layout_finished);
  if (!spy.wait(60000)) return false;
  return spy.takeFirst().at(0).toBool();
}

int node_with_op(const Graph& g, const std::string& op) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op_type == op) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST(GraphLayout, SampleCnnBoxesDoNotOverlap) {
  auto m = load(kSample);
  VisibleGraph vg = build_visible_graph(*m, m->graph, default_grouping(m->graph));
  measure_boxes(vg);
  LayoutResult r = GraphLayout::run(vg);
  ASSERT_TRUE(r.ok) << r.error.toStdString();
  ASSERT_EQ(r.centers.size(), vg.boxes.size());
  std::vector<QRectF> rects;
  for (size_t i = 0; i < vg.boxes.size(); ++i)
    rects.emplace_back(r.centers[i] - QPointF(vg.boxes[i].width / 2, vg.boxes[i].height / 2),
                       QSizeF(vg.boxes[i].width, vg.boxes[i].height));
  for (size_t i = 0; i < rects.size(); ++i) {
    EXPECT_TRUE(r.bounds.adjusted(-1, -1, 1, 1).contains(rects[i])) << i;
    for (size_t j = i + 1; j < rects.size(); ++j)
      EXPECT_FALSE(rects[i].intersects(rects[j])) << vg.boxes[i].title.toStdString() << " overlaps "
                                                  << vg.boxes[j].title.toStdString();
  }
  // Conv -> BatchNormalization is drawn downwards (rank order).
  const int conv = vg.box_of_node[node_with_op(m->graph, "Conv")];
  const int bn = vg.box_of_node[node_with_op(m->graph, "BatchNormalization")];
  EXPECT_LT(r.centers[conv].y(), r.centers[bn].y());
  // Every edge has a path and its dtype[shape] label; labels (drawn at their
  // measured width) overlap neither boxes nor each other.
  std::vector<QRectF> labels;
  for (size_t k = 0; k < vg.edges.size(); ++k) {
    EXPECT_FALSE(r.edges[k].path.isEmpty());
    ASSERT_TRUE(r.edges[k].has_label) << vg.edges[k].tensor.toStdString();
    labels.emplace_back(r.edges[k].label_pos - QPointF(vg.edges[k].label_width / 2, 5), QSizeF(vg.edges[k].label_width, 10));
  }
  for (size_t k = 0; k < labels.size(); ++k) {
    for (const QRectF& box : rects) EXPECT_FALSE(labels[k].intersects(box)) << vg.edges[k].label.toStdString();
    for (size_t j = k + 1; j < labels.size(); ++j)
      EXPECT_FALSE(labels[k].intersects(labels[j])) << vg.edges[k].label.toStdString() << " / " << vg.edges[j].label.toStdString();
  }
}

TEST(GraphLayout, FoldsInitializersAndConstantsIntoTheirConsumer) {
  test::ModelBuilder b;
  b.input("x", DataType::Float, {2, 3});
  b.initializer(test::make_float_tensor("w", {3, 3}, std::vector<float>(9, 1.0f)));
  auto& c = b.node("Constant", {}, {"bias"}, "make_bias");
  test::attr_tensor(c, "value", test::make_float_tensor("", {3}, {1, 2, 3}));
  b.node("MatMul", {"x", "w"}, {"h"}, "mm");
  b.node("Add", {"h", "bias"}, {"y"}, "add");
  b.output("y", DataType::Float, {2, 3});
  auto m = load(b);
  VisibleGraph vg = build_visible_graph(*m, m->graph, {});
  EXPECT_EQ(vg.box_of_node[node_with_op(m->graph, "Constant")], -1);
  const Box& mm = vg.boxes[vg.box_of_node[node_with_op(m->graph, "MatMul")]];
  const Box& add = vg.boxes[vg.box_of_node[node_with_op(m->graph, "Add")]];
  EXPECT_EQ(mm.folded, QStringList{"w"});
  EXPECT_EQ(add.folded, QStringList{"bias"});
  // Boxes: input x, MatMul, Add, output y; edges x->mm, mm->add, add->y.
  EXPECT_EQ(vg.boxes.size(), 4u);
  ASSERT_EQ(vg.edges.size(), 3u);
  for (const Edge& e : vg.edges) {
    EXPECT_NE(e.tensor, "w");
    EXPECT_NE(e.tensor, "bias");
  }
  // The edge mm -> add carries the inferred type.
  for (const Edge& e : vg.edges) {
    if (e.tensor == "h") {
      EXPECT_EQ(e.label, "float[2,3]");
    }
  }
}

TEST(GraphLayout, GroupsScopesOfLargeGraphs) {
  EXPECT_EQ(node_scope("/encoder/layer.3/attention/MatMul"), "/encoder/layer.3/attention");
  EXPECT_EQ(node_scope("MatMul_3"), "");
  EXPECT_EQ(scope_chain("/a/b/c"), (QStringList{"/a", "/a/b", "/a/b/c"}));

  auto small = load(scoped_model(2, 10));
  EXPECT_FALSE(default_grouping(small->graph).enabled);  // 21 nodes: drawn as they are

  auto m = load(scoped_model(24, 20));  // 481 nodes
  GroupingState gs = default_grouping(m->graph);
  ASSERT_TRUE(gs.enabled);
  VisibleGraph vg = build_visible_graph(*m, m->graph, gs);
  EXPECT_LE(vg.boxes.size(), 300u);
  // The deepest level that fits: one box per attention and mlp block.
  EXPECT_TRUE(gs.collapsed.contains("/encoder/layer.7/attention"));
  EXPECT_FALSE(gs.collapsed.contains("/encoder/layer.7"));
  ASSERT_TRUE(vg.box_of_group.contains("/encoder/layer.7/attention"));
  const Box& grp = vg.boxes[vg.box_of_group["/encoder/layer.7/attention"]];
  EXPECT_EQ(grp.kind, Box::Kind::Group);
  EXPECT_EQ(grp.members.size(), 10u);
  EXPECT_EQ(grp.cluster, "/encoder/layer.7");
  auto node_named = [&](const std::string& name) -> size_t {
    for (size_t i = 0; i < m->graph.nodes.size(); ++i)
      if (m->graph.nodes[i].name == name) return i;
    throw std::runtime_error("no node " + name);
  };
  EXPECT_EQ(hiding_group(gs, m->graph, node_named("/encoder/layer.7/attention/Op_3")), "/encoder/layer.7/attention");
  // Groups chain into each other (one edge in, one edge out).
  int into = 0;
  for (const Edge& e : vg.edges)
    if (e.to == vg.box_of_group["/encoder/layer.7/attention"]) ++into;
  EXPECT_EQ(into, 1);

  expand_scope(m->graph, gs, "/encoder/layer.7/attention");
  VisibleGraph vg2 = build_visible_graph(*m, m->graph, gs);
  EXPECT_EQ(hiding_group(gs, m->graph, node_named("/encoder/layer.7/attention/Op_3")), "");
  EXPECT_EQ(vg2.boxes.size(), vg.boxes.size() + 9);
  collapse_scope(gs, "/encoder/layer.7");
  EXPECT_EQ(hiding_group(gs, m->graph, node_named("/encoder/layer.7/mlp/Op_15")), "/encoder/layer.7");
}

TEST(GraphLayout, ManyUnscopedNodesAreGroupedInRuns) {
  test::ModelBuilder b;  // 1000 nodes named like old exporters: no scopes at all
  b.input("x", DataType::Float, {4});
  std::string prev = "x";
  for (int i = 0; i < 1000; ++i) {
    const std::string out = "t" + std::to_string(i);
    b.node(i % 2 ? "Relu" : "Neg", {prev}, {out}, "node_" + std::to_string(i));
    prev = out;
  }
  b.output(prev, DataType::Float, {4});
  auto m = load(b);
  GroupingState gs = default_grouping(m->graph);
  ASSERT_TRUE(gs.enabled);
  EXPECT_EQ(group_scope(gs, m->graph, 0), "/nodes 0-99");
  EXPECT_EQ(group_scope(gs, m->graph, 999), "/nodes 900-999");
  VisibleGraph vg = build_visible_graph(*m, m->graph, gs);
  EXPECT_EQ(vg.boxes.size(), 12u);  // 10 runs, input, output
  // Jumping to a node opens its run only.
  GraphView v;
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  v.select_node("main", 512);
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.graph_scene()->item_for_node(512)->data().kind, Box::Kind::Node);
  EXPECT_EQ(v.graph_scene()->item_for_node(100)->data().kind, Box::Kind::Group);
  EXPECT_EQ(v.graph_scene()->box_items().size(), 12u - 1 + 100);
  // The inspector counts a run's operators.
  Inspector insp;
  insp.set_model(m);
  insp.show_group("main", "/nodes 100-199", 100);
  EXPECT_TRUE(insp.text().contains("Neg\t50") || insp.text().contains("Neg\n50")) << insp.text().toStdString();
}

TEST(GraphLayout, ScopesFromPyTorchMetadataWhenNamesHaveNone) {
  test::ModelBuilder b;
  b.input("x", DataType::Float, {1, 4});
  auto& n = b.node("Relu", {"x"}, {"y"}, "node_relu_3");
  auto* kv = n.add_metadata_props();
  kv->set_key("pkg.torch.onnx.name_scopes");
  kv->set_value("['', 'inner', 'inner.encoder', 'inner.encoder.layer.0', 'relu_3']");
  auto& plain = b.node("Neg", {"y"}, {"z"}, "node_neg");
  auto* hook = plain.add_metadata_props();
  hook->set_key("pkg.torch.onnx.name_scopes");
  hook->set_value("['_empty_nn_module_stack_from_metadata_hook', 'neg']");
  b.output("z", DataType::Float, {1, 4});
  auto m = load(b);
  EXPECT_EQ(node_scope(m->graph.nodes[0]), "/inner/encoder/layer.0");
  EXPECT_EQ(node_scope(m->graph.nodes[1]), "");
}

TEST(GraphView, EveryNodeHasAnItemAndSelectionFillsTheInspector) {
  MainWindow w;
  w.resize(1200, 800);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::model_loaded);
  w.open_model(kSample);
  ASSERT_TRUE(loaded.wait(30000));
  GraphView* v = w.graph_view();
  ASSERT_TRUE(wait_layout(*v));
  GraphScene* s = v->graph_scene();
  ASSERT_NE(s, nullptr);
  const Graph& g = w.model()->graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    BoxItem* item = s->item_for_node(static_cast<int>(i));
    ASSERT_NE(item, nullptr) << g.nodes[i].name;
    EXPECT_EQ(item->data().node_index, static_cast<int>(i));
    EXPECT_EQ(item->data().title.toStdString(), g.nodes[i].op_type);
  }
  // Initializers are not boxes: only image, logits, probabilities are I/O boxes.
  int io = 0;
  for (auto* b : s->box_items()) io += b->data().kind != Box::Kind::Node;
  EXPECT_EQ(io, 3);

  const int conv = node_with_op(g, "Conv");
  QSignalSpy selected(v, &GraphView::node_selected);
  v->select_node("main", conv);
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.at(0).at(0).toString(), "main");
  EXPECT_EQ(selected.at(0).at(1).toInt(), conv);
  EXPECT_TRUE(s->item_for_node(conv)->isSelected());
  const QString text = w.inspector()->text();
  EXPECT_TRUE(text.contains("Conv")) << text.toStdString();
  EXPECT_TRUE(text.contains("kernel_shape")) << text.toStdString();
  EXPECT_TRUE(text.contains("features.0.weight")) << text.toStdString();
  EXPECT_TRUE(text.contains("initializer float[")) << text.toStdString();  // preview with shape
  EXPECT_TRUE(text.contains("reference")) << text.toStdString();
  EXPECT_TRUE(text.contains("cpu")) << text.toStdString();
  EXPECT_TRUE(text.contains("float[batch,8,32,32]")) << text.toStdString();  // output dtype and shape

  // Arrow keys walk the graph: Down to the consumer, Up back to the producer.
  v->setFocus();
  QTest::keyClick(v, Qt::Key_Down);
  EXPECT_EQ(selected.last().at(1).toInt(), node_with_op(g, "BatchNormalization"));
  QTest::keyClick(v, Qt::Key_Up);
  EXPECT_EQ(selected.last().at(1).toInt(), conv);

  // A clicked edge reports its tensor.
  QSignalSpy tensor(v, &GraphView::tensor_selected);
  auto edges = s->items_for_tensor("/features/features.0/Conv_output_0");
  ASSERT_EQ(edges.size(), 1u);
  s->clearSelection();
  edges.front()->setSelected(true);
  ASSERT_EQ(tensor.count(), 1);
  EXPECT_EQ(tensor.at(0).at(0).toString(), "/features/features.0/Conv_output_0");
  EXPECT_TRUE(w.inspector()->text().contains("Produced by")) << w.inspector()->text().toStdString();
}

TEST(GraphView, SearchFindsNodesByNameOpAndTensor) {
  auto m = load(kSample);
  GraphSearch idx;
  idx.build(*m);
  auto by_name = idx.find("/features/features.4/Conv");
  ASSERT_FALSE(by_name.empty());
  EXPECT_EQ(by_name.front().kind, SearchHit::Kind::Node);
  EXPECT_EQ(m->graph.nodes[by_name.front().node_index].name, "/features/features.4/Conv");
  auto by_op = idx.find("op:Relu");
  ASSERT_EQ(by_op.size(), 2u);
  for (const auto& h : by_op) EXPECT_EQ(m->graph.nodes[h.node_index].op_type, "Relu");
  auto by_tensor = idx.find("logits");
  ASSERT_FALSE(by_tensor.empty());
  EXPECT_EQ(by_tensor.front().kind, SearchHit::Kind::Tensor);
  EXPECT_EQ(by_tensor.front().tensor, "logits");
  EXPECT_TRUE(idx.find("no-such-thing").empty());
  EXPECT_TRUE(idx.completions().contains("GlobalAveragePool"));

  // The panel jumps to hits in turn and selects them.
  GraphPanel panel;
  panel.resize(900, 700);
  panel.show();
  panel.set_model(m);
  ASSERT_TRUE(wait_layout(*panel.view()));
  QSignalSpy selected(panel.view(), &GraphView::node_selected);
  ASSERT_TRUE(panel.search("Relu"));
  ASSERT_TRUE(panel.search("Relu"));
  ASSERT_EQ(selected.count(), 2);
  EXPECT_NE(selected.at(0).at(1).toInt(), selected.at(1).at(1).toInt());
  EXPECT_FALSE(panel.search("definitely-not-there"));
}

TEST(GraphView, BreadcrumbGoesBackToTheNodeHoldingTheBody) {
  auto m = load(kControlFlow);
  GraphPanel panel;
  panel.resize(900, 700);
  panel.show();
  panel.set_model(m);
  ASSERT_TRUE(wait_layout(*panel.view()));
  ASSERT_TRUE(panel.search("body/Add"));  // a node inside the Loop body
  ASSERT_TRUE(wait_layout(*panel.view()));
  ASSERT_EQ(panel.view()->breadcrumb(), (QStringList{"main", "node /accumulate/Loop", "body"}));
  QToolButton* crumb = nullptr;
  for (auto* b : panel.findChildren<QToolButton*>())
    if (b->text() == "node /accumulate/Loop" && b->isVisible()) crumb = b;
  ASSERT_NE(crumb, nullptr);
  QSignalSpy selected(panel.view(), &GraphView::node_selected);
  crumb->click();
  ASSERT_TRUE(wait_layout(*panel.view()));
  EXPECT_EQ(panel.view()->current_graph_path(), "main");
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(m->graph.nodes[selected.at(0).at(1).toInt()].op_type, "Loop");
}

TEST(GraphView, JumpToANodeInACollapsedGroupExpandsIt) {
  auto m = load(scoped_model(24, 20));
  GraphView v;
  v.resize(900, 700);
  v.show();
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  ASSERT_TRUE(v.collapsed_groups().contains("/encoder/layer.5/mlp"));
  const int target = 5 * 20 + 15;  // /encoder/layer.5/mlp/Op_15
  ASSERT_EQ(m->graph.nodes[target].name, "/encoder/layer.5/mlp/Op_15");
  EXPECT_EQ(v.graph_scene()->item_for_node(target)->data().kind, Box::Kind::Group);
  QSignalSpy selected(&v, &GraphView::node_selected);
  v.select_node("main", target);
  ASSERT_TRUE(wait_layout(v));
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.at(0).at(1).toInt(), target);
  EXPECT_FALSE(v.collapsed_groups().contains("/encoder/layer.5/mlp"));
  BoxItem* item = v.graph_scene()->item_for_node(target);
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(item->data().kind, Box::Kind::Node);
  EXPECT_TRUE(item->isSelected());
  // Double-clicking a group box expands it, as a person would.
  const int other = 9 * 20 + 2;  // /encoder/layer.9/attention/Op_2
  BoxItem* group = v.graph_scene()->item_for_node(other);
  ASSERT_EQ(group->data().kind, Box::Kind::Group);
  v.centerOn(group);
  QTest::mouseDClick(v.viewport(), Qt::LeftButton, {}, v.mapFromScene(group->scenePos()));
  ASSERT_TRUE(wait_layout(v));
  EXPECT_FALSE(v.collapsed_groups().contains("/encoder/layer.9/attention"));
  EXPECT_EQ(v.graph_scene()->item_for_node(other)->data().kind, Box::Kind::Node);
  // Collapsing it again brings the group box back.
  v.collapse_group("/encoder/layer.5/mlp");
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.graph_scene()->item_for_node(target)->data().kind, Box::Kind::Group);
}

TEST(GraphView, ControlFlowBodiesOpenAsNestedViews) {
  auto m = load(kControlFlow);
  GraphView v;
  v.resize(900, 700);
  v.show();
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  const int if_node = node_with_op(m->graph, "If");
  ASSERT_GE(if_node, 0);
  EXPECT_TRUE(v.graph_scene()->item_for_node(if_node)->data().has_body);
  const QString then_path = "main/" + QString::fromStdString(m->graph.nodes[if_node].label(if_node)) + ":then_branch";
  v.open_graph(then_path);
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.current_graph_path(), then_path);
  EXPECT_EQ(v.graph_scene()->graph_path(), then_path);
  EXPECT_EQ(v.breadcrumb(), (QStringList{"main", "node /choose/If", "then_branch"}));
  const Graph& then_graph = *m->graph.nodes[if_node].attribute("then_branch")->g;
  for (size_t i = 0; i < then_graph.nodes.size(); ++i)
    if (then_graph.nodes[i].op_type != "Constant") {
      EXPECT_NE(v.graph_scene()->item_for_node(static_cast<int>(i)), nullptr);
    }

  // The Loop body opens on a double-click of the Loop box; the function the same way.
  v.open_graph("main");
  ASSERT_TRUE(wait_layout(v));
  const int loop = node_with_op(m->graph, "Loop");
  BoxItem* loop_box = v.graph_scene()->item_for_node(loop);
  v.centerOn(loop_box);
  QTest::mouseDClick(v.viewport(), Qt::LeftButton, {}, v.mapFromScene(loop_box->scenePos()));
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.current_graph_path(), "main/" + QString::fromStdString(m->graph.nodes[loop].label(loop)) + ":body");
  EXPECT_EQ(v.breadcrumb().last(), "body");
  // The body reads x from the main graph: a box typed from there.
  BoxItem* outer_x = v.graph_scene()->item_for_io("x");
  ASSERT_NE(outer_x, nullptr);
  EXPECT_EQ(outer_x->data().subtitle, "float[4] outer scope");
  const int fn = node_with_op(m->graph, "SquarePlus");
  const QString fn_path = "main/" + QString::fromStdString(m->graph.nodes[fn].label(fn));
  v.open_graph(fn_path);
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.current_graph_path(), fn_path);
  EXPECT_FALSE(v.graph_scene()->box_items().empty());

  // Selecting a node of a body from elsewhere opens that body.
  QSignalSpy selected(&v, &GraphView::node_selected);
  v.select_node(then_path, 0);
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.current_graph_path(), then_path);
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.at(0).at(0).toString(), then_path);
  v.open_graph("main");
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.breadcrumb(), QStringList{"main"});
}

TEST(GraphView, OverlaysHeatCurrentNodeAndBreakpoints) {
  auto m = load(kSample);
  GraphView v;
  v.resize(900, 700);
  v.show();
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  GraphScene* s = v.graph_scene();
  const QColor before = s->item_for_node(0)->fill_color();
  v.set_node_heat({{0, 0.0}, {1, 5.0}}, "max abs error");
  const QColor low = s->item_for_node(0)->fill_color(), high = s->item_for_node(1)->fill_color();
  EXPECT_NE(low, before);
  EXPECT_NE(low, high);
  EXPECT_EQ(high, heat_color(1.0));
  v.clear_heat();
  EXPECT_EQ(s->item_for_node(0)->fill_color(), before);

  v.set_current_node("main", 2);
  EXPECT_TRUE(s->item_for_node(2)->is_current());
  v.set_current_node("main", -1);
  EXPECT_FALSE(s->item_for_node(2)->is_current());
  v.set_breakpoint_marker(3, true);
  EXPECT_TRUE(s->item_for_node(3)->has_breakpoint());
  v.set_breakpoint_marker(3, false);
  EXPECT_FALSE(s->item_for_node(3)->has_breakpoint());
}

TEST(GraphView, HeatOfACollapsedGroupIsItsMembersMaximum) {
  auto m = load(scoped_model(24, 20));
  GraphView v;
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  GraphScene* s = v.graph_scene();
  // Nodes 0..9: /encoder/layer.0/attention; 20..29: /encoder/layer.1/attention.
  BoxItem* g0 = s->item_for_node(0);
  BoxItem* g1 = s->item_for_node(20);
  ASSERT_EQ(g0->data().kind, Box::Kind::Group);
  ASSERT_EQ(s->item_for_node(9), g0);
  v.set_node_heat({{0, 0.0}, {9, 10.0}, {20, 5.0}, {21, 0.0}}, "max abs error");
  EXPECT_EQ(g0->fill_color(), heat_color(1.0));  // max 10 of its members: the top of the scale
  EXPECT_EQ(g1->fill_color(), heat_color(0.5));  // max 5
  // A box without a value is greyed, not coloured as zero.
  BoxItem* g2 = s->item_for_node(40);
  EXPECT_NE(g2->fill_color(), heat_color(0.0));
  EXPECT_NE(g2->fill_color(), category_color(OpCategory::Group));
  // The debugger's current node inside a group outlines the group.
  v.set_current_node("main", 25);
  EXPECT_TRUE(g1->is_current());
}

// The texts of the context menu the view pops up at a scene item.
QStringList context_menu_at(GraphView& v, QGraphicsItem* item) {
  v.centerOn(item);
  QStringList texts;
  QTimer::singleShot(200, [&texts] {
    if (auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget())) {
      for (QAction* a : menu->actions())
        if (!a->isSeparator()) texts << a->text();
      menu->close();
    }
  });
  const QPoint at = v.mapFromScene(item->scenePos());
  QContextMenuEvent e(QContextMenuEvent::Mouse, at, v.viewport()->mapToGlobal(at));
  QApplication::sendEvent(v.viewport(), &e);
  return texts;
}

TEST(GraphView, ContextMenuOffersTheDoubleClickActions) {
  auto m = load(scoped_model(24, 20));
  GraphView v;
  v.resize(900, 700);
  v.show();
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  QStringList texts = context_menu_at(v, v.graph_scene()->item_for_node(0));
  EXPECT_TRUE(texts.contains("Expand group /encoder/layer.0/attention")) << texts.join(" | ").toStdString();
  EXPECT_TRUE(texts.contains("Collapse group /encoder/layer.0")) << texts.join(" | ").toStdString();

  auto cf = load(kControlFlow);
  v.set_graph(cf);
  ASSERT_TRUE(wait_layout(v));
  texts = context_menu_at(v, v.graph_scene()->item_for_node(node_with_op(cf->graph, "If")));
  EXPECT_TRUE(texts.contains("Open then_branch")) << texts.join(" | ").toStdString();
  EXPECT_TRUE(texts.contains("Open else_branch")) << texts.join(" | ").toStdString();
  EXPECT_TRUE(texts.contains("Copy node name")) << texts.join(" | ").toStdString();
}

TEST(GraphView, CancelledLayoutIsDroppedAndTheViewStaysUsable) {
  auto big = load(scoped_model(24, 20));
  GraphView v;
  QSignalSpy done(&v, &GraphView::layout_finished);
  v.set_graph(big);
  ASSERT_TRUE(v.is_laying_out());
  v.cancel_layout();
  EXPECT_FALSE(v.is_laying_out());
  ASSERT_EQ(done.count(), 1);
  EXPECT_FALSE(done.at(0).at(0).toBool());
  EXPECT_EQ(done.at(0).at(1).toString(), "cancelled");
  QTest::qWait(300);  // the dropped result arrives and is ignored
  EXPECT_EQ(v.graph_scene(), nullptr);
  EXPECT_EQ(done.count(), 1);
  // A new graph right after lays out normally.
  v.set_graph(load(kSample));
  ASSERT_TRUE(wait_layout(v));
  EXPECT_EQ(v.graph_scene()->box_items().size(), 16u);  // 13 nodes, image, logits, probabilities
}

TEST(GraphView, BadInputNeverCrashes) {
  auto m = load(kSample);
  GraphView v;
  v.set_graph(m);
  ASSERT_TRUE(wait_layout(v));
  QSignalSpy done(&v, &GraphView::layout_finished);
  v.open_graph("main/no-such-node:body");
  ASSERT_EQ(done.count(), 1);
  EXPECT_FALSE(done.at(0).at(0).toBool());
  EXPECT_EQ(v.current_graph_path(), "main");
  v.select_node("main", 9999);
  v.select_node("main", -5);
  v.set_node_heat({{9999, 1.0}, {-1, 2.0}}, "x");
  v.set_graph(nullptr);
  EXPECT_EQ(v.graph_scene(), nullptr);
}

TEST(GraphView, EmptyAndInvalidGraphsStillLayOut) {
  test::ModelBuilder empty;  // no nodes: the input is the output
  empty.input("x", DataType::Float, {2});
  empty.output("x", DataType::Float, {2});
  auto m = load(empty);
  VisibleGraph vg = build_visible_graph(*m, m->graph, {});
  measure_boxes(vg);
  EXPECT_TRUE(GraphLayout::run(vg).ok);

  test::ModelBuilder bad;  // reads a value nothing defines: loads with an error
  bad.input("x", DataType::Float, {2});
  bad.node("Add", {"x", "ghost"}, {"y"}, "add");
  bad.output("y", DataType::Float, {2});
  LoadResult r = bad.load();
  ASSERT_TRUE(r.model);
  ASSERT_FALSE(r.ok());
  std::shared_ptr<const Model> invalid(std::move(r.model));
  GraphView v;
  v.set_graph(invalid);
  ASSERT_TRUE(wait_layout(v));
  ASSERT_NE(v.graph_scene()->item_for_io("ghost"), nullptr);  // drawn as a value from nowhere
  EXPECT_EQ(v.graph_scene()->item_for_io("ghost")->data().subtitle, "not defined");
  EXPECT_NE(v.graph_scene()->item_for_node(0), nullptr);
}

namespace {

struct GuiRun {
  int code;
  QString err;
};

GuiRun run_gui(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  p.setProcessEnvironment(env);
  p.start(ONNXSCOPE_GUI, args);
  if (!p.waitForFinished(120000)) return {-1, "timeout"};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

TEST(ScreenshotCli, WritesAPngOfTheGivenSize) {
  QTemporaryDir dir;
  const QString out = dir.filePath("shot.png");
  GuiRun r = run_gui({"--screenshot", out, "--select", "/features/features.4/Conv", "--size", "1000x700", kSample});
  ASSERT_EQ(r.code, 0) << r.err.toStdString();
  QImage img(out);
  ASSERT_FALSE(img.isNull());
  EXPECT_EQ(img.size(), QSize(1000, 700));
  // Not blank: many distinct colours (boxes by category, text, docks).
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 7)
    for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
  EXPECT_GT(colours.size(), 20);
}

TEST(ScreenshotCli, FailsCleanlyOnBadInput) {
  QTemporaryDir dir;
  const QString out = dir.filePath("shot.png");
  GuiRun missing = run_gui({"--screenshot", out, dir.filePath("missing.onnx")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(missing.err.contains("missing.onnx")) << missing.err.toStdString();
  EXPECT_FALSE(QFileInfo::exists(out));
  GuiRun node = run_gui({"--screenshot", out, "--select", "no_such_node", kSample});
  EXPECT_EQ(node.code, 1);
  EXPECT_TRUE(node.err.contains("no node named 'no_such_node'")) << node.err.toStdString();
  GuiRun usage = run_gui({"--screenshot", out, "--size", "huge", kSample});
  EXPECT_EQ(usage.code, 2);
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
