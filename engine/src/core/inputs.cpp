#include "onnxscope/inputs.h"

#include "onnxscope/diagnostics.h"

#include <random>
#include <set>

#include "onnxscope/float_formats.h"
#include "onnxscope/npy.h"
#include "onnxscope/proto_io.h"

#include <cmath>
#include <cstring>

namespace onnxscope {
namespace {

[[noreturn]] void fail(const Model& m, const std::string& input, std::string message) {
  throw Error(Diagnostic{Severity::Error, "bad-input", Location{m.source, "main", -1, {}, {}, input}, std::move(message), {}});
}

Tensor random_tensor(const Model& m, const ValueInfo& v, const InputSpec& spec, std::mt19937_64& rng) {
  const TypeInfo& t = v.type;
  Shape shape;
  if (t.shape) {
    for (const Dim& d : *t.shape) {
      if (d.is_known()) shape.push_back(d.value);
      else if (d.is_symbolic() && spec.dims.count(d.param)) shape.push_back(spec.dims.at(d.param));
      else if (d.is_symbolic())
        fail(m, v.name, "input '" + v.name + "' has symbolic dimension '" + d.param + "': give it with --dim " + d.param + "=N");
      else shape.push_back(spec.unknown_dim);
    }
  }
  auto count = checked_element_count(shape);
  auto bytes = count ? storage_bytes(t.elem == DataType::String ? DataType::Uint8 : t.elem, *count) : std::nullopt;
  if (!bytes || *bytes > spec.max_bytes)
    fail(m, v.name, "random input '" + v.name + "' of shape " + shape_to_string(shape) + " would exceed " +
                        std::to_string(spec.max_bytes) + " bytes");
  if (t.elem == DataType::String) {
    std::vector<std::string> s(*count);
    for (auto& x : s) {
      x = "s";
      x += std::to_string(rng() % 1000);
    }
    return Tensor::from_strings(shape, std::move(s));
  }
  Tensor out = Tensor::zeros(t.elem, shape);
  const auto& info = dtype_info(t.elem);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  for (uint64_t i = 0; i < *count; ++i) {
    std::byte* p = out.mutable_raw();
    switch (t.elem) {
      case DataType::Float: { float f = static_cast<float>(real(rng)); std::memcpy(p + i * 4, &f, 4); break; }
      case DataType::Double: { double d = real(rng); std::memcpy(p + i * 8, &d, 8); break; }
      case DataType::Bool: p[i] = std::byte(rng() & 1); break;
      default:
        if (info.is_integer && info.bits >= 8) {
          // Small values keep indices and shapes meaningful for most models.
          int64_t v64 = static_cast<int64_t>(rng() % 10);
          std::memcpy(p + i * (info.bits / 8), &v64, info.bits / 8);
        } else if (info.bits < 8) {
          set_packed_element_bits(t.elem, p, i, static_cast<uint8_t>(rng() & ((1u << info.bits) - 1)));
        } else {
          // Narrow floats and complex numbers: encode a value from [-1, 1]
          // (random bit patterns would be mostly NaN and extremes).
          const float f = static_cast<float>(real(rng));
          switch (t.elem) {
            case DataType::Float16: { uint16_t h = float_to_half(f); std::memcpy(p + i * 2, &h, 2); break; }
            case DataType::BFloat16: { uint16_t h = float_to_bfloat16(f); std::memcpy(p + i * 2, &h, 2); break; }
            case DataType::Float8E4M3FN: p[i] = std::byte(float_to_float8e4m3fn(f)); break;
            case DataType::Float8E4M3FNUZ: p[i] = std::byte(float_to_float8e4m3fnuz(f)); break;
            case DataType::Float8E5M2: p[i] = std::byte(float_to_float8e5m2(f)); break;
            case DataType::Float8E5M2FNUZ: p[i] = std::byte(float_to_float8e5m2fnuz(f)); break;
            case DataType::Float8E8M0: p[i] = std::byte(float_to_float8e8m0(std::abs(f) + 0.5f)); break;
            case DataType::Complex64: {
              float c[2] = {f, static_cast<float>(real(rng))};
              std::memcpy(p + i * 8, c, 8);
              break;
            }
            case DataType::Complex128: {
              double c[2] = {f, real(rng)};
              std::memcpy(p + i * 16, c, 16);
              break;
            }
            default: break;
          }
        }
    }
  }
  return out;
}

// A given value must be what the model declares: same element type, rank and
// fixed dims (symbolic and unknown dims accept any size).
void check_declared(const Model& model, const ValueInfo& v, const Value& given, const std::string& from) {
  if (v.type.kind != TypeInfo::Kind::Tensor || !given.is_tensor()) return;
  const Tensor& t = given.tensor();
  if (v.type.elem != DataType::Undefined && t.dtype() != v.type.elem)
    fail(model, v.name, "input '" + v.name + "' from " + from + " is " + std::string(dtype_name(t.dtype())) +
                            " but the model declares " + std::string(dtype_name(v.type.elem)));
  if (!v.type.shape) return;
  const auto& dims = *v.type.shape;
  bool ok = dims.size() == t.shape().size();
  for (size_t i = 0; ok && i < dims.size(); ++i)
    if (dims[i].is_known() && dims[i].value != t.shape()[i]) ok = false;
  if (!ok)
    fail(model, v.name, "input '" + v.name + "' from " + from + " has shape " + shape_to_string(t.shape()) +
                            " but the model declares " + v.type.to_string());
}

}  // namespace

NamedValues make_inputs(const Model& model, const InputSpec& spec) {
  std::set<std::string> inits;
  for (const auto& i : model.graph.initializers) inits.insert(i.name);
  std::set<std::string> names;
  std::string listing;
  for (const auto& v : model.graph.inputs) {
    names.insert(v.name);
    if (!inits.count(v.name)) listing += (listing.empty() ? "" : ", ") + v.name;
  }
  for (const auto& [name, path] : spec.files)
    if (!names.count(name)) fail(model, name, "the model has no input named '" + name + "' (inputs: " + listing + ")");
  // Arrays from .npz archives, by name; a name that is not an input is an
  // error (a typo would otherwise silently fall back to random values).
  std::map<std::string, std::pair<Tensor, std::string>> archived;
  for (const auto& path : spec.archives)
    for (auto& [name, t] : read_npz(path, spec.max_bytes)) {
      if (!names.count(name))
        fail(model, name, path.string() + " holds an array '" + name + "' but the model has no input of that name (inputs: " + listing + ")");
      archived.insert_or_assign(name, std::make_pair(std::move(t), path.string()));
    }
  std::mt19937_64 rng(spec.seed);
  NamedValues out;
  for (const auto& v : model.graph.inputs) {
    if (auto f = spec.files.find(v.name); f != spec.files.end()) {
      if (f->second.extension() == ".npy") out.emplace_back(v.name, read_npy(f->second));
      else out.emplace_back(v.name, read_value_file(f->second, v.type));
      check_declared(model, v, out.back().second, f->second.string());
      continue;
    }
    if (auto a = archived.find(v.name); a != archived.end()) {
      out.emplace_back(v.name, std::move(a->second.first));
      check_declared(model, v, out.back().second, a->second.second);
      continue;
    }
    if (auto d = spec.from_dump.find(v.name); d != spec.from_dump.end()) {
      out.emplace_back(v.name, d->second);
      check_declared(model, v, out.back().second, "the dump's inputs");
      continue;
    }
    if (inits.count(v.name)) continue;  // an initializer provides the default
    if (v.type.kind != TypeInfo::Kind::Tensor)
      fail(model, v.name, "input '" + v.name + "' is a " + v.type.to_string() + "; give it as a .pb file");
    out.emplace_back(v.name, random_tensor(model, v, spec, rng));
  }
  return out;
}

}  // namespace onnxscope
