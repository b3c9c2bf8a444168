// Fuzz target: model bytes -> load -> validate -> small seeded inputs (every
// symbolic dim 2) -> prepare and run on the reference, cpu (every graph pass,
// constant folding included) and cuda-sim engines, capturing every node as
// `diff` does -> diff the captures and write the report -> write the
// reference's capture as a dump and read it back, as `dump` and `compare` do.
// Under tight limits. Any Error is a fine answer; a crash, a sanitizer
// report, a hang or an unbounded allocation is a bug. fuzz.sh runs it with
// the structure-aware mutator of model_mutator.cpp, from the project's models,
// the hostile corpus, upstream's and small real exports
// (scripts/make_real_models.py).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "onnxscope/diff.h"
#include "onnxscope/diff_report.h"
#include "onnxscope/dump.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"

using namespace onnxscope;

namespace {

void dump_and_read_back(const Model& model, const Capture& c) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("onnxscope-fuzz-model-" + std::to_string(getpid()) + ".h5");
  {
    DumpWriter w(path, DumpHeader{});
    for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
      const Node& n = model.graph.nodes[i];
      for (const auto& o : n.outputs)
        if (auto it = c.values.find(o); !o.empty() && it != c.values.end() && it->second.is_tensor())
          w.write_tensor(o, it->second, n.label(i), n.op_type, static_cast<int64_t>(i));
    }
    w.close();
  }
  DumpReadOptions ro;
  ro.isolate = false;  // our own file: the reader's valid path (fuzz_dump covers hostile files)
  DumpFile d = read_dump(path, ro);
  (void)capture_from_dump(d, &model);
}

}  // namespace

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
  for (const auto& v : model->graph.inputs)
    if (v.type.shape)
      for (const Dim& d : *v.type.shape)
        if (d.is_symbolic()) spec.dims[d.param] = 2;
  NamedValues inputs;
  try {
    inputs = make_inputs(*model, spec);
  } catch (const Error&) {
    return 0;
  }
  EngineSettings s;
  s.threads = 1;
  // Every seed's tensors fit in 4 MiB (its fixed dims as written, symbolic
  // ones 2). More lets a mutated shape make tens of millions of packed
  // elements, which the per-element passes (three engines, diff, dump) take a
  // minute over under the fuzzer's instrumentation: a libFuzzer timeout that
  // is no defect (a 67M-element int2 Tile: 0.5 s in release, 68 s here).
  s.limits.max_tensor_bytes = uint64_t{4} << 20;  // per tensor
  s.limits.max_live_bytes = uint64_t{64} << 20;
  s.limits.timeout_seconds = 1;                    // each run
  std::vector<Capture> captures;
  for (const char* engine : {"reference", "cpu", "cuda-sim"}) {
    try {
      captures.push_back(capture_run(*make_engine(engine, s), model, inputs));
    } catch (const Error&) {
    }
  }
  try {
    if (captures.size() >= 2) {
      DiffReport rep = diff_captures(*model, captures[0], captures[1], default_tolerance());
      DiffReportContext ctx;
      (void)diff_report_text(rep, ctx);
      (void)diff_report_json(rep, ctx);
      (void)diff_report_markdown(rep, ctx);
    }
    if (!captures.empty()) dump_and_read_back(*model, captures[0]);
  } catch (const Error&) {
  }
  return 0;
}
