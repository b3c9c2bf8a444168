// Every structural check of the loader, each with the message a user sees.
#include <gtest/gtest.h>

#include "model_builder.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

ModelBuilder relu_model() {
  ModelBuilder b;
  b.input("x", DataType::Float, {std::string("N"), int64_t{4}});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.output("y", DataType::Float, {std::string("N"), int64_t{4}});
  return b;
}

const Diagnostic* find(const LoadResult& r, const std::string& code) {
  for (const auto& d : r.diagnostics.items())
    if (d.code == code) return &d;
  return nullptr;
}

}  // namespace

TEST(Validation, ValidModelHasNoFindings) {
  auto r = relu_model().load();
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.diagnostics.items().size(), 0u) << dump(r);
}

TEST(Validation, MissingOpsetImport) {
  auto b = relu_model();
  b.proto().clear_opset_import();
  auto r = b.load();
  EXPECT_TRUE(has_code(r, "missing-opset-import")) << dump(r);
}

// skl2onnx writes the default domain twice at one version; onnx.checker and
// ONNX Runtime load such a file, and so do we, with a warning.
TEST(Validation, SameOpsetImportedTwiceLoadsWithAWarning) {
  auto b = relu_model();
  const int64_t v = b.proto().opset_import(0).version();
  auto* o = b.proto().add_opset_import();
  o->set_domain("ai.onnx");  // the same as "" once canonicalised
  o->set_version(v);
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  const Diagnostic* d = find(r, "duplicate-opset-import");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->severity, Severity::Warning);
  EXPECT_NE(d->message.find("ai.onnx"), std::string::npos) << d->message;
  ASSERT_EQ(r.model->opset_imports.size(), 1u);
  EXPECT_EQ(r.model->opset_imports[0].version, v);
}

// At two versions the import is ambiguous: an error naming both.
TEST(Validation, OpsetImportedAtTwoVersionsIsAnError) {
  auto b = relu_model();
  const int64_t v = b.proto().opset_import(0).version();
  auto* o = b.proto().add_opset_import();
  o->set_domain("ai.onnx");
  o->set_version(v - 1);
  auto r = b.load();
  EXPECT_FALSE(r.ok());
  const Diagnostic* d = find(r, "conflicting-opset-import");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_NE(d->message.find(std::to_string(v - 1)), std::string::npos) << d->message;
}

// ONNX Runtime's transformers optimizer writes its own onnx-domain
// LayerNormalization into opset-14 models (ONNX has it from 17 only) and
// SimplifiedLayerNormalization at any opset; ONNX Runtime runs them,
// onnx.checker refuses them. They load with one warning per operator naming
// the first node; other operators missing from the opset stay errors.
TEST(Validation, OnnxRuntimesOnnxDomainOperatorsLoadWithAWarning) {
  ModelBuilder b(14);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{8}});
  b.input("s", DataType::Float, {int64_t{8}});
  b.node("LayerNormalization", {"x", "s"}, {"a"}, "ln0");
  b.node("LayerNormalization", {"a", "s"}, {"c"}, "ln1");
  b.node("SimplifiedLayerNormalization", {"c", "s"}, {"y"}, "rms");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{8}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  int warnings = 0;
  for (const auto& d : r.diagnostics.items())
    if (d.code == "onnx-runtime-op") {
      ++warnings;
      EXPECT_EQ(d.severity, Severity::Warning);
      EXPECT_NE(d.message.find("onnx.checker"), std::string::npos) << d.message;
    }
  EXPECT_EQ(warnings, 2) << dump(r);
  const Diagnostic* d = find(r, "onnx-runtime-op");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("'LayerNormalization'"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("2 node(s), first 'ln0'"), std::string::npos) << d->message;

  ModelBuilder at17(17);  // an operator of opset 17: no warning
  at17.input("x", DataType::Float, {int64_t{2}, int64_t{8}});
  at17.input("s", DataType::Float, {int64_t{8}});
  at17.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
  at17.output("y", DataType::Float, {int64_t{2}, int64_t{8}});
  auto r17 = at17.load();
  ASSERT_TRUE(r17.ok()) << dump(r17);
  EXPECT_EQ(find(r17, "onnx-runtime-op"), nullptr) << dump(r17);

  ModelBuilder other(14);  // not one of ONNX Runtime's: still an error
  other.input("x", DataType::Float, {int64_t{2}, int64_t{8}});
  other.node("GroupNormalization", {"x", "x", "x"}, {"y"}, "gn");
  other.output("y", DataType::Float, {int64_t{2}, int64_t{8}});
  EXPECT_TRUE(has_code(other.load(), "unknown-op"));
}

TEST(Validation, OpsetNewerThanSupported) {
  auto b = relu_model();
  b.opset("", 99);
  auto r = b.load();
  const Diagnostic* d = find(r, "opset-too-new");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_NE(d->message.find("opset 99"), std::string::npos);
  EXPECT_NE(d->expected.find("at most 28"), std::string::npos) << d->expected;
}

