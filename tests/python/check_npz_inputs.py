"""Inputs from .npz archives (numpy.savez and savez_compressed) give the same
run as the same array from .npy; a wrong array name, a wrong dtype, a
truncated archive and a corrupted one each give a clear error and exit 1.

usage: check_npz_inputs.py ONNXSCOPE_CLI MODEL WORKDIR
"""
import subprocess
import sys

import h5py
import numpy as np

cli, model, work = sys.argv[1:4]
x = np.random.default_rng(1).random((2, 3, 32, 32), dtype=np.float32)
np.save(f"{work}/npz_x.npy", x)
np.savez(f"{work}/npz_plain.npz", image=x)
np.savez_compressed(f"{work}/npz_compressed.npz", image=x)
np.savez(f"{work}/npz_bad_name.npz", imag=x)
np.savez(f"{work}/npz_bad_type.npz", image=x.astype(np.float64))
np.savez(f"{work}/npz_bad_shape.npz", image=x[:, :2])
raw = open(f"{work}/npz_plain.npz", "rb").read()
open(f"{work}/npz_truncated.npz", "wb").write(raw[: len(raw) // 2])
flipped = bytearray(raw)
flipped[200] ^= 0xFF
open(f"{work}/npz_flipped.npz", "wb").write(bytes(flipped))
open(f"{work}/npz_not_zip.npz", "wb").write(b"PK\x03\x04 not really a zip" * 3)


def run(*args):
    return subprocess.run([cli, *args], capture_output=True, text=True)


def probabilities(path):
    with h5py.File(path, "r") as f:
        return f["tensors"]["probabilities"][()]


r = run("run", model, "--input", f"image={work}/npz_x.npy", "--out", f"{work}/npz_ref.h5")
assert r.returncode == 0, r.stderr
for name in ("plain", "compressed"):
    r = run("run", model, "--inputs", f"{work}/npz_{name}.npz", "--out", f"{work}/npz_{name}.h5")
    assert r.returncode == 0, r.stderr
    assert np.array_equal(probabilities(f"{work}/npz_{name}.h5"), probabilities(f"{work}/npz_ref.h5")), name

# Another float type is converted to the declared one, with a note; the same
# run as the float32 array. --no-cast-inputs refuses it instead.
r = run("run", model, "--inputs", f"{work}/npz_bad_type.npz", "--out", f"{work}/npz_cast.h5")
assert r.returncode == 0, r.stderr
assert "double converted to float, the type the model declares" in r.stderr, r.stderr
assert np.array_equal(probabilities(f"{work}/npz_cast.h5"), probabilities(f"{work}/npz_ref.h5"))
r = run("run", model, "--inputs", f"{work}/npz_bad_type.npz", "--no-cast-inputs")
assert r.returncode == 1 and "is double but the model declares float" in r.stderr, (r.returncode, r.stderr)
np.savez(f"{work}/npz_int_type.npz", image=(x * 10).astype(np.int64))

# --save-inputs writes what ran: numpy reads it, and it feeds the same run back.
r = run("run", model, "--dim", "batch=2", "--seed", "5", "--save-inputs", f"{work}/npz_saved.npz", "--out", f"{work}/npz_s1.h5")
assert r.returncode == 0, r.stderr
saved = np.load(f"{work}/npz_saved.npz")
assert list(saved.keys()) == ["image"] and saved["image"].dtype == np.float32 and saved["image"].shape == (2, 3, 32, 32)
with h5py.File(f"{work}/npz_s1.h5", "r") as f:
    assert np.array_equal(f["inputs"]["image"][()], saved["image"])
r = run("run", model, "--inputs", f"{work}/npz_saved.npz", "--out", f"{work}/npz_s2.h5")
assert r.returncode == 0, r.stderr
assert np.array_equal(probabilities(f"{work}/npz_s1.h5"), probabilities(f"{work}/npz_s2.h5"))

cases = {
    "bad_name": "holds an array 'imag' but the model has no input of that name",
    "int_type": "is int64 but the model declares float",
    "bad_shape": "has shape [2,2,32,32] but the model declares",
    "truncated": "npz_truncated.npz: not an .npz archive",
    "flipped": "CRC-32 mismatch",
    "not_zip": "npz_not_zip.npz: not an .npz archive",
}
for name, message in cases.items():
    r = run("run", model, "--inputs", f"{work}/npz_{name}.npz")
    assert r.returncode == 1, (name, r.returncode, r.stderr)
    assert message in r.stderr, (name, r.stderr)
print(f".npz inputs match .npy; {len(cases)} bad archives refused with exit 1")
