// Checks the CUDA engine's kernels make as they run (an index out of range)
// are found when the host next looks, so no kernel waits for them: a
// checking kernel gets a record and a site (kernels/portable.h
// report_fault), and take() reads the record back, only when a checking
// kernel was queued since the last look, and clears it. Works the same in a
// captured run: a replay of work that held a checking kernel counts as one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda/runtime.h"

namespace onnxscope::cuda {

// What a checking kernel checks, for the words of its fault.
enum class FaultKind {
  Index,     // an index that may count from the end: [-bound, bound)
  Position,  // a row of a table: [0, bound)
  Length,    // a sequence's length (sequence_lens, at a batch index): [0, bound)
  Divisor,   // an integer divisor of 0 (at an output element)
  Target,    // a class index of a loss's target: [0, bound)
  Write,     // a cache write's start (at a batch index): [0, bound)
  Flat,      // a flat index that does not count from the end: [0, bound)
};

class FaultLog {
 public:
  explicit FaultLog(std::shared_ptr<Runtime> rt) : rt_(std::move(rt)) {}

  struct Site {
    int64_t* record = nullptr;  // 4 int64 on the device: site (0: none), position, value, bound
    int64_t id = 0;             // from 1
  };
  // The site of node `node` (its first output names it: unique in a graph),
  // for a checking kernel about to be queued. Throws offload::CaptureUnsupported when the record does not
  // exist yet and a capture is in progress (it is made outside any capture).
  Site site(const std::string& node, FaultKind kind = FaultKind::Index);

  struct Fault {
    std::string node;  // as given to site()
    int64_t position = 0, value = 0, bound = 0;
    FaultKind kind = FaultKind::Index;
  };
  // The first fault since the last look, if a checking kernel ran since.
  // Waits for the device. Not inside a capture.
  std::optional<Fault> take();

  // Whether the capture now ending held a checking kernel; and a replay of
  // such work, to be looked at.
  bool end_capture();
  void replayed(bool checks) { unread_ = unread_ || checks; }

 private:
  std::shared_ptr<Runtime> rt_;
  DeviceMemory record_;
  std::vector<std::pair<std::string, FaultKind>> sites_;
  std::unordered_map<std::string, int64_t> ids_;
  bool unread_ = false;          // a checking kernel was queued since the last look
  bool capture_checks_ = false;  // the capture in progress holds one
};

// A fault in words: "index 7 (at 3) is outside [-5, 4]", "position id 7 (at
// 3) is outside [0, 4]", "integer division by zero (output element 3)",
// "target value 7 (at 3) is outside [0, 4]", "write index 7 (batch 1) is
// outside [0, 4]".
std::string describe_fault(const FaultLog::Fault& f);

}  // namespace onnxscope::cuda
