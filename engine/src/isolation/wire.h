// The isolated engine's protocol between the caller and onnxscope-worker:
// length-prefixed frames over a Unix socket, and a binary encoding of values,
// types and diagnostics. Both ends are built from this file, so the encoding
// is private; the reader still checks every length, since a worker that dies
// mid-frame (or a bug) must give an error, not a crash in the caller.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"
#include "onnxscope/value.h"

namespace onnxscope::isolation {

enum class Msg : uint32_t {
  Hello = 1,  // caller: engine name, settings, plugins      -> Ok | Failed
  Prepare,    // caller: id, model bytes or path              -> Ok | Failed
  Release,    // caller: id                                   (no reply)
  Run,        // caller: id, options, inputs                  -> Event* then Result | Failed
  Ack,        // caller, after each Event: stop flag
  Ok,
  Failed,     // worker: a diagnostic
  Event,      // worker: one observed node and its outputs
  Result,     // worker: the graph outputs and run stats
};

struct WireError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Writer {
 public:
  void u8(uint8_t v) { raw(&v, 1); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void type(const TypeInfo& t);
  void value(const Value& v);
  void diagnostic(const Diagnostic& d);
  std::string& bytes() { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint8_t u8() { return pod<uint8_t>(); }
  uint32_t u32() { return pod<uint32_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  double f64() { return pod<double>(); }
  std::string str();
  std::string_view take(uint64_t n);
  TypeInfo type(int depth = 0);
  Value value(int depth = 0);
  Diagnostic diagnostic();
  bool done() const { return pos_ == data_.size(); }

 private:
  template <class T>
  T pod() {
    T v;
    std::string_view s = take(sizeof(T));
    __builtin_memcpy(&v, s.data(), sizeof(T));
    return v;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

// Sends one frame; false when the peer is gone (no SIGPIPE).
bool send_frame(int fd, Msg type, std::string_view payload);

enum class Recv { Frame, Timeout, Closed };
// Waits up to timeout_ms (-1: forever) for a frame to begin, then reads all
// of it. A frame over max_bytes, or one cut short, reads as Closed.
Recv recv_frame(int fd, Msg& type, std::string& payload, int timeout_ms, uint64_t max_bytes);

// Where the worker is, in a page both processes map: written by the worker
// before each node, read by the caller after the worker died.
struct StatusPage {
  std::atomic<uint32_t> seq;  // odd while being written
  int64_t node_index;
  char graph[512];
  char node[256];
  char op_type[128];
};

}  // namespace onnxscope::isolation