TEST(Validation, DomainNotImported) {
  auto b = relu_model();
  b.node("Scale", {"y"}, {"z"}, "scale", "com.example");
  auto r = b.load();
  const Diagnostic* d = find(r, "domain-not-imported");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->where.node, "scale");
  EXPECT_NE(d->message.find("com.example"), std::string::npos);
}

TEST(Validation, CustomDomainWithoutFunctionIsAWarning) {
  auto b = relu_model();
  b.opset("com.example", 1);
  b.node("Scale", {"y"}, {"z"}, "scale", "com.example");
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  EXPECT_TRUE(has_code(r, "custom-domain", Severity::Warning)) << dump(r);
}

TEST(Validation, UnknownOperatorNamesTheOpset) {
  ModelBuilder b(11);
  b.input("x", DataType::Float, {int64_t{4}});
  b.node("Gelu", {"x"}, {"y"}, "g");  // Gelu arrived in opset 20
  b.output_untyped("y");
  auto r = b.load();
  const Diagnostic* d = find(r, "unknown-op");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_NE(d->message.find("opset 11"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("added in opset 20"), std::string::npos) << d->message;
  EXPECT_TRUE(has_code(ModelBuilder(11).load(), "unknown-op") == false);
}

TEST(Validation, UndefinedInput) {
  auto b = relu_model();
  b.node("Add", {"y", "ghost"}, {"z"}, "add");
  auto r = b.load();
  const Diagnostic* d = find(r, "undefined-input");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->where.node, "add");
  EXPECT_EQ(d->where.node_index, 1);
  EXPECT_NE(d->message.find("'ghost'"), std::string::npos);
}

TEST(Validation, CycleIsAnError) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{2}});
  b.node("Add", {"x", "b"}, {"a"}, "first");
  b.node("Relu", {"a"}, {"b"}, "second");
  b.output_untyped("b");
  auto r = b.load();
  const Diagnostic* d = find(r, "cycle");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_NE(d->message.find("'first'"), std::string::npos);
  EXPECT_NE(d->message.find("'second'"), std::string::npos);
}

TEST(Validation, OutOfOrderNodesAreSortedWithAWarning) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{2}});
  b.node("Neg", {"a"}, {"y"}, "late");
  b.node("Relu", {"x"}, {"a"}, "early");
  b.output_untyped("y");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_TRUE(has_code(r, "not-topological", Severity::Warning));
  EXPECT_EQ(r.model->graph.nodes[0].name, "early");
  EXPECT_EQ(r.model->graph.nodes[1].name, "late");

  LoadOptions strict;
  strict.sort_nodes = false;
  auto r2 = b.load(strict);
  EXPECT_TRUE(has_code(r2, "not-topological", Severity::Error)) << dump(r2);
}

TEST(Validation, DuplicateOutputNames) {
  auto b = relu_model();
  b.node("Neg", {"x"}, {"y"}, "again");
  auto r = b.load();
  const Diagnostic* d = find(r, "duplicate-output");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->where.node, "again");
  EXPECT_NE(d->message.find("'relu'"), std::string::npos);
  // Producing a name that is already a graph input is the same mistake.
  auto b2 = relu_model();
  b2.node("Neg", {"y"}, {"x"}, "clobber");
  EXPECT_TRUE(has_code(b2.load(), "duplicate-output"));
}

TEST(Validation, UnproducedGraphOutput) {
  auto b = relu_model();
  b.output_untyped("nowhere");
  auto r = b.load();
  const Diagnostic* d = find(r, "unproduced-output");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->where.value, "nowhere");
}

TEST(Validation, DuplicateInputsAndInitializers) {
  auto b = relu_model();
  b.input("x", DataType::Float, {int64_t{1}});
  EXPECT_TRUE(has_code(b.load(), "duplicate-input"));
  auto b2 = relu_model();
  b2.initializer(make_float_tensor("w", {1}, {1}));
  b2.initializer(make_float_tensor("w", {1}, {2}));
  EXPECT_TRUE(has_code(b2.load(), "duplicate-initializer"));
}

TEST(Validation, AttributeOfTheWrongType) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  auto& n = b.node("Softmax", {"x"}, {"y"}, "sm");
  attr_float(n, "axis", 1.0f);
  b.output_untyped("y");
  auto r = b.load();
  const Diagnostic* d = find(r, "attribute-type");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->where.node, "sm");
  EXPECT_NE(d->message.find("'axis' is float"), std::string::npos) << d->message;
  EXPECT_EQ(d->expected, "int");
}

