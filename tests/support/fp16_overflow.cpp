#include "fp16_overflow.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "model_builder.h"
#include "onnxscope/dump.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

namespace onnxscope::test {

namespace {
Tensor half_filled(const Shape& shape, float v) {
  Tensor t = Tensor::zeros(DataType::Float16, shape);
  const uint16_t h = float_to_half(v);
  for (uint64_t i = 0; i < t.element_count(); ++i) std::memcpy(t.mutable_raw() + 2 * i, &h, 2);
  return t;
}
}  // namespace

Fp16Overflow write_fp16_overflow(const std::filesystem::path& dir) {
  Fp16Overflow f{dir / "fp16_overflow.onnx", dir / "fp16_overflow_x.npz", dir / "fp16_finite.h5",
                 dir / "fp16_overflow.h5"};
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float16, {int64_t{1}, int64_t{256}});
  const uint16_t one = float_to_half(1.0f);
  b.initializer(make_tensor_raw("scale", DataType::Float16, {}, std::string(reinterpret_cast<const char*>(&one), 2)));
  b.node("Mul", {"x", "scale"}, {"xs"}, "node_scale");
  attr_ints(b.node("ReduceMean", {"xs"}, {"m"}, "node_mean"), "axes", {1});
  b.node("Sub", {"m", "m"}, {"z"}, "node_sub");
  b.node("Add", {"z", "m"}, {"y"}, "node_add");
  b.output("y", DataType::Float16, {int64_t{1}, int64_t{1}});
  std::ofstream(f.model, std::ios::binary) << b.bytes();
  auto model = load_model(b);

  Tensor x32 = Tensor::zeros(DataType::Float, {1, 256});
  for (uint64_t i = 0; i < 256; ++i) x32.mutable_data<float>()[i] = 500.0f;
  write_npz(f.inputs, {{"x", Value(x32)}});

  const Tensor x = half_filled({1, 256}, 500.0f);
  DumpHeader h;
  h.producer = "onnxscope";
  {
    DumpWriter w(f.finite_dump, h);
    w.write_input("x", Value(x));
    DumpObserver obs(w);
    RunOptions ro;
    ro.observer = &obs;
    make_reference_engine()->prepare(model)->run({{"x", Value(x)}}, ro);
    w.close({"y"});
  }
  {
    h.producer = "fp16-accumulating runtime";
    DumpWriter w(f.overflow_dump, h);
    w.write_input("x", Value(x));
    w.write_tensor("xs", Value(x), "node_scale", "Mul", 0);
    w.write_tensor("m", Value(half_filled({1, 1}, INFINITY)), "node_mean", "ReduceMean", 1);
    w.write_tensor("z", Value(half_filled({1, 1}, NAN)), "node_sub", "Sub", 2);
    w.write_tensor("y", Value(half_filled({1, 1}, NAN)), "node_add", "Add", 3);
    w.close({"y"});
  }
  return f;
}

}  // namespace onnxscope::test
