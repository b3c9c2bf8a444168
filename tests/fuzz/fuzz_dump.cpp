// Fuzz target: an HDF5 dump file as `onnxscope compare` and `--inputs-from`
// read it (libhdf5 needs a file: the bytes go to a private temporary one).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_file.h"
#include "onnxscope/dump.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path;
  if (!fuzz_input_file(data, size, ".h5", path)) return 0;
  try {
    DumpReadOptions o;
    o.max_tensor_bytes = 16 << 20;
    o.isolate_timeout_seconds = 5;  // below the fuzzer's own 25 s timeout
    read_dump(path, o);
  } catch (const Error&) {
  }
  return 0;
}
