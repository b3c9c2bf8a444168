// Fuzz target: .npz archives (and .npy arrays) given as run inputs.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "onnxscope/npy.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const Error&) {
  }
  static const std::string path = [] {
    return (std::filesystem::temp_directory_path() / ("onnxscope_fuzz_" + std::to_string(getpid()) + ".npz")).string();
  }();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    read_npz(path, 16 << 20);
  } catch (const Error&) {
  }
  return 0;
}
