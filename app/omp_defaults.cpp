// OpenMP's waiting policy for oneDNN (Debian's libdnnl runs on libgomp),
// set before libgomp reads its environment. libgomp's default spins each idle
// thread for ~300,000 iterations after every parallel region; when the cores
// are shared (a GUI, a build, another runtime) that spinning takes the CPU
// from the threads with work, and latency grows several-fold (MobileNetV2 on
// 2 busy cores: 1,050 ms spinning, 30 ms passive; a shorter spin count,
// GOMP_SPINCOUNT=20000, did not help). So threads sleep at once
// (OMP_WAIT_POLICY=PASSIVE) unless OMP_WAIT_POLICY or GOMP_SPINCOUNT says
// otherwise.
//
// Why .preinit_array: shared libraries' constructors (libgomp's reads the
// environment) run before the program's own constructors and main(), but
// after the executable's preinit functions.
#include <cstdlib>

namespace {

void set_openmp_defaults(int, char**, char**) {
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const onnxscope_preinit)(int, char**, char**) =
    set_openmp_defaults;
