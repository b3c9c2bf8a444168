// A diff report (diff.h) as text for a terminal, as JSON, and as a Markdown
// document to attach to a bug report. Shared by the CLI and the GUI.
#pragma once

#include <string>

#include "onnxscope/diff.h"

namespace onnxscope {

// What the report says about how the diff was made.
struct DiffReportContext {
  std::string model_path;
  std::string inputs;        // how the inputs were made: "seeded random (seed 0)", files...
  DiffTolerance tolerance;
  std::string blame_note;    // how blame was measured, or why there is none
  size_t top = 10;           // blamed nodes listed
};

std::string diff_report_text(const DiffReport& r, const DiffReportContext& ctx);
std::string diff_report_json(const DiffReport& r, const DiffReportContext& ctx);
std::string diff_report_markdown(const DiffReport& r, const DiffReportContext& ctx);

}  // namespace onnxscope
