// Reading dumps defensively: libhdf5 has a history of bugs on malformed files,
// so every attribute and dataset is checked (class, size, rank, element count,
// byte size against a limit) before anything is allocated or read.
#include <algorithm>
#include <cstring>

#include "dump/h5_reader.h"
#include "dump/h5_types.h"
#include "onnxscope/dump.h"

namespace onnxscope {
namespace {

constexpr int kMaxRank = 32;
constexpr size_t kMaxAttrString = 1 << 20;

struct Reader {
  std::string file;
  const DumpReadOptions& opt;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    Location loc{file};
    loc.value = where;
    throw Error(Diagnostic{Severity::Error, "bad-dump", loc, what, {}});
  }

  bool has_attr(hid_t obj, const char* name) const { return H5Aexists(obj, name) > 0; }

  std::string string_attr(hid_t obj, const char* name, const std::string& where, bool required = true) const {
    if (!has_attr(obj, name)) {
      if (required) fail(where, std::string("missing attribute '") + name + "'");
      return {};
    }
    h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    h5::Handle type(H5Aget_type(attr.get()), H5Tclose);
    h5::Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (!attr.ok() || !type.ok() || H5Tget_class(type.get()) != H5T_STRING ||
        H5Sget_simple_extent_type(space.get()) != H5S_SCALAR)
      fail(where, std::string("attribute '") + name + "' is not a scalar string");
    if (H5Tis_variable_str(type.get()) > 0) {
      h5::Handle mem = h5::file_type(DataType::String);
      char* p = nullptr;
      if (H5Aread(attr.get(), mem.get(), &p) < 0 || !p) fail(where, std::string("cannot read attribute '") + name + "'");
      std::string s(p, strnlen(p, kMaxAttrString));
      H5free_memory(p);
      return s;
    }
    size_t n = H5Tget_size(type.get());
    if (n == 0 || n > kMaxAttrString) fail(where, std::string("attribute '") + name + "' has an unreasonable size");
    std::string s(n, '\0');
    h5::Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), n);
    if (H5Aread(attr.get(), mem.get(), s.data()) < 0) fail(where, std::string("cannot read attribute '") + name + "'");
    s.resize(strnlen(s.data(), n));
    return s;
  }

  template <typename T>
  T scalar_attr(hid_t obj, const char* name, hid_t mem_type, T fallback, const std::string& where) const {
    if (!has_attr(obj, name)) return fallback;
    h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    h5::Handle type(H5Aget_type(attr.get()), H5Tclose);
    h5::Handle space(H5Aget_space(attr.get()), H5Sclose);
    const H5T_class_t cls = H5Tget_class(type.get());
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Sget_simple_extent_type(space.get()) != H5S_SCALAR)
      fail(where, std::string("attribute '") + name + "' is not a scalar number");
    T v{};
    if (H5Aread(attr.get(), mem_type, &v) < 0) fail(where, std::string("cannot read attribute '") + name + "'");
    return v;
  }

  Shape shape_attr(hid_t obj, const std::string& where) const {
    Shape shape;
    if (!has_attr(obj, "shape")) return shape;
    h5::Handle attr(H5Aopen(obj, "shape", H5P_DEFAULT), H5Aclose);
    h5::Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) return shape;
    if (H5Sget_simple_extent_ndims(space.get()) != 1) fail(where, "attribute 'shape' must be 1-D");
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space.get(), &n, nullptr);
    if (n > kMaxRank) fail(where, "attribute 'shape' has rank " + std::to_string(n) + ", more than " + std::to_string(kMaxRank));
    shape.resize(n);
    if (n && H5Aread(attr.get(), H5T_NATIVE_INT64, shape.data()) < 0) fail(where, "cannot read attribute 'shape'");
    for (int64_t d : shape)
      if (d < 0) fail(where, "attribute 'shape' has a negative dimension");
    return shape;
  }

  DumpEntry entry(hid_t group, const std::string& ds_name, const std::string& group_name) {
    const std::string where = group_name + "/" + ds_name;
    h5::Handle ds(H5Dopen2(group, ds_name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) fail(where, "cannot open dataset");
    DumpEntry e;
    e.name = string_attr(ds.get(), "name", where);
    e.dtype = string_attr(ds.get(), "dtype", where);
    e.node = string_attr(ds.get(), "node", where, false);
    e.op_type = string_attr(ds.get(), "op_type", where, false);
    e.topo_index = scalar_attr<int64_t>(ds.get(), "topo_index", H5T_NATIVE_INT64, -1, where);
    auto type = dtype_from_name(e.dtype);
    if (!type) fail(where, "unknown dtype '" + e.dtype + "'");
    e.stats.min = scalar_attr<double>(ds.get(), "min", H5T_NATIVE_DOUBLE, 0, where);
    e.stats.max = scalar_attr<double>(ds.get(), "max", H5T_NATIVE_DOUBLE, 0, where);
    e.stats.mean = scalar_attr<double>(ds.get(), "mean", H5T_NATIVE_DOUBLE, 0, where);
    e.stats.stddev = scalar_attr<double>(ds.get(), "std", H5T_NATIVE_DOUBLE, 0, where);
    e.stats.nan_count = static_cast<uint64_t>(scalar_attr<int64_t>(ds.get(), "nan_count", H5T_NATIVE_INT64, 0, where));
    e.stats.inf_count = static_cast<uint64_t>(scalar_attr<int64_t>(ds.get(), "inf_count", H5T_NATIVE_INT64, 0, where));

    h5::Handle space(H5Dget_space(ds.get()), H5Sclose);
    const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
    if (cls == H5S_NULL) {
      e.stats_only = true;
      e.shape = shape_attr(ds.get(), where);
      e.stats.elements = checked_element_count(e.shape).value_or(0);
      return e;
    }
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > kMaxRank) fail(where, "dataset rank " + std::to_string(rank) + " is out of range");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    if (rank) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    for (hsize_t d : dims) e.shape.push_back(static_cast<int64_t>(std::min<hsize_t>(d, INT64_MAX)));
    auto count = checked_element_count(e.shape);
    if (!count) fail(where, "dataset shape " + shape_to_string(e.shape) + " overflows");
    e.stats.elements = *count;

    // The stored type must be what the dtype attribute says.
    h5::Handle ftype(H5Dget_type(ds.get()), H5Tclose);
    const H5T_class_t tcls = H5Tget_class(ftype.get());
    const size_t want = h5::stored_element_size(*type);
    if (*type == DataType::String) {
      if (tcls != H5T_STRING || H5Tis_variable_str(ftype.get()) <= 0)
        fail(where, "dtype says string but the dataset does not hold variable-length strings");
    } else if (H5Tget_size(ftype.get()) != want) {
      fail(where, "dtype " + e.dtype + " needs " + std::to_string(want) + "-byte elements but the dataset stores " +
                      std::to_string(H5Tget_size(ftype.get())));
    } else if (tcls != H5T_INTEGER && tcls != H5T_FLOAT && tcls != H5T_COMPOUND) {
      fail(where, "dataset element class is not numeric");
    }
    if (!opt.load_data) return e;
    const uint64_t bytes = *type == DataType::String ? *count * sizeof(char*) : *count * want;
    if (*count > opt.max_tensor_bytes || bytes > opt.max_tensor_bytes)
      fail(where, "dataset of shape " + shape_to_string(e.shape) + " is larger than the read limit of " +
                      std::to_string(opt.max_tensor_bytes) + " bytes");
    dump_detail::budget_dataset_bytes(bytes);
    if (*count == 0) {
      e.data = *type == DataType::String ? Tensor::from_strings(e.shape, {}) : Tensor::zeros(*type, e.shape);
      return e;
    }
    h5::Handle mem = h5::file_type(*type);
    if (*type == DataType::String) {
      std::vector<char*> ptrs(*count, nullptr);
      if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) fail(where, "cannot read strings");
      std::vector<std::string> strings;
      strings.reserve(*count);
      for (char* p : ptrs) {
        strings.emplace_back(p ? p : "");
        if (p) H5free_memory(p);
      }
      e.data = Tensor::from_strings(e.shape, std::move(strings));
      return e;
    }
    if (is_packed_dtype(*type)) {
      std::vector<uint8_t> codes(*count);
      if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, codes.data()) < 0) fail(where, "cannot read data");
      Tensor t = Tensor::zeros(*type, e.shape);
      const uint8_t mask = static_cast<uint8_t>((1u << dtype_info(*type).bits) - 1);
      for (uint64_t i = 0; i < *count; ++i) set_packed_element_bits(*type, t.mutable_raw(), i, codes[i] & mask);
      e.data = std::move(t);
      return e;
    }
    Tensor t = Tensor::zeros(*type, e.shape);
    if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.mutable_raw()) < 0) fail(where, "cannot read data");
    e.data = std::move(t);
    return e;
  }

  void group(hid_t file_id, const char* name, bool is_input, const dump_detail::EntrySink& sink) {
    if (H5Lexists(file_id, name, H5P_DEFAULT) <= 0) fail(name, "missing group");
    h5::Handle g(H5Gopen2(file_id, name, H5P_DEFAULT), H5Gclose);
    if (!g.ok()) fail(name, "cannot open group");
    H5G_info_t info{};
    if (H5Gget_info(g.get(), &info) < 0) fail(name, "cannot read group");
    if (info.nlinks > 10'000'000) fail(name, "group has an unreasonable number of members");
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      ssize_t len = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (len <= 0 || len > 1 << 16) fail(name, "member " + std::to_string(i) + " has a bad name");
      std::string member(static_cast<size_t>(len) + 1, '\0');
      H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, member.data(), member.size(), H5P_DEFAULT);
      member.resize(static_cast<size_t>(len));
      H5O_info_t oinfo{};
      if (H5Oget_info_by_name(g.get(), member.c_str(), &oinfo, H5P_DEFAULT) < 0 || oinfo.type != H5O_TYPE_DATASET)
        fail(std::string(name) + "/" + member, "is not a dataset");
      sink(is_input, entry(g.get(), member, name));
      dump_detail::budget_dataset_bytes(0);  // that dataset is gone
    }
  }
};

}  // namespace

