// onnxscope: the headless command-line client of the engine library.
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>

#include "commands.h"
#include "omp_defaults.h"
#include "plugin_args.h"

int main(int argc, char** argv) {
  onnxscope::app::apply_openmp_defaults(argv, /*spin_when_idle=*/true);
  using namespace onnxscope::cli;
  CLI::App app{"onnxscope: conformance, debugging and graph inspection for ONNX models"};
  app.set_version_flag("--version", std::string("onnxscope ") + ONNXSCOPE_VERSION);
  app.require_subcommand(1);
  std::map<const CLI::App*, Runner> runners;
  auto add = [&](Runner r) { runners[app.get_subcommands({}).back()] = std::move(r); };
  add(add_inspect_command(app));
  add(add_conformance_command(app));
  add(add_run_command(app));
  add(add_diff_command(app));
  add(add_dump_command(app));
  add(add_compare_command(app));
  add(add_reduce_command(app));
  add(add_bench_command(app));
  add(add_bisect_command(app));
  add(add_precision_command(app));
  for (CLI::App* sub : app.get_subcommands({})) add_plugin_options(sub, plugin_args());

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 uses 0 for --help/--version; every real usage error becomes 2.
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (!load_plugins(plugin_args())) return kExitBadInput;
  try {
    for (const auto* sub : app.get_subcommands())
      if (auto it = runners.find(sub); it != runners.end()) return it->second();
  } catch (const std::bad_alloc&) {
    std::cerr << "onnxscope: out of memory\n";
    return kExitBadInput;
  } catch (const CLI::ValidationError& e) {
    std::cerr << "onnxscope: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "onnxscope: " << e.what() << "\n";
    return kExitBadInput;
  }
  return kExitUsage;
}
