// Reading a dump in a forked child. libhdf5 can crash, loop or allocate
// without bound on a malformed file (the fuzzer found all three, and a heap
// corruption that only sometimes aborts). So the child does the whole read
// and streams each dataset back over a socket as the isolated engine's wire
// encoding; the caller never runs libhdf5 on the file, and a corrupted heap
// dies with the child.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
#include <string>

#include "dump/h5_reader.h"
#include "isolation/reap.h"
#include "isolation/wire.h"

namespace onnxscope::dump_detail {
namespace {

using isolation::Msg;

// Memory the reading child may take beyond what the caller had when it
// forked: libhdf5's working memory, plus, while a dataset is read, two copies
// of it (read, then encoded). A file that makes libhdf5 allocate more fails
// at once instead of paging through gigabytes (the fuzzer found several).
constexpr uint64_t kHdf5WorkingBytes = uint64_t{256} << 20;
uint64_t g_child_base_bytes = 0;  // set in the child only; 0 elsewhere

uint64_t data_segment_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmData:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // reported in kB
  return 0;
}

void set_data_limit(uint64_t bytes) {
  rlimit lim{};
  if (getrlimit(RLIMIT_DATA, &lim) != 0) return;
  lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? bytes : std::min<rlim_t>(bytes, lim.rlim_max);
  setrlimit(RLIMIT_DATA, &lim);
}

void encode_entry(isolation::Writer& w, bool is_input, const DumpEntry& e) {
  w.u8(is_input ? 1 : 0);
  w.str(e.name);
  w.str(e.node);
  w.str(e.op_type);
  w.i64(e.topo_index);
  w.str(e.dtype);
  w.u64(e.shape.size());
  for (int64_t d : e.shape) w.i64(d);
  w.u8(e.stats_only ? 1 : 0);
  w.f64(e.stats.min);
  w.f64(e.stats.max);
  w.f64(e.stats.mean);
  w.f64(e.stats.stddev);
  w.u64(e.stats.nan_count);
  w.u64(e.stats.inf_count);
  w.u64(e.stats.elements);
  w.u8(e.data ? 1 : 0);
  if (e.data) w.value(Value(*e.data));
}

DumpEntry decode_entry(isolation::Reader& r, bool& is_input) {
  DumpEntry e;
  is_input = r.u8() != 0;
  e.name = r.str();
  e.node = r.str();
  e.op_type = r.str();
  e.topo_index = r.i64();
  e.dtype = r.str();
  const uint64_t rank = r.u64();
  if (rank > 1024) throw isolation::WireError("bad rank");
  for (uint64_t i = 0; i < rank; ++i) e.shape.push_back(r.i64());
  e.stats_only = r.u8() != 0;
  e.stats.min = r.f64();
  e.stats.max = r.f64();
  e.stats.mean = r.f64();
  e.stats.stddev = r.f64();
  e.stats.nan_count = r.u64();
  e.stats.inf_count = r.u64();
  e.stats.elements = r.u64();
  if (r.u8()) {
    Value v = r.value();
    if (v.kind() != Value::Kind::Tensor) throw isolation::WireError("dataset is not a tensor");
    e.data = v.tensor();
  }
  return e;
}

void encode_header(isolation::Writer& w, const DumpFile& d) {
  const DumpHeader& h = d.header;
  for (const std::string* s : {&h.tool_version, &h.model_path, &h.model_sha256, &h.engine, &h.engine_settings,
                               &h.opset_imports, &h.created, &h.producer})
    w.str(*s);
  w.u64(d.graph_outputs.size());
  for (const auto& o : d.graph_outputs) w.str(o);
}

void decode_header(isolation::Reader& r, DumpFile& d) {
  DumpHeader& h = d.header;
  for (std::string* s : {&h.tool_version, &h.model_path, &h.model_sha256, &h.engine, &h.engine_settings,
                         &h.opset_imports, &h.created, &h.producer})
    *s = r.str();
  const uint64_t n = r.u64();
  for (uint64_t i = 0; i < n; ++i) d.graph_outputs.push_back(r.str());
}

[[noreturn]] void child_main(int fd, const std::filesystem::path& path, const DumpReadOptions& options) {
  // Never outlive the caller, nor stay in a libhdf5 loop once the caller
  // stopped waiting; the alarm is re-armed after each dataset sent.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const unsigned alarm_s = static_cast<unsigned>(options.isolate_timeout_seconds) + 5;
  alarm(alarm_s);
  g_child_base_bytes = data_segment_bytes();
  if (g_child_base_bytes) set_data_limit(g_child_base_bytes + kHdf5WorkingBytes);
  auto send = [fd](Msg type, isolation::Writer& w) {
    if (!isolation::send_frame(fd, type, w.bytes())) _exit(3);  // the caller is gone
  };
  try {
    DumpReadOptions o = options;
    o.isolate = false;
    DumpFile d = read_dump_here(path, o, [&](bool is_input, DumpEntry&& e) {
      isolation::Writer w;
      encode_entry(w, is_input, e);
      send(Msg::Event, w);
      alarm(alarm_s);
    });
    isolation::Writer w;
    encode_header(w, d);
    send(Msg::Result, w);
  } catch (const Error& e) {
    isolation::Writer w;
    w.diagnostic(e.diagnostic());
    send(Msg::Failed, w);
  } catch (const std::bad_alloc&) {
    isolation::Writer w;
    Location loc{path.string()};
    w.diagnostic(Diagnostic{Severity::Error, "bad-dump", loc,
                            "reading this file needs more memory than its datasets' read limit allows "
                            "(a malformed HDF5 file?)",
                            {}});
    send(Msg::Failed, w);
  } catch (const std::exception& e) {
    isolation::Writer w;
    w.diagnostic(Diagnostic{Severity::Error, "bad-dump", Location{path.string()},
                            std::string("reading this file failed: ") + e.what(), {}});
    send(Msg::Failed, w);
  }
  _exit(0);
}

Error dump_error(const std::filesystem::path& path, std::string message) {
  return Error(Diagnostic{Severity::Error, "bad-dump", Location{path.string()}, std::move(message), {}});
}

// The child's wait status (0 when it cannot be had), after at most `grace`.
int reap(pid_t pid, std::chrono::milliseconds grace) { return isolation::reap_within(pid, grace).value_or(0); }

}  // namespace

