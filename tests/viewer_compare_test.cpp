// Two models side by side (issue 33 part 2, the GUI): under
// QT_QPA_PLATFORM=offscreen, the sample CNN against a copy with one Conv's
// weights scaled by 1.1 and an extra Mul by 1 after the first Relu. Both
// graphs are drawn, the values pair (the Mul is the one node B has with
// nothing paired, and its box is dimmed), the first divergence is the scaled
// Conv and it is hot on both sides, and selecting a node on one side selects
// its partner on the other.
#include <gtest/gtest.h>

#include <QApplication>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "graph/graph_items.h"
#include "graph/graph_scene.h"
#include "onnxscope/loader.h"
#include "onnxscope/proto_io.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/model_compare.h"

using namespace onnxscope;
using namespace onnxscope::viewer;

namespace {

const char* kSample = ONNXSCOPE_SOURCE_DIR "/resources/models/sample_cnn.onnx";

int index_of(const Model& m, const std::string& name) {
  for (size_t i = 0; i < m.graph.nodes.size(); ++i)
    if (m.graph.nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

bool wait_layout(GraphView* v) {
  if (!v->is_laying_out()) return v->graph_scene() != nullptr;
  QSignalSpy spy(v, &GraphView::layout_finished);
  return spy.wait(60000) && spy.takeFirst().at(0).toBool();
}

int selected_node(GraphView* v) {
  const auto items = v->graph_scene()->selectedItems();
  if (items.size() != 1 || items.front()->type() != graph::kBoxItem) return -1;
  return static_cast<graph::BoxItem*>(items.front())->data().node_index;
}

// The sample with features.4's weights x1.1 and relu -> Mul(1) -> MaxPool.
std::string make_b(const QTemporaryDir& dir) {
  LoadResult r = load_model_file(kSample);
  EXPECT_TRUE(r.ok());
  Model m = *r.model;
  for (auto& init : m.graph.initializers)
    if (init.name == "features.4.weight") {
      Tensor t = Tensor::zeros(DataType::Float, init.value.shape());
      for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<float>()[i] = init.value.data<float>()[i] * 1.1f;
      init.value = std::move(t);
    }
  Tensor one = Tensor::zeros(DataType::Float, {});
  one.mutable_data<float>()[0] = 1.0f;
  m.graph.initializers.push_back({"one", std::move(one), {}});
  Node mul;
  mul.name = "extra_scale";
  mul.op_type = "Mul";
  mul.inputs = {"/features/features.2/Relu_output_0", "one"};
  mul.outputs = {"scaled"};
  const int pool = index_of(m, "/features/features.3/MaxPool");
  m.graph.nodes[size_t(pool)].inputs[0] = "scaled";
  m.graph.nodes.insert(m.graph.nodes.begin() + pool, mul);
  const std::string path = dir.filePath("b.onnx").toStdString();
  save_model(m, path);
  return path;
}

}  // namespace

TEST(ModelCompare, PairsLinksAndColoursBothGraphs) {
  QTemporaryDir dir;
  const std::string b_path = make_b(dir);
  ModelCompareWindow w;
  w.resize(1400, 800);
  w.show();
  QSignalSpy done(&w, &ModelCompareWindow::compared);
  InputSpec spec;
  spec.dims["batch"] = 1;
  w.open(kSample, QString::fromStdString(b_path), "reference", spec);
  ASSERT_TRUE(done.wait(120000));
  ASSERT_TRUE(done.takeFirst().at(0).toBool());
  ASSERT_TRUE(wait_layout(w.view_a()));
  ASSERT_TRUE(wait_layout(w.view_b()));
  const Model& a = *w.view_a()->model();
  const Model& b = *w.view_b()->model();

  ASSERT_TRUE(w.match() && w.report());
  EXPECT_TRUE(w.match()->unmatched_a.empty());
  ASSERT_TRUE(w.report()->first_divergence);
  EXPECT_EQ(w.report()->nodes[*w.report()->first_divergence].node, "/features/features.4/Conv");

  // The extra Mul has no partner, and its box is dimmed; the scaled Conv is hot on both sides.
  const int extra = index_of(b, "extra_scale");
  EXPECT_EQ(w.partner_in_a(extra), -1);
  graph::BoxItem* extra_box = w.view_b()->graph_scene()->item_for_node(extra);
  ASSERT_NE(extra_box, nullptr);
  EXPECT_TRUE(extra_box->is_dimmed());
  const int conv4_a = index_of(a, "/features/features.4/Conv"), conv4_b = index_of(b, "/features/features.4/Conv");
  EXPECT_EQ(w.partner_in_b(conv4_a), conv4_b);
  EXPECT_FALSE(w.view_b()->graph_scene()->item_for_node(conv4_b)->is_dimmed());
  const QColor first_a = w.view_a()->graph_scene()->item_for_node(0)->fill_color();
  const QColor hot_a = w.view_a()->graph_scene()->item_for_node(conv4_a)->fill_color();
  const QColor hot_b = w.view_b()->graph_scene()->item_for_node(conv4_b)->fill_color();
  EXPECT_NE(first_a, hot_a);  // an agreeing node and the divergent one differ in colour
  EXPECT_EQ(hot_a, hot_b);    // the partner shows A's divergence

  // Selection in step, both ways (B's Gemm sits one place later: the extra Mul).
  w.view_a()->select_node("main", conv4_a);
  ASSERT_TRUE(wait_layout(w.view_b()));
  EXPECT_EQ(selected_node(w.view_b()), conv4_b);
  const int gemm_a = index_of(a, "/classifier/Gemm"), gemm_b = index_of(b, "/classifier/Gemm");
  ASSERT_EQ(gemm_b, gemm_a + 1);
  w.view_b()->select_node("main", gemm_b);
  ASSERT_TRUE(wait_layout(w.view_a()));
  EXPECT_EQ(selected_node(w.view_a()), gemm_a);
}

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
