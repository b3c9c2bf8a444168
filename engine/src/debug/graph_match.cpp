// The graph matcher (onnxscope/graph_match.h): pairs the values of two models
// of one network, strongest evidence first, then spreads pairs along the
// structure until nothing changes.
#include "onnxscope/graph_match.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "debug/graph_match_index.h"
#include "onnxscope/diagnostics.h"

namespace onnxscope {

using match::GraphIndex;
using match::commutative;

const char* match_how_name(MatchHow h) {
  switch (h) {
    case MatchHow::Mapping: return "mapping";
    case MatchHow::Input: return "input";
    case MatchHow::Name: return "name";
    case MatchHow::Output: return "output";
    case MatchHow::Weights: return "weights";
    case MatchHow::Scope: return "scope";
    case MatchHow::Structure: return "structure";
  }
  return "?";
}

double GraphMatch::coverage_a() const {
  return data_nodes_a ? double(paired_a + region_a.size()) / double(data_nodes_a) : 1.0;
}
double GraphMatch::coverage_b() const {
  return data_nodes_b ? double(paired_b + region_b.size()) / double(data_nodes_b) : 1.0;
}

std::string GraphMatch::summary() const {
  auto side = [](const char* who, size_t total, size_t paired, size_t region, size_t unmatched, double cov) {
    char b[200];
    std::snprintf(b, sizeof b, "%s: %zu data nodes, %zu paired, %zu in rewritten regions, %zu unmatched (%.0f%% covered)", who,
                  total, paired, region, unmatched, 100 * cov);
    return std::string(b);
  };
  return side("A", data_nodes_a, paired_a, region_a.size(), unmatched_a.size(), coverage_a()) + "; " +
         side("B", data_nodes_b, paired_b, region_b.size(), unmatched_b.size(), coverage_b());
}

namespace {

[[noreturn]] void fail(const std::string& file, int line, const std::string& message) {
  Diagnostic d;
  d.code = "bad-mapping";
  d.where.file = file;
  if (line > 0) d.where.value = "line " + std::to_string(line);
  d.message = message;
  throw Error(d);
}

// Weights closer than 2% of their largest magnitude hold the same values:
// an int8 quantization step is 1/127 of it, float16 rounding far less, and
// two different layers' weights differ by about their magnitude.
struct Weight {
  const Tensor* t = nullptr;
  double sum_abs = 0, max_abs = 0;
};

std::optional<Weight> weight_of(const GraphIndex& x, int n) {
  Weight best;
  for (const auto& in : x.g.nodes[size_t(n)].inputs) {
    if (in.empty() || !x.statics.count(in)) continue;
    const Tensor* t = x.static_value(in);
    if (!t || t->is_string() || t->element_count() < 16 || t->element_count() > (uint64_t{1} << 26)) continue;
    const DTypeInfo& info = dtype_info(t->dtype());
    if (!info.is_float && !info.is_integer) continue;
    if (best.t && best.t->element_count() >= t->element_count()) continue;
    std::vector<double> v(t->element_count());
    t->elements_as_double(0, v.size(), v.data());
    double s = 0, m = 0;
    bool uniform = true;
    for (double e : v) {
      s += std::fabs(e);
      m = std::max(m, std::fabs(e));
      uniform = uniform && e == v[0];
    }
    if (uniform || !std::isfinite(s)) continue;  // all ones or zeros: no evidence of which layer it is
    best = {t, s, m};
  }
  if (!best.t) return std::nullopt;
  return best;
}

bool same_values(const Weight& a, const Weight& b) {
  if (a.t->element_count() != b.t->element_count()) return false;
  if (std::fabs(a.sum_abs - b.sum_abs) > 0.02 * a.sum_abs) return false;
  const uint64_t n = a.t->element_count();
  const Shape &sa = a.t->shape(), &sb = b.t->shape();
  const bool transposed = sa != sb && sa.size() == 2 && sb.size() == 2 && sa[0] == sb[1] && sa[1] == sb[0];
  auto partner = [&](uint64_t i) { return transposed ? (i % uint64_t(sa[1])) * uint64_t(sa[0]) + i / uint64_t(sa[1]) : i; };
  const double limit = 0.02 * a.max_abs;
  // A few spread-out elements first: two layers of one shape and one
  // initialisation (their sums alike) part there, without decoding either.
  for (uint64_t k = 0; k < 64; ++k) {
    const uint64_t i = (k * 2654435761u) % n;
    if (!(std::fabs(a.t->element_as_double(i) - b.t->element_as_double(partner(i))) <= limit)) return false;
  }
  constexpr uint64_t kChunk = 4096;
  std::vector<double> x(std::min(n, kChunk)), y(transposed ? n : std::min(n, kChunk));
  if (transposed) b.t->elements_as_double(0, n, y.data());
  for (uint64_t i0 = 0; i0 < n; i0 += kChunk) {
    const uint64_t m = std::min(kChunk, n - i0);
    a.t->elements_as_double(i0, m, x.data());
    if (!transposed) b.t->elements_as_double(i0, m, y.data());
    for (uint64_t k = 0; k < m; ++k)
      if (!(std::fabs(x[k] - y[transposed ? partner(i0 + k) : k]) <= limit)) return false;
  }
  return true;
}

// The attributes that say which values a node computes (Transpose's perm, a
// reduction's axes) must agree where both nodes set them: two nodes reading
// the same values with another perm compute other values, even when the
// shapes happen to agree. Modes that change nothing here (Reshape's
// allowzero) and one side left to its default are no evidence either way.
bool same_attributes(const Node& x, const Node& y) {
  static const std::set<std::string> semantic = {"perm", "axis", "axes", "transA", "transB", "to", "alpha", "beta", "mode",
                                                 "direction", "largest", "descending", "reduction", "exclusive", "reverse",
                                                 "equation", "group", "strides", "dilations", "kernel_shape", "p", "batch_dims"};
  for (const auto& a : x.attributes) {
    if (!semantic.count(a.name)) continue;
    const Attribute* b = y.attribute(a.name);
    if (!b || b->type != a.type) continue;
    if (a.i != b->i || a.f != b->f || a.s != b->s || a.ints != b->ints || a.floats != b->floats || a.strings != b->strings)
      return false;
  }
  return true;
}

// Operators that compute the same value from the same data in two spellings
// exporters choose between: the pair is checked by the values' shapes.
int family(const std::string& op) {
  if (op == "GlobalAveragePool" || op == "ReduceMean") return 1;
  if (op == "GlobalMaxPool" || op == "ReduceMax") return 2;
  if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return 3;
  return 0;
}
bool same_op(const Node& x, const Node& y) {
  if (x.op_type == y.op_type) return same_attributes(x, y);
  return family(x.op_type) != 0 && family(x.op_type) == family(y.op_type);
}

class Matcher {
 public:
  Matcher(const Model& a, const Model& b, const MatchOptions& o) : A(a, o.a_values), B(b, o.b_values), opt(o) {}

