// Einsum's labels, sizes and strides (core/einsum_plan.h).
#include "core/einsum_plan.h"

#include <algorithm>
#include <stdexcept>

namespace onnxscope::einsum {

namespace {

// Labels: letters a-z, A-Z are 0..51; the dims an ellipsis stands for are
// 52 + position in the (right-aligned) broadcast ellipsis block.
constexpr int kEllipsisBase = 52;
constexpr int kMaxLabels = kEllipsisBase + 64;

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }

int letter_label(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  fail(std::string("invalid character '") + ch + "' in the einsum equation");
}

// Parses one term; `ell_rank` is the number of dims its ellipsis covers, `ell_total` the broadcast block size.
std::vector<int> parse_term(const std::string& term, int64_t rank, bool is_output, int64_t ell_total, int64_t* ell_rank_out) {
  size_t letters = 0;
  bool has_ell = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      if (has_ell || term.compare(i, 3, "...") != 0) fail("malformed ellipsis in einsum term '" + term + "'");
      has_ell = true;
      i += 2;
    } else {
      ++letters;
    }
  }
  int64_t ell_rank = 0;
  if (!is_output) {
    if (has_ell ? static_cast<int64_t>(letters) > rank : static_cast<int64_t>(letters) != rank)
      fail("einsum term '" + term + "' does not match an operand of rank " + std::to_string(rank));
    ell_rank = has_ell ? rank - static_cast<int64_t>(letters) : 0;
  } else {
    ell_rank = has_ell ? ell_total : 0;
  }
  if (ell_rank_out) *ell_rank_out = ell_rank;
  std::vector<int> labels;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      for (int64_t e = 0; e < ell_rank; ++e) labels.push_back(kEllipsisBase + static_cast<int>(ell_total - ell_rank + e));
      i += 2;
    } else {
      labels.push_back(letter_label(term[i]));
    }
  }
  return labels;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

}  // namespace

Plan plan(const std::string& eq, const std::vector<Shape>& inputs) {
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const size_t n_in = inputs.size();
  if (terms.size() != n_in)
    fail("the equation has " + std::to_string(terms.size()) + " input terms but the node has " + std::to_string(n_in) + " inputs");
  // First pass: ellipsis block size.
  int64_t ell_total = 0;
  std::vector<int64_t> ell_rank(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    parse_term(terms[i], static_cast<int64_t>(inputs[i].size()), false, 0, &ell_rank[i]);
    ell_total = std::max(ell_total, ell_rank[i]);
  }
  if (ell_total > 64) fail("an ellipsis may stand for at most 64 dimensions");
  std::vector<std::vector<int>> in_labels(n_in);
  std::vector<int64_t> size(kMaxLabels, -1);
  std::vector<int> count(kMaxLabels, 0);
  for (size_t i = 0; i < n_in; ++i) {
    in_labels[i] = parse_term(terms[i], static_cast<int64_t>(inputs[i].size()), false, ell_total, nullptr);
    const Shape& s = inputs[i];
    for (size_t d = 0; d < s.size(); ++d) {
      const int l = in_labels[i][d];
      ++count[l];
      if (l >= kEllipsisBase) {
        // Ellipsis dims broadcast (size 1 stretches).
        if (size[l] == -1 || size[l] == 1) size[l] = s[d];
        else if (s[d] != 1 && s[d] != size[l]) fail("ellipsis dimensions of the inputs do not broadcast");
      } else if (size[l] == -1) {
        size[l] = s[d];
      } else if (size[l] != s[d]) {
        fail("label '" + terms[i] + "' has inconsistent sizes " + std::to_string(size[l]) + " and " + std::to_string(s[d]));
      }
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    out_labels = parse_term(eq.substr(arrow + 2), 0, true, ell_total, nullptr);
    std::vector<bool> seen(kMaxLabels, false);
    for (int l : out_labels) {
      if (size[l] == -1) fail("output label does not appear in any input");
      if (seen[l]) fail("output labels must be unique");
      seen[l] = true;
    }
  } else {
    // Implicit output: the ellipsis dims, then labels used once, in alphabetical (ASCII) order.
    for (int64_t e = 0; e < ell_total; ++e) out_labels.push_back(kEllipsisBase + static_cast<int>(e));
    std::vector<std::pair<char, int>> once;
    for (int l = 0; l < kEllipsisBase; ++l)
      if (count[l] == 1) once.emplace_back(l < 26 ? char('a' + l) : char('A' + l - 26), l);
    std::sort(once.begin(), once.end());
    for (auto& [ch, l] : once) out_labels.push_back(l);
  }
  std::vector<int> sum_labels;
  for (int l = 0; l < kMaxLabels; ++l)
    if (size[l] != -1 && std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) sum_labels.push_back(l);
  Plan p;
  for (int l : out_labels) p.out_shape.push_back(size[l]);
  for (int l : sum_labels) p.sum_shape.push_back(size[l]);
  // Per operand and label, the stride that label moves by (repeated labels add; broadcast dims are 0).
  for (size_t i = 0; i < n_in; ++i) {
    std::vector<int64_t> stride(kMaxLabels, 0);
    const Shape& s = inputs[i];
    const auto st = strides_of(s);
    for (size_t d = 0; d < s.size(); ++d)
      if (!(s[d] == 1 && size[in_labels[i][d]] != 1)) stride[in_labels[i][d]] += st[d];
    std::vector<int64_t> os, ss;
    for (int l : out_labels) os.push_back(stride[l]);
    for (int l : sum_labels) ss.push_back(stride[l]);
    p.out_stride.push_back(std::move(os));
    p.sum_stride.push_back(std::move(ss));
  }
  return p;
}

}  // namespace onnxscope::einsum
