// Per-engine expectations files (conformance/expectations/ENGINE.toml): the
// expected status of every test, a reason for every non-pass, optional
// tolerances; and the drift between such a file and a run.
//
//   [suite]
//   onnx_version = "1.23.2"
//   test_count = 2033
//
//   [tests."node/test_abs"]
//   status = "pass"
//
//   [tests."node/test_bernoulli"]
//   status = "skip"
//   reason = "random output: upstream's own runner excludes it"
//
//   [tests."node/test_dft"]
//   status = "pass"
//   atol = 1e-6
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/conformance/runner.h"

namespace onnxscope::conformance {

struct Expectation {
  Status status = Status::Pass;
  std::string reason;
  std::optional<Tolerance> tolerance;
};

struct Expectations {
  std::string onnx_version;
  size_t test_count = 0;
  std::map<std::string, Expectation> tests;
};

// Throws std::runtime_error naming the file, the line and the problem.
Expectations load_expectations(const std::filesystem::path& path);
void save_expectations(const std::filesystem::path& path, const Expectations& e, const std::string& engine);
// Takes the run's statuses; keeps reasons and tolerances of unchanged entries.
void update_expectations(Expectations& e, const std::vector<CaseResult>& results);

struct DriftItem {
  std::string key;
  std::string expected, actual;  // status names; "" when absent
  std::string detail;
};

struct Drift {
  std::vector<DriftItem> regressions;  // expected pass, now anything else
  std::vector<DriftItem> new_passes;   // expected non-pass, now pass
  std::vector<DriftItem> changed;      // other status changes (fail -> error ...)
  std::vector<std::string> not_in_file;   // in the suite, missing from the file
  std::vector<std::string> not_in_suite;  // in the file, missing from the suite
  bool empty() const {
    return regressions.empty() && new_passes.empty() && changed.empty() && not_in_file.empty() && not_in_suite.empty();
  }
};

// Compares only the tests that ran (a --filter run ignores the rest of the file).
Drift compute_drift(const Expectations& e, const std::vector<CaseResult>& results, const std::vector<TestCase>& cases,
                    bool whole_suite);

}  // namespace onnxscope::conformance
