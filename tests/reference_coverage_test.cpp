// Every operator version of the standard domains has a reference kernel,
// so a model the loader accepts never stops on "no kernel".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "onnxscope/op_schema.h"
#include "onnxscope/reference.h"
#include "reference/op_table.h"

using namespace onnxscope;

TEST(ReferenceCoverage, EveryStandardOperatorVersionHasAKernel) {
  const KernelRegistry& k = reference_kernels();
  std::string missing;
  size_t checked = 0;
  for (const OpSchema& s : all_schemas()) {
    ++checked;
    if (!k.has(s.domain, s.name, s.since_version))
      missing += "\n  " + std::string(domain_display_name(s.domain)) + " " + s.name + "-" + std::to_string(s.since_version);
  }
  EXPECT_TRUE(missing.empty()) << "operator versions without a reference kernel:" << missing;
  EXPECT_GT(checked, 600u);
}

// The op table names, for each operator, the file that holds its kernel
// (engine/src/reference/ops/<category>/<file>): each named file exists and
// mentions the operator, and every file that defines kernels is named.
TEST(ReferenceOpTable, NamesAnExistingFileForEveryOperatorAndEveryKernelFile) {
  namespace fs = std::filesystem;
  const fs::path ops = fs::path(ONNXSCOPE_SOURCE_DIR) / "engine/src/reference/ops";
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::set<std::string> named;
  for (const ref::OpEntry& e : ref::op_entries()) {
    const fs::path p = ops / e.file;
    ASSERT_TRUE(fs::is_regular_file(p)) << e.op << ": " << p << " does not exist";
    EXPECT_NE(read(p).find(e.op), std::string::npos) << e.file << " does not mention " << e.op;
    EXPECT_NE(std::string(e.file).find('/'), std::string::npos) << e.file << " is not in a category folder";
    named.insert(e.file);
  }
  size_t kernel_files = 0;
  for (const auto& f : fs::recursive_directory_iterator(ops)) {
    if (f.path().extension() != ".cpp") continue;
    const std::string rel = fs::relative(f.path(), ops).generic_string();
    if (read(f.path()).find("#include \"reference/ops/kernels.h\"") == std::string::npos) {
      EXPECT_FALSE(named.count(rel)) << rel << " is named in the op table but defines no kernel";
      continue;
    }
    ++kernel_files;
    EXPECT_TRUE(named.count(rel)) << rel << " defines kernels but the op table does not name it";
  }
  EXPECT_EQ(kernel_files, named.size());
  // The table and the registry agree.
  EXPECT_EQ(reference_kernels().all().size(), ref::op_entries().size());
}
