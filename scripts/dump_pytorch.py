#!/usr/bin/env python3
"""Dump a PyTorch model's module outputs in onnxscope's HDF5 dump layout
(docs/dump-format.md), named after the exported ONNX model's tensors where the
exporter kept the module scope, so `onnxscope compare` and `onnxscope diff
--engines cpu,dump:torch.h5` can line the framework up with the ONNX graph.

How it works: a forward hook on every submodule records (a copy of) its
output under the module's qualified name ("layer1.0.conv1"). Each module is
then mapped to an ONNX tensor: the output of the last node, in topological
order, whose scope contains that module. The scope is read from the node
metadata the torch.export-based exporter writes (pkg.torch.onnx.name_scopes)
or, for the TorchScript exporter, from node names ("/layer1/layer1.0/conv1/Conv").
A mapping is kept only when the shapes agree; a module whose output was fused
away (a Conv folded into the next BatchNormalization) or that has no node of
its own stays unmapped and is stored as "torch:<module>". `--mapping FILE`
writes the mapping (JSON) for review; `--mapping-in FILE` replaces the
heuristic with your own {module: onnx_tensor}.

As a library:
    from dump_pytorch import dump_module
    dump_module(model, {"image": x}, "torch.h5", onnx_path="model.onnx")

From the command line, with a factory that returns the module (in eval mode,
its weights loaded) and either an existing ONNX export of that same module or
--export to make one:
    dump_pytorch.py --factory torchvision.models:resnet50 --export resnet50.onnx \
        --shape image=1x3x224x224 --out torch.h5
    onnxscope dump resnet50.onnx --inputs-from torch.h5 --out ours.h5
    onnxscope compare torch.h5 ours.h5 --model resnet50.onnx
"""
from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import sys

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxscope_dump_writer import DumpWriter, read_inputs  # noqa: E402


def _qualified(components: list[str]) -> str:
    """TorchScript scope components -> a module's qualified name.
    ["layer1", "layer1.0", "conv1"] -> "layer1.0.conv1" (Sequential children
    repeat their parent's prefix; other children do not)."""
    qual = ""
    for c in components:
        if not c:
            continue
        qual = c if (not qual or c.startswith(qual + ".")) else qual + "." + c
    return qual


def node_modules(node: onnx.NodeProto) -> list[str]:
    """Qualified names of the modules a node belongs to, outermost first."""
    meta = {p.key: p.value for p in node.metadata_props}
    scopes = meta.get("pkg.torch.onnx.name_scopes")
    if scopes:
        try:
            names = ast.literal_eval(scopes)
        except (ValueError, SyntaxError):
            names = []
        # ['', 'block', 'block.bn', '_native_batch_norm...']: the last one is the aten op.
        return [n for n in names[:-1] if n]
    if node.name.startswith("/"):
        comps = node.name.split("/")[1:-1]
        out, prefix = [], []
        for c in comps:
            prefix.append(c)
            out.append(_qualified(prefix))
        return out
    return []


def map_modules(model: onnx.ModelProto, shapes: dict[str, tuple]) -> dict[str, dict]:
    """module -> {"tensor", "node", "op_type", "topo_index"} or {"why": ...}."""
    last = {}
    for i, node in enumerate(model.graph.node):
        for m in node_modules(node):
            last[m] = (i, node)
    value_shapes = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        for v in list(inferred.graph.value_info) + list(inferred.graph.output):
            t = v.type.tensor_type
            if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
                value_shapes[v.name] = tuple(d.dim_value for d in t.shape.dim)
    except Exception:  # shapes are a check, not a requirement
        pass
    mapping = {}
    for module, shape in shapes.items():
        if module not in last:
            mapping[module] = {"why": "no ONNX node carries this module's scope (fused away or traced through)"}
            continue
        i, node = last[module]
        out = next((o for o in node.output if o), None)
        if out is None:
            mapping[module] = {"why": f"node {node.name} has no output"}
            continue
        if out in value_shapes and value_shapes[out] != tuple(shape):
            mapping[module] = {"why": f"shape {tuple(shape)} differs from {out} {value_shapes[out]}"}
            continue
        mapping[module] = {"tensor": out, "node": node.name, "op_type": node.op_type, "topo_index": i}
    return mapping


def _to_numpy(t) -> np.ndarray | None:
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu").clone().numpy()
    return None


