"""`onnxscope diff A --against B` on planted cases (issue 33, parts 1 and 2).

Made here from one seeded torch module each (so both exports hold the same
weights): a torchvision MobileNetV3 and transformers ViT and BERT, exported
by TorchScript (opset 14) and dynamo (opset 18). Checks:
- the two exports of one module pair at least 90% of each side's data nodes
  (paired one to one, or inside a rewritten region such as a decomposed
  LayerNorm), list the rest, and report no divergence;
- a copy with one Conv's weights scaled by 1.1: the diff names that Conv
  first and blames it most, against the export it was copied from and
  against the other exporter's;
- an fp16 copy (weights and compute in float16, float32 at the edges) and an
  onnxruntime quantize_static (QDQ) copy pair through their Cast and Q/DQ
  nodes and are compared as float16 / quantized values;
- reduce --against writes the piece of B that holds that Conv, fed A's
  values and expecting A's outputs, as a test folder the reference fails;
- --write-mapping writes the pairs, --mapping takes them back (and 'A -'
  keeps a tensor unpaired), a malformed mapping, a missing model and models
  that cannot take the same inputs give exit code 1 and a message naming the
  file.
Usage: check_diff_against.py ONNXSCOPE WORKDIR
"""
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxscope_cli import float16_copy

warnings.filterwarnings("ignore")


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def export_pair(module, args, names, work, tag):
    import torch

    module.eval()
    ts, dyn = work / f"{tag}_ts.onnx", work / f"{tag}_dyn.onnx"
    with torch.no_grad():
        torch.onnx.export(module, args, str(ts), input_names=names, dynamo=False, opset_version=14)
        torch.onnx.export(module, args, str(dyn), input_names=names, dynamo=True, opset_version=18, external_data=False)
    return ts, dyn


def diff(cli, a, b, *extra, expect=(0, 3)):
    p = subprocess.run([cli, "diff", str(a), "--against", str(b), "--json", *extra], capture_output=True, text=True)
    if p.returncode not in expect:
        fail(f"diff {a.name} --against {b.name} exited {p.returncode} (wanted {expect}): {p.stderr[-2000:]}")
    return p.returncode, json.loads(p.stdout)


def check_pairing(j, what, minimum=0.9):
    m = j["match"]
    for side in ("a", "b"):
        cov = m[f"coverage_{side}"]
        if cov < minimum:
            fail(f"{what}: only {cov:.0%} of {side.upper()}'s data nodes paired or in rewritten regions ({m['summary']}); "
                 f"unmatched: {[n['node'] for n in m[f'unmatched_{side}']][:20]}")
        listed = m[f"paired_{side}"] + len(m[f"region_{side}"]) + len(m[f"unmatched_{side}"])
        if listed != m[f"data_nodes_{side}"]:
            fail(f"{what}: {side.upper()}'s data nodes do not add up: {m['summary']}")
    print(f"{what}: {m['summary']}")


