// Every operator version of the standard domains has a reference kernel,
// so a model the loader accepts never stops on "no kernel".
#include <gtest/gtest.h>

#include "onnxscope/op_schema.h"
#include "onnxscope/reference.h"

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
