"""Interop: the PyTorch dump helper (scripts/dump_pytorch.py) records module
outputs with forward hooks and names them after the exported ONNX model's
tensors. A dump of a small residual network from PyTorch and from onnxscope
compare clean; with one BatchNormalization perturbed in PyTorch after the
export, `compare` and `diff --engines cpu,dump:...` both name the node that
module became as the first divergence, and blame puts it on top; the
Markdown report says the same.

usage: check_torch_dump.py ONNXSCOPE_CLI WORKDIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

cli, work = sys.argv[1:3]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from dump_pytorch import dump_module  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.relu = torch.nn.ReLU(inplace=True)  # in place: the hook must copy

    def forward(self, x):
        y = self.bn(self.conv(x))
        y += x
        return self.relu(y)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.layer1 = torch.nn.Sequential(Block(), Block())
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layer1(self.stem(x))), 1))


def run(*args, expect=0):
    """stdout of the CLI; its exit code must be `expect` (3: a divergence was found)."""
    r = subprocess.run([cli, *args], capture_output=True, text=True)
    assert r.returncode == expect, (args, r.returncode, r.stderr)
    return r.stdout


torch.manual_seed(0)
net = Net().eval()
for m in net.modules():  # non-trivial statistics, so BatchNormalization matters
    if isinstance(m, torch.nn.BatchNorm2d):
        m.running_mean.uniform_(-0.5, 0.5)
        m.running_var.uniform_(0.5, 2.0)
x = np.random.default_rng(0).standard_normal((2, 3, 16, 16)).astype(np.float32)
model = f"{work}/torch_net.onnx"
torch.onnx.export(net, (torch.from_numpy(x),), model, dynamo=True, input_names=["image"], opset_version=18,
                  external_data=False)

clean, ours = f"{work}/torch_clean.h5", f"{work}/torch_ours.h5"
mapping = dump_module(net, {"image": x}, clean, model)
mapped = {m: e["tensor"] for m, e in mapping.items() if "tensor" in e}
assert {"stem", "layer1.0.bn", "layer1.1.bn", "layer1.1.relu", "fc"} <= set(mapped), mapping
run("dump", model, "--inputs-from", clean, "--out", ours)
report = json.loads(run("compare", clean, ours, "--model", model, "--json"))
assert report["compared"] >= 6 and "first_divergence" not in report, report
print(f"PyTorch and onnxscope agree on {report['compared']} tensors")

# Plant a fault in PyTorch: layer1.1's BatchNormalization statistics change
# after the export, so only that module (and what follows) differs.
with torch.no_grad():
    net.layer1[1].bn.running_mean += 0.25
faulty = f"{work}/torch_faulty.h5"
dump_module(net, {"image": x}, faulty, model)
planted = mapped["layer1.1.bn"]
report = json.loads(run("compare", ours, faulty, "--model", model, "--json", expect=3))
assert report.get("first_divergence") == planted, (report.get("first_divergence"), planted)

md = f"{work}/torch_diff.md"
diff = json.loads(run("diff", model, "--engines", f"cpu,dump:{faulty}", "--json", "--report", md, expect=3))
producer = next(n["node"] for n in diff["nodes"] if any(o["name"] == planted for o in n["outputs"]))
assert diff["first_divergence"] == producer, (diff["first_divergence"], producer)
assert diff["blame"][0] == producer, diff["blame"][:3]
text = open(md).read()
assert "## First divergence" in text and f"**{producer}**" in text, text[:800]
print(f"planted fault in layer1.1.bn found at tensor {planted} (node {producer}), first in blame")
