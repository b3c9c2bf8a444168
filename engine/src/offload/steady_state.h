// What a device keeps between repeated runs of one kind (one plan of one
// prepared model, one set of input shapes) to make the next run cheaper:
// device memory planned from the first run by liveness (RunMemory), and the
// device work of a whole run captured once and replayed (CapturedWork: a
// CUDA graph on a GPU). The offload engine keeps them; only the device looks
// inside.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace onnxscope::offload {

class RunMemory {
 public:
  virtual ~RunMemory() = default;
  // A plan exists: the runs after the first take their memory from it.
  virtual bool planned() const = 0;
  virtual uint64_t region_bytes() const = 0;     // the planned region (0 before a plan)
  virtual uint64_t peak_live_bytes() const = 0;  // the most device bytes alive at once in the recorded run
};

class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
};

// Thrown by a device while capturing when the work cannot be captured (it
// waits for the device, copies to the host, or allocates outside the plan).
// The offload engine then runs that kind of run without capture.
class CaptureUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace onnxscope::offload
