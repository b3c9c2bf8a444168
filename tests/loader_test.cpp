// Loading: every element type through raw_data and the typed fields, model
// parts (metadata, functions, subgraphs, sparse initializers), and corrupt bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "model_builder.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inspect.h"

#include <fstream>

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// A model whose graph just passes an initializer to the output through Identity.
ModelBuilder identity_of(onnx::TensorProto t) {
  ModelBuilder b(21, 10);
  std::string name = t.name();
  b.initializer(std::move(t));
  b.node("Identity", {name}, {"y"}, "id");
  b.output_untyped("y");
  return b;
}

std::string bytes_of(const Tensor& t) { return std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()); }

}  // namespace

class EveryDType : public ::testing::TestWithParam<int> {};
class EveryFixedWidthDType : public ::testing::TestWithParam<int> {};

// raw_data must come back byte for byte, for every fixed-width type.
TEST_P(EveryFixedWidthDType, RawDataRoundTrips) {
  auto type = static_cast<DataType>(GetParam());
  const std::vector<int64_t> dims{3, 5};
  const uint64_t bytes = *storage_bytes(type, 15);
  std::string raw(bytes, '\0');
  std::mt19937 rng(GetParam());
  for (auto& c : raw) c = static_cast<char>(rng());
  // Packed types: padding bits past the last element stay zero, as writers emit them.
  if (is_packed_dtype(type)) {
    Tensor tmp = Tensor::zeros(type, {15});
    for (uint64_t i = 0; i < 15; ++i) set_packed_element_bits(type, tmp.mutable_raw(), i, static_cast<uint8_t>(rng()));
    raw = bytes_of(tmp);
  }
  auto r = identity_of(make_tensor_raw("w", type, dims, raw)).load();
  ASSERT_TRUE(r.ok()) << dump(r);
  const Tensor& t = r.model->graph.initializers.at(0).value;
  EXPECT_EQ(t.dtype(), type);
  EXPECT_EQ(t.shape(), (Shape{3, 5}));
  if (type == DataType::Bool) {
    // A bool byte other than 0/1 is true, and loads as 1 with a warning (bool_bytes_test).
    std::string want = raw;
    for (auto& c : want) c = c ? 1 : 0;
    EXPECT_EQ(bytes_of(t), want);
    EXPECT_TRUE(has_code(r, "bool-bytes", Severity::Warning)) << dump(r);
  } else {
    EXPECT_EQ(bytes_of(t), raw);
  }
}

