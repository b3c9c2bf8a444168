// Random Einsum problems for cuda_kernels_test: the forms models use (matrix
// and batched products, outer products, attention's bhqd,bhkd->bhqk,
// transposes, traces, diagonals, sums, ellipses that broadcast) and random
// equations of 1 to 3 operands, explicit or implicit.
#include <algorithm>
#include <string>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case einsum(Rng& rng, const std::string&) {
  Case c(12);
  c.loose = true;
  const char letters[] = "abcdef";
  int64_t size[6];
  for (auto& s : size) s = pick(rng, 1, 4);
  std::vector<std::string> terms;
  std::string out;
  if (coin(rng)) {  // a form models use; some labels long, so contractions reach the GEMM path (16 or more)
    for (auto& sz : size)
      if (pick(rng, 0, 2) != 0) sz = pick(rng, 16, 24);
    const std::vector<std::string> forms = {"ab,bc->ac",   "dab,dbc->dac", "a,b->ab",     "abcd,abed->abce", "ab->ba",
                                            "aa->a",       "aa",           "ab->",        "a,a",             "...ab,...bc->...ac",
                                            "ab,...b->...a", "abc->cab",   "ab,b->a",     "aab,bc->ac"};
    const std::string f = choose(rng, forms);
    const size_t arrow = f.find("->");
    std::string lhs = f.substr(0, arrow);
    if (arrow != std::string::npos) out = "->" + f.substr(arrow + 2);
    for (size_t start = 0;;) {
      const size_t comma = lhs.find(',', start);
      terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else {  // random terms over a..f, repeats allowed
    const int64_t n = pick(rng, 1, 3);
    std::string used;
    for (int64_t i = 0; i < n; ++i) {
      std::string t;
      for (int64_t d = pick(rng, 0, 3); d > 0; --d) t += letters[pick(rng, 0, 5)];
      terms.push_back(t);
      used += t;
    }
    if (coin(rng)) {  // explicit: a random subset of the labels used, each once
      out = "->";
      for (char ch : std::string(letters))
        if (used.find(ch) != std::string::npos && coin(rng)) out += ch;
    }
  }
  const DataType type = real_type(rng);
  std::string eq;
  const int64_t ellipsis = pick(rng, 0, 2);  // the dims "..." stands for in the first operand
  for (size_t i = 0; i < terms.size(); ++i) {
    Shape s;
    const std::string& t = terms[i];
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k] == '.') {
        for (int64_t e = 0; e < (i == 0 ? ellipsis : pick(rng, 0, ellipsis)); ++e)
          s.push_back(i == 0 || coin(rng) ? 2 + e : 1);  // later operands: fewer dims, or 1 to broadcast
        k += 2;
      } else {
        s.push_back(size[t[k] - 'a']);
      }
    }
    c.add_tensor("x" + std::to_string(i), type, s, rng, -2, 2);
    eq += (i ? "," : "") + t;
  }
  eq += out;
  // The summed labels: those not in the output (implicit: the labels used once).
  std::string used, kept;
  for (const std::string& t : terms) used += t;
  if (out.empty()) {
    for (char ch : std::string(letters))
      if (std::count(used.begin(), used.end(), ch) == 1) kept += ch;
  } else {
    kept = out.substr(2);
  }
  c.loose_terms = 1;
  for (char ch : std::string(letters))
    if (used.find(ch) != std::string::npos && kept.find(ch) == std::string::npos) c.loose_terms *= size[ch - 'a'];
  std::vector<std::string> in;
  for (size_t i = 0; i < terms.size(); ++i) in.push_back("x" + std::to_string(i));
  attr_string(c.node("Einsum", in), "equation", eq);
  c.what += " " + eq;
  c.note_type(type);
  return c;
}

}  // namespace

void add_einsum_generators(std::map<std::string, Generator>& m) { m["Einsum"] = einsum; }

}  // namespace onnxscope::test::cuda_cases
