// The first address at or after p that is a multiple of `align` (a power of
// two): blocks taken from malloc or calloc `align - 1` bytes longer than
// asked start there, so their bytes begin on a cache line.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxscope {

inline std::byte* align_up(std::byte* p, std::uintptr_t align) {
  return p + (align - reinterpret_cast<std::uintptr_t>(p) % align) % align;
}

}  // namespace onnxscope
