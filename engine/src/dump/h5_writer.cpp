#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "dump/h5_types.h"
#include "onnxscope/dump.h"

namespace onnxscope {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw Error(Diagnostic{Severity::Error, "dump-write", Location{file}, what, {}});
}

void string_attr(hid_t obj, const char* name, const std::string& value) {
  h5::Handle type = h5::file_type(DataType::String);
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* p = value.c_str();
  H5Awrite(attr.get(), type.get(), &p);
}

void int_attr(hid_t obj, const char* name, int64_t value) {
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle attr(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(attr.get(), H5T_NATIVE_INT64, &value);
}

void double_attr(hid_t obj, const char* name, double value) {
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle attr(H5Acreate2(obj, name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value);
}

void shape_attr(hid_t obj, const Shape& shape) {
  hsize_t n = shape.size();
  h5::Handle space(n ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL), H5Sclose);
  h5::Handle attr(H5Acreate2(obj, "shape", H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (n) H5Awrite(attr.get(), H5T_NATIVE_INT64, shape.data());
}

// The bytes to hand HDF5: the tensor's own storage, except packed types
// (one code per byte) and strings (pointers).
std::vector<uint8_t> unpacked_codes(const Tensor& t) {
  std::vector<uint8_t> codes(t.element_count());
  unpack_element_bits(t.dtype(), t.raw(), 0, codes.size(), codes.data());
  return codes;
}

}  // namespace

TensorStats tensor_stats(const Tensor& t) {
  TensorStats s;
  s.elements = t.element_count();
  if (t.is_string() || s.elements == 0) return s;
  double sum = 0, sq = 0;
  uint64_t finite = 0;
  s.min = INFINITY;
  s.max = -INFINITY;
  double chunk[2048];
  for (uint64_t i = 0, k = std::size(chunk); i < s.elements; ++i, ++k) {
    if (k == std::size(chunk)) {
      t.elements_as_double(i, std::min<uint64_t>(std::size(chunk), s.elements - i), chunk);
      k = 0;
    }
    const double v = chunk[k];
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) ++s.inf_count;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    if (std::isfinite(v)) {
      sum += v;
      sq += v * v;
      ++finite;
    }
  }
  if (finite) {
    s.mean = sum / static_cast<double>(finite);
    s.stddev = std::sqrt(std::max(0.0, sq / static_cast<double>(finite) - s.mean * s.mean));
  }
  if (s.min > s.max) s.min = s.max = NAN;  // all NaN
  return s;
}

struct DumpWriter::Impl {
  std::string path;
  h5::Handle file, inputs, tensors;
  std::set<std::string> names;
  bool closed = false;
};

DumpWriter::DumpWriter(const std::filesystem::path& path, const DumpHeader& h, DumpWriterOptions options)
    : impl_(std::make_unique<Impl>()), options_(std::move(options)) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions, not stderr noise
  impl_->path = path.string();
  impl_->file = h5::Handle(H5Fcreate(impl_->path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.ok()) fail(impl_->path, "cannot create the dump file");
  hid_t root = impl_->file.get();
  string_attr(root, "format", kDumpFormat);
  int_attr(root, "format_version", kDumpFormatVersion);
  string_attr(root, "producer", h.producer.empty() ? "onnxscope" : h.producer);
  string_attr(root, "tool_version", h.tool_version);
  string_attr(root, "model_path", h.model_path);
  string_attr(root, "model_sha256", h.model_sha256);
  string_attr(root, "engine", h.engine);
  string_attr(root, "engine_settings", h.engine_settings);
  string_attr(root, "opset_imports", h.opset_imports);
  string_attr(root, "created", h.created);
  int_attr(root, "stats_only", options_.stats_only ? 1 : 0);
  impl_->inputs = h5::Handle(H5Gcreate2(root, "inputs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  impl_->tensors = h5::Handle(H5Gcreate2(root, "tensors", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!impl_->inputs.ok() || !impl_->tensors.ok()) fail(impl_->path, "cannot create the dump's groups");
}

DumpWriter::~DumpWriter() {
  if (impl_ && !impl_->closed) {
    try {
      close();
    } catch (...) {
    }
  }
}

namespace {
void write_dataset(const std::string& file, hid_t group, const std::string& name, const Tensor& t, bool stats_only,
                   const std::string& node, const std::string& op_type, int64_t topo_index) {
  const std::string ds_name = h5::escape_name(name);
  h5::Handle type = h5::file_type(t.dtype());
  std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
  h5::Handle space;
  if (stats_only) space = h5::Handle(H5Screate(H5S_NULL), H5Sclose);
  else if (dims.empty()) space = h5::Handle(H5Screate(H5S_SCALAR), H5Sclose);
  else space = h5::Handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Handle ds(H5Dcreate2(group, ds_name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
  if (!ds.ok()) fail(file, "cannot create dataset for tensor '" + name + "'");
  if (!stats_only && t.element_count() > 0) {
    herr_t rc;
    if (t.is_string()) {
      std::vector<const char*> ptrs;
      for (const auto& s : t.strings()) ptrs.push_back(s.c_str());
      rc = H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data());
    } else if (is_packed_dtype(t.dtype())) {
      auto codes = unpacked_codes(t);
      rc = H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, codes.data());
    } else {
      rc = H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw());
    }
    if (rc < 0) fail(file, "cannot write tensor '" + name + "'");
  }
  string_attr(ds.get(), "name", name);
  string_attr(ds.get(), "dtype", std::string(dtype_name(t.dtype())));
  string_attr(ds.get(), "node", node);
  string_attr(ds.get(), "op_type", op_type);
  int_attr(ds.get(), "topo_index", topo_index);
  shape_attr(ds.get(), t.shape());
  // Summary statistics go with every tensor: cheap, and all a --stats-only dump keeps.
  TensorStats s = tensor_stats(t);
  double_attr(ds.get(), "min", s.min);
  double_attr(ds.get(), "max", s.max);
  double_attr(ds.get(), "mean", s.mean);
  double_attr(ds.get(), "std", s.stddev);
  int_attr(ds.get(), "nan_count", static_cast<int64_t>(s.nan_count));
  int_attr(ds.get(), "inf_count", static_cast<int64_t>(s.inf_count));
}
}  // namespace

void DumpWriter::write_input(const std::string& name, const Value& v) {
  if (impl_->closed) fail(impl_->path, "dump already closed");
  if (!v.is_tensor()) return;
  write_dataset(impl_->path, impl_->inputs.get(), name, v.tensor(), false, "", "", -1);
}

void DumpWriter::write_tensor(const std::string& name, const Value& v, const std::string& node,
                              const std::string& op_type, int64_t topo_index) {
  if (impl_->closed) fail(impl_->path, "dump already closed");
  if (!v.is_tensor()) return;
  if (options_.only && !std::regex_search(name, *options_.only)) return;
  if (!impl_->names.insert(name).second) return;  // a loop body or re-run: the first value stays
  write_dataset(impl_->path, impl_->tensors.get(), name, v.tensor(), options_.stats_only, node, op_type, topo_index);
  ++written_;
}

void DumpWriter::close(const std::vector<std::string>& graph_outputs) {
  if (impl_->closed) return;
  std::string joined;
  for (const auto& o : graph_outputs) joined += (joined.empty() ? "" : "\n") + o;
  string_attr(impl_->file.get(), "graph_outputs", joined);
  impl_->inputs.reset();
  impl_->tensors.reset();
  if (H5Fflush(impl_->file.get(), H5F_SCOPE_GLOBAL) < 0) fail(impl_->path, "cannot flush the dump file");
  impl_->file.reset();
  impl_->closed = true;
}

void DumpObserver::on_node(const NodeEvent& e) {
  if (e.graph_path != "main") return;
  for (size_t k = 0; k < e.outputs.size() && k < e.node->outputs.size(); ++k) {
    if (e.node->outputs[k].empty()) continue;
    if (!e.outputs[k].is_tensor()) {
      ++skipped_;
      continue;
    }
    writer_.write_tensor(e.node->outputs[k], e.outputs[k], e.node->name, e.node->op_type,
                         static_cast<int64_t>(e.node_index));
  }
}

}  // namespace onnxscope
