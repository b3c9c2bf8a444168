// Small graph queries shared by validation, the interpreter and rewrites.
#pragma once

#include <set>
#include <string>
#include <unordered_map>

#include "onnxscope/ir.h"

namespace onnxscope::detail {

// Names a graph (and the graphs nested in it) reads but does not define: the
// values it captures from enclosing scopes. Memoised per graph in `cache`.
class FreeNames {
 public:
  const std::set<std::string>& of(const Graph& g);

 private:
  std::unordered_map<const Graph*, std::set<std::string>> cache_;
};

}  // namespace onnxscope::detail
