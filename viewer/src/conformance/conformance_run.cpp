#include "onnxscope/viewer/conformance_run.h"

#include <QThread>
#include <algorithm>
#include <climits>
#include <regex>
#include <set>

#include "onnxscope/conformance/compare.h"
#include "onnxscope/engines.h"
#include "onnxscope/loader.h"
#include "onnxscope/proto_io.h"
#include "onnxscope/viewer/gui_engines.h"

namespace onnxscope::viewer {

namespace fs = std::filesystem;

ConformanceRun::ConformanceRun(QObject* parent) : QObject(parent) {}

ConformanceRun::~ConformanceRun() {
  cancel();
  wait(ULONG_MAX);
  delete worker_;
}

bool ConformanceRun::running() const { return worker_ && worker_->isRunning() && !done_; }

bool ConformanceRun::wait(unsigned long ms) { return !worker_ || worker_->wait(ms); }

void ConformanceRun::cancel() { cancel_ = true; }

bool ConformanceRun::start(const SuiteRunRequest& req, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (running()) return fail("a run is already in progress");
  // By name only: an engine made here (CUDA started in the GUI's process)
  // would be unusable in the runner's forked children.
  if (!is_engine_name(req.engine)) return fail("unknown engine '" + QString::fromStdString(req.engine) + "'");
  std::vector<conformance::TestCase> cases;
  try {
    cases = conformance::discover_suite(req.suite);
  } catch (const std::exception& e) {
    return fail(QString("cannot read suite %1: %2").arg(QString::fromStdString(req.suite.string()), e.what()));
  }
  if (!req.filter.empty()) {
    std::regex re;
    try {
      re = std::regex(req.filter);
    } catch (const std::regex_error& e) {
      return fail(QString("bad filter regex: %1").arg(e.what()));
    }
    std::erase_if(cases, [&](const conformance::TestCase& c) { return !std::regex_search(conformance::case_key(c), re); });
  }
  if (cases.empty()) return fail("no test cases under " + QString::fromStdString(req.suite.string()));
  if (worker_) {
    worker_->wait();
    delete worker_;
  }
  cases_ = std::move(cases);
  results_.clear();
  cancel_ = false;
  done_ = false;
  worker_ = QThread::create([this, req] {
    const std::string engine = req.engine;
    conformance::EngineFactory factory = [engine] { return make_engine(engine); };
    conformance::SuiteOptions opts = req.extra;
    opts.jobs = std::max(1, req.jobs);
    opts.timeout_seconds = req.timeout_seconds;
    if (conformance::child_memory_limit(engine) == 0) opts.memory_limit_bytes = 0;
    const size_t total = cases_.size();
    size_t base = 0;
    opts.progress = [&](const conformance::CaseResult& r, size_t, size_t) {
      ++base;
      emit progress(static_cast<int>(base), static_cast<int>(total), QString::fromStdString(r.key),
                    QString::fromUtf8(conformance::status_name(r.status).data()));
    };
    // Batches of a few cases per job: run_suite has no cancel of its own, so
    // a cancel waits at most for the batch in flight.
    const size_t batch = static_cast<size_t>(opts.jobs) * 4;
    for (size_t at = 0; at < total && !cancel_; at += batch) {
      std::vector<conformance::TestCase> part(cases_.begin() + static_cast<long>(at),
                                              cases_.begin() + static_cast<long>(std::min(total, at + batch)));
      auto rs = conformance::run_suite(part, factory, opts);
      results_.insert(results_.end(), rs.begin(), rs.end());
    }
    done_ = true;
    emit finished(cancel_.load());
  });
  worker_->setObjectName("onnxscope-conformance");
  worker_->start();
  return true;
}

CaseOutputs run_case_outputs(const conformance::TestCase& c, const std::string& engine_name,
                             const conformance::Tolerance& tol) {
  CaseOutputs out;
  out.model_path = c.model.string();
  LoadResult loaded = load_model_file(c.model);
  if (!loaded.model || !loaded.ok()) {
    out.error = "model does not load";
    for (const auto& d : loaded.diagnostics.items())
      if (d.severity == Severity::Error) {
        out.error += ": " + d.to_string();
        break;
      }
    return out;
  }
  std::shared_ptr<const Model> model = std::move(loaded.model);
  const Graph& g = model->graph;
  NamedValues inputs;
  std::vector<fs::path> expected_files;
  try {
    if (!c.data_sets.empty()) {
      auto in_files = conformance::numbered_files(c.data_sets.front(), "input_");
      for (size_t k = 0; k < in_files.size() && k < g.inputs.size(); ++k) {
        inputs.emplace_back(g.inputs[k].name, read_value_file(in_files[k], g.inputs[k].type));
        out.input_files.push_back(in_files[k].string());
      }
      expected_files = conformance::numbered_files(c.data_sets.front(), "output_");
    } else {
      std::set<std::string> inits;
      for (const auto& i : g.initializers) inits.insert(i.name);
      for (const auto& v : g.inputs)
        if (!inits.count(v.name)) inputs.emplace_back(v.name, conformance::light_model_input(v));
      expected_files = c.loose_outputs;
    }
    for (size_t k = 0; k < expected_files.size() && k < g.outputs.size(); ++k)
      out.outputs.push_back({g.outputs[k].name, read_value_file(expected_files[k], g.outputs[k].type), std::nullopt, {}});
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  auto engine = make_gui_engine(engine_name);  // a test that crashes its engine must not take the browser down
  if (!engine) {
    out.error = "unknown engine '" + engine_name + "'";
    return out;
  }
  try {
    NamedValues actual = engine->prepare(model)->run(inputs);
    for (size_t k = 0; k < out.outputs.size() && k < actual.size(); ++k) {
      out.outputs[k].actual = actual[k].second;
      out.outputs[k].mismatch = conformance::compare_values(out.outputs[k].expected, actual[k].second, tol);
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace onnxscope::viewer
