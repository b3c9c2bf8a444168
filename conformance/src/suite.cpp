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

std::vector<TestCase> discover_suite(const fs::path& root) {
  std::vector<TestCase> cases;
  fs::recursive_directory_iterator it(root), end;
  for (; it != end; ++it) {
    if (!it->is_regular_file() || it->path().extension() != ".onnx") continue;
    TestCase c;
    c.dir = it->path().parent_path();
    c.model = it->path();
    fs::path rel = fs::relative(c.dir, root);
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
