// A structure-aware libFuzzer mutator for fuzz_model: the input is parsed as
// an ONNX ModelProto and one thing a real model's bug lives in is changed
// (tensor contents, a dim, an element type, an attribute, a node's inputs or
// operator), then the model is written back. Byte-level mutation alone
// rarely gets past the protobuf parser and the loader's checks; this keeps
// most mutants loadable, so prepare (constant folding included) and the
// kernels see hostile values inside valid models: bool bytes other than 0/1,
// indices out of range, huge sizes, NaN where an index or a size is read.
// Inputs that do not parse, and one in four that do, get libFuzzer's own
// byte mutations. (libprotobuf-mutator is in neither Debian nor PyPI as a
// C++ library; this is our own, over the generated ONNX classes.)
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx-ml.pb.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937_64;

struct Targets {
  std::vector<onnx::TensorProto*> tensors;
  std::vector<onnx::AttributeProto*> attrs;
  std::vector<onnx::TypeProto_Tensor*> types;  // inputs, outputs, value_info
  std::vector<onnx::NodeProto*> nodes;
  std::vector<std::string> values;  // every value name, for rewiring inputs
};

void collect(onnx::GraphProto& g, Targets& t, int depth) {
  if (depth > 8) return;
  for (auto& init : *g.mutable_initializer()) {
    t.tensors.push_back(&init);
    t.values.push_back(init.name());
  }
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()})
    for (auto& v : *list) {
      t.values.push_back(v.name());
      if (v.type().has_tensor_type()) t.types.push_back(v.mutable_type()->mutable_tensor_type());
    }
  for (auto& n : *g.mutable_node()) {
    t.nodes.push_back(&n);
    for (const auto& o : n.output()) t.values.push_back(o);
    for (auto& a : *n.mutable_attribute()) {
      t.attrs.push_back(&a);
      if (a.has_t()) t.tensors.push_back(a.mutable_t());
      if (a.has_g()) collect(*a.mutable_g(), t, depth + 1);
      for (auto& sub : *a.mutable_graphs()) collect(sub, t, depth + 1);
    }
  }
}

template <typename T>
T pick(Rng& rng, const std::vector<T>& v) {
  return v[rng() % v.size()];
}

int64_t interesting_int(Rng& rng) {
  static const std::vector<int64_t> values = {0,  1,  -1, 2,  -2, 3,  7,  255, 256, 1 << 16, -(1 << 16), int64_t{1} << 31,
                                              int64_t{1} << 40, int64_t{1} << 62, std::numeric_limits<int64_t>::max(),
                                              std::numeric_limits<int64_t>::min(), std::numeric_limits<int32_t>::max(),
                                              std::numeric_limits<int32_t>::min()};
  return rng() % 4 == 0 ? static_cast<int64_t>(rng() % 200) - 100 : pick(rng, values);
}

float interesting_float(Rng& rng) {
  static const std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-30f, 65504.0f, 1e30f, -1e30f,
                                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
  return pick(rng, values);
}

// Bytes of element i of a raw tensor overwritten with an interesting value of
// its width (a bool gets any byte: the bug that started this).
void poke_raw(std::string& raw, int32_t dtype, Rng& rng) {
  if (raw.empty()) return;
  size_t width = 1;
  switch (dtype) {
    case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64: case onnx::TensorProto::DOUBLE: width = 8; break;
    case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32: case onnx::TensorProto::FLOAT: width = 4; break;
    case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: width = 2; break;
    default: width = 1;
  }
  const size_t count = raw.size() / width;
  if (!count) return;
  const int pokes = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < pokes; ++k) {
    const size_t at = (rng() % count) * width;
    if (dtype == onnx::TensorProto::FLOAT) {
      const float f = interesting_float(rng);
      std::memcpy(&raw[at], &f, 4);
    } else if (dtype == onnx::TensorProto::DOUBLE) {
      const double d = interesting_float(rng);
      std::memcpy(&raw[at], &d, 8);
    } else if (width == 8) {
      const int64_t v = interesting_int(rng);
      std::memcpy(&raw[at], &v, 8);
    } else if (width == 4) {
      const int32_t v = static_cast<int32_t>(interesting_int(rng));
      std::memcpy(&raw[at], &v, 4);
    } else if (width == 2) {
      const uint16_t v = static_cast<uint16_t>(rng());
      std::memcpy(&raw[at], &v, 2);
    } else {
      raw[at] = static_cast<char>(rng() % 3 == 0 ? 2 + rng() % 254 : rng());
    }
  }
}

// One more than d without the mutator itself overflowing on an INT64_MAX dim.
int64_t grown(int64_t d) { return d == std::numeric_limits<int64_t>::max() ? d : d + 1; }

