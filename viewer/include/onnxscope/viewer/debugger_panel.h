// The Debugger dock: engine and input choices, Run / Pause / Step / Step back
// / Run to / Cancel, breakpoints (on the selected node, on NaN/Inf, on
// divergence beyond rtol/atol), the current node and its outputs. It owns the
// DebugSession and tells the graph view where the run stands.
#pragma once

#include <QString>
#include <QWidget>
#include <filesystem>
#include <memory>

#include "onnxscope/ir.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace onnxscope::viewer {

class DebugSession;

class DebuggerPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DebuggerPanel(QWidget* parent = nullptr);
  ~DebuggerPanel() override;

  void set_model(std::shared_ptr<const Model> model, const QString& path);
  DebugSession* session() const { return session_; }

  // Engine choices: "reference", "cpu"; b "" for none. False for an unknown name.
  bool choose_engines(const QString& a, const QString& b);
  void choose_dump_b(const QString& path);
  void set_seed(int seed);
  // Symbolic input dims, "NAME=V, ..." (filled with 1 for each on set_model).
  void set_dims(const QString& spec);
  // "NAME=FILE.pb|.npy" entries, comma separated.
  void set_input_files(const QString& spec);
  QString input_files() const;
  void set_inputs_from_dump(const QString& path);
  // The dock's status line: what it is doing, or why it refused to start.
  QString status_text() const;

 public slots:
  void on_node_selected(const QString& graph_path, int node_index);
  void run();
  void pause();
  void step();
  void step_back();
  void run_to_selected();
  void cancel();
  void toggle_breakpoint();

 signals:
  void current_node_changed(const QString& graph_path, int node_index);
  void breakpoint_changed(int node_index, bool on);
  // The user picked an output of the current node.
  void tensor_requested(const QString& name);
  void run_finished(bool ok);

 private:
  bool configure();
  void show_current();
  void update_buttons();

  DebugSession* session_;
  std::shared_ptr<const Model> model_;
  QString model_path_;
  QString selected_graph_ = "main";
  int selected_node_ = -1;
  QString dump_b_, inputs_dump_;

  QComboBox *engine_a_, *engine_b_;
  QSpinBox* seed_;
  QLineEdit *input_files_, *dims_;
  QLabel *inputs_dump_label_, *state_, *node_;
  QCheckBox *break_nan_, *break_div_, *into_bodies_;
  QDoubleSpinBox *rtol_, *atol_;
  QPushButton *run_, *pause_, *step_, *back_, *run_to_, *cancel_, *bp_;
  QProgressBar* progress_;
  QListWidget* outputs_;
};

}  // namespace onnxscope::viewer