// The typed fields carry the same values; element i must read back as written.
TEST_P(EveryDType, TypedFieldsRoundTrip) {
  auto type = static_cast<DataType>(GetParam());
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(GetParam());
  p.add_dims(4);
  const auto& info = dtype_info(type);
  std::vector<double> expect;
  switch (type) {
    case DataType::String:
      for (auto s : {"a", "", "\xff\x01", "long string"}) p.add_string_data(s);
      break;
    case DataType::Float:
      for (float v : {1.5f, -2.0f, 0.0f, 1e30f}) { p.add_float_data(v); expect.push_back(v); }
      break;
    case DataType::Complex64:
      for (int i = 0; i < 8; ++i) p.add_float_data(static_cast<float>(i) - 3.5f);
      expect = {-3.5, -1.5, 0.5, 2.5};  // real parts
      break;
    case DataType::Double:
      for (double v : {1.25, -1e300, 0.0, 3.0}) { p.add_double_data(v); expect.push_back(v); }
      break;
    case DataType::Complex128:
      for (int i = 0; i < 8; ++i) p.add_double_data(i * 2.0);
      expect = {0, 4, 8, 12};
      break;
    case DataType::Int64:
      for (int64_t v : std::initializer_list<int64_t>{INT64_MIN, -1, 0, INT64_MAX}) { p.add_int64_data(v); expect.push_back(static_cast<double>(v)); }
      break;
    case DataType::Uint32:
    case DataType::Uint64:
      for (uint64_t v : {0ull, 1ull, 4000000000ull, 7ull}) { p.add_uint64_data(v); expect.push_back(static_cast<double>(v)); }
      break;
    case DataType::Float16:
      for (float v : {1.0f, -0.5f, 65504.0f, 0.0f}) { p.add_int32_data(float_to_half(v)); expect.push_back(v); }
      break;
    case DataType::BFloat16:
      for (float v : {1.0f, -0.5f, 3.0f, 256.0f}) { p.add_int32_data(float_to_bfloat16(v)); expect.push_back(v); }
      break;
    default:
      if (info.bits == 4 || info.bits == 2) {
        // One packed byte per int32_data entry.
        const int per = 8 / static_cast<int>(info.bits);
        std::vector<uint8_t> codes{1, 2, 3, 0};
        std::vector<uint8_t> packed((4 + per - 1) / per, 0);
        for (int i = 0; i < 4; ++i) packed[i / per] |= static_cast<uint8_t>(codes[i] << ((i % per) * info.bits));
        for (uint8_t v : packed) p.add_int32_data(v);
        for (uint8_t c : codes) {
          Tensor one = Tensor::zeros(type, {1});
          set_packed_element_bits(type, one.mutable_raw(), 0, c);
          expect.push_back(one.element_as_double(0));
        }
      } else if (info.bits == 6 || info.bits == 8) {
        for (int v : {0x01, 0x10, 0x22, 0x03}) {
          p.add_int32_data(v);
          Tensor one = Tensor::zeros(type, {1});
          set_packed_element_bits(type, one.mutable_raw(), 0, static_cast<uint8_t>(v));
          expect.push_back(one.element_as_double(0));
        }
      } else {
        for (int v : {1, 0, 7, 100}) { p.add_int32_data(v); expect.push_back(v); }
      }
  }
  auto r = identity_of(p).load();
  ASSERT_TRUE(r.ok()) << dump(r);
  const Tensor& t = r.model->graph.initializers.at(0).value;
  ASSERT_EQ(t.dtype(), type);
  ASSERT_EQ(t.element_count(), 4u);
  if (type == DataType::String) {
    EXPECT_EQ(t.strings(), (std::vector<std::string>{"a", "", "\xff\x01", "long string"}));
    return;
  }
  for (uint64_t i = 0; i < 4; ++i) {
    double got = t.element_as_double(i);
    if (std::isnan(expect[i])) EXPECT_TRUE(std::isnan(got));
    else EXPECT_EQ(got, expect[i]) << dtype_name(type) << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, EveryDType, ::testing::Range(1, kMaxDataType + 1),
                         [](const auto& info) { return std::string(dtype_name(static_cast<DataType>(info.param))); });
// Strings have no raw_data form; TypedFieldsRoundTrip covers them.
std::vector<int> fixed_width_types() {
  std::vector<int> v;
  for (int t = 1; t <= kMaxDataType; ++t)
    if (static_cast<DataType>(t) != DataType::String) v.push_back(t);
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllTypes, EveryFixedWidthDType, ::testing::ValuesIn(fixed_width_types()),
                         [](const auto& info) { return std::string(dtype_name(static_cast<DataType>(info.param))); });

TEST(Loader, RawDataSizeMismatchIsLocated) {
  auto r = identity_of(make_tensor_raw("w", DataType::Float, {2, 3}, std::string(20, 'x'))).load();
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(has_code(r, "raw-data-size")) << dump(r);
  const auto& d = r.diagnostics.items().front();
  EXPECT_EQ(d.where.value, "w");
  EXPECT_NE(d.message.find("20 bytes"), std::string::npos);
  EXPECT_NE(d.expected.find("24 bytes"), std::string::npos);
}

TEST(Loader, TypedFieldCountMismatch) {
  auto r = identity_of(make_float_tensor("w", {2, 2}, {1, 2, 3})).load();
  EXPECT_TRUE(has_code(r, "tensor-data-size")) << dump(r);
}

TEST(Loader, WrongTypedFieldForType) {
  auto t = make_float_tensor("w", {2}, {1, 2});
  t.set_data_type(static_cast<int>(DataType::Int64));
  auto r = identity_of(t).load();
  EXPECT_TRUE(has_code(r, "tensor-data-field")) << dump(r);
}

TEST(Loader, UnknownDataType) {
  auto t = make_tensor_raw("w", DataType::Float, {1}, std::string(4, '\0'));
  t.set_data_type(99);
  auto r = identity_of(t).load();
  ASSERT_TRUE(has_code(r, "unknown-data-type")) << dump(r);
}

TEST(Loader, NegativeDimInTensor) {
  auto r = identity_of(make_tensor_raw("w", DataType::Float, {-2, 2}, "")).load();
  EXPECT_TRUE(has_code(r, "negative-dim")) << dump(r);
}

TEST(Loader, NegativeDimInDeclaredShape) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{-4}});
  b.node("Relu", {"x"}, {"y"});
  b.output_untyped("y");
  EXPECT_TRUE(has_code(b.load(), "negative-dim"));
}

