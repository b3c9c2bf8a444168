// The dump reader's two halves: the libhdf5 read itself (h5_reader.cpp) and
// running it in a child process that streams what it read back
// (isolated_read.cpp), so a crash, hang or memory bomb inside libhdf5 on a
// malformed file never happens in the caller.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>

#include "onnxscope/dump.h"

namespace onnxscope::dump_detail {

// Called with each dataset as soon as it is read (inputs first, file order).
using EntrySink = std::function<void(bool is_input, DumpEntry&& entry)>;

// Reads the file with libhdf5 in this process. Returns the header and graph
// outputs; the entries go to `sink` only. Throws onnxscope::Error.
DumpFile read_dump_here(const std::filesystem::path& path, const DumpReadOptions& options, const EntrySink& sink);

// read_dump_here in a forked child; this process never calls libhdf5 on the
// file. nullopt when no child could be started (the caller reads in-process).
// Throws onnxscope::Error for a bad file, a child that crashed, ran out of
// memory, or made no progress for options.isolate_timeout_seconds.
std::optional<DumpFile> read_dump_in_child(const std::filesystem::path& path, const DumpReadOptions& options);

// In the reading child: lets the dataset about to be read take `bytes` (and
// its encoded copy) beyond libhdf5's fixed working budget; 0 once it is sent.
// A no-op in any other process.
void budget_dataset_bytes(uint64_t bytes);

}  // namespace onnxscope::dump_detail
