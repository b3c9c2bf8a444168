// Random Range problems for cuda_kernels_test: every type the device takes,
// rising, falling and empty ranges, fractional steps whose products round
// (numpy.arange's rule: start + i * ((start + delta) - start) in double),
// and starts far from 0.
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

// A scalar graph input of type t holding v.
std::string scalar(Case& c, const std::string& name, DataType t, double v) {
  Tensor x = Tensor::zeros(t, {});
  switch (t) {
    case DataType::Float: x.mutable_data<float>()[0] = static_cast<float>(v); break;
    case DataType::Double: x.mutable_data<double>()[0] = v; break;
    case DataType::Int16: x.mutable_data<int16_t>()[0] = static_cast<int16_t>(v); break;
    case DataType::Int32: x.mutable_data<int32_t>()[0] = static_cast<int32_t>(v); break;
    default: x.mutable_data<int64_t>()[0] = static_cast<int64_t>(v); break;
  }
  c.m.input(name, t, {});
  c.inputs.emplace_back(name, Value(std::move(x)));
  c.what += " " + name + "=" + std::to_string(v);
  return name;
}

Case range(Rng& rng, const std::string&) {
  Case c(11);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Double, DataType::Int16, DataType::Int32, DataType::Int64});
  const bool real = t == DataType::Float || t == DataType::Double;
  const double far = real && coin(rng) ? choose(rng, std::vector<double>{1e6, -3e7, 123456.789}) : 0;
  const double start = far + (real ? static_cast<double>(pick(rng, -40, 40)) * 0.1 : static_cast<double>(pick(rng, -20, 20)));
  double delta = real ? choose(rng, std::vector<double>{0.1, 0.3, -0.7, 1.0 / 3.0, 2.5, -0.05}) : static_cast<double>(pick(rng, 1, 4));
  if (!real && coin(rng)) delta = -delta;
  const double count = static_cast<double>(pick(rng, -3, 60));  // up to 3 short of empty
  scalar(c, "start", t, start);
  scalar(c, "limit", t, start + count * delta + (real ? delta * 0.5 : 0));
  scalar(c, "delta", t, delta);
  c.node("Range", {"start", "limit", "delta"});
  return c;
}

}  // namespace

void add_range_generators(std::map<std::string, Generator>& m) { m["Range"] = range; }

}  // namespace onnxscope::test::cuda_cases
