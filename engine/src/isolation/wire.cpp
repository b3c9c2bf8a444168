#include "isolation/wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxscope::isolation {

namespace {

constexpr int kMaxDepth = 64;  // nesting of sequences, optionals and types

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

void Writer::type(const TypeInfo& t) {
  u8(static_cast<uint8_t>(t.kind));
  u32(static_cast<uint32_t>(t.elem));
  u8(t.shape ? 1 : 0);
  if (t.shape) {
    u64(t.shape->size());
    for (const Dim& d : *t.shape) {
      i64(d.value);
      str(d.param);
    }
  }
  u32(static_cast<uint32_t>(t.map_key));
  u8(t.inner ? 1 : 0);
  if (t.inner) type(*t.inner);
  str(t.opaque_domain);
  str(t.opaque_name);
}

void Writer::value(const Value& v) {
  u8(static_cast<uint8_t>(v.kind()));
  auto tensor = [this](const Tensor& t) {
    u32(static_cast<uint32_t>(t.dtype()));
    u64(t.shape().size());
    for (int64_t d : t.shape()) i64(d);
    if (t.is_string()) {
      u64(t.strings().size());
      for (const auto& s : t.strings()) str(s);
    } else {
      const uint64_t n = t.byte_size();
      u64(n);
      if (n) raw(t.raw(), n);
    }
  };
  switch (v.kind()) {
    case Value::Kind::None:
      type(v.declared_type());
      break;
    case Value::Kind::Tensor:
      tensor(v.tensor());
      break;
    case Value::Kind::Sequence:
      type(v.declared_type());
      u64(v.items().size());
      for (const Value& item : v.items()) value(item);
      break;
    case Value::Kind::Map:
      tensor(v.map_keys());
      tensor(v.map_values());
      break;
  }
}

void Writer::diagnostic(const Diagnostic& d) {
  u8(static_cast<uint8_t>(d.severity));
  str(d.code);
  str(d.where.file);
  str(d.where.graph);
  i64(d.where.node_index);
  str(d.where.node);
  str(d.where.op_type);
  str(d.where.value);
  str(d.message);
  str(d.expected);
}

std::string_view Reader::take(uint64_t n) {
  if (n > data_.size() - pos_) throw WireError("message cut short");
  std::string_view s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

std::string Reader::str() { return std::string(take(u64())); }

TypeInfo Reader::type(int depth) {
  if (depth > kMaxDepth) throw WireError("type nested too deeply");
  TypeInfo t;
  const uint8_t kind = u8();
  if (kind > static_cast<uint8_t>(TypeInfo::Kind::Opaque)) throw WireError("bad type kind");
  t.kind = static_cast<TypeInfo::Kind>(kind);
  t.elem = static_cast<DataType>(u32());
  if (u8()) {
    const uint64_t rank = u64();
    if (rank > 1024) throw WireError("bad rank");
    t.shape.emplace();
    for (uint64_t i = 0; i < rank; ++i) {
      Dim d;
      d.value = i64();
      d.param = str();
      t.shape->push_back(std::move(d));
    }
  }
  t.map_key = static_cast<DataType>(u32());
  if (u8()) t.inner = std::make_shared<TypeInfo>(type(depth + 1));
  t.opaque_domain = str();
  t.opaque_name = str();
  return t;
}

Value Reader::value(int depth) {
  if (depth > kMaxDepth) throw WireError("value nested too deeply");
  auto tensor = [this]() {
    const uint32_t dt = u32();
    if (dt > static_cast<uint32_t>(kMaxDataType)) throw WireError("bad dtype");
    const DataType type = static_cast<DataType>(dt);
    const uint64_t rank = u64();
    if (rank > 1024) throw WireError("bad rank");
    Shape shape(rank);
    for (auto& d : shape) d = i64();
    const auto count = checked_element_count(shape);
    if (!count) throw WireError("bad shape");
    if (type == DataType::String) {
      const uint64_t n = u64();
      if (n != *count) throw WireError("string count does not match the shape");
      std::vector<std::string> strings;
      strings.reserve(n < 4096 ? n : 4096);
      for (uint64_t i = 0; i < n; ++i) strings.push_back(str());
      return Tensor::from_strings(std::move(shape), std::move(strings));
    }
    const uint64_t n = u64();
    const auto need = storage_bytes(type, *count);
    if (!need || *need != n) throw WireError("tensor bytes do not match the shape");
    std::string_view bytes = take(n);  // checked against the frame before allocating
    auto buf = make_owned_buffer(n);
    if (n) std::memcpy(buf->mutable_data(), bytes.data(), n);
    return Tensor::from_buffer(type, std::move(shape), std::move(buf));
  };
  const uint8_t kind = u8();
  switch (kind) {
    case static_cast<uint8_t>(Value::Kind::None):
      return Value::none(type());
    case static_cast<uint8_t>(Value::Kind::Tensor):
      return Value(tensor());
    case static_cast<uint8_t>(Value::Kind::Sequence): {
      TypeInfo elem = type();
      const uint64_t n = u64();
      if (n > data_.size() - pos_) throw WireError("sequence longer than its message");
      std::vector<Value> items;
      items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) items.push_back(value(depth + 1));
      return Value::sequence(std::move(items), std::move(elem));
    }
    case static_cast<uint8_t>(Value::Kind::Map): {
      Tensor keys = tensor();
      Tensor values = tensor();
      return Value::map(std::move(keys), std::move(values));
    }
    default:
      throw WireError("bad value kind");
  }
}

Diagnostic Reader::diagnostic() {
  Diagnostic d;
  const uint8_t sev = u8();
  if (sev > static_cast<uint8_t>(Severity::Error)) throw WireError("bad severity");
  d.severity = static_cast<Severity>(sev);
  d.code = str();
  d.where.file = str();
  d.where.graph = str();
  d.where.node_index = i64();
  d.where.node = str();
  d.where.op_type = str();
  d.where.value = str();
  d.message = str();
  d.expected = str();
  return d;
}

bool send_frame(int fd, Msg type, std::string_view payload) {
  char header[12];
  const uint32_t t = static_cast<uint32_t>(type);
  const uint64_t n = payload.size();
  std::memcpy(header, &t, 4);
  std::memcpy(header + 4, &n, 8);
  return write_all(fd, header, sizeof header) && write_all(fd, payload.data(), payload.size());
}

Recv recv_frame(int fd, Msg& type, std::string& payload, int timeout_ms, uint64_t max_bytes) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Recv::Closed;
    if (r == 0) return Recv::Timeout;
    break;
  }
  char header[12];
  if (!read_all(fd, header, sizeof header)) return Recv::Closed;
  uint32_t t = 0;
  uint64_t n = 0;
  std::memcpy(&t, header, 4);
  std::memcpy(&n, header + 4, 8);
  if (t < static_cast<uint32_t>(Msg::Hello) || t > static_cast<uint32_t>(Msg::Result) || n > max_bytes)
    return Recv::Closed;
  type = static_cast<Msg>(t);
  payload.resize(n);
  return read_all(fd, payload.data(), n) ? Recv::Frame : Recv::Closed;
}

}  // namespace onnxscope::isolation
