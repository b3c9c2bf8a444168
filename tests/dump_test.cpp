// HDF5 dumps: every element type round-trips bit for bit; bad files (not
// HDF5, truncated, wrong format, hostile attributes) give named errors.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "model_builder.h"
#include "onnxscope/dump.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace fs = std::filesystem;

namespace {

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("onnxscope-dump-" + std::to_string(getpid()) + "-" + name);
}

Tensor random_tensor(DataType t, Shape shape, uint32_t seed) {
  if (t == DataType::String) {
    auto n = *checked_element_count(shape);
    std::vector<std::string> s(n);
    for (uint64_t i = 0; i < n; ++i) s[i] = "str" + std::to_string(i * seed);
    return Tensor::from_strings(shape, s);
  }
  Tensor x = Tensor::zeros(t, shape);
  std::mt19937 rng(seed);
  if (is_packed_dtype(t)) {
    for (uint64_t i = 0; i < x.element_count(); ++i)
      set_packed_element_bits(t, x.mutable_raw(), i, static_cast<uint8_t>(rng()));
  } else {
    for (uint64_t i = 0; i < x.byte_size(); ++i) x.mutable_raw()[i] = std::byte(rng());
    if (t == DataType::Bool)
      for (uint64_t i = 0; i < x.byte_size(); ++i) x.mutable_raw()[i] = std::byte(uint8_t(x.mutable_raw()[i]) & 1);
  }
  return x;
}

}  // namespace

TEST(Dump, EveryDtypeRoundTripsBitForBit) {
  const fs::path p = temp("types.h5");
  std::vector<Tensor> written;
  {
    DumpWriter w(p, DumpHeader{"0.1.0", "m.onnx", "abc", "reference", "{}", "{}", "now", "onnxscope"});
    for (int t = 1; t <= kMaxDataType; ++t) {
      Tensor x = random_tensor(static_cast<DataType>(t), {3, 5}, static_cast<uint32_t>(t));
      w.write_tensor("t/" + std::to_string(t), x, "node" + std::to_string(t), "Op", t);
      written.push_back(x);
    }
    w.write_tensor("scalar", random_tensor(DataType::Float, {}, 1), "n", "Op", 100);
    w.write_tensor("empty", Tensor::zeros(DataType::Float, {0, 4}), "n", "Op", 101);
    w.close({"t/1"});
  }
  // Both ways of reading: in a child that streams the datasets back (the
  // default), and with libhdf5 in this process.
  for (bool isolate : {true, false}) {
  SCOPED_TRACE(isolate ? "read in a child process" : "read in this process");
  DumpReadOptions ro;
  ro.isolate = isolate;
  DumpFile d = read_dump(p, ro);
  EXPECT_EQ(d.header.tool_version, "0.1.0");
  EXPECT_EQ(d.header.model_path, "m.onnx");
  EXPECT_EQ(d.header.model_sha256, "abc");
  EXPECT_EQ(d.header.engine, "reference");
  EXPECT_EQ(d.header.created, "now");
  EXPECT_EQ(d.header.producer, "onnxscope");
  EXPECT_EQ(d.graph_outputs, (std::vector<std::string>{"t/1"}));
  ASSERT_EQ(d.tensors.size(), static_cast<size_t>(kMaxDataType) + 2);
  for (int t = 1; t <= kMaxDataType; ++t) {
    const DumpEntry& e = d.tensors[static_cast<size_t>(t - 1)];  // sorted by topo_index
    const Tensor& want = written[static_cast<size_t>(t - 1)];
    ASSERT_EQ(e.name, "t/" + std::to_string(t));
    EXPECT_EQ(e.node, "node" + std::to_string(t));
    EXPECT_EQ(e.topo_index, t);
    EXPECT_EQ(e.shape, (Shape{3, 5}));
    EXPECT_EQ(e.stats.elements, 15u);
    ASSERT_TRUE(e.data) << e.name;
    EXPECT_EQ(e.data->dtype(), want.dtype()) << e.name;
    EXPECT_EQ(e.data->shape(), want.shape());
    if (want.is_string()) EXPECT_EQ(e.data->strings(), want.strings());
    else EXPECT_EQ(std::memcmp(e.data->raw(), want.raw(), want.byte_size()), 0) << dtype_name(want.dtype());
  }
  EXPECT_EQ(d.tensors[kMaxDataType].data->rank(), 0);
  EXPECT_EQ(d.tensors[kMaxDataType + 1].data->shape(), (Shape{0, 4}));
  }
  fs::remove(p);
}

TEST(Dump, StatsOnlyAndFilter) {
  const fs::path p = temp("stats.h5");
  DumpWriterOptions o;
  o.stats_only = true;
  o.only = std::regex("keep");
  {
    DumpWriter w(p, DumpHeader{}, o);
    Tensor x = Tensor::zeros(DataType::Float, {4});
    for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = static_cast<float>(i);
    w.write_tensor("keep_me", x, "n", "Op", 0);
    w.write_tensor("drop_me", x, "n", "Op", 1);
    EXPECT_EQ(w.written(), 1u);
    w.close();
  }
  DumpFile d = read_dump(p);
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].name, "keep_me");
  EXPECT_TRUE(d.tensors[0].stats_only);
  EXPECT_FALSE(d.tensors[0].data);
  EXPECT_EQ(d.tensors[0].shape, (Shape{4}));
  EXPECT_DOUBLE_EQ(d.tensors[0].stats.mean, 1.5);
  EXPECT_DOUBLE_EQ(d.tensors[0].stats.max, 3.0);
  fs::remove(p);
}