namespace dump_detail {

DumpFile read_dump_here(const std::filesystem::path& path, const DumpReadOptions& options, const EntrySink& sink) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Reader r{path.string(), options};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) r.fail("", "not a readable file");
  if (H5Fis_hdf5(r.file.c_str()) <= 0) r.fail("", "not an HDF5 file (or truncated)");
  h5::Handle f(H5Fopen(r.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) r.fail("", "cannot open the HDF5 file (corrupt or truncated?)");
  DumpFile d;
  const std::string format = r.string_attr(f.get(), "format", "/");
  if (format != kDumpFormat) r.fail("/", "format is '" + format + "', expected '" + kDumpFormat + "'");
  const int64_t version = r.scalar_attr<int64_t>(f.get(), "format_version", H5T_NATIVE_INT64, 0, "/");
  if (version != kDumpFormatVersion)
    r.fail("/", "format_version " + std::to_string(version) + " is not supported (expected " +
                    std::to_string(kDumpFormatVersion) + ")");
  d.header.producer = r.string_attr(f.get(), "producer", "/", false);
  d.header.tool_version = r.string_attr(f.get(), "tool_version", "/", false);
  d.header.model_path = r.string_attr(f.get(), "model_path", "/", false);
  d.header.model_sha256 = r.string_attr(f.get(), "model_sha256", "/", false);
  d.header.engine = r.string_attr(f.get(), "engine", "/", false);
  d.header.engine_settings = r.string_attr(f.get(), "engine_settings", "/", false);
  d.header.opset_imports = r.string_attr(f.get(), "opset_imports", "/", false);
  d.header.created = r.string_attr(f.get(), "created", "/", false);
  std::string outs = r.string_attr(f.get(), "graph_outputs", "/", false);
  for (size_t p = 0; !outs.empty() && p <= outs.size();) {
    size_t q = outs.find('\n', p);
    if (q == std::string::npos) q = outs.size();
    d.graph_outputs.push_back(outs.substr(p, q - p));
    p = q + 1;
  }
  r.group(f.get(), "inputs", true, sink);
  r.group(f.get(), "tensors", false, sink);
  return d;
}

}  // namespace dump_detail

DumpFile read_dump(const std::filesystem::path& path, DumpReadOptions options) {
  std::optional<DumpFile> d;
  if (options.isolate) d = dump_detail::read_dump_in_child(path, options);
  if (!d) {  // not isolated, or no child could be started
    std::vector<DumpEntry> inputs, tensors;
    d = dump_detail::read_dump_here(path, options, [&](bool is_input, DumpEntry&& e) {
      (is_input ? inputs : tensors).push_back(std::move(e));
    });
    d->inputs = std::move(inputs);
    d->tensors = std::move(tensors);
  }
  std::stable_sort(d->tensors.begin(), d->tensors.end(), [](const DumpEntry& a, const DumpEntry& b) {
    return a.topo_index < b.topo_index;
  });
  // Bool bytes other than 0/1 are true, here as in model files.
  for (auto* group : {&d->inputs, &d->tensors})
    for (DumpEntry& e : *group)
      if (e.data) normalize_bool_bytes(*e.data);
  return std::move(*d);
}

}  // namespace onnxscope
