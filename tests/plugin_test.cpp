// Plugins in process: loading and its refusals (missing file, not a library,
// no entry point, another ABI version, duplicate kernels), validation and
// shape inference through plugin shape functions, and plugin kernels on the
// reference and CPU engines (errors name the plugin and the node).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "model_builder.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/plugin.h"
#include "onnxscope/plugin_abi.h"

namespace fs = std::filesystem;
using namespace onnxscope;
using onnxscope::test::ModelBuilder;

namespace {

const std::string kRmsNorm = ONNXSCOPE_PLUGIN_RMS_NORM;
const std::string kFastGelu = ONNXSCOPE_PLUGIN_FAST_GELU;
const std::string kRmsModel = ONNXSCOPE_SOURCE_DIR "/plugins/examples/rms_norm/rms_norm.onnx";
const std::string kGeluModel = ONNXSCOPE_SOURCE_DIR "/plugins/examples/fast_gelu/fast_gelu.onnx";

// The message load() throws for `path`, or "" if it loaded.
std::string load_error(PluginSet& set, const std::string& path) {
  try {
    set.load(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "plugin");
    return e.what();
  }
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// x[batch,16] -> RMSNorm(x, scale[n]) with the given epsilon -> y.
ModelBuilder rms_model(int64_t scale_len, float epsilon) {
  ModelBuilder b(17);
  b.opset("com.example", 1);
  b.input("x", DataType::Float, {"batch", 16});
  b.output("y", DataType::Float, {"batch", 16});
  b.initializer(test::make_float_tensor("scale", {scale_len}, std::vector<float>(static_cast<size_t>(scale_len), 1.5f)));
  auto& n = b.node("RMSNorm", {"x", "scale"}, {"y"}, "rms", "com.example");
  test::attr_float(n, "epsilon", epsilon);
  return b;
}

struct KernelNames : Observer {
  std::map<std::string, std::string> by_node;
  void on_node(const NodeEvent& e) override { by_node[e.node->name] = std::string(e.kernel); }
};

NamedValues run(const std::string& engine, const KernelRegistry* kernels, std::shared_ptr<const Model> m,
                const NamedValues& in, Observer* obs = nullptr) {
  EngineSettings s;
  s.extra_kernels = kernels;
  auto e = make_engine(engine, s);
  RunOptions ro;
  ro.observer = obs;
  return e->prepare(std::move(m))->run(in, ro);
}

}  // namespace

TEST(Plugin, LoadsExampleAndDescribesIt) {
  PluginSet set;
  ASSERT_EQ(load_error(set, kRmsNorm), "");
  ASSERT_EQ(set.plugins().size(), 1u);
  const PluginInfo& p = set.plugins()[0];
  EXPECT_EQ(p.name, "example_rms_norm");
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].op_type, "RMSNorm");
  EXPECT_FALSE(p.kernels[0].has_cuda);
  const PluginKernelInfo* k = set.supplier("com.example", "RMSNorm", 1);
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(contains(k->description, "RMS"));
  EXPECT_EQ(set.supplier("com.example", "Other", 1), nullptr);
  auto c = set.kernels().candidates("com.example", "RMSNorm", 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->impl, "plugin:example_rms_norm");
  // The same file named twice (--plugin and ONNXSCOPE_PLUGIN_PATH) loads once.
  EXPECT_EQ(load_error(set, kRmsNorm), "");
  EXPECT_EQ(set.plugins().size(), 1u);
}

TEST(Plugin, MissingFileIsRefused) {
  PluginSet set;
  std::string err = load_error(set, "/nonexistent/libnothing.so");
  EXPECT_TRUE(contains(err, "/nonexistent/libnothing.so")) << err;
  EXPECT_TRUE(contains(err, "not found")) << err;
  EXPECT_TRUE(set.empty());
}

TEST(Plugin, FileThatIsNotALibraryIsRefused) {
  fs::path fake = fs::temp_directory_path() / ("onnxscope-fake-plugin-" + std::to_string(getpid()) + ".so");
  std::ofstream(fake) << "this is not an ELF file\n";
  PluginSet set;
  std::string err = load_error(set, fake.string());
  EXPECT_TRUE(contains(err, fake.string())) << err;
  EXPECT_TRUE(contains(err, "cannot load the plugin as a shared library")) << err;
  fs::remove(fake);
}

