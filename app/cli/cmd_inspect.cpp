// onnxscope inspect MODEL [--json]: what a model is, and what is wrong with it.
#include <iostream>

#include "commands.h"
#include "onnxscope/inspect.h"
#include "onnxscope/loader.h"

namespace onnxscope::cli {

Runner add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print a model's structure, parameters and validation findings");
  auto model = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto no_sort = std::make_shared<bool>(false);
  cmd->add_option("MODEL", *model, "ONNX model file")->required();
  cmd->add_flag("--json", *json, "Print one JSON document instead of text");
  cmd->add_flag("--no-sort", *no_sort, "Report nodes out of topological order as an error instead of sorting them");
  return [=]() {
    LoadOptions opts;
    opts.sort_nodes = !*no_sort;
    LoadResult r = load_model_file(*model, opts);
    ModelSummary s = summarize(r.model.get(), r.diagnostics, *model);
    if (*json) {
      std::cout << summary_json(s);
    } else {
      std::cout << summary_text(s);
      // Errors go to stderr too, so a pipeline that only shows stderr still says why it failed.
      for (const auto& d : r.diagnostics.items())
        if (d.severity == Severity::Error) std::cerr << "onnxscope: " << d.to_string() << "\n";
    }
    return r.ok() ? kExitOk : kExitBadInput;
  };
}

}  // namespace onnxscope::cli