def dump_module(module: torch.nn.Module, inputs: dict[str, np.ndarray], out_path: str, onnx_path: str | None = None,
                mapping_in: dict[str, str] | None = None, mapping_out: str | None = None) -> dict:
    """Runs `module` on `inputs` (by ONNX graph input name, in forward order) and
    writes the dump. Returns the mapping used."""
    model = onnx.load(onnx_path, load_external_data=False) if onnx_path else None
    if model is not None:
        # Forward arguments follow the ONNX graph inputs' order, not the dict's.
        initializers = {i.name for i in model.graph.initializer}
        order = [i.name for i in model.graph.input if i.name not in initializers]
        if sorted(order) != sorted(inputs):
            raise SystemExit(f"inputs {sorted(inputs)} do not match the ONNX graph inputs {order}")
        inputs = {n: inputs[n] for n in order}

    recorded: dict[str, np.ndarray] = {}
    kinds: dict[str, str] = {}
    hooks = []
    for name, sub in module.named_modules():
        if not name:
            continue

        def hook(_m, _args, output, name=name):
            # A copy now: later in-place ops (x += identity; ReLU(inplace=True)) would change it.
            value = _to_numpy(output[0] if isinstance(output, (tuple, list)) and output else output)
            if value is not None:
                recorded[name] = value
                kinds[name] = type(_m).__name__
        hooks.append(sub.register_forward_hook(hook))
    try:
        with torch.no_grad():
            result = module(*[torch.from_numpy(np.ascontiguousarray(v)) for v in inputs.values()])
    finally:
        for h in hooks:
            h.remove()
    results = result if isinstance(result, (tuple, list)) else [result]

    producers = {}
    if model is not None:
        producers = {o: (i, n) for i, n in enumerate(model.graph.node) for o in n.output if o}
    if mapping_in is not None:
        mapping = {m: {"tensor": t} for m, t in mapping_in.items()}
        for e in mapping.values():
            if e["tensor"] in producers:
                i, n = producers[e["tensor"]]
                e.update(node=n.name, op_type=n.op_type, topo_index=i)
    elif model is not None:
        mapping = map_modules(model, {m: v.shape for m, v in recorded.items()})
    else:
        mapping = {}
    graph_outputs = [o.name for o in model.graph.output] if model is not None else []

    with DumpWriter(out_path, producer="pytorch", tool_version=torch.__version__, model_path=onnx_path or "",
                    engine="pytorch-eager", engine_settings={"threads": torch.get_num_threads()},
                    opset_imports={(o.domain or "ai.onnx"): o.version for o in model.opset_import} if model else {}) as w:
        for name, value in inputs.items():
            w.write_input(name, np.asarray(value))
        taken = {}  # ONNX tensor -> the module (or model output) stored under it
        for name, value in zip(graph_outputs, results):
            v = _to_numpy(value)
            if v is not None:
                i, n = producers.get(name, (-1, None))
                w.write_tensor(name, v, node=n.name if n else "", op_type=n.op_type if n else "", topo_index=i)
                taken[name] = "the model output"

        for module_name, value in recorded.items():
            e = mapping.get(module_name, {})
            tensor = e.get("tensor")
            if tensor in graph_outputs:
                continue  # the model's output holds this module's value
            if tensor and tensor not in taken:
                taken[tensor] = module_name
                w.write_tensor(tensor, value, node=e.get("node", ""), op_type=e.get("op_type", ""),
                               topo_index=e.get("topo_index", -1), torch_module=module_name)
                continue
            if tensor:
                mapping[module_name] = {"same_as": taken[tensor], "tensor_of_inner": tensor,
                                        "why": f"same ONNX tensor {tensor} as {taken[tensor]} (stored there)"}
            w.write_tensor("torch:" + module_name, value, node=module_name, op_type=kinds[module_name],
                           torch_module=module_name)
        w.graph_outputs = graph_outputs
    if mapping_out:
        with open(mapping_out, "w") as f:
            json.dump(mapping, f, indent=1)
    return mapping


def _factory(spec: str):
    mod, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--factory wants MODULE:CALLABLE, got {spec!r}")
    return getattr(importlib.import_module(mod), attr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--factory", required=True, help="MODULE:CALLABLE returning the torch.nn.Module")
    ap.add_argument("--onnx", help="the ONNX export of this same module (weights included)")
    ap.add_argument("--export", help="export the module to this ONNX file first (torch.onnx.export, dynamo)")
    ap.add_argument("--opset", type=int, default=18)
    ap.add_argument("--inputs-from", help="take the inputs from this dump's /inputs group")
    ap.add_argument("--shape", action="append", default=[], help="NAME=1x3x224x224: a seeded random float input")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights (torch.manual_seed) and random inputs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mapping", help="write the module -> ONNX tensor mapping here (JSON)")
    ap.add_argument("--mapping-in", help="use this {module: onnx_tensor} JSON instead of the heuristic")
    args = ap.parse_args()
    if bool(args.onnx) == bool(args.export):
        raise SystemExit("give exactly one of --onnx (an existing export) and --export (make one)")

    torch.manual_seed(args.seed)
    module = _factory(args.factory)().eval()
    if args.inputs_from:
        inputs = read_inputs(args.inputs_from)
    else:
        rng = np.random.default_rng(args.seed)
        inputs = {}
        for s in args.shape:
            name, _, dims = s.partition("=")
            inputs[name] = rng.standard_normal([int(d) for d in dims.split("x")]).astype(np.float32)
    if not inputs:
        raise SystemExit("no inputs: give --shape NAME=DIMS or --inputs-from DUMP")
    onnx_path = args.onnx
    if args.export:
        torch.onnx.export(module, tuple(torch.from_numpy(v) for v in inputs.values()), args.export, dynamo=True,
                          input_names=list(inputs), opset_version=args.opset, external_data=False)
        onnx_path = args.export
    mapping_in = json.load(open(args.mapping_in)) if args.mapping_in else None
    mapping = dump_module(module, inputs, args.out, onnx_path, mapping_in, args.mapping)
    mapped = sum(1 for e in mapping.values() if "tensor" in e)
    print(f"wrote {args.out}: {len(mapping)} module outputs, {mapped} mapped to ONNX tensors of {onnx_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