TEST(Plugin, LibraryWithoutEntryPointIsRefused) {
  PluginSet set;
  std::string err = load_error(set, ONNXSCOPE_PLUGIN_NO_ENTRY);
  EXPECT_TRUE(contains(err, ONNXSCOPE_PLUGIN_NO_ENTRY)) << err;
  EXPECT_TRUE(contains(err, "no entry point 'onnxscope_plugin_entry'")) << err;
}

TEST(Plugin, WrongAbiVersionIsRefusedNamingBothVersions) {
  PluginSet set;
  std::string err = load_error(set, ONNXSCOPE_PLUGIN_BAD_ABI);
  EXPECT_TRUE(contains(err, ONNXSCOPE_PLUGIN_BAD_ABI)) << err;
  EXPECT_TRUE(contains(err, "plugin ABI version " + std::to_string(ONNXSCOPE_PLUGIN_ABI_VERSION + 41))) << err;
  EXPECT_TRUE(contains(err, "speaks version " + std::to_string(ONNXSCOPE_PLUGIN_ABI_VERSION))) << err;
  EXPECT_TRUE(set.empty());
}

TEST(Plugin, DuplicateKernelIsRefusedNamingBothFiles) {
  PluginSet set;
  ASSERT_EQ(load_error(set, kRmsNorm), "");
  std::string err = load_error(set, ONNXSCOPE_PLUGIN_DUP);
  EXPECT_TRUE(contains(err, ONNXSCOPE_PLUGIN_DUP)) << err;
  EXPECT_TRUE(contains(err, "already registered by plugin 'example_rms_norm' (" + kRmsNorm + ")")) << err;
  EXPECT_EQ(set.plugins().size(), 1u);  // the refused one added nothing
  EXPECT_EQ(set.kernels().all().size(), 1u);
}

TEST(Plugin, ValidationAndShapeInferenceUseThePlugin) {
  LoadResult plain = load_model_file(kRmsModel);
  EXPECT_TRUE(test::has_code(plain, "custom-domain", Severity::Warning)) << test::dump(plain);

  PluginSet set;
  set.load(kRmsNorm);
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = load_model_file(kRmsModel, o);
  ASSERT_TRUE(r.ok()) << test::dump(r);
  EXPECT_FALSE(test::has_code(r, "custom-domain", Severity::Warning)) << test::dump(r);
  const TypeInfo* n = r.model->graph.type_of("n");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->to_string(), "float[batch,16]");
}

TEST(Plugin, ShapeFunctionRejectingInputsIsALoadError) {
  PluginSet set;
  set.load(kRmsNorm);
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = rms_model(8, 1e-5f).load(o);
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(test::has_code(r, "plugin-shape")) << test::dump(r);
  std::string msg = test::dump(r);
  EXPECT_TRUE(contains(msg, "example_rms_norm")) << msg;
  EXPECT_TRUE(contains(msg, "node 'rms'")) << msg;
  EXPECT_TRUE(contains(msg, "scale has 8 elements but X's last axis has 16")) << msg;
}

TEST(Plugin, ArityOutsideThePluginsCountsIsAValidationError) {
  PluginSet set;
  set.load(kRmsNorm);
  LoadOptions o;
  o.plugins = &set;
  ModelBuilder b(17);
  b.opset("com.example", 1);
  b.input("x", DataType::Float, {2, 4});
  b.output("y", DataType::Float, {2, 4});
  b.node("RMSNorm", {"x"}, {"y"}, "rms", "com.example");
  LoadResult r = b.load(o);
  EXPECT_TRUE(test::has_code(r, "input-count")) << test::dump(r);
}

