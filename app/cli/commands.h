// Each `onnxscope` subcommand registers its options on the CLI11 app and
// returns the function that runs it. Exit codes, for every command:
//   0  success (for inspect: the model is valid)
//   1  the input is bad: unreadable, corrupt or invalid model, bad data file
//   2  the command line is wrong (unknown option, missing argument)
//   3  conformance: results drifted from the expectations file
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace onnxscope::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitDrift = 3;

using Runner = std::function<int()>;

Runner add_inspect_command(CLI::App& app);
Runner add_conformance_command(CLI::App& app);
Runner add_run_command(CLI::App& app);
Runner add_diff_command(CLI::App& app);
Runner add_dump_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_reduce_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_bisect_command(CLI::App& app);
Runner add_precision_command(CLI::App& app);

}  // namespace onnxscope::cli
