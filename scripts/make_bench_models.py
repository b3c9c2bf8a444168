#!/usr/bin/env python3
"""Makes the public benchmark list: real model definitions with random
(seeded) weights, exported by both torch.onnx exporters at several opsets,
with an open batch dimension, into ~/.cache/onnxscope/bench-models (or
--out). Never committed: made on demand (tens to hundreds of MB each).

  torchvision (image [batch,3,224,224]):
    resnet18, resnet50, mobilenet_v2        torch.export-based exporter, opset 18
    mobilenet_v3_small                      TorchScript exporter, opset 17
    mobilenet_v3_large, efficientnet_b0     torch.export-based exporter, opset 18
    regnet_y_400mf, densenet121             TorchScript exporter, opset 17
    convnext_tiny, swin_t, vit_b_16         torch.export-based exporter, opset 18
    shufflenet_v2                           TorchScript exporter, opset 14
    ssdlite320 (detection backbone + heads, image [batch,3,320,320])
                                            TorchScript exporter, opset 17
  transformers (input_ids, attention_mask [batch,128]):
    bert_base                               torch.export-based exporter, opset 18
    bert_base_ts14                          TorchScript exporter, opset 14 (LayerNorm written with Pow)
    gpt2                                    TorchScript exporter, opset 14
    llama_gqa  (8 layers, hidden 512, 8 heads, 2 key/value heads)
                                            torch.export-based exporter, opset 18
    vit_hf     (transformers ViTModel, pixel_values [batch,3,224,224])
                                            TorchScript exporter, opset 17

  made only when named (not in the list the benchmarks run):
    llama_200m (16 layers, hidden 1024, 16 heads, 4 key/value heads, 213 M
                parameters, 64 tokens; weights in external data, 853 MB)
                                            torch.export-based exporter, opset 18

Then, for example (scripts/bench_vs_ort.py --list runs them all at batch 1 and 8):

    .venv/bin/python scripts/bench_vs_ort.py --threads 2 \\
        ~/.cache/onnxscope/bench-models/resnet50.onnx@1 ~/.cache/onnxscope/bench-models/resnet50.onnx@8
"""
from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import torch

SEQ = 128
IMAGE = (1, 3, 224, 224)


def tv(name, shape=IMAGE, **kw):
    def make():
        import torchvision
        return getattr(torchvision.models, name)(weights=None, **kw), {"image": torch.randn(*shape)}
    return make


def ssdlite320():
    import torchvision

    class Heads(torch.nn.Module):
        """The detector without its post-processing (NMS and box decoding are
        Python control flow the exporters cannot trace): backbone, feature
        pyramid and the classification and regression heads."""

        def __init__(self):
            super().__init__()
            m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
            self.backbone, self.head = m.backbone, m.head

        def forward(self, image):
            feats = list(self.backbone(image).values())
            out = self.head(feats)
            return out["bbox_regression"], out["cls_logits"]

    return Heads(), {"image": torch.randn(1, 3, 320, 320)}


def text_inputs(seq=SEQ):
    ids = torch.randint(0, 1000, (1, seq))
    return {"input_ids": ids, "attention_mask": torch.ones(1, seq, dtype=torch.int64)}