  GraphMatch run() {
    if (opt.mapping) from_mapping(*opt.mapping);
    inputs();
    if (opt.by_name) names();
    outputs();
    if (opt.by_weights) weights();
    for (int round = 0; round < 64; ++round) {
      const size_t before = a2b.size() + na2b.size();
      forward();
      backward();
      if (a2b.size() + na2b.size() == before) scopes();  // the weaker evidence, when the structure is stuck
      if (a2b.size() + na2b.size() == before) break;
    }
    return finish();
  }

 private:
  GraphIndex A, B;
  const MatchOptions& opt;
  std::map<std::string, std::string> a2b, b2a;  // roots
  std::map<int, int> na2b, nb2a;                 // nodes
  std::vector<TensorPair> found;
  std::set<std::string> blocked;                 // A roots the mapping keeps unpaired
  std::set<std::pair<std::string, std::string>> rejected_seen;
  std::vector<RejectedPair> rejected;
  std::map<int, std::optional<Weight>> weights_a, weights_b;

  const std::optional<Weight>& weight(GraphIndex& x, std::map<int, std::optional<Weight>>& cache, int n) {
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, weight_of(x, n)).first;
    return it->second;
  }

  static const Tensor* value_of(const GraphIndex& x, const std::string& t) {
    if (!x.values) return nullptr;
    auto it = x.values->values.find(t);
    return it != x.values->values.end() && it->second.is_tensor() ? &it->second.tensor() : nullptr;
  }

