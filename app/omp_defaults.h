// OpenMP's waiting policy for oneDNN's threads (app/omp_defaults.cpp).
#pragma once

namespace onnxscope::app {

// Sets OMP_WAIT_POLICY / GOMP_SPINCOUNT (unless the environment already has
// either) and starts this program again with them: libgomp reads its
// environment while the program loads, before main(). spin_when_idle: spin
// for a bounded count when nothing else is runnable, else always sleep.
// Returns only when nothing was to be done or the restart failed.
void apply_openmp_defaults(char** argv, bool spin_when_idle);

}  // namespace onnxscope::app
