// Every model of the upstream ONNX backend suite (node, simple,
// pytorch-converted, pytorch-operator, light) loads, validates without
// errors and gets a summary; and `onnxscope inspect` exits 0 on each.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "onnxscope/conformance/suite.h"
#include "onnxscope/inspect.h"
#include "onnxscope/loader.h"

namespace fs = std::filesystem;
using namespace onnxscope;

namespace {

std::vector<conformance::TestCase> suite() {
  static std::vector<conformance::TestCase> cases = [] {
    if (!fs::is_directory(ONNXSCOPE_TEST_DATA)) return std::vector<conformance::TestCase>{};
    return conformance::discover_suite(ONNXSCOPE_TEST_DATA);
  }();
  return cases;
}

// "node 1884" from the VERSION file the set-up script writes.
size_t recorded_node_count() {
  std::ifstream in(fs::path(ONNXSCOPE_TEST_DATA) / "VERSION");
  std::string word;
  size_t n = 0;
  while (in >> word)
    if (word == "node") in >> n;
  return n;
}

}  // namespace

TEST(UpstreamSuite, DataIsPresentAndComplete) {
  ASSERT_TRUE(fs::is_directory(ONNXSCOPE_TEST_DATA))
      << ONNXSCOPE_TEST_DATA << " is missing: run scripts/setup.sh to write the upstream test data";
  std::map<std::string, size_t> per_group;
  for (const auto& c : suite()) ++per_group[c.group];
  EXPECT_EQ(per_group["node"], recorded_node_count());
  EXPECT_GT(per_group["node"], 1500u);
  EXPECT_EQ(per_group["light"], 9u);
  EXPECT_EQ(per_group["simple"], 23u);
  EXPECT_EQ(per_group["pytorch-converted"], 82u);
  EXPECT_EQ(per_group["pytorch-operator"], 35u);
  for (const auto& c : suite()) {
    if (c.group != "light") {
      EXPECT_FALSE(c.data_sets.empty()) << c.dir;
    }
  }
}

TEST(UpstreamSuite, EveryModelLoadsWithoutErrors) {
  size_t loaded = 0;
  for (const auto& c : suite()) {
    LoadResult r = load_model_file(c.model);
    std::string errors;
    for (const auto& d : r.diagnostics.items())
      if (d.severity == Severity::Error) errors += "\n  " + d.to_string();
    EXPECT_TRUE(r.ok()) << c.group << "/" << c.name << errors;
    if (r.model) {
      ModelSummary s = summarize(r.model.get(), r.diagnostics, c.model.string());
      EXPECT_FALSE(summary_json(s).empty());
      ++loaded;
    }
  }
  EXPECT_EQ(loaded, suite().size());
}

// The CLI itself on every node-suite model: exit status 0, never a signal.
TEST(UpstreamSuite, InspectCliHandlesEveryNodeModel) {
  size_t checked = 0;
  for (const auto& c : suite()) {
    if (c.group != "node") continue;
    std::string cmd = std::string(ONNXSCOPE_CLI) + " inspect --json '" + c.model.string() + "' >/dev/null 2>&1";
    int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << c.name << " killed by a signal";
    EXPECT_EQ(WEXITSTATUS(status), 0) << c.name;
    ++checked;
  }
  EXPECT_EQ(checked, recorded_node_count());
}
