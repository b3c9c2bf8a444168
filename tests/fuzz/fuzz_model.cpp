// Fuzz target: model bytes -> load -> validate -> prepare and run on the
// reference and CPU engines with small seeded inputs, under tight limits.
// Any Error is a fine answer; a crash, a sanitizer report, a hang or an
// unbounded allocation is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/reference.h"

using namespace onnxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  LoadOptions lo;
  lo.allow_external_data = false;  // bytes have no folder; the loader must refuse such references cleanly
  LoadResult r = load_model_bytes(std::span(reinterpret_cast<const std::byte*>(data), size), lo);
  if (!r.ok()) return 0;
  std::shared_ptr<const Model> model = std::move(r.model);
  InputSpec spec;
  spec.seed = 1;
  spec.max_bytes = 1 << 20;
  NamedValues inputs;
  try {
    inputs = make_inputs(*model, spec);
  } catch (const Error&) {
    return 0;
  }
  const uint64_t limit = uint64_t{64} << 20;  // per tensor; each run stops after 1 s
  try {
    ReferenceOptions ro;
    ro.max_tensor_bytes = limit;
    ro.timeout_seconds = 1;
    make_reference_engine(ro)->prepare(model)->run(inputs);
  } catch (const Error&) {
  }
  try {
    CpuOptions o;
    o.threads = 1;
    o.max_tensor_bytes = limit;
    o.timeout_seconds = 1;
    make_cpu_engine(o)->prepare(model)->run(inputs);
  } catch (const Error&) {
  }
  return 0;
}
