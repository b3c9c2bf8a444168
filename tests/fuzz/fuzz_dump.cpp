// Fuzz target: an HDF5 dump file as `onnxscope compare` and `--inputs-from`
// read it (libhdf5 needs a file: the bytes go to a private temporary one).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "onnxscope/dump.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    return (std::filesystem::temp_directory_path() / ("onnxscope_fuzz_dump_" + std::to_string(getpid()) + ".h5")).string();
  }();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    DumpReadOptions o;
    o.max_tensor_bytes = 16 << 20;
    read_dump(path, o);
  } catch (const Error&) {
  }
  return 0;
}
