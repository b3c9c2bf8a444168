// Running a conformance suite from the GUI: the conformance library's
// run_suite (each case in its own child process) on a worker thread, in
// batches so progress shows and a cancel takes effect after the batch in
// flight; and one case's expected versus actual outputs for the browser.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/conformance/runner.h"
#include "onnxscope/conformance/suite.h"
#include "onnxscope/value.h"

class QThread;

namespace onnxscope::viewer {

struct SuiteRunRequest {
  std::filesystem::path suite;
  std::string engine = "reference";
  std::string filter;  // regex on "group/name" (search), "" = every test
  int jobs = 2;
  double timeout_seconds = 60;
  conformance::SuiteOptions extra;  // tolerances and skips from an expectations file
};

class ConformanceRun : public QObject {
  Q_OBJECT
 public:
  explicit ConformanceRun(QObject* parent = nullptr);
  ~ConformanceRun() override;  // cancels and waits

  // False (and *error) for an unknown engine, a bad filter, or an unreadable
  // or empty suite; else the run starts on the worker thread.
  bool start(const SuiteRunRequest& request, QString* error);
  void cancel();
  // True from start() until the run's work is done (finished is emitted
  // then, possibly before the worker thread has returned: a start() right
  // after finished waits for it rather than refusing).
  bool running() const;
  bool wait(unsigned long ms);
  const std::vector<conformance::CaseResult>& results() const { return results_; }
  const std::vector<conformance::TestCase>& cases() const { return cases_; }

 signals:
  void progress(int done, int total, const QString& key, const QString& status);
  void finished(bool cancelled);

 private:
  QThread* worker_ = nullptr;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> done_{false};  // the worker's work is over (set before finished is emitted)
  std::vector<conformance::TestCase> cases_;
  std::vector<conformance::CaseResult> results_;  // written by the worker, read after finished
};

// One output of a test case: what the test expects and what the engine gave.
struct CaseOutput {
  std::string name;
  Value expected;
  std::optional<Value> actual;
  std::optional<std::string> mismatch;  // the library's comparison, nullopt = match
};

struct CaseOutputs {
  std::string model_path;
  std::vector<std::string> input_files;  // test_data_set_0/input_K.pb, in input order
  std::vector<CaseOutput> outputs;
  std::string error;  // why the engine could not run it ("" = ran)
};

// Runs data set 0 of a case in this process (for one test the user opened).
CaseOutputs run_case_outputs(const conformance::TestCase& c, const std::string& engine,
                             const conformance::Tolerance& tol = {});

}  // namespace onnxscope::viewer
