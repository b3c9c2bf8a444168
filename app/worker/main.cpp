// onnxscope-worker: runs one engine for onnxscope-gui in its own process, so
// a kernel or plugin that crashes takes down only this process (isolation.h).
#include "onnxscope/isolation.h"

int main(int argc, char** argv) { return onnxscope::worker_main(argc, argv); }
