// Fuzz target: an expectations TOML file as the conformance runner reads it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "onnxscope/conformance/expectations.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    return (std::filesystem::temp_directory_path() / ("onnxscope_fuzz_exp_" + std::to_string(getpid()) + ".toml")).string();
  }();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    conformance::load_expectations(path);
  } catch (const std::runtime_error&) {  // its documented error (onnxscope::Error is one too)
  }
  return 0;
}