  bool pair(const std::string& ra, const std::string& rb, MatchHow how) {
    if (a2b.count(ra) || b2a.count(rb) || blocked.count(ra)) return false;
    const Tensor *va = value_of(A, ra), *vb = value_of(B, rb);
    if (va && vb && va->shape() != vb->shape()) {
      if (rejected_seen.insert({ra, rb}).second)
        rejected.push_back({ra, rb, "shape " + shape_to_string(va->shape()) + " vs " + shape_to_string(vb->shape())});
      return false;
    }
    a2b[ra] = rb;
    b2a[rb] = ra;
    found.push_back({ra, rb, how});
    return true;
  }

  // Pairs two nodes of one operator and their outputs in order.
  void pair_nodes(int na, int nb, MatchHow how) {
    if (na2b.count(na) || nb2a.count(nb)) return;
    na2b[na] = nb;
    nb2a[nb] = na;
    const Node &x = A.g.nodes[size_t(na)], &y = B.g.nodes[size_t(nb)];
    for (size_t k = 0; k < x.outputs.size() && k < y.outputs.size(); ++k)
      if (A.is_data(x.outputs[k]) && B.is_data(y.outputs[k])) pair(A.root_of(x.outputs[k]), B.root_of(y.outputs[k]), how);
  }

  // The producers of a pair of roots, when both are nodes of one operator.
  void pair_producers(const std::string& ra, const std::string& rb, MatchHow how) {
    auto pa = A.producer.find(ra);
    auto pb = B.producer.find(rb);
    if (pa == A.producer.end() || pb == B.producer.end()) return;
    if (!same_op(A.g.nodes[size_t(pa->second)], B.g.nodes[size_t(pb->second)])) return;
    pair_nodes(pa->second, pb->second, how);
  }

  void from_mapping(const TensorMapping& m) {
    for (const auto& [a, b] : m.pairs) {
      if (!A.is_data(a))
        fail(m.source, 0, A.statics.count(a) ? "'" + a + "' is a constant of " + A.model.source + ", not a value a run computes"
                                             : A.model.source + " has no tensor '" + a + "'");
      if (b == "-") {
        blocked.insert(A.root_of(a));
        continue;
      }
      if (!B.is_data(b))
        fail(m.source, 0, B.statics.count(b) ? "'" + b + "' is a constant of " + B.model.source + ", not a value a run computes"
                                             : B.model.source + " has no tensor '" + b + "'");
      pair(A.root_of(a), B.root_of(b), MatchHow::Mapping);
    }
  }

  static std::vector<std::string> real_inputs(const GraphIndex& x) {
    std::vector<std::string> out;
    for (const auto& in : x.g.inputs)
      if (!x.statics.count(in.name)) out.push_back(in.name);
    return out;
  }

  void inputs() {
    const auto ia = real_inputs(A), ib = real_inputs(B);
    std::set<std::string> sa(ia.begin(), ia.end()), sb(ib.begin(), ib.end());
    if (sa == sb) {
      for (const auto& n : ia) pair(A.root_of(n), B.root_of(n), MatchHow::Input);
    } else if (ia.size() == ib.size()) {
      for (size_t k = 0; k < ia.size(); ++k) pair(A.root_of(ia[k]), B.root_of(ib[k]), MatchHow::Input);
    }
  }

  void names() {
    for (const auto& t : A.data_tensors) {
      if (!B.is_data(t)) continue;
      const std::string &ra = A.root_of(t), &rb = B.root_of(t);
      auto pa = A.producer.find(ra);
      auto pb = B.producer.find(rb);
      const bool both_inputs = pa == A.producer.end() && pb == B.producer.end();
      const bool same_op = pa != A.producer.end() && pb != B.producer.end() &&
                           A.g.nodes[size_t(pa->second)].op_type == B.g.nodes[size_t(pb->second)].op_type;
      if (!both_inputs && !same_op) continue;  // one name, two different computations
      if (pair(ra, rb, MatchHow::Name)) pair_producers(ra, rb, MatchHow::Name);
    }
  }

  void outputs() {
    const auto &oa = A.g.outputs, &ob = B.g.outputs;
    if (oa.size() != ob.size()) return;
    for (size_t k = 0; k < oa.size(); ++k) {
      if (!A.is_data(oa[k].name) || !B.is_data(ob[k].name)) continue;
      const std::string &ra = A.root_of(oa[k].name), &rb = B.root_of(ob[k].name);
      if (pair(ra, rb, MatchHow::Output)) pair_producers(ra, rb, MatchHow::Output);
    }
  }

