// For fuzz targets whose reader takes a path (libhdf5, toml++, the .npz
// reader): the bytes go to a file private to this process, rewritten per input.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

// Writes the input to "<tmp>/onnxscope_fuzz_<pid><suffix>"; false if it cannot.
inline bool fuzz_input_file(const uint8_t* data, size_t size, const char* suffix, std::string& path) {
  path = (std::filesystem::temp_directory_path() / ("onnxscope_fuzz_" + std::to_string(getpid()) + suffix)).string();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}