class _Hidden(torch.nn.Module):
    """A text model's last_hidden_state only (transformers returns a ModelOutput)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class _ImageHidden(_Hidden):
    def forward(self, pixel_values):
        return self.inner(pixel_values=pixel_values).last_hidden_state


def bert_base():
    from transformers import BertConfig, BertModel
    return _Hidden(BertModel(BertConfig(), add_pooling_layer=False)), text_inputs()


def gpt2():
    from transformers import GPT2Config, GPT2Model
    return _Hidden(GPT2Model(GPT2Config())), text_inputs()


def llama_gqa():
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=8, num_attention_heads=8,
                      num_key_value_heads=2, vocab_size=32000, max_position_embeddings=512)
    return _Hidden(LlamaModel(cfg)), text_inputs()


def llama_200m():
    # The issue's "200M-parameter Llama-style decoder, 64 tokens (external
    # data)": the reference's peak memory is reported on it.
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=16, num_attention_heads=16,
                      num_key_value_heads=4, vocab_size=32000, max_position_embeddings=512)
    return _Hidden(LlamaModel(cfg)), text_inputs(64)


def vit_hf():
    from transformers import ViTConfig, ViTModel
    return _ImageHidden(ViTModel(ViTConfig(), add_pooling_layer=False)), {"pixel_values": torch.randn(*IMAGE)}


# name -> (builder, exporter, opset)
MODELS = {
    "resnet18": (tv("resnet18"), "dynamo", 18),
    "resnet50": (tv("resnet50"), "dynamo", 18),
    "mobilenet_v2": (tv("mobilenet_v2"), "dynamo", 18),
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), "torchscript", 17),
    "mobilenet_v3_large": (tv("mobilenet_v3_large"), "dynamo", 18),
    "efficientnet_b0": (tv("efficientnet_b0"), "dynamo", 18),
    "regnet_y_400mf": (tv("regnet_y_400mf"), "torchscript", 17),
    "densenet121": (tv("densenet121"), "torchscript", 17),
    "convnext_tiny": (tv("convnext_tiny"), "dynamo", 18),
    "swin_t": (tv("swin_t"), "dynamo", 18),
    "vit_b_16": (tv("vit_b_16"), "dynamo", 18),
    "shufflenet_v2": (tv("shufflenet_v2_x1_0"), "torchscript", 14),
    "ssdlite320": (ssdlite320, "torchscript", 17),
    "bert_base": (bert_base, "dynamo", 18),
    "bert_base_ts14": (bert_base, "torchscript", 14),
    "gpt2": (gpt2, "torchscript", 14),
    "llama_gqa": (llama_gqa, "dynamo", 18),
    "vit_hf": (vit_hf, "torchscript", 17),
}

# Made only when named: too large for the benchmarks' list (weights in
# external data, name.onnx.data beside the model).
EXTRA_MODELS = {
    "llama_200m": (llama_200m, "dynamo", 18),
}


def export(name: str, path: Path) -> None:
    make, exporter, opset = {**MODELS, **EXTRA_MODELS}[name]
    torch.manual_seed(0)
    module, inputs = make()
    export_module(module, inputs, exporter, opset, path, external=name in EXTRA_MODELS)


def export_module(module, inputs: dict, exporter: str, opset: int, path: Path, external: bool = False) -> None:
    """Exports `module` on example `inputs` with its batch dimension open, into
    `path` (and its external data beside it where `external`); raises when
    the batch came out fixed. scripts/make_offlist_models.py uses it too."""
    module = module.eval()
    names = list(inputs)
    # External data names its file inside the model: export under the final
    # name in a scratch folder, then move the model and its data.
    scratch = path.parent / f".{path.stem}.tmp"
    shutil.rmtree(scratch, ignore_errors=True)  # (a failed export's leftovers)
    scratch.mkdir()
    tmp = scratch / path.name
    try:
        with torch.no_grad():
            if exporter == "dynamo":
                # An example batch of 2: torch.export specialises a dim it sees as 1.
                inputs = {k: torch.cat([v, v]) for k, v in inputs.items()}
                batch = torch.export.Dim("batch", min=1, max=64)
                dynamic = tuple({0: batch} for _ in inputs)  # by position: forward() names its args differently
                torch.onnx.export(module, tuple(inputs.values()), str(tmp), dynamo=True, opset_version=opset,
                                  input_names=names, dynamic_shapes=dynamic, external_data=external, verbose=False)
            else:
                torch.onnx.export(module, tuple(inputs.values()), str(tmp), dynamo=False, opset_version=opset,
                                  input_names=names, dynamic_axes={n: {0: "batch"} for n in names})
        # torch.export can specialise the batch without a word (vit_b_16 from an example batch of 1 did).
        import onnx
        m = onnx.load(str(tmp), load_external_data=False)
        init = {i.name for i in m.graph.initializer}
        for vi in m.graph.input:
            if vi.name not in init and vi.type.tensor_type.shape.dim[0].HasField("dim_value"):
                raise RuntimeError(f"input {vi.name} came out with a fixed batch of {vi.type.tensor_type.shape.dim[0].dim_value}")
        for f in scratch.iterdir():
            f.rename(path.parent / f.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list(MODELS), help=", ".join([*MODELS, *EXTRA_MODELS]))
    ap.add_argument("--out", default=str(Path.home() / ".cache" / "onnxscope" / "bench-models"))
    ap.add_argument("--force", action="store_true", help="remake models that exist")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.names:
        path = out / f"{name}.onnx"
        if path.exists() and not args.force:
            print(f"{path} exists")
            continue
        start = time.time()
        try:
            export(name, path)
        except Exception as e:  # one model's exporter failure must not stop the list
            failed.append(name)
            print(f"{name}: export failed: {str(e).splitlines()[0][:200]}")
            continue
        print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.time() - start:.0f} s", flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
