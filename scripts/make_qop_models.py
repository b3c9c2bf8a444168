#!/usr/bin/env python3
"""Makes ONNX Runtime-quantized versions of benchmark-list models, as a user
who runs onnxruntime's quantizer on an export brings them: the export of
scripts/make_bench_models.py with its batch fixed to 1, onnxruntime's
quant_pre_process, then quantize_static (uint8 activations, int8 weights)
calibrated on 4 seeded random images, in the QOperator format (QLinearConv,
QLinearAdd, QGemm, ...) or QDQ (also with int8 activations and per-channel
weights: qdq_s8pc). Written next to the source models
(~/.cache/onnxscope/bench-models/<name>_qop.onnx, <name>_qdq.onnx); never
committed.

Dynamic quantization (--formats qdyn,qdyn_ortsaved, for the transformers:
DYNAMIC_MODELS): quantize_dynamic (int8 weights, uint8 activations
quantized at run time) as onnxruntime's docs recommend for them, written
<name>_qdyn.onnx (DynamicQuantizeLinear, MatMulInteger, Cast, Mul per
linear layer), and that model as onnxruntime's optimizer saves it
(optimized_model_filepath, extended level: MatMulIntegerToFloat and
DynamicQuantizeMatMul, its fused attention and normalizations),
<name>_qdyn_ortsaved.onnx.

    .venv/bin/python scripts/make_bench_models.py resnet18
    .venv/bin/python scripts/make_qop_models.py resnet18
    .venv/bin/python scripts/bench_vs_ort.py --threads 2 ~/.cache/onnxscope/bench-models/resnet18_qop.onnx
    .venv/bin/python scripts/make_qop_models.py            # all of QOP_MODELS
    .venv/bin/python scripts/bench_vs_ort.py --threads 2 --qop-list
    .venv/bin/python scripts/make_qop_models.py --formats qdyn,qdyn_ortsaved bert_base_ts14 gpt2

See docs/cpu-engine.md ("QOperator models").
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

BENCH = Path.home() / ".cache" / "onnxscope" / "bench-models"

# The models bench_vs_ort.py --qop-list runs (each made here from the public
# list's export at batch 1): CNN families with residual adds, depthwise and
# squeeze-excitation blocks, channel shuffles and concatenations, and two
# transformer-style ones (ConvNeXt's MatMul + Add, ViT's attention).
QOP_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0",
              "regnet_y_400mf", "shufflenet_v2", "densenet121", "convnext_tiny", "vit_b_16"]

# Transformers of the public list that dynamic quantization is for.
DYNAMIC_MODELS = ["bert_base", "bert_base_ts14", "gpt2", "vit_hf", "llama_gqa"]


def batch_one(src: Path, dst: Path) -> tuple[str, list[int]]:
    """The model with every symbolic first input/output dimension set to 1; its image input's name and shape."""
    m = onnx.load(str(src))
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            dims[0].ClearField("dim_param")
            dims[0].dim_value = 1
    onnx.save(m, str(dst))
    inp = m.graph.input[0]
    return inp.name, [d.dim_value for d in inp.type.tensor_type.shape.dim]


def dynamic(pre: Path, out: Path, saved: Path | None) -> None:
    """quantize_dynamic of `pre` into `out` (made once); with `saved`, also
    `out` as onnxruntime's optimizer saves it."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if not out.exists():
        quantize_dynamic(str(pre), str(out), weight_type=QuantType.QInt8)
    if saved is not None:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = str(saved)
        ort.InferenceSession(str(out), so, providers=["CPUExecutionProvider"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=QOP_MODELS, help="bench-models stems (default: QOP_MODELS, what bench_vs_ort.py --qop-list runs)")
    ap.add_argument("--dir", type=Path, default=BENCH)
    ap.add_argument("--formats", default="qop",
                    help="comma-separated: qop (QOperator), qdq, qdq_s8pc (QDQ with int8 activations and per-channel weights), "
                         "qdyn (quantize_dynamic), qdyn_ortsaved (that, saved by onnxruntime's optimizer)")
    a = ap.parse_args()
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    # tag -> (format, activation type, per-channel weights)
    formats = {"qop": (QuantFormat.QOperator, QuantType.QUInt8, False), "qdq": (QuantFormat.QDQ, QuantType.QUInt8, False),
               "qdq_s8pc": (QuantFormat.QDQ, QuantType.QInt8, True)}
    ok = True
    for name in a.names:
        src = a.dir / f"{name}.onnx"
        if not src.exists():
            print(f"{src}: missing (scripts/make_bench_models.py {name} makes it)", file=sys.stderr)
            ok = False
            continue
        with tempfile.TemporaryDirectory() as tmp:
            fixed, pre = Path(tmp) / "fixed.onnx", Path(tmp) / "pre.onnx"
            input_name, shape = batch_one(src, fixed)
            quant_pre_process(str(fixed), str(pre))

            class Reader(CalibrationDataReader):
                def __init__(self):
                    rng = np.random.default_rng(0)
                    self.batches = iter([{input_name: rng.standard_normal(shape, dtype=np.float32)} for _ in range(4)])

                def get_next(self):
                    return next(self.batches, None)

            for tag in filter(None, a.formats.split(",")):
                out = a.dir / f"{name}_{tag}.onnx"
                if tag in ("qdyn", "qdyn_ortsaved"):
                    dynamic(pre, a.dir / f"{name}_qdyn.onnx", out if tag == "qdyn_ortsaved" else None)
                    print(f"wrote {out}")
                    continue
                fmt, activations, per_channel = formats[tag]
                quantize_static(str(pre), str(out), Reader(), quant_format=fmt, activation_type=activations,
                                weight_type=QuantType.QInt8, per_channel=per_channel)
                print(f"wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
