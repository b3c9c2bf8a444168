// OpenMP's waiting policy for oneDNN (Debian's libdnnl runs on libgomp).
//
// Spinning idle threads between parallel regions is what makes a quiet
// machine fast: oneDNN starts one parallel region per primitive, and a
// sleeping thread takes tens of microseconds to wake (2 threads, idle
// machine: ResNet-50 35.4 ms passive vs 31.0 ms with GOMP_SPINCOUNT=30000,
// MobileNetV2 7.0 vs 3.5 ms; ONNX Runtime spins by default too). On a busy
// machine the same spinning takes the CPU from the threads with work
// (MobileNetV2 with one core taken: 5.8 ms passive, 29.4 ms spinning).
//
// So the CLI looks at the machine as it starts: when no other program is
// runnable, threads spin for a bounded count (GOMP_SPINCOUNT=30000, about
// 0.3 ms on the development machine) on cores of their own
// (OMP_PROC_BIND=true); otherwise they sleep at once
// (OMP_WAIT_POLICY=PASSIVE). The GUI
// (and the engine workers it starts, which inherit its environment) always
// sleeps: it shares a desktop. OMP_WAIT_POLICY or GOMP_SPINCOUNT in the
// environment wins over both.
//
// libgomp reads its environment in its constructor, before main(), and a
// setenv() from an executable's .preinit_array does not reach it (tried:
// glibc resets the environment pointer after preinit), so the program
// starts itself again with the variable set.
#include "omp_defaults.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace onnxscope::app {
namespace {

// A runnable thread of another program: state R in /proc/<pid>/task/<tid>/stat,
// leaving out this process, kernel threads (housekeeping such as kdamond wakes
// for a moment), this process group (the other end of a pipe, `| jq`, starts
// with us and is busy for its own start-up) and the parent (a harness's
// bookkeeping right after it started us). Stops at the first one found.
bool other_program_runnable() {
  const long self = getpid(), parent = getppid(), group = getpgrp();
  DIR* proc = opendir("/proc");
  if (!proc) return true;
  bool found = false;
  while (!found) {
    const dirent* p = readdir(proc);
    if (!p) break;
    char* end = nullptr;
    const long pid = std::strtol(p->d_name, &end, 10);
    if (*end || pid <= 0 || pid == self || pid == parent) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR* tasks = opendir(path);
    if (!tasks) continue;  // gone since readdir
    while (const dirent* t = readdir(tasks)) {
      if (t->d_name[0] == '.') continue;
      std::snprintf(path, sizeof path, "/proc/%ld/task/%.20s/stat", pid, t->d_name);
      FILE* f = std::fopen(path, "r");
      if (!f) continue;
      char buf[512];
      const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[n] = 0;
      // "tid (comm) state ppid pgrp session tty tpgid flags ...": comm may hold ") ".
      const char* rp = std::strrchr(buf, ')');
      char state = 0;
      long ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = 0;
      unsigned long flags = 0;
      if (!rp || std::sscanf(rp + 1, " %c %ld %ld %ld %ld %ld %lu", &state, &ppid, &pgrp, &session, &tty, &tpgid,
                             &flags) != 7)
        continue;
      constexpr unsigned long kKernelThread = 0x00200000;  // PF_KTHREAD
      if (state == 'R' && !(flags & kKernelThread) && pgrp != group) {
        found = true;
        break;
      }
    }
    closedir(tasks);
  }
  closedir(proc);
  return found;
}

// Whether the machine is busy: /proc/loadavg's "running" count (this
// process included) shows another runnable thread, and one belongs to
// another program (above), in at least 3 of 7 samples 1 ms apart (one
// snapshot catches passing housekeeping, and misses a busy process in its
// short waits). Unreadable: busy, the safe side.
bool machine_busy() {
  int seen = 0;
  for (int i = 0; i < 7; ++i) {
    if (i) {
      timespec ts{0, 1000000};
      nanosleep(&ts, nullptr);
    }
    FILE* f = std::fopen("/proc/loadavg", "r");
    if (!f) return true;
    double l1, l5, l15;
    int running = 0, total = 0;
    const int n = std::fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total);
    std::fclose(f);
    if (n != 5) return true;
    if (running > 1 && other_program_runnable()) ++seen;
  }
  return seen >= 3;
}

}  // namespace

void apply_openmp_defaults(char** argv, bool spin_when_idle) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (spin_when_idle && !machine_busy()) {
    setenv("GOMP_SPINCOUNT", "30000", 1);
    // Spinning threads must not share a core: unbound, the scheduler at times
    // starts the worker on the main thread's core, where its spin holds the
    // main thread off for a time slice per parallel region (a 20 us Mul took
    // 0.25 to 0.7 ms in 3 of 5 runs; bound, none). A placement the user set wins.
    if (!std::getenv("OMP_PROC_BIND") && !std::getenv("OMP_PLACES") && !std::getenv("GOMP_CPU_AFFINITY"))
      setenv("OMP_PROC_BIND", "true", 1);
  } else {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  }
  execv("/proc/self/exe", argv);  // returns only on failure: go on with libgomp's defaults
}

}  // namespace onnxscope::app
