// External data: valid references load (memory-mapped); every way out of the
// model's folder and every bad offset/length/key is refused with a clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model_builder.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace fs = std::filesystem;

namespace {

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("onnxscope-ext-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "model" / "sub");
    dir = root / "model";
    // 16 floats: 0..15
    std::string data;
    for (int i = 0; i < 16; ++i) {
      float f = static_cast<float>(i);
      data.append(reinterpret_cast<const char*>(&f), 4);
    }
    write(dir / "weights.bin", data);
    write(root / "outside.bin", data);
  }
  void TearDown() override { fs::remove_all(root); }

  static void write(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }

  // Model with one float[n] initializer stored externally with these entries.
  LoadResult load_with(const std::vector<std::pair<std::string, std::string>>& entries, int64_t n = 4) {
    ModelBuilder b;
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(1);
    t.add_dims(n);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : entries) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    b.initializer(t);
    b.node("Identity", {"w"}, {"y"});
    b.output_untyped("y");
    write(dir / "model.onnx", b.bytes());
    return load_model_file(dir / "model.onnx");
  }

  fs::path root, dir;
};

}  // namespace

TEST_F(ExternalData, LoadsWithOffsetAndLength) {
  auto r = load_with({{"location", "weights.bin"}, {"offset", "8"}, {"length", "16"}});
  ASSERT_TRUE(r.ok()) << dump(r);
  const Tensor& t = r.model->graph.initializers[0].value;
  EXPECT_EQ(t.element_as_double(0), 2.0);
  EXPECT_EQ(t.element_as_double(3), 5.0);
}

TEST_F(ExternalData, LengthDefaultsToRestOfFile) {
  auto r = load_with({{"location", "weights.bin"}}, 16);
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.model->graph.initializers[0].value.element_as_double(15), 15.0);
}

TEST_F(ExternalData, SubfolderIsAllowed) {
  fs::copy_file(dir / "weights.bin", dir / "sub" / "w.bin");
  auto r = load_with({{"location", "sub/w.bin"}, {"length", "16"}});
  EXPECT_TRUE(r.ok()) << dump(r);
  auto r2 = load_with({{"location", "sub/../weights.bin"}, {"length", "16"}});
  EXPECT_TRUE(r2.ok()) << dump(r2);
}

TEST_F(ExternalData, AbsolutePathRefused) {
  auto r = load_with({{"location", (root / "outside.bin").string()}, {"length", "16"}});
  EXPECT_TRUE(has_code(r, "external-data-escape")) << dump(r);
}

TEST_F(ExternalData, DotDotEscapesRefused) {
  for (std::string loc : {"../outside.bin", "sub/../../outside.bin", "./../model/../outside.bin"}) {
    auto r = load_with({{"location", loc}, {"length", "16"}});
    EXPECT_TRUE(has_code(r, "external-data-escape")) << loc << "\n" << dump(r);
  }
}

TEST_F(ExternalData, SymlinkRefused) {
  fs::create_symlink(root / "outside.bin", dir / "link.bin");
  auto r = load_with({{"location", "link.bin"}, {"length", "16"}});
  EXPECT_TRUE(has_code(r, "external-data-symlink")) << dump(r);
  // Even a symlink pointing inside the folder: the last component may not be a link.
  fs::create_symlink(dir / "weights.bin", dir / "inner.bin");
  EXPECT_TRUE(has_code(load_with({{"location", "inner.bin"}, {"length", "16"}}), "external-data-symlink"));
}

TEST_F(ExternalData, SymlinkedFolderLeavingTheModelRefused) {
  fs::create_directories(root / "elsewhere");
  fs::copy_file(root / "outside.bin", root / "elsewhere" / "w.bin");
  fs::create_directory_symlink(root / "elsewhere", dir / "linkdir");
  auto r = load_with({{"location", "linkdir/w.bin"}, {"length", "16"}});
  EXPECT_TRUE(has_code(r, "external-data-escape")) << dump(r);
}

TEST_F(ExternalData, HardlinkRefused) {
  fs::create_hard_link(root / "outside.bin", dir / "hard.bin");
  auto r = load_with({{"location", "hard.bin"}, {"length", "16"}});
  EXPECT_TRUE(has_code(r, "external-data-hardlink")) << dump(r);
}

TEST_F(ExternalData, BoundsAndLengthChecked) {
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"offset", "65"}}), "external-data-bounds"));
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"offset", "60"}, {"length", "16"}}), "external-data-bounds"));
  // A petabyte length is refused from the header, never allocated.
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"length", "1125899906842624"}}), "external-data-bounds"));
  // Right size on disk but the wrong size for float[4].
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"length", "12"}}), "external-data-length"));
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"offset", "-4"}, {"length", "16"}}), "external-data-offset"));
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"offset", "0x10"}, {"length", "16"}}), "external-data-offset"));
}

TEST_F(ExternalData, KeysChecked) {
  auto r = load_with({{"location", "weights.bin"}, {"length", "16"}, {"basepath", "/etc"}});
  EXPECT_TRUE(has_code(r, "external-data-key")) << dump(r);
  EXPECT_TRUE(has_code(load_with({{"location", "weights.bin"}, {"location", "x"}}), "external-data-key"));
  EXPECT_TRUE(has_code(load_with({{"length", "16"}}), "external-data-location"));
  EXPECT_TRUE(load_with({{"location", "weights.bin"}, {"length", "16"}, {"checksum", "abc"}}).ok());
}

TEST_F(ExternalData, MissingFileNamed) {
  auto r = load_with({{"location", "nope.bin"}, {"length", "16"}});
  ASSERT_TRUE(has_code(r, "external-data-missing")) << dump(r);
  EXPECT_NE(dump(r).find("nope.bin"), std::string::npos);
  EXPECT_NE(dump(r).find("'w'"), std::string::npos) << "the tensor is named";
}

TEST_F(ExternalData, BytesWithoutBaseFolderRefused) {
  ModelBuilder b;
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(1);
  t.add_dims(4);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t.add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  b.initializer(t);
  b.node("Identity", {"w"}, {"y"});
  b.output_untyped("y");
  EXPECT_TRUE(has_code(b.load(), "external-data-refused"));
  LoadOptions with_base;
  with_base.base_dir = dir;
  e->set_key("location");
  auto* len = t.add_external_data();
  len->set_key("length");
  len->set_value("16");
  b.graph().clear_initializer();
  b.initializer(t);
  EXPECT_TRUE(b.load(with_base).ok()) << dump(b.load(with_base));
}

TEST_F(ExternalData, DataLocationMustAgree) {
  ModelBuilder b;
  onnx::TensorProto t = make_tensor_raw("w", DataType::Float, {4}, std::string(16, '\0'));
  auto* e = t.add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  b.initializer(t);
  b.node("Identity", {"w"}, {"y"});
  b.output_untyped("y");
  EXPECT_TRUE(has_code(b.load(), "external-data-location"));
}
