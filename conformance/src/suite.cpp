#include "onnxscope/conformance/suite.h"

#include <algorithm>
#include <charconv>

namespace onnxscope::conformance {
namespace fs = std::filesystem;

namespace {
// "test_data_set_12" -> 12; -1 if the name is not of that form.
long data_set_index(const std::string& name) {
  static const std::string prefix = "test_data_set_";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return -1;
  long v = -1;
  auto [p, ec] = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), v);
  return (ec == std::errc() && p == name.data() + name.size()) ? v : -1;
}
}  // namespace

fs::path suite_key_root(const fs::path& root) {
  static const char* const kGroups[] = {"node", "light", "simple", "pytorch-converted", "pytorch-operator", "real"};
  std::error_code ec;
  fs::path p = fs::absolute(root, ec).lexically_normal();
  if (ec) return root;
  if (p.filename().empty()) p = p.parent_path();  // a trailing slash
  if (fs::is_regular_file(p / "VERSION", ec)) return root;
  fs::path child = p;
  for (int up = 0; up < 2 && child.has_parent_path() && child != child.root_path(); ++up) {
    const fs::path parent = child.parent_path();
    const std::string name = child.filename().string();
    bool group = false;
    for (const char* g : kGroups) group = group || name == g;
    if (fs::is_regular_file(parent / "VERSION", ec) || group) return parent;
    child = parent;
  }
  return root;
}

std::vector<TestCase> discover_suite(const fs::path& root) {
  std::vector<TestCase> cases;
  const fs::path key_root = suite_key_root(root);
  fs::recursive_directory_iterator it(root), end;
  for (; it != end; ++it) {
    if (!it->is_regular_file() || it->path().extension() != ".onnx") continue;
    TestCase c;
    c.dir = it->path().parent_path();
    c.model = it->path();
    fs::path rel = fs::relative(c.dir, key_root);
    c.group = rel.begin() != rel.end() ? rel.begin()->string() : "";
    if (it->path().filename() != "model.onnx") {
      // Light layout: the outputs beside the model make it a test.
      const std::string stem = it->path().stem().string();
      for (int k = 0;; ++k) {
        fs::path out = c.dir / (stem + "_output_" + std::to_string(k) + ".pb");
        if (!fs::is_regular_file(out)) break;
        c.loose_outputs.push_back(out);
      }
      if (c.loose_outputs.empty()) continue;
      c.name = stem;
      if (c.group == ".") c.group.clear();
      cases.push_back(std::move(c));
      continue;
    }
    c.name = c.dir.filename().string();
    // A case folder directly under the root has no group.
    if (rel == ".") c.group.clear();
    else if (std::next(rel.begin()) == rel.end() && rel.begin()->string() == c.name) c.group.clear();
    std::vector<std::pair<long, fs::path>> sets;
    for (const auto& e : fs::directory_iterator(c.dir))
      if (e.is_directory())
        if (long k = data_set_index(e.path().filename().string()); k >= 0) sets.emplace_back(k, e.path());
    std::sort(sets.begin(), sets.end());
    for (auto& [k, p] : sets) c.data_sets.push_back(std::move(p));
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(),
            [](const TestCase& a, const TestCase& b) { return std::tie(a.group, a.name) < std::tie(b.group, b.name); });
  return cases;
}

}  // namespace onnxscope::conformance
