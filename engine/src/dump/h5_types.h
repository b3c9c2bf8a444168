// How ONNX element types are stored in HDF5 dumps, shared by writer and
// reader. Types HDF5 has are stored natively (float16 as an IEEE half that
// h5py reads as numpy.float16, complex as the {r, i} compound h5py reads as
// complex); the others keep their bit patterns in unsigned integers (one
// element per byte for the packed 4/2/6-bit types) with the dtype named in
// the dataset's "dtype" attribute, never converted.
#pragma once

#include <hdf5.h>

#include <string>

#include "onnxscope/dtype.h"

namespace onnxscope::h5 {

// Closes an HDF5 handle when it goes out of scope.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// The file datatype a dtype is stored as (a new handle; strings: vlen UTF-8).
Handle file_type(DataType t);
// Bytes one stored element takes in memory (0 for strings).
size_t stored_element_size(DataType t);

// Dataset names are tensor names with '%' and '/' escaped (and a lone '.').
std::string escape_name(const std::string& name);

}  // namespace onnxscope::h5
