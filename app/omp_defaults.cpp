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
// So the CLI looks at the machine as it starts: when nothing else is
// runnable, threads spin for a bounded count (GOMP_SPINCOUNT=30000, about
// 0.1 ms); otherwise they sleep at once (OMP_WAIT_POLICY=PASSIVE). The GUI
// (and the engine workers it starts, which inherit its environment) always
// sleeps: it shares a desktop. OMP_WAIT_POLICY or GOMP_SPINCOUNT in the
// environment wins over both.
//
// libgomp reads its environment in its constructor, before main(), and a
// setenv() from an executable's .preinit_array does not reach it (tried:
// glibc resets the environment pointer after preinit), so the program
// starts itself again with the variable set.
#include "omp_defaults.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace onnxscope::app {
namespace {

// Whether the machine is busy: /proc/loadavg's "running" count (this
// process included) shows another runnable thread in at least 3 of 7
// samples 1 ms apart (one snapshot catches passing housekeeping, and misses
// a busy process in its short waits). Unreadable: busy, the safe side.
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
    if (running > 1) ++seen;
  }
  return seen >= 3;
}

}  // namespace

void apply_openmp_defaults(char** argv, bool spin_when_idle) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (spin_when_idle && !machine_busy()) setenv("GOMP_SPINCOUNT", "30000", 1);
  else setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: go on with libgomp's defaults
}

}  // namespace onnxscope::app
