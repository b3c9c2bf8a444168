// Finding the test cases of an ONNX backend test suite on disk, in both
// upstream layouts:
//  - a folder holding model.onnx and test_data_set_N/{input,output}_K.pb;
//  - "light" style: NAME.onnx beside NAME_output_K.pb, no stored inputs
//    (the runner feeds generated inputs).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace onnxscope::conformance {

struct TestCase {
  std::string name;    // folder name: "test_abs"
  std::string group;   // first folder under the suite root: "node", "light", ...
  std::filesystem::path dir;
  std::filesystem::path model;
  std::vector<std::filesystem::path> data_sets;  // test_data_set_0, _1, ... in numeric order
  std::vector<std::filesystem::path> loose_outputs;  // light layout: NAME_output_0.pb, ...
};

// All cases under root, sorted by group then name. Symlinked folders are not
// followed (a suite is a plain tree). Throws std::filesystem::filesystem_error
// if root cannot be read.
// A subfolder of a suite (ROOT/node, or one case folder) keeps the keys it has
// in the whole suite ("node/test_abs"), so one expectations file serves both.
std::vector<TestCase> discover_suite(const std::filesystem::path& root);

// The folder keys are relative to: `root` itself, or the suite it lies in
// (up to two levels up) when that folder holds the VERSION file the set-up
// writes, or `root` is one of upstream's group folders (node, light, ...).
// A run of a subfolder is not the whole suite (see compute_drift).
std::filesystem::path suite_key_root(const std::filesystem::path& root);

}  // namespace onnxscope::conformance