void budget_dataset_bytes(uint64_t bytes) {
  if (g_child_base_bytes) set_data_limit(g_child_base_bytes + kHdf5WorkingBytes + 2 * bytes);
}

std::optional<DumpFile> read_dump_in_child(const std::filesystem::path& path, const DumpReadOptions& options) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(sv[0]);
    child_main(sv[1], path, options);
  }
  close(sv[1]);
  struct Fd {
    int fd;
    ~Fd() { close(fd); }
  } sock{sv[0]};

  const int timeout_ms = static_cast<int>(options.isolate_timeout_seconds * 1000);
  // A string dataset's characters are not bounded by max_tensor_bytes (only
  // its count is), so a frame may be somewhat larger than the limit.
  const uint64_t max_frame = 2 * options.max_tensor_bytes + (uint64_t{64} << 20);
  DumpFile d;
  std::string payload;
  for (;;) {
    Msg type{};
    const isolation::Recv got = isolation::recv_frame(sock.fd, type, payload, timeout_ms, max_frame);
    if (got == isolation::Recv::Timeout) {
      reap(pid, std::chrono::milliseconds(0));
      throw dump_error(path, "reading this file made no progress for " +
                                 std::to_string(static_cast<int>(options.isolate_timeout_seconds)) +
                                 " s (a malformed HDF5 file?)");
    }
    if (got == isolation::Recv::Closed) {
      const int status = reap(pid, std::chrono::milliseconds(2000));
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        throw dump_error(path, "reading this file made no progress (a malformed HDF5 file?)");
      // A sanitizer's report exits with a status instead of a signal.
      const std::string how = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                  : "exit status " + std::to_string(WEXITSTATUS(status));
      throw dump_error(path, "the HDF5 library crashed reading this file (" + how + "): it is malformed");
    }
    try {
      isolation::Reader r(payload);
      if (type == Msg::Event) {
        bool is_input = false;
        DumpEntry e = decode_entry(r, is_input);
        (is_input ? d.inputs : d.tensors).push_back(std::move(e));
        continue;
      }
      if (type == Msg::Failed) {
        Diagnostic diag = r.diagnostic();
        reap(pid, std::chrono::milliseconds(2000));
        throw Error(std::move(diag));
      }
      if (type == Msg::Result) {
        decode_header(r, d);
        reap(pid, std::chrono::milliseconds(2000));
        return d;
      }
    } catch (const isolation::WireError& e) {
      reap(pid, std::chrono::milliseconds(0));
      throw dump_error(path, std::string("internal error: the dump reader's child sent a bad message (") + e.what() +
                                 ")");
    }
    reap(pid, std::chrono::milliseconds(0));
    throw dump_error(path, "internal error: the dump reader's child sent an unexpected message");
  }
}

}  // namespace onnxscope::dump_detail
