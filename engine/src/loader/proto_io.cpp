#include "onnxscope/proto_io.h"

#include <fstream>

#include "loader/proto_convert.h"
#include "onnx/onnx-data.pb.h"

namespace onnxscope {
namespace {

constexpr uint64_t kMaxValueFileBytes = (uint64_t{1} << 31) - 1;

[[noreturn]] void fail(const std::string& file, std::string message) {
  throw Error(Diagnostic{Severity::Error, "bad-value-file", Location{file}, std::move(message), {}});
}

struct Reader {
  std::string file;
  detail::ExternalDataResolver external{{}, false};
  Diagnostics diags;
  detail::ConvertContext ctx{file, &external, &diags, 32};

  Tensor tensor(onnx::TensorProto& p) { return detail::tensor_from_proto(p, ctx, Location{file}); }

  Value sequence(onnx::SequenceProto& p, const TypeInfo* elem, int depth) {
    if (depth > 16) fail(file, "sequences nest more than 16 levels deep");
    std::vector<Value> items;
    for (auto& t : *p.mutable_tensor_values()) items.emplace_back(tensor(t));
    for (auto& s : *p.mutable_sequence_values())
      items.push_back(sequence(s, elem && elem->inner ? elem->inner.get() : nullptr, depth + 1));
    for (auto& m : *p.mutable_map_values()) items.push_back(map(m));
    for (auto& o : *p.mutable_optional_values()) items.push_back(optional(o, elem, depth + 1));
    if (p.sparse_tensor_values_size()) fail(file, "sequences of sparse tensors are not supported");
    return Value::sequence(std::move(items), elem ? *elem : TypeInfo{});
  }

  Value map(onnx::MapProto& p) {
    Tensor keys;
    if (p.string_keys_size()) {
      std::vector<std::string> k(p.string_keys().begin(), p.string_keys().end());
      const auto n = static_cast<int64_t>(k.size());  // read before k is moved from
      keys = Tensor::from_strings({n}, std::move(k));
    } else {
      keys = Tensor::zeros(DataType::Int64, {p.keys_size()});
      for (int i = 0; i < p.keys_size(); ++i) keys.mutable_data<int64_t>()[i] = p.keys(i);
    }
    auto& vals = *p.mutable_values();
    if (vals.tensor_values_size() != 1) fail(file, "map values must be one tensor");
    Tensor values = tensor(*vals.mutable_tensor_values(0));
    if (values.rank() != 1 || values.element_count() != keys.element_count())
      fail(file, "map has " + std::to_string(keys.element_count()) + " keys but values of shape " +
                     shape_to_string(values.shape()));
    return Value::map(std::move(keys), std::move(values));
  }

  Value optional(onnx::OptionalProto& p, const TypeInfo* type, int depth) {
    if (depth > 16) fail(file, "optionals nest more than 16 levels deep");
    const TypeInfo* inner = type && type->inner ? type->inner.get() : nullptr;
    if (p.has_tensor_value()) return tensor(*p.mutable_tensor_value());
    if (p.has_sequence_value())
      return sequence(*p.mutable_sequence_value(), inner && inner->inner ? inner->inner.get() : nullptr, depth + 1);
    if (p.has_map_value()) return map(*p.mutable_map_value());
    if (p.has_optional_value()) return optional(*p.mutable_optional_value(), inner, depth + 1);
    return Value::none(type ? *type : TypeInfo{});
  }
};

template <typename Msg>
void parse(Msg& msg, std::span<const std::byte> bytes, const std::string& file, const char* what) {
  if (bytes.size() > kMaxValueFileBytes) fail(file, "file is larger than 2 GiB");
  if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail(file, std::string("not a valid ") + what + " (corrupt or truncated)");
}

}  // namespace

Value read_value_bytes(std::span<const std::byte> bytes, const TypeInfo& declared, const std::string& name) {
  Reader r{name};
  switch (declared.kind) {
    case TypeInfo::Kind::Sequence: {
      onnx::SequenceProto p;
      parse(p, bytes, name, "SequenceProto");
      return r.sequence(p, declared.inner.get(), 0);
    }
    case TypeInfo::Kind::Optional: {
      onnx::OptionalProto p;
      parse(p, bytes, name, "OptionalProto");
      return r.optional(p, &declared, 0);
    }
    case TypeInfo::Kind::Map: {
      onnx::MapProto p;
      parse(p, bytes, name, "MapProto");
      return r.map(p);
    }
    default: {
      onnx::TensorProto p;
      parse(p, bytes, name, "TensorProto");
      return r.tensor(p);
    }
  }
}

Value read_value_file(const std::filesystem::path& path, const TypeInfo& declared) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(path.string(), "cannot read: " + ec.message());
  if (size > kMaxValueFileBytes) fail(path.string(), "file is larger than 2 GiB");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) fail(path.string(), "cannot read");
  return read_value_bytes({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, declared, path.string());
}

}  // namespace onnxscope
