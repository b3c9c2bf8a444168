// Fuzz target: .npz archives (and .npy arrays) given as run inputs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_file.h"
#include "onnxscope/npy.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const Error&) {
  }
  std::string path;
  if (!fuzz_input_file(data, size, ".npz", path)) return 0;
  try {
    read_npz(path, 16 << 20);
  } catch (const Error&) {
  }
  return 0;
}