  std::vector<int> weighted(GraphIndex& x, std::map<int, std::optional<Weight>>& cache) {
    std::vector<int> out;
    for (int n = 0; n < int(x.g.nodes.size()); ++n)
      if (x.data_node[size_t(n)] && !x.alias_node[size_t(n)] && weight(x, cache, n)) out.push_back(n);
    return out;
  }

  // Nodes whose weights hold the same values in both models (and in no
  // other node of either): the same layer. Same operator: the nodes and
  // their outputs pair; another (MatMul against Gemm): their data inputs do.
  void weights() {
    const std::vector<int> wa = weighted(A, weights_a), wb = weighted(B, weights_b);
    std::map<uint64_t, std::vector<int>> b_by_count;
    for (int n : wb) b_by_count[weight(B, weights_b, n)->t->element_count()].push_back(n);
    std::map<uint64_t, std::vector<int>> a_by_count;
    for (int n : wa) a_by_count[weight(A, weights_a, n)->t->element_count()].push_back(n);
    for (int na : wa) {
      const Weight& x = *weight(A, weights_a, na);
      std::vector<int> hits;
      for (int nb : b_by_count[x.t->element_count()])
        if (same_values(x, *weight(B, weights_b, nb))) hits.push_back(nb);
      if (hits.size() != 1) continue;
      const Weight& y = *weight(B, weights_b, hits[0]);
      int back = 0;  // A nodes with these values: one, or the layer is ambiguous (tied or repeated weights)
      for (int other : a_by_count[x.t->element_count()]) back += same_values(y, *weight(A, weights_a, other));
      if (back != 1) continue;
      const int nb = hits[0];
      const Node &p = A.g.nodes[size_t(na)], &q = B.g.nodes[size_t(nb)];
      const auto ia = A.data_input_roots(na), ib = B.data_input_roots(nb);
      if (p.op_type == q.op_type) pair_nodes(na, nb, MatchHow::Weights);
      if (!ia.empty() && !ib.empty()) pair(ia[0], ib[0], MatchHow::Weights);
    }
  }

  // The module a node was exported from: dynamo's pkg.torch.onnx.name_scopes
  // (['', 'layer1', 'layer1.0', 'layer1.0.conv1', 'conv2d_3']: the last
  // module before the fx node's own name), or a TorchScript node name
  // (/layer1/layer1.0/conv1/Conv: segments that repeat their parent's path
  // replace it, others extend it). "" when neither.
  static std::string module_of(const Node& n) {
    for (const auto& kv : n.metadata) {
      if (kv.key != "pkg.torch.onnx.name_scopes") continue;
      std::vector<std::string> parts;
      for (size_t p = kv.value.find('\''); p != std::string::npos;) {
        const size_t q = kv.value.find('\'', p + 1);
        if (q == std::string::npos) break;
        parts.push_back(kv.value.substr(p + 1, q - p - 1));
        p = kv.value.find('\'', q + 1);
      }
      return parts.size() >= 2 ? parts[parts.size() - 2] : std::string();
    }
    if (n.name.size() < 2 || n.name[0] != '/') return {};
    std::string path;
    size_t start = 1;
    for (size_t slash; (slash = n.name.find('/', start)) != std::string::npos; start = slash + 1) {
      const std::string seg = n.name.substr(start, slash - start);
      if (seg.empty()) continue;
      if (!path.empty() && seg.rfind(path + ".", 0) == 0) path = seg;
      else path = path.empty() ? seg : path + "." + seg;
    }
    return path;
  }

  // Whether B node nb reading its data inputs agrees with what is paired for
  // A node na's: no input paired elsewhere; `witnessed` when one is paired with its counterpart.
  bool inputs_agree(int na, int nb, bool& witnessed) const {
    const auto ia = A.data_input_roots(na), ib = B.data_input_roots(nb);
    witnessed = false;
    if (ia.size() != ib.size()) return false;
    const bool any_order = commutative(A.g.nodes[size_t(na)].op_type);
    for (size_t k = 0; k < ia.size(); ++k) {
      auto pa = a2b.find(ia[k]);
      if (any_order) {
        if (pa != a2b.end()) {
          if (std::find(ib.begin(), ib.end(), pa->second) == ib.end()) return false;
          witnessed = true;
        }
        continue;
      }
      auto pb = b2a.find(ib[k]);
      if (pa == a2b.end() && pb == b2a.end()) continue;
      if (pa == a2b.end() || pa->second != ib[k]) return false;
      witnessed = true;
    }
    return true;
  }

