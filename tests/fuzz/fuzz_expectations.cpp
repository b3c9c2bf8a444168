// Fuzz target: an expectations TOML file as the conformance runner reads it.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fuzz_file.h"
#include "onnxscope/conformance/expectations.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path;
  if (!fuzz_input_file(data, size, ".toml", path)) return 0;
  try {
    conformance::load_expectations(path);
  } catch (const std::runtime_error&) {  // its documented error (onnxscope::Error is one too)
  }
  return 0;
}