TEST(Validation, UnknownAndMissingAttributes) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{2}});
  auto& n = b.node("Relu", {"x"}, {"y"});
  attr_int(n, "alpha", 1);
  b.output_untyped("y");
  EXPECT_TRUE(has_code(b.load(), "unknown-attribute"));

  ModelBuilder c;
  c.input("x", DataType::Float, {int64_t{2}});
  c.node("Cast", {"x"}, {"y"});  // 'to' is required
  c.output_untyped("y");
  EXPECT_TRUE(has_code(c.load(), "missing-attribute"));
}

TEST(Validation, InputCountChecked) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{2}});
  b.node("Add", {"x"}, {"y"}, "add1");
  b.output_untyped("y");
  auto r = b.load();
  const Diagnostic* d = find(r, "input-count");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_EQ(d->expected, "2");
}

TEST(Validation, SubgraphsSeeOuterScope) {
  ModelBuilder b;
  b.input("c", DataType::Bool, {});
  b.input("x", DataType::Float, {int64_t{2}});
  b.node("Relu", {"x"}, {"rx"});
  auto& iff = b.node("If", {"c"}, {"y"}, "if0");
  auto* t = attr_graph(iff, "then_branch");
  add_node(*t, "Neg", {"rx"}, {"t"});  // reads an outer value
  t->add_output()->set_name("t");
  auto* e = attr_graph(iff, "else_branch");
  e->add_output()->set_name("rx");  // outputs an outer value directly
  b.output_untyped("y");
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);

  add_node(*t, "Neg", {"missing"}, {"t2"});
  auto r2 = b.load();
  const Diagnostic* d = find(r2, "undefined-input");
  ASSERT_NE(d, nullptr) << dump(r2);
  EXPECT_EQ(d->where.graph, "main/if0:then_branch") << d->to_string();
}

TEST(Validation, SubgraphOrderFollowsCapturedValues) {
  // The If reads 'late' inside its branch: it must run after the node making it.
  ModelBuilder b;
  b.input("c", DataType::Bool, {});
  b.input("x", DataType::Float, {int64_t{2}});
  auto& iff = b.node("If", {"c"}, {"y"}, "if0");
  auto* t = attr_graph(iff, "then_branch");
  t->add_output()->set_name("late");
  auto* e = attr_graph(iff, "else_branch");
  e->add_output()->set_name("late");
  b.node("Relu", {"x"}, {"late"}, "producer");
  b.output_untyped("y");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.model->graph.nodes[0].name, "producer");
}

TEST(Validation, SubgraphNestingLimit) {
  ModelBuilder b;
  b.input("c", DataType::Bool, {});
  onnx::GraphProto* g = &b.graph();
  for (int depth = 0; depth < 40; ++depth) {
    auto& n = add_node(*g, "If", {"c"}, {"o" + std::to_string(depth)}, "if" + std::to_string(depth));
    if (depth == 0) b.output_untyped("o0");
    auto* e = attr_graph(n, "else_branch");
    e->add_output()->set_name("c");
    g = attr_graph(n, "then_branch");
    g->add_output()->set_name("o" + std::to_string(depth + 1));
  }
  add_node(*g, "Identity", {"c"}, {"o40"});
  auto r = b.load();
  const Diagnostic* d = find(r, "subgraph-depth");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_NE(d->expected.find("32"), std::string::npos);
}

TEST(Validation, RecursiveFunctions) {
  auto b = relu_model();
  b.opset("local", 1);
  b.node("Ping", {"y"}, {"z"}, "call", "local");
  for (auto [name, calls] : {std::pair{"Ping", "Pong"}, std::pair{"Pong", "Ping"}}) {
    auto* f = b.proto().add_functions();
    f->set_name(name);
    f->set_domain("local");
    f->add_input("a");
    f->add_output("b");
    auto* imp = f->add_opset_import();
    imp->set_domain("local");
    imp->set_version(1);
    auto* n = f->add_node();
    n->set_op_type(calls);
    n->set_domain("local");
    n->add_input("a");
    n->add_output("b");
  }
  auto r = b.load();
  const Diagnostic* d = find(r, "recursive-function");
  ASSERT_NE(d, nullptr) << dump(r);
  EXPECT_NE(d->message.find("Ping -> Pong -> Ping"), std::string::npos) << d->message;
}

TEST(Validation, RefAttrOutsideFunction) {
  ModelBuilder b;
  b.input("x", DataType::Float, {int64_t{2}, int64_t{2}});
  auto& n = b.node("Softmax", {"x"}, {"y"});
  auto* a = n.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_ref_attr_name("ax");
  b.output_untyped("y");
  EXPECT_TRUE(has_code(b.load(), "attribute-reference"));
}

TEST(Validation, MessagesNameFileGraphAndNode) {
  auto b = relu_model();
  b.node("Add", {"y", "ghost"}, {"z"}, "add");
  auto r = b.load();
  const Diagnostic* d = find(r, "undefined-input");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->to_string(),
            "error[undefined-input] test.onnx, graph main, node 'add' (Add #1): input 'ghost' is not a graph input, "
            "an initializer, or any node's output (expected a value defined before this node)");
}
