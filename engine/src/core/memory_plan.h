// Placing blocks with known sizes and lifetimes in one region so that blocks
// alive at the same time never share bytes: the planner behind the CPU
// engine's activation arena, and meant for a device arena too (it needs
// nothing but sizes and lifetimes).
//
// Greedy, largest first: each block goes to the lowest offset that clears
// every already placed block whose lifetime overlaps its own. O(n^2) in the
// number of blocks; callers bound n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnxscope {

struct PlanBlock {
  size_t size = 0;
  // Alive over [begin, end) of some clock (allocation counter, node index).
  uint64_t begin = 0, end = 0;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per block, multiples of `align`
  size_t total = 0;             // bytes the region needs
};

// Sizes are rounded up to `align` (a power of two); a zero-sized block still
// takes `align` bytes, so that every block has an address of its own.
MemoryPlan plan_memory(const std::vector<PlanBlock>& blocks, size_t align);

// `size` rounded up as plan_memory rounds it.
size_t planned_size(size_t size, size_t align);

}  // namespace onnxscope
