// Test-data .pb files read as the declared type says: tensors, sequences,
// optionals, maps (int64 and string keys); bad files give named errors.
#include <gtest/gtest.h>

#include "model_builder.h"
#include "onnx/onnx-data.pb.h"
#include "onnxscope/npy.h"
#include "onnxscope/proto_io.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace onnxscope;
using namespace onnxscope::test;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
TypeInfo map_type(DataType key) {
  TypeInfo t;
  t.kind = TypeInfo::Kind::Map;
  t.map_key = key;
  return t;
}
}  // namespace

TEST(ProtoIo, MapWithStringKeys) {
  // Regression: the key count was read after the keys were moved away, so
  // every string-keyed map loaded empty.
  onnx::MapProto m;
  m.set_key_type(static_cast<int>(DataType::String));
  for (auto k : {"a", "bb", "ccc"}) m.add_string_keys(k);
  *m.mutable_values()->add_tensor_values() = make_float_tensor("", {3}, {1, 2, 3});
  m.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  Value v = read_value_bytes(bytes_of(m.SerializeAsString()), map_type(DataType::String), "map.pb");
  ASSERT_TRUE(v.is_map());
  EXPECT_EQ(v.map_keys().strings(), (std::vector<std::string>{"a", "bb", "ccc"}));
  EXPECT_EQ(v.map_values().element_as_double(2), 3.0);
}

TEST(ProtoIo, MapWithIntKeysAndMismatchedValues) {
  onnx::MapProto m;
  m.set_key_type(static_cast<int>(DataType::Int64));
  m.add_keys(7);
  m.add_keys(9);
  *m.mutable_values()->add_tensor_values() = make_float_tensor("", {2}, {0.5f, 1.5f});
  Value v = read_value_bytes(bytes_of(m.SerializeAsString()), map_type(DataType::Int64), "map.pb");
  EXPECT_EQ(v.map_keys().element_as_int64(1), 9);
  m.add_keys(11);  // three keys, two values
  EXPECT_THROW(read_value_bytes(bytes_of(m.SerializeAsString()), map_type(DataType::Int64), "map.pb"), Error);
}

TEST(ProtoIo, SequenceAndOptional) {
  onnx::SequenceProto s;
  s.set_elem_type(onnx::SequenceProto::TENSOR);
  *s.add_tensor_values() = make_float_tensor("", {1}, {4});
  *s.add_tensor_values() = make_int64_tensor("", {2}, {5, 6});
  TypeInfo seq;
  seq.kind = TypeInfo::Kind::Sequence;
  Value v = read_value_bytes(bytes_of(s.SerializeAsString()), seq, "seq.pb");
  ASSERT_TRUE(v.is_sequence());
  ASSERT_EQ(v.items().size(), 2u);
  EXPECT_EQ(v.items()[1].tensor().element_as_int64(1), 6);

  onnx::OptionalProto empty;
  TypeInfo opt;
  opt.kind = TypeInfo::Kind::Optional;
  EXPECT_TRUE(read_value_bytes(bytes_of(empty.SerializeAsString()), opt, "opt.pb").is_none());
}

TEST(ProtoIo, CorruptFileIsNamed) {
  std::string junk = "\x0a\xff\xff\xff\x0f";
  try {
    read_value_bytes(bytes_of(junk), TypeInfo::tensor(DataType::Float), "input_0.pb");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input_0.pb"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_value_file("/nonexistent/input_0.pb", TypeInfo::tensor(DataType::Float)), Error);
}

namespace {
void write_npy(const std::string& path, const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY\x01";
  file += '\0';
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  std::ofstream(path, std::ios::binary) << file << header << data;
}
}  // namespace

TEST(Npy, ReadsAndRefusesBadFiles) {
  const std::string dir = std::filesystem::temp_directory_path() / ("onnxscope-npy-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  float v[6] = {1, 2, 3, 4, 5, 6};
  write_npy(dir + "/ok.npy", "<f4", "(2, 3)", std::string(reinterpret_cast<char*>(v), sizeof v));
  Tensor t = read_npy(dir + "/ok.npy");
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.element_as_double(5), 6.0);
  // Claims far more data than the file holds: refused before allocating.
  write_npy(dir + "/huge.npy", "<f4", "(100000, 100000, 100000)", std::string(24, '\0'));
  EXPECT_THROW(read_npy(dir + "/huge.npy"), Error);
  write_npy(dir + "/short.npy", "<f8", "(4,)", std::string(8, '\0'));
  EXPECT_THROW(read_npy(dir + "/short.npy"), Error);
  write_npy(dir + "/big_endian.npy", ">f4", "(1,)", std::string(4, '\0'));
  try {
    read_npy(dir + "/big_endian.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("big_endian.npy"), std::string::npos);
  }
  std::ofstream(dir + "/junk.npy") << "junk";
  EXPECT_THROW(read_npy(dir + "/junk.npy"), Error);
  std::filesystem::remove_all(dir);
}

// save_model writes the weights' bytes straight from the tensors, after the
// graph's other fields: the file parses to the same message model_to_bytes
// makes (numeric, string, empty and subgraph initializers, node attributes).
TEST(ProtoIo, SavedModelParsesToTheMessageModelToBytesMakes) {
  ModelBuilder b(17);
  b.input("c", DataType::Bool, {});
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  b.initializer(make_float_tensor("w", {2, 3}, {1, 2, 3, 4, 5, 6.5f}));
  b.initializer(make_float_tensor("empty", {0}, {}));
  b.initializer(make_tensor_raw("h", DataType::Float16, {2}, std::string("\x00\x3c\x00\x40", 4)));
  onnx::TensorProto names;
  names.set_name("names");
  names.set_data_type(static_cast<int32_t>(DataType::String));
  names.add_dims(2);
  names.add_string_data("a");
  names.add_string_data("bc");
  b.initializer(names);
  b.node("Add", {"x", "w"}, {"s"}, "add");
  auto& iff = b.node("If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::GraphProto* g = attr_graph(iff, branch);
    *g->add_initializer() = make_float_tensor("k", {1}, {std::string(branch) == "then_branch" ? 2.0f : 3.0f});
    add_node(*g, "Mul", {"s", "k"}, {std::string("y_") + branch});
    *g->add_output() = make_value(std::string("y_") + branch, DataType::Float, {int64_t{2}, int64_t{3}});
  }
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}});
  auto m = load_model(b);
  const auto path = std::filesystem::temp_directory_path() / ("onnxscope_save_" + std::to_string(getpid()) + ".onnx");
  save_model(*m, path);
  std::ifstream f(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  onnx::ModelProto from_file, expected;
  ASSERT_TRUE(from_file.ParseFromString(file));
  ASSERT_TRUE(expected.ParseFromString(model_to_bytes(*m)));
  EXPECT_EQ(from_file.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(from_file.graph().initializer_size(), 4);
  EXPECT_EQ(from_file.graph().initializer(0).raw_data().size(), 24u);
}
