#include "onnxscope/conformance/runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <set>

#include "onnxscope/loader.h"
#include "onnxscope/proto_io.h"

#if defined(__SANITIZE_ADDRESS__)
#define ONNXSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNXSCOPE_ASAN 1
#endif
#endif
#ifndef ONNXSCOPE_ASAN
#define ONNXSCOPE_ASAN 0
#endif
inline constexpr bool kAddressSanitizer = ONNXSCOPE_ASAN;

namespace onnxscope::conformance {
namespace fs = std::filesystem;

std::string_view status_name(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Fail: return "fail";
    case Status::Error: return "error";
    case Status::Crash: return "crash";
    case Status::Timeout: return "timeout";
    case Status::Skip: return "skip";
  }
  return "?";
}

std::optional<Status> status_from_name(std::string_view s) {
  for (Status st : {Status::Pass, Status::Fail, Status::Error, Status::Crash, Status::Timeout, Status::Skip})
    if (status_name(st) == s) return st;
  return std::nullopt;
}

std::string case_key(const TestCase& c) { return c.group.empty() ? c.name : c.group + "/" + c.name; }

CaseResult run_case(const TestCase& c, Engine& engine, const Tolerance& tol, const PluginSet* plugins) {
  CaseResult r;
  r.key = case_key(c);
  auto start = std::chrono::steady_clock::now();
  auto finish = [&](Status s, std::string detail) {
    r.status = s;
    r.detail = std::move(detail);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  LoadOptions load_options;
  load_options.plugins = plugins;
  LoadResult loaded = load_model_file(c.model, load_options);
  if (loaded.model)
    for (const auto& n : loaded.model->graph.nodes) r.ops.push_back(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
  if (!loaded.ok()) {
    std::string why;
    for (const auto& d : loaded.diagnostics.items())
      if (d.severity == Severity::Error) {
        why = d.to_string();
        break;
      }
    return finish(Status::Error, "model does not load: " + why);
  }
  std::shared_ptr<const Model> model = std::move(loaded.model);
  // Inputs are the graph inputs that initializers do not already provide.
  std::vector<const ValueInfo*> feeds;
  std::set<std::string> inits;
  for (const auto& i : model->graph.initializers) inits.insert(i.name);
  for (const auto& v : model->graph.inputs)
    if (!inits.count(v.name)) feeds.push_back(&v);
  try {
    auto prepared = engine.prepare(model);
    std::vector<std::pair<NamedValues, std::vector<Value>>> sets;
    if (!c.loose_outputs.empty()) {
      NamedValues in;
      for (const ValueInfo* v : feeds) in.emplace_back(v->name, light_model_input(*v));
      std::vector<Value> expected;
      for (size_t k = 0; k < c.loose_outputs.size() && k < model->graph.outputs.size(); ++k)
        expected.push_back(read_value_file(c.loose_outputs[k], model->graph.outputs[k].type));
      sets.emplace_back(std::move(in), std::move(expected));
    }
    for (const auto& ds : c.data_sets) {
      NamedValues in;
      auto in_files = numbered_files(ds, "input_");
      // input_K.pb binds to the K-th graph input (upstream orders them so).
      for (size_t k = 0; k < in_files.size(); ++k) {
        if (k >= model->graph.inputs.size()) return finish(Status::Error, "more input files than graph inputs");
        const ValueInfo& v = model->graph.inputs[k];
        in.emplace_back(v.name, read_value_file(in_files[k], v.type));
      }
      std::vector<Value> expected;
      auto out_files = numbered_files(ds, "output_");
      for (size_t k = 0; k < out_files.size(); ++k) {
        if (k >= model->graph.outputs.size()) return finish(Status::Error, "more output files than graph outputs");
        expected.push_back(read_value_file(out_files[k], model->graph.outputs[k].type));
      }
      sets.emplace_back(std::move(in), std::move(expected));
    }
    for (size_t s = 0; s < sets.size(); ++s) {
      NamedValues out = prepared->run(sets[s].first);
      const auto& expected = sets[s].second;
      if (out.size() < expected.size())
        return finish(Status::Fail, "engine returned " + std::to_string(out.size()) + " outputs, expected " + std::to_string(expected.size()));
      for (size_t k = 0; k < expected.size(); ++k)
        if (auto diff = compare_values(expected[k], out[k].second, tol))
          return finish(Status::Fail, "data set " + std::to_string(s) + ", output '" + out[k].first + "': " + *diff);
    }
  } catch (const Error& e) {
    return finish(Status::Error, e.diagnostic().to_string());
  } catch (const std::bad_alloc&) {
    return finish(Status::Error, "out of memory");
  } catch (const std::exception& e) {
    return finish(Status::Error, e.what());
  }
  return finish(Status::Pass, {});
}

namespace {

// Child -> parent wire format: status \n seconds \n ops (space separated) \n detail...
std::string encode(const CaseResult& r) {
  std::string s = std::string(status_name(r.status)) + "\n" + std::to_string(r.seconds) + "\n";
  for (const auto& op : r.ops) s += op + " ";
  return s + "\n" + r.detail;
}

CaseResult decode(const std::string& key, const std::string& s) {
  CaseResult r;
  r.key = key;
  size_t a = s.find('\n'), b = s.find('\n', a + 1), c = s.find('\n', b + 1);
  if (a == std::string::npos || b == std::string::npos || c == std::string::npos) {
    r.status = Status::Crash;
    r.detail = "the test process exited without a complete result";
    return r;
  }
  r.status = status_from_name(s.substr(0, a)).value_or(Status::Crash);
  r.seconds = std::atof(s.substr(a + 1, b - a - 1).c_str());
  std::string ops = s.substr(b + 1, c - b - 1);
  for (size_t p = 0; p < ops.size();) {
    size_t q = ops.find(' ', p);
    if (q == std::string::npos) q = ops.size();
    if (q > p) r.ops.push_back(ops.substr(p, q - p));
    p = q + 1;
  }
  r.detail = s.substr(c + 1);
  return r;
}

// Each result goes to the parent framed as "<bytes>\n<encode()>", so a child
// can send several and a cut-off one is told from a complete one.
std::string frame(const CaseResult& r) {
  const std::string msg = encode(r);
  return std::to_string(msg.size()) + "\n" + msg;
}

// The next complete frame's payload taken off the front of buf, if there is one.
std::optional<std::string> take_frame(std::string& buf) {
  const size_t nl = buf.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(buf.c_str(), &end, 10);
  if (end != buf.c_str() + nl || buf.size() - nl - 1 < n) return std::nullopt;
  std::string payload = buf.substr(nl + 1, n);
  buf.erase(0, nl + 1 + n);
  return payload;
}

void write_all(int fd, const std::string& msg) {
  for (size_t off = 0; off < msg.size();) {
    const ssize_t w = write(fd, msg.data() + off, msg.size() - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
}

struct Child {
  pid_t pid;
  int cmd;  // parent -> child: the index of the next test (a socket: no SIGPIPE)
  int res;  // child -> parent: framed results
  std::optional<size_t> current;  // the test it is running
  int count = 0;                  // tests given to it so far
  std::string out;
  std::chrono::steady_clock::time_point started;  // when its current test began
};

// What a child does: take test indices from `cmd` until it closes, run each
// with an engine of its own, and send each result as it ends.
[[noreturn]] void serve_tests(int cmd, int res, const std::vector<TestCase>& cases, const EngineFactory& make_engine,
                              const SuiteOptions& options) {
  for (;;) {
    uint64_t i = 0;
    size_t got = 0;
    while (got < sizeof i) {
      const ssize_t n = recv(cmd, reinterpret_cast<char*>(&i) + got, sizeof i - got, 0);
      if (n <= 0) _exit(0);  // no more tests for this child
      got += static_cast<size_t>(n);
    }
    if (i >= cases.size()) _exit(2);
    Tolerance tol;
    if (auto t = options.tolerances.find(case_key(cases[i])); t != options.tolerances.end()) tol = t->second;
    CaseResult r;
    try {
      auto engine = make_engine();
      r = run_case(cases[i], *engine, tol, options.plugins);
    } catch (const std::exception& e) {
      r = CaseResult{case_key(cases[i]), Status::Error, e.what(), 0, {}};
    }
    write_all(res, frame(r));
  }
}

}  // namespace

std::vector<CaseResult> run_suite(const std::vector<TestCase>& cases, const EngineFactory& make_engine,
                                  const SuiteOptions& options) {
  std::vector<CaseResult> results(cases.size());
  std::deque<size_t> todo;
  size_t done = 0;
  auto report = [&](size_t i, CaseResult r) {
    results[i] = std::move(r);
    ++done;
    if (options.progress) options.progress(results[i], done, cases.size());
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto skip = options.skips.find(case_key(cases[i]));
    if (skip != options.skips.end())
      report(i, CaseResult{case_key(cases[i]), Status::Skip, skip->second, 0, {}});
    else
      todo.push_back(i);
  }
  std::vector<Child> running;
  const int jobs = std::max(1, options.jobs);
  const int per_child = std::max(1, options.tests_per_child);
  // The next test to a child that has room for one, or its end when none is
  // left for it (closing `cmd` ends it once it has sent its last result).
  auto give_next = [&](Child& ch) {
    if (ch.cmd >= 0 && !todo.empty() && ch.count < per_child) {
      const uint64_t i = todo.front();
      if (send(ch.cmd, &i, sizeof i, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof i)) {
        todo.pop_front();
        ch.current = i;
        ++ch.count;
        ch.started = std::chrono::steady_clock::now();
        return;
      }
    }
    if (ch.cmd >= 0) close(ch.cmd);
    ch.cmd = -1;
  };
  while (!todo.empty() || !running.empty()) {
    while (!todo.empty() && static_cast<int>(running.size()) < jobs) {
      int cmd[2], res[2];
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, cmd) != 0) throw std::runtime_error("socketpair failed");
      if (pipe(res) != 0) throw std::runtime_error("pipe failed");
      pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        // Child: bounded memory, tests until the parent sends no more, exit
        // without cleanup. The other children's channels are closed here, or
        // their ends would outlive the parent's closing them.
        close(cmd[0]);
        close(res[0]);
        for (const Child& other : running) {
          if (other.cmd >= 0) close(other.cmd);
          close(other.res);
        }
        // An address-space limit cannot work under AddressSanitizer (its shadow
        // memory reserves terabytes of addresses): sanitizer builds run without it.
        if (!kAddressSanitizer && options.memory_limit_bytes != 0) {
          rlimit lim{options.memory_limit_bytes, options.memory_limit_bytes};
          setrlimit(RLIMIT_AS, &lim);
        }
        serve_tests(cmd[1], res[1], cases, make_engine, options);
      }
      close(cmd[1]);
      close(res[1]);
      running.push_back({pid, cmd[0], res[0], std::nullopt, 0, {}, std::chrono::steady_clock::now()});
      give_next(running.back());
    }
    std::vector<pollfd> pfds;
    for (const auto& c : running) pfds.push_back({c.res, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 100);
    for (size_t k = 0; k < running.size();) {
      Child& ch = running[k];
      bool finished = false;
      if (pfds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        ssize_t n = read(ch.res, buf, sizeof buf);
        if (n > 0) ch.out.append(buf, static_cast<size_t>(n));
        else finished = true;
      }
      while (ch.current) {
        auto payload = take_frame(ch.out);
        if (!payload) break;
        const size_t i = *ch.current;
        ch.current.reset();
        report(i, decode(case_key(cases[i]), *payload));
        give_next(ch);
      }
      const double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - ch.started).count();
      if (finished) {
        int status = 0;
        waitpid(ch.pid, &status, 0);
        if (ch.current) {  // it died in its current test; complete results were taken above
          const size_t i = *ch.current;
          report(i, CaseResult{case_key(cases[i]), Status::Crash,
                               WIFSIGNALED(status) ? std::string("killed by signal ") + strsignal(WTERMSIG(status))
                                                   : "the test process exited (status " +
                                                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                                         ") without a complete result",
                               age, {}});
        }
      } else if (ch.current && age > options.timeout_seconds) {
        kill(ch.pid, SIGKILL);
        waitpid(ch.pid, nullptr, 0);
        const size_t i = *ch.current;
        report(i, CaseResult{case_key(cases[i]), Status::Timeout,
                             "no result after " + std::to_string(static_cast<int>(options.timeout_seconds)) + " s", age, {}});
        finished = true;
      }
      if (!finished) {
        ++k;
        continue;
      }
      if (ch.cmd >= 0) close(ch.cmd);
      close(ch.res);
      pfds.erase(pfds.begin() + static_cast<long>(k));
      running.erase(running.begin() + static_cast<long>(k));
    }
  }
  return results;
}

uint64_t child_memory_limit(const std::string& engine) {
  return engine == "cuda" ? 0 : SuiteOptions{}.memory_limit_bytes;
}

std::string engine_start_error(const EngineFactory& make_engine, double timeout_seconds) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return "fork failed";
  }
  if (pid == 0) {
    close(fds[0]);
    std::string msg;
    try {
      if (!make_engine()) msg = "no such engine";
    } catch (const std::exception& e) {
      msg = e.what();
      if (msg.empty()) msg = "the engine failed to start";
    }
    write_all(fds[1], msg);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    poll(&p, 1, 100);
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_seconds) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      close(fds[0]);
      return "the engine did not start within " + std::to_string(static_cast<int>(timeout_seconds)) + " s";
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return std::string("starting the engine was killed by signal ") + strsignal(WTERMSIG(status));
  return out;
}

Value light_model_input(const ValueInfo& in) {
  Shape shape;
  if (in.type.shape)
    for (const Dim& d : *in.type.shape) shape.push_back(d.is_known() ? d.value : 1);
  Tensor t = Tensor::zeros(DataType::Float, shape);
  const uint64_t n = t.element_count();
  for (uint64_t i = 0; i < n; ++i) t.mutable_data<float>()[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
  return t;
}

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int k = 0;; ++k) {
    fs::path p = dir / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

}  // namespace onnxscope::conformance
