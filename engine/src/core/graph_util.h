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

// Calls fn(name) for every value node n reads: its inputs (omitted ones
// skipped), then what each of its subgraphs captures from enclosing scopes.
template <class Fn>
void for_each_read(const Node& n, FreeNames& free, Fn&& fn) {
  for (const auto& in : n.inputs)
    if (!in.empty()) fn(in);
  for (const auto& a : n.attributes) {
    if (a.g)
      for (const auto& v : free.of(*a.g)) fn(v);
    for (const auto& g : a.graphs)
      if (g)
        for (const auto& v : free.of(*g)) fn(v);
  }
}

}  // namespace onnxscope::detail
