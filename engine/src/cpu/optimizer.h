// Graph optimizer of the CPU engine: an ordered list of passes, each a unit
// in engine/src/cpu/passes/ with its own tests. A pass rewrites the model in
// place and says whether it changed anything. Nodes that replace original
// nodes record them in metadata "onnxscope.fused_from" (names joined by ';'),
// so observers and the debugger can map results back.
#pragma once

#include <string>
#include <vector>

#include "onnxscope/cpu.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"

namespace onnxscope::cpu {

inline constexpr const char* kFusedFrom = "onnxscope.fused_from";
inline constexpr const char* kCpuDomain = "onnxscope.cpu";

struct PassContext {
  Diagnostics* log = nullptr;  // info lines: what each pass did
  // Constant folding never makes a tensor larger than this: big enough for the
  // largest real weight (VGG-19 fc6, 411 MB), bounded so a hostile
  // ConstantOfShape cannot make prepare allocate without limit.
  uint64_t max_fold_bytes = uint64_t{512} << 20;
  // bisect-passes: a pass asks before each rewrite it makes (allow()), so a
  // run can stop after the first `budget` rewrites (< 0: no limit) and
  // name each one made (`sites`, when set).
  int64_t budget = -1;
  std::vector<RewriteSite>* sites = nullptr;
  const char* pass = "";  // the pass running now (optimize() sets it)
  bool device_fusions = false;  // OptimizeOptions::device_fusions: a device engine's plan
  // True when the rewrite anchored at node `anchor` may be made (and is
  // counted); false once the budget is spent: the pass leaves it undone.
  bool allow(const std::string& anchor) {
    if (budget == 0) return false;
    if (budget > 0) --budget;
    if (sites) sites->push_back({pass, anchor});
    return true;
  }
};

using PassFn = bool (*)(Model& model, PassContext& ctx);

struct Pass {
  PassInfo info;
  PassFn run;
  bool last = false;  // runs once, after the others reach their fixed point (layout)
};

// The pass table (engine/src/cpu/pass_table.cpp).
const std::vector<Pass>& pass_table();

struct OptimizeResult {
  std::vector<std::string> applied;  // passes that changed the model, in order
};

// Runs the enabled passes to a fixed point (bounded); `capture` keeps every
// original node (passes that fuse or remove nodes are skipped).
OptimizeResult optimize(Model& model, const CpuOptions& options, bool capture, Diagnostics& log,
                        std::vector<RewriteSite>* sites = nullptr);

// Tests only: run `fn` in place of the pass named `name` (a pass broken on
// purpose, for bisect-passes' test); a null fn restores the pass.
void replace_pass_for_testing(const std::string& name, PassFn fn);

// Records that `node` stands for the original nodes `from` (their own
// provenance included).
void set_fused_from(Node& node, const std::vector<const Node*>& from);
std::vector<std::string> fused_from(const Node& node);

}  // namespace onnxscope::cpu
