// Inputs for a run: seeded random values that respect each input's element
// type and shape (symbolic dims given by name), or values read from files
// (.pb, .npy, .npz) or from a dump's inputs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/engine.h"
#include "onnxscope/ir.h"

namespace onnxscope {

// A range random values of an input are drawn from: floats uniform in
// [lo, hi), integers uniform in [lo, hi] (both ends included).
struct ValueRange {
  double lo = -1, hi = 1;
};

struct InputSpec {
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims;                    // symbolic dim name -> value
  int64_t unknown_dim = 1;                                // for dims with no name and no value
  std::map<std::string, std::filesystem::path> files;     // input name -> .pb (TensorProto...) or .npy file
  std::vector<std::filesystem::path> archives;            // .npz files: each array feeds the input of its name
  std::map<std::string, Tensor> from_dump;                // input name -> value (e.g. a dump's /inputs)
  uint64_t max_bytes = uint64_t{1} << 32;                 // refuse larger random inputs
  std::map<std::string, ValueRange> ranges;               // input name -> range of its random values
  std::optional<ValueRange> range_all;                    // every other random input
  // A given float input of another float type than the model declares
  // (float32 data for a float16 model) is converted, with a note; false
  // refuses it instead.
  bool cast_inputs = true;
  // With `from_dump`: every input it lacks is an error instead of random.
  bool dump_must_cover = false;
};

// How each input was made, for the user: "input 'input_ids': int64[1,128],
// random integers in [0, 30521] (rows of the table 'wte' read by Gather
// 'embed')", "... read from x.npz (float32 converted to float16)".
struct InputNote {
  std::string input;
  std::string text;
};

// Every graph input that no initializer provides. Sources in order of
// precedence: `files`, `archives`, `from_dump`, then seeded random values.
// Throws onnxscope::Error (naming the input and file) for a bad file, an
// unknown input name, a value whose element type or shape contradicts the
// model's declaration, or a shape that would exceed max_bytes.
//
// Random values follow an input's role unless a range is given: an input
// named like a mask (attention_mask, *_mask) is all ones; an integer input
// that indexes a table (a Gather's indices, an embedding's ids) is drawn from
// the table's rows; position ids count along the last axis; other integers
// are drawn from [0, 9], floats from [-1, 1). A symbolic dim given in `dims`
// that no input has is an error (a typo would silently change nothing).
NamedValues make_inputs(const Model& model, const InputSpec& spec, std::vector<InputNote>* notes = nullptr);

// "" when every dim in `dims` names a symbolic dimension of the model's
// inputs; else why not: "no input of the model has a dimension named 'seqlen'
// (its symbolic dimensions: batch, seq)".
std::string unknown_dim_error(const Model& model, const std::map<std::string, int64_t>& dims);

// Writes tensors as an .npz archive numpy.load reads (stored, not
// compressed). bfloat16 is written as float32 (numpy has no bfloat16; the
// value is exact and make_inputs converts it back). Throws onnxscope::Error
// naming the file and the array for a type .npy cannot hold.
void write_npz(const std::filesystem::path& path, const NamedValues& values);

}  // namespace onnxscope
