#include "onnxscope/inputs.h"

#include "onnxscope/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "onnxscope/float_formats.h"
#include "onnxscope/npy.h"
#include "onnxscope/proto_io.h"

namespace onnxscope {
namespace {

[[noreturn]] void fail(const Model& m, const std::string& input, std::string message) {
  throw Error(Diagnostic{Severity::Error, "bad-input", Location{m.source, "main", -1, {}, {}, input}, std::move(message), {}});
}

std::string g(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The four float types an input is converted between; the narrow ones
// (float8, float4) are left to be given exactly.
bool castable_float(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Float16 || t == DataType::BFloat16;
}

void store_real(DataType t, std::byte* p, uint64_t i, double v) {
  switch (t) {
    case DataType::Float: { float f = static_cast<float>(v); std::memcpy(p + i * 4, &f, 4); break; }
    case DataType::Double: std::memcpy(p + i * 8, &v, 8); break;
    case DataType::Float16: { uint16_t h = float_to_half(static_cast<float>(v)); std::memcpy(p + i * 2, &h, 2); break; }
    case DataType::BFloat16: { uint16_t h = float_to_bfloat16(static_cast<float>(v)); std::memcpy(p + i * 2, &h, 2); break; }
    default: break;
  }
}

Tensor convert_real(const Tensor& t, DataType to) {
  Tensor out = Tensor::zeros(to, t.shape());
  std::byte* p = out.mutable_raw();
  for (uint64_t i = 0; i < t.element_count(); ++i) store_real(to, p, i, t.element_as_double(i));
  return out;
}

// A table an integer input indexes: a Gather whose indices it is (through
// casts and reshapes), or an embedding contrib op's ids.
struct TableUse {
  int64_t rows = 0;
  std::string table, reader;
};

std::optional<TableUse> table_indexed_by(const Model& m, const std::string& input) {
  auto rows_of = [&](const std::string& name, int64_t axis) -> std::optional<int64_t> {
    const Initializer* init = m.graph.initializer(name);
    if (!init) return std::nullopt;
    const Shape& s = init->value.shape();
    const int64_t rank = static_cast<int64_t>(s.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || s[static_cast<size_t>(axis)] <= 0) return std::nullopt;
    return s[static_cast<size_t>(axis)];
  };
  static const std::set<std::string> passthrough = {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand"};
  std::vector<std::string> frontier{input};
  std::set<std::string> seen{input};
  for (int depth = 0; depth < 4 && !frontier.empty(); ++depth) {
    std::vector<std::string> next;
    for (size_t k = 0; k < m.graph.nodes.size(); ++k) {
      const Node& n = m.graph.nodes[k];
      for (const auto& name : frontier) {
        if (n.domain.empty() && n.op_type == "Gather" && n.inputs.size() >= 2 && n.inputs[1] == name) {
          const Attribute* axis = n.attribute("axis");
          if (auto rows = rows_of(n.inputs[0], axis ? axis->i : 0)) return TableUse{*rows, n.inputs[0], "Gather '" + n.label(k) + "'"};
        }
        if (n.domain == "com.microsoft" && n.op_type == "EmbedLayerNormalization") {
          for (auto [ids, table] : {std::pair<size_t, size_t>{0, 2}, {1, 4}})
            if (n.inputs.size() > table && n.inputs[ids] == name)
              if (auto rows = rows_of(n.inputs[table], 0))
                return TableUse{*rows, n.inputs[table], "EmbedLayerNormalization '" + n.label(k) + "'"};
        }
        if (n.domain.empty() && passthrough.count(n.op_type) && !n.inputs.empty() && n.inputs[0] == name)
          for (const auto& o : n.outputs)
            if (!o.empty() && seen.insert(o).second) next.push_back(o);
      }
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

// What random values an input gets, and the words that say so.
struct Generator {
  enum Kind { Uniform, Ones, Positions } kind = Uniform;
  ValueRange range;
  std::string why;
};

Generator generator_for(const Model& m, const ValueInfo& v, const InputSpec& spec) {
  const DTypeInfo& info = dtype_info(v.type.elem);
  const bool integer = info.is_integer && v.type.elem != DataType::Bool;
  Generator gen;
  if (auto it = spec.ranges.find(v.name); it != spec.ranges.end()) {
    gen.range = it->second;
    gen.why = "--val-range";
    return gen;
  }
  if (spec.range_all) {
    gen.range = *spec.range_all;
    gen.why = "--val-range";
    return gen;
  }
  const std::string name = lower(v.name);
  if (name == "mask" || ends_with(name, "_mask") || ends_with(name, "attention_mask")) {
    gen.kind = Generator::Ones;
    gen.why = "named like a mask: attend everywhere";
    return gen;
  }
  const std::optional<TableUse> table = (integer || v.type.elem == DataType::Bool) ? table_indexed_by(m, v.name) : std::nullopt;
  if (integer && (name.find("position_ids") != std::string::npos || name == "positions")) {
    gen.kind = Generator::Positions;
    gen.range = {0, table ? static_cast<double>(table->rows - 1) : INFINITY};
    gen.why = "named like position ids";
    if (table) gen.why += "; at most " + std::to_string(table->rows - 1) + ", the last row of '" + table->table + "' read by " + table->reader;
    return gen;
  }
  if (integer && table) {
    gen.range = {0, static_cast<double>(table->rows - 1)};
    gen.why = "the rows of '" + table->table + "' read by " + table->reader;
    return gen;
  }
  if (integer && (name.find("token_type") != std::string::npos || name.find("segment_ids") != std::string::npos)) {
    gen.range = {0, 0};
    gen.why = "named like token type ids, and no table read by them was found";
    return gen;
  }
  if (integer) {
    gen.range = {0, 9};
    gen.why = "the default for integers (small values keep indices and sizes meaningful)";
    return gen;
  }
  gen.range = v.type.elem == DataType::Bool ? ValueRange{0, 1} : ValueRange{-1, 1};
  gen.why = "the default";
  return gen;
}

std::string describe_generator(const Generator& gen, DataType t) {
  const DTypeInfo& info = dtype_info(t);
  const bool integer = info.is_integer && t != DataType::Bool;
  switch (gen.kind) {
    case Generator::Ones: return "all ones (" + gen.why + ")";
    case Generator::Positions: return "0, 1, 2, ... along the last axis (" + gen.why + ")";
    case Generator::Uniform: break;
  }
  if (t == DataType::Bool) return "random booleans (" + gen.why + ")";
  if (t == DataType::String) return "random strings";
  if (integer) return "random integers in [" + g(gen.range.lo) + ", " + g(gen.range.hi) + "] (" + gen.why + ")";
  return "random values in [" + g(gen.range.lo) + ", " + g(gen.range.hi) + ") (" + gen.why + ")";
}

Tensor random_tensor(const Model& m, const ValueInfo& v, const InputSpec& spec, const Generator& gen, std::mt19937_64& rng) {
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
  const bool integer = info.is_integer && t.elem != DataType::Bool;
  const double lo = gen.range.lo, hi = gen.range.hi;
  std::uniform_real_distribution<double> real(lo, hi > lo ? hi : std::nextafter(lo, INFINITY));
  const int64_t last = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1);
  std::byte* p = out.mutable_raw();
  for (uint64_t i = 0; i < *count; ++i) {
    if (gen.kind == Generator::Ones || gen.kind == Generator::Positions) {
      const double v64 = gen.kind == Generator::Ones ? 1.0 : std::min(static_cast<double>(static_cast<int64_t>(i) % last), hi);
      if (t.elem == DataType::Bool) p[i] = std::byte(v64 != 0);
      else if (integer && info.bits >= 8) {
        const int64_t x = static_cast<int64_t>(v64);
        std::memcpy(p + i * (info.bits / 8), &x, info.bits / 8);
      } else if (castable_float(t.elem)) store_real(t.elem, p, i, v64);
      else if (info.bits < 8) set_packed_element_bits(t.elem, p, i, static_cast<uint8_t>(v64));
      continue;
    }
    switch (t.elem) {
      case DataType::Float:
      case DataType::Double: store_real(t.elem, p, i, real(rng)); continue;
      case DataType::Bool: {
        const int64_t a = static_cast<int64_t>(std::ceil(std::min(std::max(lo, 0.0), 1.0)));
        const int64_t b = static_cast<int64_t>(std::floor(std::min(std::max(hi, 0.0), 1.0)));
        p[i] = std::byte(b > a ? static_cast<int64_t>(rng() & 1) : a);
        continue;
      }
      default: break;
    }
    if (integer && info.bits >= 8) {
      // Both ends included, clamped to what the type holds.
      const double tlo = info.is_signed ? -std::ldexp(1.0, static_cast<int>(info.bits) - 1) : 0.0;
      const double thi = std::ldexp(1.0, static_cast<int>(info.bits) - (info.is_signed ? 1 : 0)) - 1;
      const double a = std::ceil(std::clamp(lo, tlo, thi)), b = std::floor(std::clamp(hi, tlo, thi));
      int64_t x = static_cast<int64_t>(a);
      if (b > a) {
        const uint64_t span = static_cast<uint64_t>(b - a) + 1;
        x = static_cast<int64_t>(a) + static_cast<int64_t>(span ? rng() % span : rng());
      }
      std::memcpy(p + i * (info.bits / 8), &x, info.bits / 8);
    } else if (info.bits < 8) {
      set_packed_element_bits(t.elem, p, i, static_cast<uint8_t>(rng() & ((1u << info.bits) - 1)));
    } else {
      // Narrow floats and complex numbers: a value from the range
      // (random bit patterns would be mostly NaN and extremes).
      const float f = static_cast<float>(real(rng));
      switch (t.elem) {
        case DataType::Float16:
        case DataType::BFloat16: store_real(t.elem, p, i, f); break;
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
  return out;
}

// A given value must be what the model declares: same element type, rank and
// fixed dims (symbolic and unknown dims accept any size). A float value of
// another float type is converted when `cast` allows it; the note says so.
void check_declared(const Model& model, const ValueInfo& v, Value& given, const std::string& from, bool cast,
                    std::string& note) {
  if (v.type.kind != TypeInfo::Kind::Tensor || !given.is_tensor()) return;
  const Tensor& t = given.tensor();
  if (v.type.elem != DataType::Undefined && t.dtype() != v.type.elem) {
    if (cast && castable_float(t.dtype()) && castable_float(v.type.elem)) {
      note = " (" + std::string(dtype_name(t.dtype())) + " converted to " + std::string(dtype_name(v.type.elem)) +
             ", the type the model declares)";
      given = Value(convert_real(t, v.type.elem));
    } else {
      fail(model, v.name, "input '" + v.name + "' from " + from + " is " + std::string(dtype_name(t.dtype())) +
                              " but the model declares " + std::string(dtype_name(v.type.elem)));
    }
  }
  const Tensor& c = given.tensor();
  if (!v.type.shape) return;
  const auto& dims = *v.type.shape;
  bool ok = dims.size() == c.shape().size();
  for (size_t i = 0; ok && i < dims.size(); ++i)
    if (dims[i].is_known() && dims[i].value != c.shape()[i]) ok = false;
  if (!ok)
    fail(model, v.name, "input '" + v.name + "' from " + from + " has shape " + shape_to_string(c.shape()) +
                            " but the model declares " + v.type.to_string());
}

}  // namespace

std::string unknown_dim_error(const Model& model, const std::map<std::string, int64_t>& dims) {
  std::set<std::string> known;
  for (const auto& v : model.graph.inputs)
    if (v.type.shape)
      for (const Dim& d : *v.type.shape)
        if (d.is_symbolic()) known.insert(d.param);
  for (const auto& [dim, value] : dims)
    if (!known.count(dim)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return "no input of the model has a dimension named '" + dim + "' (" +
             (list.empty() ? "its inputs have no symbolic dimensions" : "its symbolic dimensions: " + list) + ")";
    }
  return {};
}

NamedValues make_inputs(const Model& model, const InputSpec& spec, std::vector<InputNote>* notes) {
  std::set<std::string> inits;
  for (const auto& i : model.graph.initializers) inits.insert(i.name);
  std::set<std::string> names;
  std::string listing;
  for (const auto& v : model.graph.inputs) {
    names.insert(v.name);
    if (!inits.count(v.name)) listing += (listing.empty() ? "" : ", ") + v.name;
  }
  if (std::string why = unknown_dim_error(model, spec.dims); !why.empty())
    throw Error(Diagnostic{Severity::Error, "bad-input", Location{model.source, "main", -1, {}, {}, {}}, "--dim: " + why, {}});
  for (const auto& [name, path] : spec.files)
    if (!names.count(name)) fail(model, name, "the model has no input named '" + name + "' (inputs: " + listing + ")");
  for (const auto& [name, range] : spec.ranges)
    if (!names.count(name)) fail(model, name, "--val-range names '" + name + "', but the model has no input of that name (inputs: " + listing + ")");
  for (const auto& [name, t] : spec.from_dump)
    if (spec.dump_must_cover && !names.count(name))
      fail(model, name, "the dump holds an input '" + name + "' the model does not have (inputs: " + listing +
                            "): was it made from another model?");
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
  auto say = [&](const std::string& input, const std::string& text) {
    if (notes) notes->push_back({input, text});
  };
  for (const auto& v : model.graph.inputs) {
    std::string from, cast_note;
    if (auto f = spec.files.find(v.name); f != spec.files.end()) {
      if (f->second.extension() == ".npy") out.emplace_back(v.name, read_npy(f->second));
      else out.emplace_back(v.name, read_value_file(f->second, v.type));
      from = f->second.string();
    } else if (auto a = archived.find(v.name); a != archived.end()) {
      out.emplace_back(v.name, std::move(a->second.first));
      from = a->second.second;
    } else if (auto d = spec.from_dump.find(v.name); d != spec.from_dump.end()) {
      out.emplace_back(v.name, d->second);
      from = "the dump's inputs";
    } else if (inits.count(v.name)) {
      continue;  // an initializer provides the default
    } else {
      if (spec.dump_must_cover)
        fail(model, v.name, "input '" + v.name + "' is not among the dump's inputs: was the dump made from another model?");
      if (v.type.kind != TypeInfo::Kind::Tensor)
        fail(model, v.name, "input '" + v.name + "' is a " + v.type.to_string() + "; give it as a .pb file");
      const Generator gen = generator_for(model, v, spec);
      out.emplace_back(v.name, random_tensor(model, v, spec, gen, rng));
      say(v.name, "input '" + v.name + "': " + out.back().second.describe() + ", " + describe_generator(gen, v.type.elem));
      continue;
    }
    check_declared(model, v, out.back().second, from, spec.cast_inputs, cast_note);
    say(v.name, "input '" + v.name + "': " + out.back().second.describe() + ", read from " + from + cast_note);
  }
  return out;
}

}  // namespace onnxscope
