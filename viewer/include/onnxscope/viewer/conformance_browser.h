// The conformance browser window: run a suite folder (progress, cancel) or
// open a saved JSON report, browse the tests in a sortable, filterable table,
// and open a test: its model is requested in the main window with its input
// files, and its expected versus actual outputs show in a tensor panel.
#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <QStringList>
#include <filesystem>
#include <optional>

#include "onnxscope/conformance/expectations.h"
#include "onnxscope/viewer/conformance_run.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace onnxscope::viewer {

class ConformanceModel;
class ConformanceFilter;
class TensorPanel;

class ConformanceBrowser : public QMainWindow {
  Q_OBJECT
 public:
  explicit ConformanceBrowser(QWidget* parent = nullptr);
  ~ConformanceBrowser() override;

  // A saved report; `suite` links rows to their test folders (models,
  // inputs, operators), `expectations` adds expected status and drift.
  bool open_report(const std::filesystem::path& json, const std::filesystem::path& suite,
                   const std::filesystem::path& expectations, QString* error);
  bool run_suite(const std::filesystem::path& suite, const std::string& engine, const std::filesystem::path& expectations,
                 QString* error);
  void cancel_run();
  // Opens the test of this row of the (unfiltered) model.
  void open_test(int source_row);

  ConformanceModel* model() const { return model_; }
  ConformanceFilter* filter() const { return filter_; }
  TensorPanel* tensor_panel() const { return panel_; }
  QTableView* table() const { return table_; }
  bool is_running() const;
  const CaseOutputs* shown_outputs() const { return shown_ ? &*shown_ : nullptr; }

 signals:
  void open_model_requested(const QString& model_path, const QStringList& input_files);
  void run_finished(bool cancelled);
  void case_outputs_shown(const QString& key);

 private:
  void choose_and_run();
  void choose_and_open();
  void on_run_finished(bool cancelled);
  void on_outputs_ready();
  void show_output(int k);
  void refresh_op_filter();
  bool load_expectations_file(const std::filesystem::path& path, QString* error);

  ConformanceModel* model_;
  ConformanceFilter* filter_;
  QTableView* table_;
  QComboBox *engine_, *status_filter_, *op_filter_, *output_choice_;
  QSpinBox* jobs_;
  QCheckBox* drift_only_;
  QLineEdit* search_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel *totals_, *case_info_;
  TensorPanel* panel_;
  ConformanceRun run_;
  std::optional<conformance::Expectations> expectations_;
  std::string run_engine_ = "reference";
  QFutureWatcher<CaseOutputs> outputs_watcher_;
  QString pending_key_;
  std::optional<CaseOutputs> shown_;
};

}  // namespace onnxscope::viewer