void mutate_tensor(onnx::TensorProto& t, Rng& rng) {
  switch (rng() % 8) {
    case 0:  // a dim
      if (t.dims_size()) t.set_dims(static_cast<int>(rng() % t.dims_size()), rng() % 2 ? interesting_int(rng) : grown(t.dims(0)));
      else t.add_dims(static_cast<int64_t>(rng() % 4));
      return;
    case 1:  // the element type
      t.set_data_type(static_cast<int32_t>(1 + rng() % 26));
      return;
    default: break;
  }
  if (t.has_raw_data()) return poke_raw(*t.mutable_raw_data(), t.data_type(), rng);
  if (t.int64_data_size()) t.set_int64_data(static_cast<int>(rng() % t.int64_data_size()), interesting_int(rng));
  else if (t.int32_data_size()) t.set_int32_data(static_cast<int>(rng() % t.int32_data_size()), static_cast<int32_t>(interesting_int(rng)));
  else if (t.float_data_size()) t.set_float_data(static_cast<int>(rng() % t.float_data_size()), interesting_float(rng));
  else if (t.double_data_size()) t.set_double_data(static_cast<int>(rng() % t.double_data_size()), interesting_float(rng));
  else if (t.uint64_data_size()) t.set_uint64_data(static_cast<int>(rng() % t.uint64_data_size()), static_cast<uint64_t>(interesting_int(rng)));
}

void mutate_attribute(onnx::AttributeProto& a, Rng& rng) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: a.set_i(interesting_int(rng)); return;
    case onnx::AttributeProto::FLOAT: a.set_f(interesting_float(rng)); return;
    case onnx::AttributeProto::INTS:
      if (a.ints_size() && rng() % 3) a.set_ints(static_cast<int>(rng() % a.ints_size()), interesting_int(rng));
      else if (a.ints_size() && rng() % 2) a.mutable_ints()->RemoveLast();
      else a.add_ints(interesting_int(rng));
      return;
    case onnx::AttributeProto::FLOATS:
      if (a.floats_size()) a.set_floats(static_cast<int>(rng() % a.floats_size()), interesting_float(rng));
      else a.add_floats(interesting_float(rng));
      return;
    case onnx::AttributeProto::STRING: {
      static const std::vector<std::string> words = {"", "NOTSET", "SAME_UPPER", "constant", "reflect", "edge", "wrap",
                                                     "linear", "cubic", "nearest", "half_pixel", "asymmetric", "tanh"};
      a.set_s(pick(rng, words));
      return;
    }
    case onnx::AttributeProto::TENSOR: mutate_tensor(*a.mutable_t(), rng); return;
    default: a.set_i(interesting_int(rng)); return;
  }
}

void mutate_node(onnx::NodeProto& n, const Targets& t, Rng& rng) {
  switch (rng() % 4) {
    case 0:  // another value as one input
      if (n.input_size() && !t.values.empty()) n.set_input(static_cast<int>(rng() % n.input_size()), pick(rng, t.values));
      return;
    case 1:  // an input dropped (an optional one left out, or a required one missing)
      if (n.input_size()) n.mutable_input()->RemoveLast();
      return;
    case 2:  // another operator of the model in its place
      n.set_op_type(pick(rng, t.nodes)->op_type());
      return;
    default:  // an attribute removed
      if (n.attribute_size()) n.mutable_attribute()->RemoveLast();
      return;
  }
}

void mutate_type(onnx::TypeProto_Tensor& t, Rng& rng) {
  if (rng() % 2 || !t.has_shape() || !t.shape().dim_size()) {
    t.set_elem_type(static_cast<int32_t>(1 + rng() % 26));
    return;
  }
  auto* d = t.mutable_shape()->mutable_dim(static_cast<int>(rng() % t.shape().dim_size()));
  if (rng() % 2) d->set_dim_value(interesting_int(rng));
  else d->set_dim_param("fuzz_dim");
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto m;
  if (rng() % 4 == 0 || !m.ParseFromArray(data, static_cast<int>(size)) || !m.has_graph())
    return LLVMFuzzerMutate(data, size, max_size);
  const int steps = 1 + static_cast<int>(rng() % 3);
  for (int s = 0; s < steps; ++s) {
    // Collected again each step: removing an attribute frees the tensors and
    // subgraphs it held, and pointers into them.
    Targets t;
    collect(*m.mutable_graph(), t, 0);
    switch (rng() % 8) {
      case 0: case 1: case 2:
        if (!t.tensors.empty()) mutate_tensor(*pick(rng, t.tensors), rng);
        break;
      case 3: case 4:
        if (!t.attrs.empty()) mutate_attribute(*pick(rng, t.attrs), rng);
        break;
      case 5:
        if (!t.types.empty()) mutate_type(*pick(rng, t.types), rng);
        break;
      case 6:
        if (!t.nodes.empty()) mutate_node(*pick(rng, t.nodes), t, rng);
        break;
      default:
        if (m.opset_import_size()) m.mutable_opset_import(0)->set_version(1 + static_cast<int64_t>(rng() % 28));
    }
  }
  std::string out;
  if (!m.SerializeToString(&out) || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
