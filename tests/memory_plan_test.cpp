// The engine-neutral memory planner (core/memory_plan.h): blocks alive at the
// same time never share bytes, offsets keep the alignment, blocks that do not
// overlap in time reuse bytes, and the region is never smaller than what is
// alive at once nor larger than everything side by side.
#include <gtest/gtest.h>

#include <vector>

#include <algorithm>
#include <random>

#include "core/allocation_replay.h"
#include "core/memory_plan.h"

using namespace onnxscope;

TEST(MemoryPlan, BlocksAliveTogetherNeverShareBytes) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t align = size_t{1} << std::uniform_int_distribution<int>(0, 7)(rng);
    std::vector<PlanBlock> blocks(std::uniform_int_distribution<size_t>(0, 60)(rng));
    for (auto& b : blocks) {
      b.size = std::uniform_int_distribution<size_t>(0, 5000)(rng);
      b.begin = std::uniform_int_distribution<uint64_t>(0, 100)(rng);
      b.end = b.begin + std::uniform_int_distribution<uint64_t>(1, 30)(rng);
    }
    const MemoryPlan p = plan_memory(blocks, align);
    ASSERT_EQ(p.offsets.size(), blocks.size());
    size_t side_by_side = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(p.offsets[i] % align, 0u);
      EXPECT_LE(p.offsets[i] + planned_size(blocks[i].size, align), p.total);
      side_by_side += planned_size(blocks[i].size, align);
      for (size_t j = 0; j < i; ++j) {
        const bool together = blocks[i].begin < blocks[j].end && blocks[j].begin < blocks[i].end;
        const bool share = p.offsets[i] < p.offsets[j] + planned_size(blocks[j].size, align) &&
                           p.offsets[j] < p.offsets[i] + planned_size(blocks[i].size, align);
        EXPECT_FALSE(together && share) << "trial " << trial << ": blocks " << j << " and " << i;
      }
    }
    size_t most_alive = 0;  // a lower bound: bytes alive at one instant
    for (uint64_t t = 0; t < 131; ++t) {
      size_t alive = 0;
      for (const auto& b : blocks)
        if (b.begin <= t && t < b.end) alive += planned_size(b.size, align);
      most_alive = std::max(most_alive, alive);
    }
    EXPECT_GE(p.total, most_alive);
    EXPECT_LE(p.total, side_by_side);
  }
}

TEST(MemoryPlan, OneAfterAnotherReuseTheSameBytes) {
  // a [0,2), b [2,4), c [1,3): a and b share offset 0; c sits beside them.
  const MemoryPlan p = plan_memory({{100, 0, 2}, {100, 2, 4}, {60, 1, 3}}, 64);
  EXPECT_EQ(p.offsets[0], 0u);
  EXPECT_EQ(p.offsets[1], 0u);
  EXPECT_EQ(p.offsets[2], 128u);
  EXPECT_EQ(p.total, 192u);
  EXPECT_EQ(planned_size(0, 64), 64u);  // a zero-sized block still has an address of its own
  EXPECT_EQ(plan_memory({}, 64).total, 0u);
}

// AllocationReplay (core/allocation_replay.h), the record/plan/replay
// bookkeeping both arenas share.
TEST(AllocationReplay, ReplaysTheRecordedRunAndStopsAtTheFirstDifference) {
  AllocationReplay r;
  // a(100) b(200); a freed; c(100); b, c freed; d(50) outlives the run.
  r.begin_record();
  const size_t a = *r.record_allocation(100), b = *r.record_allocation(200);
  r.record_free(a);
  const size_t c = *r.record_allocation(100);
  r.record_free(b);
  r.record_free(c);
  r.record_allocation(50);
  ASSERT_TRUE(r.finish_record(64));
  EXPECT_EQ(r.planned_blocks(), 3u);  // d outlived the run: not planned
  EXPECT_EQ(r.peak_live_bytes(), 300u);
  EXPECT_EQ(r.region_bytes(), 128u + 256u);  // c reuses a's bytes

  r.begin_replay();
  auto sa = r.replay_allocation(100), sb = r.replay_allocation(200);
  ASSERT_TRUE(sa && sb);
  r.replay_free(sa->index);
  auto sc = r.replay_allocation(100);
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->offset, sa->offset);
  r.replay_free(sb->index);
  r.replay_free(sc->index);
  EXPECT_FALSE(r.replay_allocation(50));  // not planned, but not a deviation
  EXPECT_FALSE(r.deviated());
  EXPECT_EQ(r.live(), 0u);

  // a still alive when c comes: c must not get a's bytes.
  r.begin_replay();
  sa = r.replay_allocation(100);
  sb = r.replay_allocation(200);
  EXPECT_FALSE(r.replay_allocation(100));
  EXPECT_TRUE(r.deviated());
  EXPECT_FALSE(r.replay_allocation(100)) << "a deviated run stays off the plan";

  // Another size at the same place: deviated.
  r.begin_replay();
  EXPECT_FALSE(r.replay_allocation(101));
  EXPECT_TRUE(r.deviated());
}