TEST(Dump, StreamingObserverWritesEveryNode) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Neg", {"r"}, {"y"}, "neg");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}});
  auto r = b.load();
  std::shared_ptr<const Model> m = std::move(r.model);
  NamedValues in = make_inputs(*m, InputSpec{});
  const fs::path p = temp("run.h5");
  {
    DumpWriter w(p, DumpHeader{});
    for (const auto& [n, v] : in) w.write_input(n, v);
    DumpObserver obs(w);
    RunOptions ro;
    ro.observer = &obs;
    make_reference_engine()->prepare(m)->run(in, ro);
    w.close({"y"});
  }
  DumpFile d = read_dump(p);
  ASSERT_EQ(d.inputs.size(), 1u);
  ASSERT_EQ(d.tensors.size(), 2u);
  EXPECT_EQ(d.tensors[0].node, "relu");
  EXPECT_EQ(d.tensors[1].op_type, "Neg");
  EXPECT_EQ(d.tensors[1].topo_index, 1);
  fs::remove(p);
}

TEST(Dump, BadFilesGiveNamedErrors) {
  const fs::path junk = temp("junk.h5");
  std::ofstream(junk) << "this is not hdf5";
  EXPECT_THROW(read_dump(junk), Error);
  EXPECT_THROW(read_dump(temp("missing.h5")), Error);

  // A real dump cut in half.
  const fs::path good = temp("good.h5");
  {
    DumpWriter w(good, DumpHeader{});
    w.write_tensor("a", random_tensor(DataType::Float, {64, 64}, 3), "n", "Op", 0);
    w.close();
  }
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const fs::path cut = temp("cut.h5");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    read_dump(cut);
    FAIL() << "a truncated dump must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(cut.string()), std::string::npos) << e.what();
  }

  // An HDF5 file of another format, and one whose dtype attribute lies.
  const fs::path other = temp("other.h5");
  {
    hid_t f = H5Fcreate(other.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
  }
  EXPECT_THROW(read_dump(other), Error);
  {
    DumpWriter w(good, DumpHeader{});
    w.write_tensor("a", random_tensor(DataType::Float, {4}, 3), "n", "Op", 0);
    w.close();
    hid_t f = H5Fopen(good.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, "tensors/a", H5P_DEFAULT);
    H5Adelete(ds, "dtype");
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(ds, "dtype", type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* lie = "double";  // 8-byte elements, but the data holds 4-byte floats
    H5Awrite(attr, type, &lie);
    H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(ds);
    H5Fclose(f);
  }
  try {
    read_dump(good);
    FAIL() << "a dtype attribute that disagrees with the data must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensors/a"), std::string::npos) << e.what();
  }
  for (const auto& p : {junk, good, cut, other}) fs::remove(p);
}

// Files that crash libhdf5, make it allocate without bound, or loop in it
// (found by the fuzzer): each is an error naming the file, from the child
// that reads it, and this process carries on.
TEST(Dump, WhatLibhdf5DoesOnAMalformedFileStaysInTheReadingChild) {
  const fs::path dir = fs::path(ONNXSCOPE_SOURCE_DIR) / "tests/fuzz/regressions/fuzz_dump";
  struct Case {
    const char* file;
    const char* says;  // "" for any error but a timeout
    double timeout;
  };
  const Case cases[] = {
      // A segfault inside H5Aread of a variable-length string attribute.
      {"crash-01dce47dc022e2e79e9ea65e15e6219119dd3e85", "crashed reading this file", 30},
      // libhdf5 asks for gigabytes: the child's memory limit refuses them at
      // once and libhdf5 reports "cannot read attribute 'model_path'" (or,
      // under ASan, its allocator aborts the child). Without the limit it
      // pages through them for over 10 s, past this case's 3 s.
      {"oom-0859157338af97cc08c87c74da5cffd11a2a2818", "", 3},
      // libhdf5 loops in H5HG_read.
      {"timeout-975d4ded3b6d38bc800d092f276da2ce79343288", "made no progress for 1 s", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    DumpReadOptions o;
    o.isolate_timeout_seconds = c.timeout;
    try {
      read_dump(dir / c.file, o);
      ADD_FAILURE() << "a malformed dump must be refused";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(c.file), std::string::npos) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << what;
      if (!*c.says) {
        EXPECT_EQ(what.find("made no progress"), std::string::npos) << what;
      }
    }
  }
  // A good file still reads after all that.
  const fs::path good = temp("after.h5");
  {
    DumpWriter w(good, DumpHeader{});
    w.write_tensor("a", random_tensor(DataType::Float, {4}, 3), "n", "Op", 0);
    w.close();
  }
  EXPECT_EQ(read_dump(good).tensors.size(), 1u);
  fs::remove(good);
}
