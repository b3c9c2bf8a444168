// The CPU engine's activation arena (cpu/arena.h): blocks whose lifetimes do
// not overlap share bytes, blocks that outlive the recorded run stay on the
// heap, a run that differs from the recorded one (a size, a lifetime) never
// gets bytes still in use, and whole-model runs through the arena give the
// same outputs as heap runs, even while the caller keeps earlier outputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/arena.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"

using namespace onnxscope;
using namespace onnxscope::cpu;
using namespace onnxscope::test;

namespace {

struct Blocks {
  std::shared_ptr<Buffer> a, b, c, d;  // only d is still held after the run
};

// a(100) b(200), a freed, c(100), b and c freed, d(50) kept by the caller.
Blocks pattern(ActivationArena& arena, size_t c_size = 100, bool keep_a = false) {
  Blocks out;
  ArenaRun run(arena);
  out.a = allocate_activation(100);
  std::memset(out.a->mutable_data(), 0xAA, 100);
  out.b = allocate_activation(200);
  std::shared_ptr<Buffer> a_kept = out.a;
  if (!keep_a) a_kept.reset(), out.a.reset();
  out.c = allocate_activation(c_size);
  std::memset(out.c->mutable_data(), 0xCC, c_size);
  if (keep_a) {
    EXPECT_EQ(std::to_integer<int>(a_kept->data()[99]), 0xAA) << "c was given a's bytes while a was alive";
  }
  out.b.reset();
  out.c.reset();
  out.d = allocate_activation(50);
  return out;
}

}  // namespace

TEST(CpuArena, FirstRunRecordsThenBlocksShareBytesByLifetime) {
  ActivationArena arena;
  Blocks r1 = pattern(arena);
  EXPECT_EQ(arena.arena_bytes(), 256u + 128u);  // b alone, a and c share (64-byte rounding)
  Blocks r2 = pattern(arena);
  EXPECT_EQ(arena.planned_runs(), 1u);
  // c landed where a was (a was dead by then); d, kept after the run, is not in the arena.
  Blocks r3;
  {
    ArenaRun run(arena);
    auto a = allocate_activation(100);
    const std::byte* where_a = a->data();
    auto b = allocate_activation(200);
    a.reset();
    auto c = allocate_activation(100);
    EXPECT_EQ(c->data(), where_a);
    EXPECT_NE(b->data(), where_a);
    c.reset();
    b.reset();
    r3.d = allocate_activation(50);
  }
  EXPECT_EQ(arena.planned_runs(), 2u);
  EXPECT_NE(r2.d->data(), r3.d->data());  // both still held, so never the same bytes
}

TEST(CpuArena, ALongerLifetimeThanRecordedGetsFreshBytes) {
  ActivationArena arena;
  pattern(arena);
  pattern(arena, 100, /*keep_a=*/true);  // checks a's bytes survive c's writes
  EXPECT_EQ(arena.planned_runs(), 0u);    // that run deviated
  pattern(arena);                         // records again
  pattern(arena);
  EXPECT_EQ(arena.planned_runs(), 1u);
}

TEST(CpuArena, AnotherSizeSendsTheRunToTheHeapAndReplans) {
  ActivationArena arena;
  pattern(arena);
  pattern(arena, 120);  // c differs: the rest of the run from the heap
  EXPECT_EQ(arena.planned_runs(), 0u);
  pattern(arena, 120);  // records the new sizes
  pattern(arena, 120);
  EXPECT_EQ(arena.planned_runs(), 1u);
}

TEST(CpuArena, WithoutARunAllocationsAreOnTheHeap) {
  auto b = allocate_activation(64);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->size(), 64u);
  EXPECT_NE(b->mutable_data(), nullptr);
}

// Every block starts on a cache line: planned ones (the arena rounds to 64)
// and heap ones (graph outputs, runs without a plan, the recorded run).
TEST(CpuArena, EveryBlockStartsOnACacheLine) {
  auto aligned = [](const std::shared_ptr<Buffer>& b) { return reinterpret_cast<std::uintptr_t>(b->data()) % 64 == 0; };
  for (size_t n : {size_t{1}, size_t{17}, size_t{100}, size_t{4096}, size_t{100003}, size_t{1} << 20}) EXPECT_TRUE(aligned(allocate_activation(n))) << n << " bytes, no run";
  ActivationArena arena;
  for (int run = 0; run < 3; ++run) {  // recorded, then replayed
    ArenaRun r(arena);
    std::vector<std::shared_ptr<Buffer>> held;
    for (size_t n : {size_t{100}, size_t{17}, size_t{4096}, size_t{100003}}) {
      held.push_back(allocate_activation(n));
      EXPECT_TRUE(aligned(held.back())) << n << " bytes, run " << run;
    }
  }
  EXPECT_EQ(arena.planned_runs(), 2u);  // runs 1 and 2 took planned blocks
}