TEST(Plugin, KernelRunsOnReferenceAndCpu) {
  PluginSet set;
  set.load(kRmsNorm);
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = load_model_file(kRmsModel, o);
  ASSERT_TRUE(r.ok()) << test::dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  InputSpec spec;
  spec.dims["batch"] = 3;
  NamedValues in = make_inputs(*m, spec);

  KernelNames names;
  NamedValues ref = run("reference", &set.kernels(), m, in, &names);
  EXPECT_EQ(names.by_node["rms"], "plugin:example_rms_norm");
  NamedValues cpu = run("cpu", &set.kernels(), m, in);
  ASSERT_EQ(ref.size(), 1u);
  const Tensor& a = ref[0].second.tensor();
  const Tensor& b = cpu[0].second.tensor();
  ASSERT_EQ(a.shape(), (Shape{3, 16}));
  ASSERT_EQ(b.shape(), a.shape());

  // The same computation written out here: relu(rms_norm(x @ w) * scale).
  const Tensor& x = in[0].second.tensor();
  const Tensor& w = m->graph.initializer("w")->value;
  const Tensor& scale = m->graph.initializer("scale")->value;
  for (int64_t row = 0; row < 3; ++row) {
    std::vector<double> h(16, 0.0);
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 16; ++k) h[j] += double(x.data<float>()[row * 16 + k]) * w.data<float>()[k * 16 + j];
    double ms = 0;
    for (double v : h) ms += v * v;
    const double inv = 1.0 / std::sqrt(ms / 16 + 1e-6);
    for (int j = 0; j < 16; ++j) {
      const double want = std::max(0.0, h[j] * inv * scale.data<float>()[j]);
      EXPECT_NEAR(a.data<float>()[row * 16 + j], want, 1e-4) << row << "," << j;
      EXPECT_NEAR(b.data<float>()[row * 16 + j], want, 1e-4) << row << "," << j;
    }
  }
}

TEST(Plugin, KernelErrorIsANodeErrorNamingThePlugin) {
  PluginSet set;
  set.load(kRmsNorm);
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = rms_model(16, -1.0f).load(o);
  ASSERT_TRUE(r.ok()) << test::dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  InputSpec spec;
  spec.dims["batch"] = 2;
  NamedValues in = make_inputs(*m, spec);
  for (const char* engine : {"reference", "cpu"}) {
    try {
      run(engine, &set.kernels(), m, in);
      ADD_FAILURE() << engine << ": the run should fail";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_EQ(e.diagnostic().where.node, "rms") << msg;
      EXPECT_TRUE(contains(msg, "plugin 'example_rms_norm' (" + kRmsNorm + ")")) << msg;
      EXPECT_TRUE(contains(msg, "epsilon must be > 0, got -1")) << msg;
    }
  }
}

TEST(Plugin, PluginKernelReplacesTheModelLocalFunction) {
  PluginSet set;
  set.load(kFastGelu);
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = load_model_file(kGeluModel, o);
  ASSERT_TRUE(r.ok()) << test::dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  EXPECT_EQ(m->graph.type_of("g")->to_string(), "float[batch,64]");
  InputSpec spec;
  spec.dims["batch"] = 4;
  NamedValues in = make_inputs(*m, spec);
  KernelNames without, with;
  NamedValues a = run("reference", nullptr, m, in, &without);
  NamedValues b = run("reference", &set.kernels(), m, in, &with);
  EXPECT_EQ(without.by_node["gelu"], "function");
  EXPECT_EQ(with.by_node["gelu"], "plugin:example_fast_gelu");
  const Tensor& ta = a[0].second.tensor();
  const Tensor& tb = b[0].second.tensor();
  ASSERT_EQ(ta.shape(), tb.shape());
  double worst = 0;
  for (uint64_t i = 0; i < ta.element_count(); ++i)
    worst = std::max(worst, std::abs(double(ta.data<float>()[i]) - tb.data<float>()[i]));
  EXPECT_LT(worst, 1e-4);
}

TEST(Plugin, EnvironmentPathIsSplitOnColons) {
  setenv("ONNXSCOPE_PLUGIN_PATH", "/a/liba.so::/b/libb.so:", 1);
  EXPECT_EQ(plugin_paths_from_env(), (std::vector<std::string>{"/a/liba.so", "/b/libb.so"}));
  unsetenv("ONNXSCOPE_PLUGIN_PATH");
  EXPECT_TRUE(plugin_paths_from_env().empty());
}

TEST(Plugin, DefaultPluginKernelsReachEveryEngineMadeByName) {
  PluginSet set;
  set.load(kRmsNorm);
  LoadOptions o;
  o.plugins = &set;
  LoadResult r = load_model_file(kRmsModel, o);
  ASSERT_TRUE(r.ok()) << test::dump(r);
  auto detail = [&](const std::string& engine) { return make_engine(engine)->supports(*r.model)[1].detail; };
  EXPECT_NE(detail("reference"), "plugin:example_rms_norm");
  set_default_plugin_kernels(&set.kernels());
  EXPECT_EQ(detail("reference"), "plugin:example_rms_norm");
  EXPECT_EQ(detail("cpu"), "plugin:example_rms_norm");
  set_default_plugin_kernels(nullptr);
  EXPECT_NE(detail("cpu"), "plugin:example_rms_norm");
}
