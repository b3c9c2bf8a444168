"""Writes the small committed seed files of the fuzz targets that read files
(tests/fuzz/seeds/): .npz/.npy arrays and HDF5 dumps in onnxscope's layout.
Run with the project venv: .venv/bin/python tests/fuzz/make_seeds.py
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
from onnxscope_dump_writer import DumpWriter  # noqa: E402

npz = os.path.join(here, "seeds", "fuzz_npz")
dump = os.path.join(here, "seeds", "fuzz_dump")
os.makedirs(npz, exist_ok=True)
os.makedirs(dump, exist_ok=True)
x = np.arange(6, dtype=np.float32).reshape(2, 3)
np.save(os.path.join(npz, "x.npy"), x)
np.savez(os.path.join(npz, "plain.npz"), a=x, b=np.array([1, 2], dtype=np.int64))
np.savez_compressed(os.path.join(npz, "compressed.npz"), a=x, flag=np.array([True, False]))
with DumpWriter(os.path.join(dump, "small.h5"), producer="onnxscope", tool_version="seed", engine="reference") as w:
    w.write_input("x", x)
    w.write_tensor("y", x * 2, node="double", op_type="Mul", topo_index=0)
    w.write_tensor("i", np.array([3, -1], dtype=np.int64), node="idx", op_type="ArgMax", topo_index=1)
    w.write_tensor("s", np.array(["a", "bc"], dtype=object), node="str", op_type="Cast", topo_index=2)
    w.graph_outputs = ["y"]
print("seeds written")