// Blocks placed inside a freed larger one: a later run gets each place only
// while no block handed out in it holds any of those bytes, checked against
// every live block (not only the last at that offset).
TEST(AllocationReplay, APlaceIsHandedOutOnlyWhileNoLiveBlockSharesItsBytes) {
  AllocationReplay r;
  // a(256); a freed; b c d e (64 each) alive together; b freed; f(64); the rest freed.
  r.begin_record();
  const size_t a = *r.record_allocation(256);
  r.record_free(a);
  std::vector<size_t> bcde;
  for (int k = 0; k < 4; ++k) bcde.push_back(*r.record_allocation(64));
  r.record_free(bcde[0]);
  const size_t f = *r.record_allocation(64);
  for (int k = 1; k < 4; ++k) r.record_free(bcde[static_cast<size_t>(k)]);
  r.record_free(f);
  ASSERT_TRUE(r.finish_record(64));

  // The recorded order: every block planned, none deviates.
  r.begin_replay();
  const auto sa = r.replay_allocation(256);
  ASSERT_TRUE(sa);
  r.replay_free(sa->index);
  std::vector<AllocationReplay::Slot> s;
  for (int k = 0; k < 4; ++k) {
    auto slot = r.replay_allocation(64);
    ASSERT_TRUE(slot);
    s.push_back(*slot);
  }
  r.replay_free(s[0].index);
  const auto sf = r.replay_allocation(64);
  ASSERT_TRUE(sf);
  EXPECT_FALSE(r.deviated());
  for (int k = 1; k < 4; ++k)  // f never shares bytes with a block alive beside it
    EXPECT_TRUE(sf->offset + 64 <= s[static_cast<size_t>(k)].offset || s[static_cast<size_t>(k)].offset + 64 <= sf->offset);
  for (int k = 1; k < 4; ++k) r.replay_free(s[static_cast<size_t>(k)].index);
  r.replay_free(sf->index);
  EXPECT_EQ(r.live(), 0u);

  // a outlives its recorded lifetime: the first block in its bytes deviates.
  r.begin_replay();
  ASSERT_TRUE(r.replay_allocation(256));
  EXPECT_FALSE(r.replay_allocation(64));
  EXPECT_TRUE(r.deviated());

  // b outlives its recorded lifetime: f deviates exactly when it was placed in b's bytes.
  r.begin_replay();
  r.replay_free(r.replay_allocation(256)->index);
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(r.replay_allocation(64));
  const bool shares = sf->offset < s[0].offset + 64 && s[0].offset < sf->offset + 64;
  EXPECT_EQ(r.replay_allocation(64).has_value(), !shares);
  EXPECT_EQ(r.deviated(), shares);
}

TEST(AllocationReplay, PastTheLimitNothingIsPlanned) {
  AllocationReplay r(2);
  r.begin_record();
  EXPECT_TRUE(r.record_allocation(8));
  EXPECT_TRUE(r.record_allocation(8));
  EXPECT_FALSE(r.record_allocation(8));
  EXPECT_FALSE(r.finish_record(64));
  EXPECT_FALSE(r.planned());
}
