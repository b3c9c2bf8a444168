#include "core/memory_plan.h"

#include <algorithm>

namespace onnxscope {

size_t planned_size(size_t size, size_t align) { return (std::max<size_t>(size, 1) + align - 1) / align * align; }

MemoryPlan plan_memory(const std::vector<PlanBlock>& blocks, size_t align) {
  MemoryPlan plan;
  plan.offsets.assign(blocks.size(), 0);
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return blocks[a].size > blocks[b].size; });
  std::vector<size_t> placed, conflicts;
  placed.reserve(blocks.size());
  for (size_t i : order) {
    const PlanBlock& b = blocks[i];
    const size_t size = planned_size(b.size, align);
    conflicts.clear();
    for (size_t p : placed)
      if (blocks[p].begin < b.end && b.begin < blocks[p].end) conflicts.push_back(p);
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t x, size_t y) { return plan.offsets[x] < plan.offsets[y]; });
    size_t offset = 0;
    for (size_t c : conflicts) {
      if (offset + size <= plan.offsets[c]) break;
      offset = std::max(offset, plan.offsets[c] + planned_size(blocks[c].size, align));
    }
    plan.offsets[i] = offset;
    placed.push_back(i);
    plan.total = std::max(plan.total, offset + size);
  }
  return plan;
}

}  // namespace onnxscope
