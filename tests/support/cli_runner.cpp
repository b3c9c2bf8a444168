#include "cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace onnxscope::test {

CliRun run_cli(const std::string& args) {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};
  const fs::path err_file = fs::temp_directory_path() /
                            ("onnxscope-cli-err-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  const std::string cmd = std::string(ONNXSCOPE_CLI) + " " + args + " 2>" + err_file.string();
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.signaled = WIFSIGNALED(status);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err_file);
  return r;
}

}  // namespace onnxscope::test
