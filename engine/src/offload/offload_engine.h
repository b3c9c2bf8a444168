// An engine that runs every node a device can run on that device and hands
// each run of the other nodes to the CPU engine as a model of its own
// (core/partition.h, core/segment_model.h): the CUDA engine's executor,
// device-neutral.
//
// Prepare: run the engine-neutral graph passes (constant folding and the
// like, no fusion), partition the main graph, upload the initializers device
// nodes read, prepare one CPU-engine model per host segment. Capture runs
// (an observer wanting original nodes) use a second plan of the model as
// written, made on first use. Run: copy values
// across as the plan says, run device nodes one by one and host segments
// whole, free each value after its last reader, download the graph outputs.
// With an observer, device nodes report their outputs (downloaded for it) and
// host segments report theirs through the CPU engine, under the original
// node indices; the kernel of a host node reads "cpu/<kernel>".
#pragma once

#include <memory>

#include "offload/device.h"
#include "onnxscope/cpu.h"
#include "onnxscope/engine.h"

namespace onnxscope::offload {

struct OffloadOptions {
  CpuOptions host;  // the CPU engine that runs the host segments
};

// `engine_name` is what Engine::name() answers ("cuda").
std::unique_ptr<Engine> make_offload_engine(std::string engine_name, std::shared_ptr<Device> device,
                                            OffloadOptions options = {});

}  // namespace onnxscope::offload