  // Nodes exported from the same module, of the same operator, the k-th of
  // as many on both sides: the same computation (two exporters' names) when
  // their paired inputs agree, and, where a module holds several of that
  // operator (a GELU's two Muls), one of its inputs is already paired with
  // the other's.
  void scopes() {
    using Key = std::pair<std::string, std::string>;  // module, operator
    auto collect = [](const GraphIndex& x) {
      std::map<Key, std::vector<int>> out;
      for (int n = 0; n < int(x.g.nodes.size()); ++n) {
        if (!x.data_node[size_t(n)] || x.alias_node[size_t(n)]) continue;
        const Node& node = x.g.nodes[size_t(n)];
        std::string module = module_of(node);
        if (!module.empty()) out[{module, node.op_type}].push_back(n);
      }
      return out;
    };
    const auto sa = collect(A), sb = collect(B);
    for (const auto& [key, nodes] : sa) {
      auto it = sb.find(key);
      if (it == sb.end() || it->second.size() != nodes.size()) continue;
      for (size_t k = 0; k < nodes.size(); ++k) {
        const int na = nodes[k], nb = it->second[k];
        bool witnessed = false;
        if (na2b.count(na) || nb2a.count(nb) || !same_attributes(A.g.nodes[size_t(na)], B.g.nodes[size_t(nb)]) ||
            !inputs_agree(na, nb, witnessed) || (nodes.size() > 1 && !witnessed))
          continue;
        pair_nodes(na, nb, MatchHow::Scope);
      }
    }
  }

  static bool same_inputs(const std::string& op, std::vector<std::string> x, std::vector<std::string> y) {
    if (x.size() != y.size()) return false;
    if (commutative(op)) {
      std::sort(x.begin(), x.end());
      std::sort(y.begin(), y.end());
    }
    return x == y;
  }

  // A node whose data inputs are all paired pairs with the one B node of its
  // operator that reads the partners (several: by weights, else in order).
  void forward() {
    for (int na = 0; na < int(A.g.nodes.size()); ++na) {
      if (!A.data_node[size_t(na)] || A.alias_node[size_t(na)] || na2b.count(na)) continue;
      const std::vector<std::string> ins = A.data_input_roots(na);
      if (ins.empty()) continue;
      std::vector<std::string> mapped;
      for (const auto& r : ins) {
        auto it = a2b.find(r);
        if (it == a2b.end()) break;
        mapped.push_back(it->second);
      }
      if (mapped.size() != ins.size()) continue;
      const std::string& op = A.g.nodes[size_t(na)].op_type;
      std::vector<int> cands;
      for (int nb : B.readers(mapped[0]))
        if (!nb2a.count(nb) && same_op(A.g.nodes[size_t(na)], B.g.nodes[size_t(nb)]) &&
            same_inputs(op, B.data_input_roots(nb), mapped))
          cands.push_back(nb);
      if (cands.empty()) continue;
      if (cands.size() > 1) {
        if (const auto& w = weight(A, weights_a, na)) {
          std::vector<int> same;
          for (int nb : cands)
            if (const auto& v = weight(B, weights_b, nb); v && same_values(*w, *v)) same.push_back(nb);
          if (same.size() == 1) cands = same;
        }
      }
      if (cands.size() > 1) {
        // As many A nodes of this operator read the same values: the k-th with the k-th.
        std::vector<int> group;
        for (int other : A.readers(ins[0]))
          if (!na2b.count(other) && A.g.nodes[size_t(other)].op_type == op && same_inputs(op, A.data_input_roots(other), ins) &&
              same_op(A.g.nodes[size_t(other)], B.g.nodes[size_t(cands[0])]))
            group.push_back(other);
        if (group.size() != cands.size()) continue;
        cands = {cands[size_t(std::find(group.begin(), group.end(), na) - group.begin())]};
      }
      pair_nodes(na, cands[0], MatchHow::Structure);
    }
  }

