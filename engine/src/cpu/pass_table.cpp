// The one pass table of the CPU engine, in the order passes run.
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

const std::vector<Pass>& pass_table() {
  static const std::vector<Pass> table = {
      {{"eliminate-identity", 1, true, "drop Identity nodes, readers read the input"}, eliminate_identity},
      {{"eliminate-dead-nodes", 1, true, "drop nodes whose outputs reach no graph output"}, eliminate_dead_nodes},
  };
  return table;
}

}  // namespace onnxscope::cpu