TEST(Loader, ElementCountOverflowNeverAllocates) {
  // 2^62 * 2^62 elements: must be refused before any allocation.
  auto r = identity_of(make_tensor_raw("w", DataType::Float, {int64_t{1} << 62, int64_t{1} << 62}, "")).load();
  EXPECT_TRUE(has_code(r, "element-count-overflow")) << dump(r);
  // A huge but representable size with no data: a size mismatch, not an allocation.
  auto r2 = identity_of(make_tensor_raw("w", DataType::Float, {int64_t{1} << 40}, "abcd")).load();
  EXPECT_TRUE(has_code(r2, "raw-data-size")) << dump(r2);
}

TEST(Loader, KeepsMetadataDocsFunctionsAndSubgraphs) {
  ModelBuilder b(18, 9);
  b.proto().set_doc_string("model doc");
  b.proto().set_producer_version("1.2");
  auto* kv = b.proto().add_metadata_props();
  kv->set_key("author");
  kv->set_value("tests");
  b.opset("custom.fn", 1);
  b.input("c", DataType::Bool, {});
  b.input("x", DataType::Float, {int64_t{2}});
  auto& iff = b.node("If", {"c"}, {"y"}, "if0");
  iff.set_doc_string("branch");
  auto* then_g = attr_graph(iff, "then_branch");
  add_node(*then_g, "Identity", {"x"}, {"t"});
  *then_g->add_output() = make_value("t", DataType::Float, {int64_t{2}});
  auto* else_g = attr_graph(iff, "else_branch");
  add_node(*else_g, "Neg", {"x"}, {"e"});
  *else_g->add_output() = make_value("e", DataType::Float, {int64_t{2}});
  b.node("Double", {"y"}, {"z"}, "call", "custom.fn");
  b.output("z", DataType::Float, {int64_t{2}});
  auto* f = b.proto().add_functions();
  f->set_name("Double");
  f->set_domain("custom.fn");
  f->add_input("a");
  f->add_output("b");
  auto* fo = f->add_opset_import();
  fo->set_domain("");
  fo->set_version(18);
  auto* fn = f->add_node();
  fn->set_op_type("Add");
  fn->add_input("a");
  fn->add_input("a");
  fn->add_output("b");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  const Model& m = *r.model;
  EXPECT_EQ(m.doc, "model doc");
  EXPECT_EQ(m.producer_version, "1.2");
  ASSERT_EQ(m.metadata.size(), 1u);
  EXPECT_EQ(m.metadata[0].value, "tests");
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.functions[0].nodes.size(), 1u);
  ASSERT_NE(m.function("custom.fn", "Double"), nullptr);
  const Node& n = m.graph.nodes[0];
  EXPECT_EQ(n.doc, "branch");
  ASSERT_NE(n.attribute("then_branch"), nullptr);
  ASSERT_TRUE(n.attribute("else_branch")->g);
  EXPECT_EQ(n.attribute("else_branch")->g->nodes[0].op_type, "Neg");
  EXPECT_EQ(m.opset_version("custom.fn"), 1);
  EXPECT_EQ(m.opset_version("ai.onnx"), 18);
}

TEST(Loader, SparseInitializerWithIndicesChecked) {
  ModelBuilder b;
  auto* sp = b.graph().add_sparse_initializer();
  *sp->mutable_values() = make_float_tensor("s", {2}, {1.0f, 2.0f});
  *sp->mutable_indices() = make_int64_tensor("", {2}, {1, 5});
  sp->add_dims(2);
  sp->add_dims(3);
  b.node("Identity", {"s"}, {"y"});
  b.output_untyped("y");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  ASSERT_EQ(r.model->graph.sparse_initializers.size(), 1u);
  EXPECT_EQ(r.model->graph.sparse_initializer_names[0], "s");

  sp->mutable_indices()->set_int64_data(1, 6);  // outside the 2x3 dense shape
  EXPECT_TRUE(has_code(b.load(), "sparse-index")) << dump(b.load());
}