def main():
    cli, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    import torch
    import torchvision
    import transformers as tf

    torch.manual_seed(0)
    image = torch.randn(1, 3, 32, 32)
    cnn_ts, cnn_dyn = export_pair(torchvision.models.mobilenet_v3_small(weights=None, num_classes=10, width_mult=0.25),
                                  (image,), ["image"], work, "mnv3")
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)

    class Hidden(torch.nn.Module):
        def __init__(self, m, keys):
            super().__init__()
            self.m, self.keys = m, keys

        def forward(self, *xs):
            return self.m(**dict(zip(self.keys, xs))).last_hidden_state

    vit = Hidden(tf.ViTModel(tf.ViTConfig(image_size=32, patch_size=8, num_channels=3, **small), add_pooling_layer=False),
                 ["pixel_values"])
    vit_ts, vit_dyn = export_pair(vit, (image,), ["pixel_values"], work, "vit")
    ids = torch.randint(0, 100, (1, 16), generator=torch.Generator().manual_seed(0))
    bert = Hidden(tf.BertModel(tf.BertConfig(vocab_size=100, max_position_embeddings=64, **small), add_pooling_layer=False),
                  ["input_ids", "attention_mask"])
    bert_ts, bert_dyn = export_pair(bert, (ids, torch.ones(1, 16, dtype=torch.long)), ["input_ids", "attention_mask"], work,
                                    "bert")

    # Two exporters, one module: paired, and no divergence.
    for what, a, b in (("mobilenet_v3 ts/dynamo", cnn_ts, cnn_dyn), ("vit ts/dynamo", vit_ts, vit_dyn),
                       ("bert ts/dynamo", bert_ts, bert_dyn), ("bert dynamo/ts", bert_dyn, bert_ts)):
        rc, j = diff(cli, a, b)
        check_pairing(j, what)
        if rc != 0 or j.get("first_divergence"):
            fail(f"{what}: a divergence on two exports of one module: {j.get('first_divergence_detail')}")
        if j["diverging"] != 0:
            fail(f"{what}: {j['diverging']} nodes diverge")

    # One Conv's weights scaled by 1.1: named first and blamed most.
    m = onnx.load(str(cnn_ts))
    readers = {}
    for n in m.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    inits = {i.name: i for i in m.graph.initializer}
    convs = [n for n in m.graph.node if n.op_type == "Conv" and n.input[1] in inits and len(readers[n.input[1]]) == 1]
    planted = convs[len(convs) // 2]
    w = inits[planted.input[1]]
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.1), w.name))
    bad = work / "mnv3_ts_badconv.onnx"
    onnx.save(m, str(bad))
    rc, j = diff(cli, cnn_ts, bad)
    if rc != 3 or j.get("first_divergence") != planted.name:
        fail(f"perturbed weight (same export): first divergence {j.get('first_divergence')!r}, wanted {planted.name!r}")
    if not j["blame"] or j["blame"][0] != planted.name:
        fail(f"perturbed weight (same export): blame starts {j['blame'][:3]}, wanted {planted.name!r}")
    rc, j = diff(cli, cnn_dyn, bad)
    first = next((n for n in j["nodes"] if n["node"] == j.get("first_divergence")), None)
    if rc != 3 or first is None or planted.output[0] not in first.get("b_tensors", {}).values():
        fail(f"perturbed weight (other exporter): first divergence {j.get('first_divergence')!r} compared with "
             f"{first and first.get('b_tensors')}, wanted the partner of {planted.output[0]!r}")
    if j["blame"][0] != first["node"]:
        fail(f"perturbed weight (other exporter): blame starts {j['blame'][:3]}, wanted {first['node']!r}")
    print(f"perturbed weight: {planted.name} named first and blamed most (also as dynamo's {first['node']})")
    # reduce --against: the piece of B holding the planted Conv, as a test folder the reference fails.
    red = work / "reduced"
    p = subprocess.run([cli, "reduce", str(cnn_dyn), "--against", str(bad), "--out", str(red)], capture_output=True, text=True)
    if p.returncode != 0 or planted.name not in p.stdout:
        fail(f"reduce --against: exit {p.returncode}, output {p.stdout[-800:]!r} {p.stderr[-400:]!r}")
    c = subprocess.run([cli, "conformance", "--suite", str(red), "--engine", "reference"], capture_output=True, text=True)
    if "1 failed" not in c.stdout:
        fail(f"the reduced test case does not fail on the reference: {c.stdout[-400:]!r}")

    # float16 and quantized copies: paired through Cast and Q/DQ, compared in their types.
    half = work / "mnv3_ts_fp16.onnx"
    float16_copy(cnn_ts, half)
    rc, j = diff(cli, cnn_ts, half)
    check_pairing(j, "mobilenet_v3 fp32/fp16")
    if j["types_differ"] == 0:
        fail("fp16 copy: no compared tensor differs in type")
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"image": np.random.default_rng(k).standard_normal((1, 3, 32, 32)).astype(np.float32)}
                              for k in range(4)])

        def get_next(self):
            return next(self.data, None)

    qdq = work / "mnv3_ts_qdq.onnx"
    quantize_static(str(cnn_ts), str(qdq), Reader(), quant_format=QuantFormat.QDQ)
    rc, j = diff(cli, cnn_ts, qdq)
    check_pairing(j, "mobilenet_v3 fp32/QDQ")
    if not any(o["quant_step"] for n in j["nodes"] for o in n["outputs"]):
        fail("QDQ copy: no compared tensor reports quantization steps")

    # Mapping files: written, read back, edited.
    mapping = work / "vit.map"
    diff(cli, vit_ts, vit_dyn, "--write-mapping", str(mapping))
    lines = [l for l in mapping.read_text().splitlines() if l and not l.startswith("#")]
    rc, j = diff(cli, vit_ts, vit_dyn, "--mapping", str(mapping))
    if len(j["match"]["pairs"]) != len(lines) or any(p["how"] != "mapping" for p in j["match"]["pairs"]):
        fail("a written mapping read back does not give the same pairs, all from the mapping")
    kept_out = next(l.split("\t")[0] for l in lines if l.endswith("structure"))
    edited = work / "vit_edited.map"
    edited.write_text(f"# keep one value unpaired\n{kept_out}\t-\n")
    rc, j = diff(cli, vit_ts, vit_dyn, "--mapping", str(edited))
    if any(p["a"] == kept_out for p in j["match"]["pairs"]):
        fail(f"'{kept_out} -' in the mapping: still paired")

    # Errors: exit 1, naming the file.
    def expect_one(args, fragment, what):
        p = subprocess.run([cli, "diff", *map(str, args)], capture_output=True, text=True)
        if p.returncode != 1 or fragment not in p.stderr:
            fail(f"{what}: exit {p.returncode}, stderr {p.stderr[-600:]!r}; wanted exit 1 and {fragment!r}")

    broken = work / "broken.map"
    broken.write_text("only_one_column\n")
    expect_one([vit_ts, "--against", vit_dyn, "--mapping", broken], "broken.map", "a one-column mapping line")
    unknown = work / "unknown.map"
    unknown.write_text("no_such_tensor x\n")
    expect_one([vit_ts, "--against", vit_dyn, "--mapping", unknown], "no tensor 'no_such_tensor'", "a mapping naming no tensor")
    expect_one([cnn_ts, "--against", work / "missing.onnx"], "missing.onnx", "a B that does not exist")
    expect_one([cnn_ts, "--against", bert_ts], "cannot be fed the same inputs", "a B with two inputs against A with one")
    print("check_diff_against: all checks passed")


if __name__ == "__main__":
    main()