std::vector<float> some_floats(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 23) / 23.0f - scale / 2;
  return v;
}

// A small conv net with residual adds and a symbolic batch, run again and
// again on the CPU engine: arena runs equal a heap run bit for bit, outputs
// the caller keeps are not overwritten by later runs, and a batch change
// (other sizes: back to the heap, then a new plan) still gives the right answer.
TEST(CpuArena, EngineRunsThroughTheArenaMatchHeapRuns) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {"batch", int64_t{16}, int64_t{12}, int64_t{12}});
  b.initializer(make_float_tensor("w", {16, 16, 3, 3}, some_floats(16 * 16 * 9, 0.2f)));
  b.initializer(make_float_tensor("w2", {16, 16, 1, 1}, some_floats(16 * 16, 0.5f)));
  auto& c1 = b.node("Conv", {"x", "w"}, {"c1"}, "c1");
  attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "r1");
  b.node("Conv", {"r1", "w2"}, {"c2"}, "c2");
  b.node("Add", {"c2", "x"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"r2"}, "r2");
  auto& c3 = b.node("Conv", {"r2", "w"}, {"c3"}, "c3");
  attr_ints(c3, "pads", {1, 1, 1, 1});
  b.node("Add", {"c3", "r2"}, {"y"}, "add2");
  b.node("Sigmoid", {"y"}, {"z"}, "sig");
  b.output("y", DataType::Float, {"batch", int64_t{16}, int64_t{12}, int64_t{12}});
  b.output("z", DataType::Float, {"batch", int64_t{16}, int64_t{12}, int64_t{12}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  auto inputs = [&](int64_t batch) {
    InputSpec spec;
    spec.seed = 11;
    spec.dims["batch"] = batch;
    return make_inputs(*m, spec);
  };
  auto same = [](const NamedValues& a, const NamedValues& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k) {
      const Tensor& x = a[k].second.tensor();
      const Tensor& y = b[k].second.tensor();
      if (x.shape() != y.shape() || std::memcmp(x.raw(), y.raw(), x.byte_size()) != 0) return false;
    }
    return true;
  };
  auto p = make_cpu_engine()->prepare(m);
  std::vector<NamedValues> kept;
  const NamedValues in2 = inputs(2);
  for (int i = 0; i < 4; ++i) kept.push_back(p->run(in2));
  EXPECT_GT(p->last_run_stats().arena_bytes, 0u);  // runs after the first used a planned arena
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(same(kept[i], kept[0])) << "run " << i;
  // The batch changes back and forth; each answer matches a fresh engine's first (heap) run.
  for (int64_t batch : {3, 3, 2, 3, 3, 3}) {
    const NamedValues in = inputs(batch);
    const NamedValues want = make_cpu_engine()->prepare(m)->run(in);
    EXPECT_TRUE(same(p->run(in), want)) << "batch " << batch;
  }
  EXPECT_TRUE(same(kept[0], make_cpu_engine()->prepare(m)->run(in2)));  // kept outputs are intact
  // An observer that reads only times and shapes (run --profile) leaves the
  // arena in use; one that reads values gets outputs of their own. (A fresh
  // engine: the outputs kept above hold planned blocks, which a run must not reuse.)
  struct Shapes : Observer {
    bool values = false;
    int nodes = 0;
    void on_node(const NodeEvent&) override { ++nodes; }
    bool reads_values() const override { return values; }
  };
  auto q = make_cpu_engine()->prepare(m);
  for (bool values : {false, true}) {
    Shapes obs;
    obs.values = values;
    RunOptions ro;
    ro.observer = &obs;
    ro.capture_original = false;
    for (int i = 0; i < 3; ++i)  // the first run records the plan
      EXPECT_TRUE(same(q->run(in2, ro), kept[0])) << "observer reads values: " << values;
    EXPECT_GT(obs.nodes, 0);
    EXPECT_EQ(q->last_run_stats().arena_bytes > 0, !values) << "observer reads values: " << values;
  }
}
