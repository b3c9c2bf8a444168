"""Writes onnxscope's HDF5 dump layout (docs/dump-format.md) from Python, for
the ONNX Runtime and PyTorch dump helpers. Only numpy and h5py are needed.

    with DumpWriter("out.h5", producer="pytorch", tool_version=torch.__version__,
                    model_path="model.onnx", engine="pytorch-eager") as w:
        w.write_input("image", x)
        w.write_tensor("conv_out", y, node="node_Conv_0", op_type="Conv", topo_index=0)
        w.graph_outputs = ["logits"]
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os

import h5py
import numpy as np

NP_TO_ONNX = {
    np.dtype("float32"): "float", np.dtype("float64"): "double", np.dtype("float16"): "float16",
    np.dtype("int8"): "int8", np.dtype("int16"): "int16", np.dtype("int32"): "int32", np.dtype("int64"): "int64",
    np.dtype("uint8"): "uint8", np.dtype("uint16"): "uint16", np.dtype("uint32"): "uint32",
    np.dtype("uint64"): "uint64", np.dtype("bool"): "bool",
    np.dtype("complex64"): "complex64", np.dtype("complex128"): "complex128",
}


def escape(name: str) -> str:
    """A tensor name as an HDF5 link name: '%' -> %25, '/' -> %2F, '.' alone -> %2E."""
    if name == ".":
        return "%2E"
    return name.replace("%", "%25").replace("/", "%2F") or "%00"


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write(group, name: str, value: np.ndarray, attrs: dict, dtype_name: str | None = None) -> None:
    value = np.asarray(value)
    if value.dtype.kind in ("U", "S", "O"):
        data = np.array([str(v) for v in value.ravel()], dtype=h5py.string_dtype("utf-8")).reshape(value.shape)
        dtype = "string"
    else:
        data = value.astype(np.uint8) if value.dtype == np.bool_ else value
        dtype = dtype_name or NP_TO_ONNX.get(value.dtype)
        if dtype is None:
            raise ValueError(f"{name}: numpy dtype {value.dtype} has no ONNX name")
    ds = group.create_dataset(escape(name), data=data)
    ds.attrs["name"] = name
    ds.attrs["dtype"] = dtype
    ds.attrs["node"] = attrs.pop("node", "")
    ds.attrs["op_type"] = attrs.pop("op_type", "")
    ds.attrs["topo_index"] = np.int64(attrs.pop("topo_index", -1))
    ds.attrs["shape"] = np.array(value.shape, dtype=np.int64)
    for k, v in attrs.items():  # extra attributes (e.g. torch_module)
        ds.attrs[k] = v
    if dtype != "string" and value.size:
        v = value.astype(np.float64).real if value.dtype.kind == "c" else value.astype(np.float64)
        finite = v[np.isfinite(v)]
        notnan = v[~np.isnan(v)]
        ds.attrs["min"] = float(notnan.min()) if notnan.size else float("nan")
        ds.attrs["max"] = float(notnan.max()) if notnan.size else float("nan")
        ds.attrs["mean"] = float(finite.mean()) if finite.size else 0.0
        ds.attrs["std"] = float(finite.std()) if finite.size else 0.0
        ds.attrs["nan_count"] = np.int64(np.isnan(v).sum())
        ds.attrs["inf_count"] = np.int64(np.isinf(v).sum())


class DumpWriter:
    def __init__(self, path: str, *, producer: str, tool_version: str, model_path: str = "", engine: str = "",
                 engine_settings: dict | None = None, opset_imports: dict | None = None):
        self.graph_outputs: list[str] = []
        self._f = h5py.File(path, "w")
        a = self._f.attrs
        a["format"] = "onnxscope-dump"
        a["format_version"] = np.int64(1)
        a["producer"] = str(producer)
        a["tool_version"] = str(tool_version)
        a["model_path"] = str(model_path)
        a["model_sha256"] = file_sha256(model_path) if model_path and os.path.exists(model_path) else ""
        a["engine"] = str(engine)
        a["engine_settings"] = json.dumps(engine_settings or {})
        a["opset_imports"] = json.dumps(opset_imports or {})
        a["created"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        a["stats_only"] = np.int64(0)
        self._inputs = self._f.create_group("inputs")
        self._tensors = self._f.create_group("tensors")
        self.written = 0

    def write_input(self, name: str, value) -> None:
        _write(self._inputs, name, value, {})

    def write_tensor(self, name: str, value, *, node: str = "", op_type: str = "", topo_index: int = -1,
                     **extra) -> None:
        _write(self._tensors, name, value, {"node": node, "op_type": op_type, "topo_index": topo_index, **extra})
        self.written += 1

    def close(self) -> None:
        if self._f:
            self._f.attrs["graph_outputs"] = "\n".join(self.graph_outputs)
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read_group(path: str, group: str, names=None) -> dict[str, np.ndarray]:
    out = {}
    with h5py.File(path, "r") as src:
        for key in src[group]:
            ds = src[group][key]
            name = ds.attrs["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            if names is not None and name not in names:
                continue
            arr = ds[()]
            if ds.attrs.get("dtype") == "bool":
                arr = arr.astype(np.bool_)
            out[name] = np.asarray(arr)
    return out


def read_inputs(path: str) -> dict[str, np.ndarray]:
    """The /inputs of a dump (any producer), by tensor name."""
    return _read_group(path, "inputs")


def read_tensors(path: str, names=None) -> dict[str, np.ndarray]:
    """The /tensors of a dump by tensor name: those in `names`, or all."""
    return _read_group(path, "tensors", names)
