// The reference's op table (op_table.cpp): each operator with its versions,
// its kernel and the file that holds the kernel.
#pragma once

#include <span>

#include "onnxscope/kernel.h"

namespace onnxscope::ref {

struct OpEntry {
  const char* file;  // under engine/src/reference/ops/
  const char* domain;
  const char* op;
  int since;
  int until;
  KernelFn fn;
  AcceptsFn accepts = nullptr;
};

std::span<const OpEntry> op_entries();

}  // namespace onnxscope::ref
