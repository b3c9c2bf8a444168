#!/usr/bin/env python3
"""Makes a held-out list of real model exports: model families that are not in
the public benchmark list (scripts/make_bench_models.py), to check onnxscope
on models nobody tuned it on. Random (seeded) weights, no download; an open
batch dimension; into ~/.cache/onnxscope/offlist-models (or --out). Never
committed: made on demand (a few MB to a few hundred MB each).

A model with batch normalization has its running statistics set from one
pass in training mode over 4 seeded random inputs (calibrate_batchnorm):
with the statistics of a fresh layer (mean 0, variance 1) its activations
drift layer by layer, as they never do in a trained model (MobileViT's
outputs came out near 4e-39, subnormal, every runtime 10 times slower on
them; Inception-v3's near 5e11; EfficientNetV2-S's near 1e-6).

  torchvision (image [batch,3,224,224] unless noted):
    resnext50_32x4d (grouped convolutions)  torch.export-based exporter, opset 18
    googlenet (aux_logits off, init_weights) TorchScript exporter, opset 17
    inception_v3 (image [batch,3,299,299], aux_logits off, init_weights)
                                            torch.export-based exporter, opset 18
    mnasnet1_0                              TorchScript exporter, opset 14
    efficientnet_v2_s                       torch.export-based exporter, opset 18
    regnet_x_800mf                          TorchScript exporter, opset 17
    squeezenet1_1                           TorchScript exporter, opset 14
    deeplabv3_mobilenet_v3_large (segmentation, no auxiliary head, its "out" only)
                                            TorchScript exporter, opset 17
    lraspp_mobilenet_v3_large (segmentation, its "out")
                                            torch.export-based exporter, opset 18
    r3d_18     (video [batch,3,8,112,112])  torch.export-based exporter, opset 18
    maxvit_t                                torch.export-based exporter, opset 18
  transformers (random weights from a config; input_ids, attention_mask
  [batch,128] int64 unless noted; last_hidden_state only):
    distilbert (DistilBertModel, default config)
                                            TorchScript exporter, opset 14
    roberta    (RobertaModel, default config: roberta-base's size, ~500 MB)
                                            torch.export-based exporter, opset 18
    t5_encoder (T5EncoderModel, t5-small's size: d_model 512, 6 layers, 8 heads, d_ff 2048)
                                            TorchScript exporter, opset 17
    whisper_encoder (WhisperModel's encoder, whisper-tiny's size: d_model 384,
               4 layers, 6 heads; input_features [batch,80,3000])
                                            torch.export-based exporter, opset 18
    wav2vec2   (Wav2Vec2Model, default config but 6 layers; input_values [batch,16000])
                                            TorchScript exporter, opset 17
    deit_small (ViTModel, DeiT-small's size: hidden 384, 12 layers, 6 heads,
               intermediate 1536; pixel_values [batch,3,224,224])
                                            torch.export-based exporter, opset 18
    mobilevit  (MobileViTModel, default config: MobileViT-small; pixel_values [batch,3,256,256])
                                            TorchScript exporter, opset 17
    segformer  (SegformerModel, default config: SegFormer-B0; pixel_values [batch,3,224,224])
                                            torch.export-based exporter, opset 18
    opt        (OPTModel, default config but 6 layers: a causal decoder with an attention mask;
               its positions are the mask's running sum, so it needs a mask of 0 and 1,
               which bench_vs_ort.py and `onnxscope run` give an input named like a mask)
                                            TorchScript exporter, opset 14

Then, for example (scripts/bench_vs_ort.py --offlist runs them all at --batches):

    .venv/bin/python scripts/make_offlist_models.py resnext50_32x4d opt
    .venv/bin/python scripts/bench_vs_ort.py --threads 2 --offlist --batches 1
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from make_bench_models import IMAGE, _Hidden, _ImageHidden, export_module, text_inputs  # (the public list's)


def tv(name, shape=IMAGE, sub=None, input_name="image", **kw):
    """A torchvision model (from torchvision.models or its `sub` package) with
    random weights; a segmentation model's "out" only."""
    def make():
        import torchvision
        ns = getattr(torchvision.models, sub) if sub else torchvision.models
        model = getattr(ns, name)(weights=None, **kw)
        return (_Out(model) if sub == "segmentation" else model), {input_name: torch.randn(*shape)}
    return make


