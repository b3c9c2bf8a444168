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
  DiffTolerance tolerance = default_tolerance();
  std::string blame_note;    // how blame was measured, or why there is none
  size_t top = 10;           // blamed nodes listed
};

std::string diff_report_text(const DiffReport& r, const DiffReportContext& ctx);
std::string diff_report_json(const DiffReport& r, const DiffReportContext& ctx);
std::string diff_report_markdown(const DiffReport& r, const DiffReportContext& ctx);

// Pieces of the report the GUI shows too, so every view says the same:
// "ok", "DIVERGES", "only in A", "not compared";
std::string diff_status_text(const NodeDiff& n);
// non-finite counts, differing element types, outputs one side lacks;
std::string diff_node_note(const NodeDiff& n);
// why a divergent node diverges: non-finite mismatches, the worst element.
std::string diff_divergence_detail(const NodeDiff& n);
// A Markdown table cell: '|' escaped, newlines as spaces.
std::string markdown_cell(const std::string& s);
// A number as reports print it: 3 significant digits, "nan", "inf", "-inf".
std::string short_number(double v);

}  // namespace onnxscope