  // Paired nodes pair their data inputs; paired values pair their producers.
  void backward() {
    for (const auto& [na, nb] : std::map<int, int>(na2b)) {
      const std::string& op = A.g.nodes[size_t(na)].op_type;
      if (!same_op(A.g.nodes[size_t(na)], B.g.nodes[size_t(nb)])) continue;
      const auto ia = A.data_input_roots(na), ib = B.data_input_roots(nb);
      if (ia.size() != ib.size()) continue;
      if (!commutative(op)) {
        for (size_t k = 0; k < ia.size(); ++k) pair(ia[k], ib[k], MatchHow::Structure);
        continue;
      }
      std::vector<std::string> ua, ub;
      for (const auto& r : ia)
        if (!a2b.count(r)) ua.push_back(r);
      for (const auto& r : ib)
        if (!b2a.count(r)) ub.push_back(r);
      if (ua.size() == 1 && ub.size() == 1) pair(ua[0], ub[0], MatchHow::Structure);
    }
    for (const auto& [ra, rb] : std::map<std::string, std::string>(a2b)) pair_producers(ra, rb, MatchHow::Structure);
  }

  // Per data node of x: paired (an output's value is), inside a rewritten
  // region, or unmatched. A region is a connected group of unpaired nodes (at
  // most kRegionNodes) that reads paired values, whose outputs reach no graph
  // output and are read by paired nodes only; and the other model computes
  // those readers' partners from the partners of the same paired values
  // (through its own unpaired nodes: the fused or decomposed form).
  static constexpr size_t kRegionNodes = 64;
  static void classify(const GraphIndex& x, const GraphIndex& y, const std::map<std::string, std::string>& x2y,
                       const std::map<std::string, std::string>& y2x, size_t& data_nodes, size_t& paired,
                       std::vector<MatchNode>& region, std::vector<MatchNode>& unmatched) {
    const int count = int(x.g.nodes.size());
    std::vector<char> is_paired(size_t(count), 0), in_region(size_t(count), 0);
    for (int n = 0; n < count; ++n) {
      if (!x.data_node[size_t(n)]) continue;
      for (const auto& out : x.g.nodes[size_t(n)].outputs)
        if (x.is_data(out) && x2y.count(x.root_of(out))) is_paired[size_t(n)] = 1;
    }
    // Groups of unpaired nodes joined by the values they pass each other.
    std::vector<int> up(static_cast<size_t>(count));
    for (int n = 0; n < count; ++n) up[size_t(n)] = n;
    auto group_of = [&up](int n) {
      while (up[size_t(n)] != n) {
        up[size_t(n)] = up[size_t(up[size_t(n)])];
        n = up[size_t(n)];
      }
      return n;
    };
    auto unpaired = [&](int n) { return x.data_node[size_t(n)] && !is_paired[size_t(n)]; };
    for (int n = 0; n < count; ++n) {
      if (!unpaired(n)) continue;
      for (const auto& out : x.g.nodes[size_t(n)].outputs)
        if (auto c = x.consumers.find(out); !out.empty() && c != x.consumers.end())
          for (int r : c->second)
            if (unpaired(r)) up[size_t(group_of(r))] = group_of(n);
    }
    std::map<int, std::vector<int>> groups;
    for (int n = 0; n < count; ++n)
      if (unpaired(n)) groups[group_of(n)].push_back(n);
    for (const auto& [head, members] : groups) {
      std::set<std::string> reads;  // paired roots the group or its readers read
      std::set<int> exits;
      bool closed = true;
      for (int n : members) {
        for (const auto& in : x.g.nodes[size_t(n)].inputs)
          if (x.is_data(in) && x2y.count(x.root_of(in))) reads.insert(x.root_of(in));
        for (const auto& out : x.g.nodes[size_t(n)].outputs) {
          if (!x.is_data(out)) continue;
          if (x.graph_outputs.count(out)) closed = false;
          if (auto c = x.consumers.find(out); c != x.consumers.end())
            for (int r : c->second)
              if (x.data_node[size_t(r)] && is_paired[size_t(r)]) exits.insert(r);
        }
      }
      // A rewrite replaces a bounded piece per value it feeds on (a shared
      // attention mask joins every layer's attention into one group).
      if (reads.empty() || exits.empty() || members.size() > kRegionNodes * exits.size()) closed = false;
      for (int e : exits)
        for (const auto& in : x.g.nodes[size_t(e)].inputs)
          if (x.is_data(in) && x2y.count(x.root_of(in))) reads.insert(x.root_of(in));
      // The other side: what the exits' partners are computed from.
      for (int e : exits) {
        if (!closed) break;
        for (const auto& out : x.g.nodes[size_t(e)].outputs) {
          if (!x.is_data(out) || !x2y.count(x.root_of(out))) continue;
          std::vector<std::string> stack;
          std::set<std::string> seen;
          if (auto p = y.producer.find(x2y.at(x.root_of(out))); p != y.producer.end())
            for (const auto& in : y.g.nodes[size_t(p->second)].inputs) stack.push_back(in);
          while (closed && !stack.empty()) {
            const std::string t = stack.back();
            stack.pop_back();
            if (!y.is_data(t) || !seen.insert(t).second) continue;
            const std::string& r = y.root_of(t);
            if (auto back = y2x.find(r); back != y2x.end()) {
              closed = reads.count(back->second) > 0;  // a paired value the group does not read: another computation
              continue;
            }
            auto p = y.producer.find(r);
            if (p == y.producer.end() || seen.size() > 4 * kRegionNodes) {
              closed = false;
              break;
            }
            for (const auto& in : y.g.nodes[size_t(p->second)].inputs) stack.push_back(in);
          }
          break;
        }
      }
      if (closed)
        for (int n : members) in_region[size_t(n)] = 1;
    }
    for (int n = 0; n < count; ++n) {
      if (!x.data_node[size_t(n)]) continue;
      ++data_nodes;
      if (is_paired[size_t(n)]) ++paired;
      else (in_region[size_t(n)] ? region : unmatched).push_back({x.label(n), x.g.nodes[size_t(n)].op_type});
    }
  }