class _Out(torch.nn.Module):
    """A torchvision segmentation model's "out" (it returns a dict)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, image):
        return self.inner(image)["out"]


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    return _Hidden(DistilBertModel(DistilBertConfig())), text_inputs()


def roberta():
    from transformers import RobertaConfig, RobertaModel
    return _Hidden(RobertaModel(RobertaConfig(), add_pooling_layer=False)), text_inputs()


def t5_encoder():
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, vocab_size=32128)
    return _Hidden(T5EncoderModel(cfg)), text_inputs()


class _AudioHidden(_Hidden):
    def forward(self, input_values):
        return self.inner(input_values).last_hidden_state


def whisper_encoder():
    from transformers import WhisperConfig, WhisperModel
    cfg = WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
                        decoder_layers=4, decoder_attention_heads=6, decoder_ffn_dim=1536, num_mel_bins=80)
    return _AudioHidden(WhisperModel(cfg).get_encoder()), {"input_features": torch.randn(1, 80, 3000)}


def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    return _AudioHidden(Wav2Vec2Model(Wav2Vec2Config(num_hidden_layers=6))), {"input_values": torch.randn(1, 16000)}


def deit_small():
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536)
    return _ImageHidden(ViTModel(cfg, add_pooling_layer=False)), {"pixel_values": torch.randn(*IMAGE)}


def mobilevit():
    from transformers import MobileViTConfig, MobileViTModel
    return _ImageHidden(MobileViTModel(MobileViTConfig())), {"pixel_values": torch.randn(1, 3, 256, 256)}


def segformer():
    from transformers import SegformerConfig, SegformerModel
    return _ImageHidden(SegformerModel(SegformerConfig())), {"pixel_values": torch.randn(*IMAGE)}


def opt():
    from transformers import OPTConfig, OPTModel
    return _Hidden(OPTModel(OPTConfig(num_hidden_layers=6))), text_inputs()


# name -> (builder, exporter, opset)
MODELS = {
    "resnext50_32x4d": (tv("resnext50_32x4d"), "dynamo", 18),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), "torchscript", 17),
    "inception_v3": (tv("inception_v3", (1, 3, 299, 299), aux_logits=False, init_weights=True), "dynamo", 18),
    "mnasnet1_0": (tv("mnasnet1_0"), "torchscript", 14),
    "efficientnet_v2_s": (tv("efficientnet_v2_s"), "dynamo", 18),
    "regnet_x_800mf": (tv("regnet_x_800mf"), "torchscript", 17),
    "squeezenet1_1": (tv("squeezenet1_1"), "torchscript", 14),
    "deeplabv3_mobilenet_v3_large": (tv("deeplabv3_mobilenet_v3_large", sub="segmentation", weights_backbone=None,
                                        aux_loss=False), "torchscript", 17),
    "lraspp_mobilenet_v3_large": (tv("lraspp_mobilenet_v3_large", sub="segmentation", weights_backbone=None),
                                  "dynamo", 18),
    "r3d_18": (tv("r3d_18", (1, 3, 8, 112, 112), sub="video", input_name="video"), "dynamo", 18),
    "maxvit_t": (tv("maxvit_t"), "dynamo", 18),
    "distilbert": (distilbert, "torchscript", 14),
    "roberta": (roberta, "dynamo", 18),
    "t5_encoder": (t5_encoder, "torchscript", 17),
    "whisper_encoder": (whisper_encoder, "dynamo", 18),
    "wav2vec2": (wav2vec2, "torchscript", 17),
    "deit_small": (deit_small, "dynamo", 18),
    "mobilevit": (mobilevit, "torchscript", 17),
    "segformer": (segformer, "dynamo", 18),
    "opt": (opt, "torchscript", 14),
}


def calibrate_batchnorm(module: torch.nn.Module, inputs: dict) -> None:
    """Running mean and variance of each batch normalization: those of one
    training-mode pass over a batch of 4 random inputs shaped like `inputs`
    (float inputs only: the models with batch normalization here take images,
    video or audio). Without it activations drift from layer to layer."""
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: the statistics of the pass itself
    module.train()
    with torch.no_grad():
        module(*(torch.randn(4, *v.shape[1:]) for v in inputs.values()))
    module.eval()


def export(name: str, path: Path) -> None:
    make, exporter, opset = MODELS[name]
    torch.manual_seed(0)
    module, inputs = make()
    calibrate_batchnorm(module, inputs)
    export_module(module, inputs, exporter, opset, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=list(MODELS), help=", ".join(MODELS))
    ap.add_argument("--out", default=str(Path.home() / ".cache" / "onnxscope" / "offlist-models"))
    ap.add_argument("--force", action="store_true", help="remake models that exist")
    args = ap.parse_args()
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        ap.error("unknown model: " + ", ".join(unknown))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    made, failed = [], []
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
            print(f"{name}: export failed: {(str(e).strip().splitlines() or [type(e).__name__])[0][:200]}", flush=True)
            continue
        made.append(name)
        print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.time() - start:.0f} s", flush=True)
    if made:
        print("made: " + ", ".join(made))
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
