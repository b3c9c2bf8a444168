// Conformance run reports: a console summary, Markdown (drift, totals per
// suite folder, per-operator table), JUnit XML for CI systems, JSON.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "onnxscope/conformance/expectations.h"

namespace onnxscope::conformance {

std::string summary_text(const std::vector<CaseResult>& results, const Drift& drift, const std::string& engine);
void write_markdown_report(const std::filesystem::path& path, const std::vector<CaseResult>& results,
                           const Drift& drift, const std::string& engine);
// With expectations, a test whose non-pass is the expected one (with its
// reason) is written as skipped, so a run with no drift is green on a CI
// dashboard; a drift is still a failure or an error.
void write_junit(const std::filesystem::path& path, const std::vector<CaseResult>& results, const std::string& engine,
                 const Expectations* expectations = nullptr);
void write_json(const std::filesystem::path& path, const std::vector<CaseResult>& results);

}  // namespace onnxscope::conformance
