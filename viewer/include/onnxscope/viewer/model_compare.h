// Two models of one network side by side (`onnxscope-gui A.onnx --against
// B.onnx`, File > Compare with...): each graph in its own view, values paired
// by the engine's graph matcher (graph_match.h), selection and scrolling kept
// in step through the pairs, nodes with nothing paired dimmed, and the
// divergence of `diff A --against B` as heat on both graphs.
//
// Loading, pairing and running both models happen off the UI thread (the
// engines in worker processes, gui_engines.h); `compared` says when the
// views can show the result.
#pragma once

#include <QHash>
#include <QMainWindow>
#include <QString>
#include <atomic>
#include <memory>

#include "onnxscope/diff.h"
#include "onnxscope/graph_match.h"
#include "onnxscope/inputs.h"

class QLabel;
class QPushButton;

namespace onnxscope::viewer {

class GraphPanel;
class GraphView;

class ModelCompareWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit ModelCompareWindow(QWidget* parent = nullptr);
  ~ModelCompareWindow() override;

  // Loads both, runs both on `engine` with inputs made for A (B takes them as
  // `diff --against` feeds it), pairs and compares; emits compared.
  void open(const QString& a_path, const QString& b_path, const QString& engine = "reference",
            const InputSpec& inputs = {});
  void cancel();

  GraphPanel* panel_a() const { return a_; }
  GraphPanel* panel_b() const { return b_; }
  GraphView* view_a() const;
  GraphView* view_b() const;
  // After `compared` with ok: the pairing and the comparison along A.
  const GraphMatch* match() const { return match_.get(); }
  const DiffReport* report() const { return report_.get(); }
  // Partner node in the other model (main graph indices), -1 when none.
  int partner_in_b(int a_node) const { return a_to_b_.value(a_node, -1); }
  int partner_in_a(int b_node) const { return b_to_a_.value(b_node, -1); }

 signals:
  void compared(bool ok, QString message);

 private:
  struct Result;
  void on_done(std::shared_ptr<Result> r);
  void follow(bool from_a, int node);
  void follow_scroll(bool from_a);

  GraphPanel *a_, *b_;
  QLabel *title_a_, *title_b_, *status_;
  QPushButton* cancel_button_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::unique_ptr<GraphMatch> match_;
  std::unique_ptr<DiffReport> report_;
  QHash<int, int> a_to_b_, b_to_a_;
  bool syncing_ = false;
};

}  // namespace onnxscope::viewer
