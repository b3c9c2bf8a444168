#!/usr/bin/env python3
"""Makes the CPU benchmark models from their real definitions, with random
weights (seeded), exported to ONNX by torch.onnx.export (the torch.export-based
exporter, opset 18) with an open batch dimension:

    resnet50.onnx      torchvision.models.resnet50          image[batch,3,224,224]
    mobilenet_v2.onnx  torchvision.models.mobilenet_v2      image[batch,3,224,224]
    bert_base.onnx     transformers BertModel(BertConfig()) input_ids, attention_mask [batch,128]

into ~/.cache/onnxscope/bench-models (or --out). Never committed: they are
made on demand (tens to hundreds of MB each). Then, for example:

    .venv/bin/python scripts/bench_vs_ort.py --threads 2 \
        ~/.cache/onnxscope/bench-models/resnet50.onnx@1 ~/.cache/onnxscope/bench-models/resnet50.onnx@8
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

SEQ = 128


def resnet50():
    import torchvision
    return torchvision.models.resnet50(weights=None), {"image": torch.randn(1, 3, 224, 224)}


def mobilenet_v2():
    import torchvision
    return torchvision.models.mobilenet_v2(weights=None), {"image": torch.randn(1, 3, 224, 224)}


def bert_base():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(), add_pooling_layer=False)  # BERT-base: 12 layers, hidden 768, 12 heads
    ids = torch.randint(0, 1000, (1, SEQ))
    return model, {"input_ids": ids, "attention_mask": torch.ones(1, SEQ, dtype=torch.int64)}


class _Unwrap(torch.nn.Module):
    """BertModel returns a ModelOutput; export its last_hidden_state only."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


MODELS = {"resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "bert_base": bert_base}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list(MODELS), help=", ".join(MODELS))
    ap.add_argument("--out", default=str(Path.home() / ".cache" / "onnxscope" / "bench-models"))
    ap.add_argument("--force", action="store_true", help="remake models that exist")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        path = out / f"{name}.onnx"
        if path.exists() and not args.force:
            print(f"{path} exists")
            continue
        torch.manual_seed(0)
        module, inputs = MODELS[name]()
        module = module.eval()
        if name == "bert_base":
            module = _Unwrap(module)
        batch = torch.export.Dim("batch", min=1, max=64)
        dynamic = tuple({0: batch} for _ in inputs)  # by position: forward() names its args differently
        start = time.time()
        tmp = path.with_suffix(".tmp.onnx")
        torch.onnx.export(module, tuple(inputs.values()), str(tmp), dynamo=True, opset_version=18,
                          input_names=list(inputs), output_names=["output"], dynamic_shapes=dynamic,
                          external_data=False, verbose=False)
        tmp.rename(path)
        print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