TEST(Loader, TruncatedBytesReportWhere) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{4}});
  b.initializer(make_tensor_raw("w", DataType::Float, {256}, std::string(1024, '\1')));
  b.node("Add", {"x", "w"}, {"y"});
  b.output_untyped("y");
  std::string full = b.bytes();
  for (size_t cut : {full.size() - 1, full.size() / 2, size_t{3}}) {
    std::string part = full.substr(0, cut);
    auto r = load_model_bytes({reinterpret_cast<const std::byte*>(part.data()), part.size()}, {}, "cut.onnx");
    ASSERT_FALSE(r.ok());
    ASSERT_TRUE(has_code(r, "corrupt-model")) << dump(r);
    EXPECT_NE(r.diagnostics.items()[0].message.find("at byte"), std::string::npos) << dump(r);
  }
  // The half-way cut lands inside the initializer: the path says so.
  std::string half = full.substr(0, full.size() / 2);
  auto r = load_model_bytes({reinterpret_cast<const std::byte*>(half.data()), half.size()}, {}, "cut.onnx");
  EXPECT_NE(r.diagnostics.items()[0].message.find("graph.initializer[0]"), std::string::npos) << dump(r);
}

TEST(Loader, GarbageEmptyAndWrongMessage) {
  std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x07 not a model";
  auto r1 = load_model_bytes({reinterpret_cast<const std::byte*>(garbage.data()), garbage.size()});
  EXPECT_TRUE(has_code(r1, "corrupt-model")) << dump(r1);
  auto r2 = load_model_bytes({});
  EXPECT_TRUE(has_code(r2, "empty-file")) << dump(r2);
  // A TensorProto is valid protobuf but not a model.
  std::string tensor = make_float_tensor("t", {2}, {1, 2}).SerializeAsString();
  auto r3 = load_model_bytes({reinterpret_cast<const std::byte*>(tensor.data()), tensor.size()});
  EXPECT_FALSE(r3.ok());
  EXPECT_TRUE(has_code(r3, "not-a-model") || has_code(r3, "corrupt-model")) << dump(r3);
}

TEST(Loader, MissingFileIsAnErrorNotACrash) {
  auto r = load_model_file("/nonexistent/dir/model.onnx");
  EXPECT_TRUE(has_code(r, "file-not-found")) << dump(r);
  auto r2 = load_model_file("/");
  EXPECT_TRUE(has_code(r2, "cannot-read")) << dump(r2);
}

// Mutated real models (bit flips, overwritten bytes, cuts, insertions): the
// loader must return findings for each, never crash or hang. A seeded,
// bounded smoke test; the hardening issue adds coverage-guided fuzzing.
TEST(Loader, SurvivesMutatedModels) {
  for (const char* name : {"sample_cnn.onnx", "control_flow.onnx"}) {
    std::ifstream in(std::string(ONNXSCOPE_SOURCE_DIR "/resources/models/") + name, std::ios::binary);
    const std::string original((std::istreambuf_iterator<char>(in)), {});
    ASSERT_FALSE(original.empty());
    std::mt19937 rng(1234);
    size_t rejected = 0;
    for (int round = 0; round < 20000; ++round) {
      std::string m = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        size_t pos = rng() % m.size();
        switch (rng() % 4) {
          case 0: m[pos] = static_cast<char>(m[pos] ^ (1 << (rng() % 8))); break;
          case 1: m[pos] = static_cast<char>(rng()); break;
          case 2: m.resize(pos); break;
          case 3: m.insert(pos, 1 + rng() % 8, static_cast<char>(rng())); break;
        }
      }
      LoadResult r = load_model_bytes({reinterpret_cast<const std::byte*>(m.data()), m.size()}, {}, name);
      if (!r.ok()) {
        ++rejected;
        ASSERT_TRUE(r.diagnostics.has_errors()) << "a failed load must say why";
      }
      if (r.model) (void)summary_json(summarize(r.model.get(), r.diagnostics, name));
    }
    EXPECT_GT(rejected, 100u) << "mutations should mostly be caught";
  }
}