  GraphMatch finish() {
    GraphMatch m;
    std::map<std::string, size_t> order;
    for (size_t i = 0; i < A.data_tensors.size(); ++i) order.emplace(A.data_tensors[i], i);
    m.pairs = found;
    std::stable_sort(m.pairs.begin(), m.pairs.end(),
                     [&](const TensorPair& x, const TensorPair& y) { return order[x.a] < order[y.a]; });
    for (const auto& t : A.data_tensors)
      if (auto it = a2b.find(A.root_of(t)); it != a2b.end()) m.b_of[t] = it->second;
    classify(A, B, a2b, b2a, m.data_nodes_a, m.paired_a, m.region_a, m.unmatched_a);
    classify(B, A, b2a, a2b, m.data_nodes_b, m.paired_b, m.region_b, m.unmatched_b);
    m.rejected = rejected;
    return m;
  }
};

}  // namespace

GraphMatch match_graphs(const Model& a, const Model& b, const MatchOptions& options) {
  return Matcher(a, b, options).run();
}

TensorMapping read_tensor_mapping(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, 0, "cannot read the mapping file");
  TensorMapping m;
  m.source = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    // Tab-separated when the line has a tab (names may hold spaces), else by spaces.
    std::vector<std::string> cols;
    if (line.find('\t') != std::string::npos) {
      std::istringstream cells(line);
      for (std::string c; std::getline(cells, c, '\t');)
        if (!c.empty()) cols.push_back(c);
    } else {
      std::istringstream words(line);
      for (std::string w; words >> w;) cols.push_back(w);
    }
    if (cols.size() < 2)
      fail(path, number, "a line holds 'A_TENSOR B_TENSOR' (or 'A_TENSOR -'); this one names only '" + cols[0] + "'");
    if (cols.size() > 3) fail(path, number, "more than three columns (A_TENSOR B_TENSOR [how])");
    m.pairs.emplace_back(cols[0], cols[1]);
  }
  return m;
}

std::string tensor_mapping_text(const GraphMatch& m, const std::string& a_path, const std::string& b_path) {
  std::string s = "# onnxscope tensor mapping: A_TENSOR B_TENSOR [how it was found]\n# A: " + a_path + "\n# B: " + b_path +
                  "\n# Edit freely: a line 'A_TENSOR -' keeps A_TENSOR unpaired; pass the file back with --mapping.\n";
  for (const auto& p : m.pairs) s += p.a + "\t" + p.b + "\t" + match_how_name(p.how) + "\n";
  return s;
}

}  // namespace onnxscope
