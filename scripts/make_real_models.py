#!/usr/bin/env python3
"""Makes small real exports, the material for the mutation sweep
(scripts/mutate_models.py) and the fuzzer's seeds (scripts/fuzz.sh): real
model definitions at small configurations with random (seeded) weights,
exported by the tools users run, so they hold the patterns real exports have
(bool masks, Where/Expand chains, constant subgraphs that constant folding
evaluates, ai.onnx.ml trees, quantized and fused operators):

  transformers   BERT, DistilBERT, GPT-2, ViT (TorchScript exporter, opset 14,
                 open batch/sequence) and BERT, Llama, ViT (torch.export-based
                 exporter, opset 18)
  torchvision    MobileNetV3-small, SqueezeNet 1.1, a two-stage ResNet
                 (torchvision's ResNet with BasicBlocks), shape (1,3,32,32)
  scikit-learn   through skl2onnx: a scaler + logistic regression pipeline,
                 a random forest, gradient boosting, an SVM, k-means
  ONNX Runtime   quantize_dynamic (MatMulInteger) and quantize_static (QDQ) of
                 the BERT and the CNN; the transformers optimizer's fused BERT
                 (com.microsoft Attention, SkipLayerNormalization, ...)

into ~/.cache/onnxscope/real-models (or --out), with manifest.json (file,
family, exporter, opset, bytes). Never committed; made on demand in a few
minutes. --only NAME[,NAME] makes some of them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx

warnings.filterwarnings("ignore")
OUT_DEFAULT = Path.home() / ".cache" / "onnxscope" / "real-models"


def torch_export(model, args, path: Path, names, dynamo: bool, dynamic: dict | None = None):
    import torch

    model.eval()
    if dynamo:
        torch.onnx.export(model, args, str(path), input_names=names, dynamo=True, opset_version=18, external_data=False)
    else:
        torch.onnx.export(model, args, str(path), input_names=names, dynamo=False, opset_version=14,
                          dynamic_axes=dynamic, do_constant_folding=True)


class HF(object):
    """Wraps a transformers model so every input is positional and the output one tensor."""

    @staticmethod
    def wrap(m, keys):
        import torch

        class W(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, *xs):
                out = self.m(**dict(zip(keys, xs)))
                return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]

        return W()


def text_inputs(vocab: int, seq: int = 16):
    import torch

    g = torch.Generator().manual_seed(0)
    return (torch.randint(0, vocab, (1, seq), generator=g), torch.ones(1, seq, dtype=torch.long))


def transformers_models(out: Path, only):
    import torch
    import transformers as tf

    torch.manual_seed(0)
    made = []
    dyn = {k: {0: "batch", 1: "seq"} for k in ("input_ids", "attention_mask")}
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)

    def want(name):
        return not only or name in only

    if want("bert_ts") or want("bert_dynamo"):
        bert = tf.BertModel(tf.BertConfig(vocab_size=100, max_position_embeddings=64, **small), add_pooling_layer=False)
        w = HF.wrap(bert, ["input_ids", "attention_mask"])
        if want("bert_ts"):
            torch_export(w, text_inputs(100), out / "bert_ts.onnx", ["input_ids", "attention_mask"], False, dyn)
            made.append(("bert_ts.onnx", "transformers BertModel", "torchscript", 14))
        if want("bert_dynamo"):
            torch_export(w, text_inputs(100), out / "bert_dynamo.onnx", ["input_ids", "attention_mask"], True)
            made.append(("bert_dynamo.onnx", "transformers BertModel", "dynamo", 18))
    if want("distilbert_ts"):
        m = tf.DistilBertModel(tf.DistilBertConfig(vocab_size=100, max_position_embeddings=64, dim=32, n_layers=2, n_heads=2,
                                                   hidden_dim=64))
        torch_export(HF.wrap(m, ["input_ids", "attention_mask"]), text_inputs(100), out / "distilbert_ts.onnx",
                     ["input_ids", "attention_mask"], False, dyn)
        made.append(("distilbert_ts.onnx", "transformers DistilBertModel", "torchscript", 14))
    if want("gpt2_ts"):
        m = tf.GPT2Model(tf.GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2))
        torch_export(HF.wrap(m, ["input_ids", "attention_mask"]), text_inputs(100), out / "gpt2_ts.onnx",
                     ["input_ids", "attention_mask"], False, dyn)
        made.append(("gpt2_ts.onnx", "transformers GPT2Model", "torchscript", 14))
    if want("llama_dynamo"):
        m = tf.LlamaModel(tf.LlamaConfig(vocab_size=100, max_position_embeddings=64, num_key_value_heads=1, **small))
        torch_export(HF.wrap(m, ["input_ids", "attention_mask"]), text_inputs(100), out / "llama_dynamo.onnx",
                     ["input_ids", "attention_mask"], True)
        made.append(("llama_dynamo.onnx", "transformers LlamaModel", "dynamo", 18))
    if want("llama_dynamo_mask199"):
        # Static shapes: the exporter's optimizer folds the causal mask into a
        # bool initializer [1,1,199,199] (the pattern of the model whose
        # bit-flipped mask crashed constant folding).
        m = tf.LlamaModel(tf.LlamaConfig(vocab_size=100, max_position_embeddings=256, num_key_value_heads=1, **small))
        torch_export(HF.wrap(m, ["input_ids", "attention_mask"]), text_inputs(100, 199), out / "llama_dynamo_mask199.onnx",
                     ["input_ids", "attention_mask"], True)
        made.append(("llama_dynamo_mask199.onnx", "transformers LlamaModel, causal mask folded", "dynamo", 18))
    if want("gpt2_dynamo"):
        m = tf.GPT2Model(tf.GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2))
        torch_export(HF.wrap(m, ["input_ids", "attention_mask"]), text_inputs(100), out / "gpt2_dynamo.onnx",
                     ["input_ids", "attention_mask"], True)
        made.append(("gpt2_dynamo.onnx", "transformers GPT2Model", "dynamo", 18))
    for name, dynamo in (("vit_ts", False), ("vit_dynamo", True)):
        if not want(name):
            continue
        m = tf.ViTModel(tf.ViTConfig(image_size=32, patch_size=8, num_channels=3, **small), add_pooling_layer=False)
        torch_export(HF.wrap(m, ["pixel_values"]), (torch.randn(1, 3, 32, 32),), out / f"{name}.onnx", ["pixel_values"],
                     dynamo, {"pixel_values": {0: "batch"}})
        made.append((f"{name}.onnx", "transformers ViTModel", "dynamo" if dynamo else "torchscript", 18 if dynamo else 14))
    return made


def torchvision_models(out: Path, only):
    import torch
    import torchvision
    from torchvision.models.resnet import BasicBlock, ResNet

    torch.manual_seed(0)
    made = []
    x = torch.randn(1, 3, 32, 32)
    nets = {
        "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(weights=None, num_classes=10, width_mult=0.25),
        "squeezenet1_1": lambda: torchvision.models.squeezenet1_1(weights=None, num_classes=10),
        "resnet_tiny": lambda: ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, width_per_group=64),
    }
    for name, make in nets.items():
        for dynamo in (False, True):
            tag = f"{name}_{'dynamo' if dynamo else 'ts'}"
            if only and tag not in only:
                continue
            torch_export(make(), (x,), out / f"{tag}.onnx", ["image"], dynamo, {"image": {0: "batch"}})
            made.append((f"{tag}.onnx", f"torchvision {name}", "dynamo" if dynamo else "torchscript", 18 if dynamo else 14))
    return made


def sklearn_models(out: Path, only):
    from skl2onnx import to_onnx
    from sklearn.cluster import KMeans
    from sklearn.datasets import make_classification, make_regression
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = make_classification(n_samples=200, n_features=8, n_informative=5, n_classes=3, random_state=0)
    X = X.astype(np.float32)
    Xr, yr = make_regression(n_samples=200, n_features=8, random_state=0)
    Xr = Xr.astype(np.float32)
    models = {
        "skl_scaler_logreg": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, y),
        "skl_random_forest": lambda: RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, y),
        "skl_gradient_boosting": lambda: GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0).fit(Xr, yr),
        "skl_svc": lambda: SVC(probability=False).fit(X, y),
        "skl_kmeans": lambda: KMeans(n_clusters=3, n_init=2, random_state=0).fit(X),
    }
    made = []
    for name, fit in models.items():
        if only and name not in only:
            continue
        est = fit()
        sample = Xr[:1] if "gradient" in name else X[:1]
        onx = to_onnx(est, sample, target_opset={"": 17, "ai.onnx.ml": 3})
        onnx.save(onx, str(out / f"{name}.onnx"))
        made.append((f"{name}.onnx", f"scikit-learn {type(est).__name__}", "skl2onnx", 17))
    return made


def ort_tool_models(out: Path, only):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

    made = []
    bert, cnn = out / "bert_ts.onnx", out / "resnet_tiny_ts.onnx"
    if (not only or "bert_ts_qdyn" in only) and bert.exists():
        quantize_dynamic(str(bert), str(out / "bert_ts_qdyn.onnx"), weight_type=QuantType.QInt8)
        made.append(("bert_ts_qdyn.onnx", "onnxruntime quantize_dynamic of BertModel", "onnxruntime", 14))

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.batches = iter([{"image": rng.standard_normal((1, 3, 32, 32), dtype=np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    if (not only or "resnet_tiny_qdq" in only) and cnn.exists():
        quantize_static(str(cnn), str(out / "resnet_tiny_qdq.onnx"), Reader(), quant_format=QuantFormat.QDQ)
        made.append(("resnet_tiny_qdq.onnx", "onnxruntime quantize_static (QDQ) of ResNet", "onnxruntime", 14))
    squeeze = out / "squeezenet1_1_dynamo.onnx"
    if (not only or "squeezenet1_1_qop" in only) and squeeze.exists():
        # QOperator wants ORT's pre-processing (shape inference, folded constants) first, as its docs say.
        from onnxruntime.quantization.shape_inference import quant_pre_process

        pre = out / "squeezenet1_1_pre.onnx"
        quant_pre_process(str(squeeze), str(pre))
        quantize_static(str(pre), str(out / "squeezenet1_1_qop.onnx"), Reader(), quant_format=QuantFormat.QOperator)
        pre.unlink()
        made.append(("squeezenet1_1_qop.onnx", "onnxruntime quantize_static (QOperator) of SqueezeNet", "onnxruntime", 18))
    mnv3 = out / "mobilenet_v3_small_ts.onnx"
    if (not only or "mobilenet_v3_small_qop" in only) and mnv3.exists():
        # Hardswish, squeeze-excitation and residual adds: QLinearAdd, QLinearMul, QLinearSigmoid,
        # QLinearGlobalAveragePool, ... (ONNX Runtime's QOperator set beyond convolutions).
        from onnxruntime.quantization.shape_inference import quant_pre_process

        pre = out / "mobilenet_v3_small_pre.onnx"
        quant_pre_process(str(mnv3), str(pre))
        quantize_static(str(pre), str(out / "mobilenet_v3_small_qop.onnx"), Reader(), quant_format=QuantFormat.QOperator)
        pre.unlink()
        made.append(("mobilenet_v3_small_qop.onnx", "onnxruntime quantize_static (QOperator) of MobileNetV3-small",
                     "onnxruntime", 14))
    llama = out / "llama_dynamo.onnx"
    if (not only or "llama_int4" in only) and llama.exists():
        # Weight-only int4 (MatMulNBits, blocks of 32, asymmetric: packed zero points), as LLMs ship.
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        q = MatMulNBitsQuantizer(onnx.load(str(llama)), block_size=32, is_symmetric=False)
        q.process()
        q.model.save_model_to_file(str(out / "llama_int4.onnx"), False)
        made.append(("llama_int4.onnx", "onnxruntime MatMulNBitsQuantizer (int4) of a Llama-style decoder", "onnxruntime", 18))
    if (not only or "bert_ts_ortopt" in only) and bert.exists():
        from onnxruntime.transformers.optimizer import optimize_model

        opt = optimize_model(str(bert), model_type="bert", num_heads=2, hidden_size=32, opt_level=1)
        opt.save_model_to_file(str(out / "bert_ts_ortopt.onnx"))
        made.append(("bert_ts_ortopt.onnx", "onnxruntime transformers optimizer of BertModel", "onnxruntime", 14))
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--only", default="", help="comma-separated model names (file stems)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    made = []
    for family in (transformers_models, torchvision_models, sklearn_models, ort_tool_models):
        try:
            made += family(a.out, only)
        except Exception as e:  # one family failing (a missing package) leaves the others
            print(f"make_real_models: {family.__name__} failed: {type(e).__name__}: {e}", file=sys.stderr)
    manifest_path = a.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for file, family, exporter, opset in made:
        checker = "passes"
        try:
            onnx.checker.check_model(str(a.out / file))
        except Exception as e:  # ORT's tools write what ORT runs and onnx.checker refuses (LayerNormalization at opset 14)
            checker = f"refuses it: {str(e).splitlines()[0]}"
        manifest[file] = {"family": family, "exporter": exporter, "opset": opset, "bytes": os.path.getsize(a.out / file),
                          "onnx_checker": checker}
        print(f"{file:32s} {manifest[file]['bytes']:>10,d} B  {family} ({exporter}); onnx.checker {checker}")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
