#!/usr/bin/env python3
"""Compatibility sweep: the models other tools write, on onnxscope against
ONNX Runtime.

Writes, with the venv's onnxruntime, skl2onnx, onnxmltools and
onnxconverter-common, the models their tools produce from the small real
exports of scripts/make_real_models.py (made first when missing) and from a
few classical estimators:

  ONNX Runtime   quantize_static QDQ and QOperator, per tensor and per
                 channel; quantize_dynamic; the transformers optimizer
                 (bert and gpt2 model types); MatMulNBitsQuantizer (int4,
                 symmetric and not); the model a session saves after its
                 graph rewrites (optimized_model_filepath, extended level)
  onnxruntime-genai  its model builder's int4 CPU model of a small random
                 Llama (MatMulNBits, GroupQueryAttention with rotary and a
                 cache): a prompt and a decoding step
  float16        onnxconverter-common's float16 conversion (inputs and
                 outputs kept float32)
  scikit-learn   skl2onnx pipelines: scaler + logistic regression, random
                 forest, gradient boosting, SVM, k-means, one-hot encoder
  LightGBM, XGBoost  through onnxmltools

then runs each on onnxscope's reference and cpu engines and on onnxruntime
(CPU provider, all graph optimizations, as users run it) with the same
inputs, and prints one table: whether it loads, each engine's result, and
the largest difference of any output. An engine that differs from that but
agrees with onnxruntime run without its graph rewrites (the model's own
arithmetic; its fused kernels round some values a quantization step
otherwise) is marked ok* with both numbers; one that agrees with onnxruntime
run with its MatMulNBits at accuracy_level 0 (level 4 lets it round A to int8
blocks; the operator's formula keeps A float) is marked ok+. Inputs are seeded by model name.
Float outputs agree within 1e-4 (|x| + max |x|), max |x| the output's
largest magnitude (float16 models 1e-2), so that outputs a quantized
random-weight network squeezes to 1e-10 are held to their own scale;
quantized outputs within one step, integer labels exactly; anything else is
a difference and says so. --public adds the public benchmark list's models through onnxruntime's tools: each CNN
quantized to QDQ per channel and QOperator per tensor, the transformers
(and vit_b_16, swin_t) through the transformers optimizer and
quantize_dynamic, every one saved by an onnxruntime session; a tool that
fails on a model is a row that says so. Classifiers are converted without ZipMap
(probabilities as a tensor), since onnxscope's dumps hold tensors only.

    .venv/bin/python scripts/compat_sweep.py
    .venv/bin/python scripts/compat_sweep.py --only 'skl|lgbm' --markdown table.md
"""
import argparse
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from onnxscope_dump_writer import read_tensors  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("ONNXSCOPE_DATA", Path.home() / ".cache" / "onnxscope")) / "real-models"
OUT_DEFAULT = REAL.parent / "compat-sweep"


class Reader:
    """Calibration batches for quantize_static: the model's image input."""

    def __init__(self, name, shape, n=4):
        rng = np.random.default_rng(0)
        self.it = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.it, None)


def image_input(path):
    m = onnx.load(str(path))
    i = m.graph.input[0]
    dims = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
    return i.name, dims


BENCH = REAL.parent / "bench-models"  # scripts/make_bench_models.py: the public benchmark list


# The public benchmark list (scripts/make_bench_models.py) by what ONNX Runtime's tools do with it.
PUBLIC_CNNS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0",
               "regnet_y_400mf", "densenet121", "convnext_tiny", "swin_t", "vit_b_16", "shufflenet_v2", "ssdlite320"]
# (model, the transformers optimizer's model type (None: it has none for it), heads, hidden, quantize_dynamic too)
PUBLIC_TRANSFORMERS = [("bert_base", "bert", 12, 768, True), ("bert_base_ts14", "bert", 12, 768, True),
                       ("gpt2", "gpt2", 12, 768, True), ("llama_gqa", None, 0, 0, True), ("vit_hf", "vit", 12, 768, True),
                       ("vit_b_16", "vit", 12, 768, False), ("swin_t", "swin", 0, 0, False)]


def tool(failed, stem, what, fn):
    """Runs one of onnxruntime's tools; True when it wrote its model, else a row in `failed` that says why."""
    try:
        fn()
        return True
    except Exception as e:  # noqa: BLE001 - the tool's own failure is the finding
        failed.append((stem, what, f"onnxruntime's tool failed: {type(e).__name__}: {e}"[:200]))
        return False


def make_ort_tools(out, only, failed, public=False):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class R(Reader, CalibrationDataReader):
        pass

    made = []
    all_four = [(QuantFormat.QDQ, "qdq", False), (QuantFormat.QDQ, "qdq", True), (QuantFormat.QOperator, "qop", False),
                (QuantFormat.QOperator, "qop", True)]
    cnns = [(REAL, s, all_four) for s in ("resnet_tiny_ts", "mobilenet_v3_small_ts", "squeezenet1_1_dynamo")]
    if public:  # each format and each granularity once per model of the public list
        cnns += [(BENCH, s, [all_four[1], all_four[2]]) for s in PUBLIC_CNNS]
    for where, src, variants in cnns:
        path = where / f"{src}.onnx"
        if not path.exists() or (only and not any(re.search(only, f"{src}_{t}{'_pc' if pc else ''}") for _, t, pc in variants)):
            continue
        pre = out / f"{src}_pre.onnx"
        if not tool(failed, f"{src}_pre", f"quant_pre_process of {src}", lambda: quant_pre_process(str(path), str(pre))):
            continue
        name, shape = image_input(pre)
        for fmt, tag, per_channel in variants:
            stem = f"{src}_{tag}{'_pc' if per_channel else ''}"
            if only and not re.search(only, stem):
                continue
            what = f"quantize_static {tag.upper()}{' per channel' if per_channel else ''} of {src}"
            if tool(failed, stem, what, lambda: quantize_static(str(pre), str(out / f"{stem}.onnx"), R(name, shape),
                                                                 quant_format=fmt, per_channel=per_channel)):
                made.append((stem, what, "quantized"))
        pre.unlink()
    # (where, model, the optimizer's model type or None, heads, hidden, quantize_dynamic too)
    transformers = [(REAL, "bert_ts", "bert", 2, 32, True), (REAL, "gpt2_ts", "gpt2", 2, 32, True)]
    if public:
        transformers += [(BENCH, *t) for t in PUBLIC_TRANSFORMERS]
    for where, src, kind, heads, hidden, qdyn in transformers:
        path = where / f"{src}.onnx"
        if not path.exists():
            continue
        stem = f"{src}_qdyn"
        if qdyn and (not only or re.search(only, stem)):
            if tool(failed, stem, f"quantize_dynamic of {src}",
                    lambda: quantize_dynamic(str(path), str(out / f"{stem}.onnx"), weight_type=QuantType.QInt8)):
                made.append((stem, f"quantize_dynamic of {src}", "float"))
        stem = f"{src}_ortopt"
        if kind and (not only or re.search(only, stem)):
            from onnxruntime.transformers.optimizer import optimize_model

            def optimize():
                opt = optimize_model(str(path), model_type=kind, num_heads=heads, hidden_size=hidden, opt_level=1)
                opt.save_model_to_file(str(out / f"{stem}.onnx"))

            if tool(failed, stem, f"transformers optimizer ({kind}) of {src}", optimize):
                made.append((stem, f"transformers optimizer ({kind}) of {src}", "float"))
    # The models onnxruntime saves after its graph rewrites (FusedConv, FusedMatMul, BiasGelu, ...).
    import onnxruntime as ort

    saved = [(REAL, s) for s in ("resnet_tiny_ts", "mobilenet_v3_small_ts", "bert_ts", "gpt2_ts", "llama_dynamo")]
    # and of the quantized models above (MatMulIntegerToFloat, DynamicQuantizeMatMul, QLinear* from QDQ)
    saved += [(out, s) for s in ("resnet_tiny_ts_qdq", "mobilenet_v3_small_ts_qop", "bert_ts_qdyn")]
    if public:
        saved += [(BENCH, s) for s in dict.fromkeys(PUBLIC_CNNS + [t[0] for t in PUBLIC_TRANSFORMERS])]
    for where, src in saved:
        path = where / f"{src}.onnx"
        stem = f"{src}_ortsaved"
        if not path.exists() or (only and not re.search(only, stem)):
            continue
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = str(out / f"{stem}.onnx")
        what = f"onnxruntime's saved optimized model (extended) of {src}"
        if tool(failed, stem, what, lambda: ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])):
            made.append((stem, what, "float"))
    llama = REAL / "llama_dynamo.onnx"
    if llama.exists():
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        for sym in (False, True):
            stem = f"llama_int4{'_sym' if sym else ''}"
            if only and not re.search(only, stem):
                continue
            q = MatMulNBitsQuantizer(onnx.load(str(llama)), block_size=32, is_symmetric=sym)
            q.process()
            q.model.save_model_to_file(str(out / f"{stem}.onnx"), False)
            made.append((stem, f"MatMulNBitsQuantizer int4 {'symmetric' if sym else 'asymmetric'} of llama_dynamo", "float"))
    return made


def make_genai(out, only, failed):
    """A small Llama (random weights, 2 layers, grouped-query heads) through onnxruntime-genai's model
    builder at int4: MatMulNBits, GroupQueryAttention with rotary and a KV cache, SkipSimplifiedLayerNormalization.
    Two rows: a prompt (empty cache) and a decoding step on a cache (their feeds in GENAI_FEEDS)."""
    stems = [s for s in ("genai_llama_int4", "genai_llama_int4_step") if not only or re.search(only, s)]
    if not stems:
        return []
    try:
        import onnxruntime_genai  # noqa: F401  (the builder ships with it)
        import torch
        from tokenizers import Tokenizer, models, pre_tokenizers
        from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    except ImportError as e:
        failed.append(("genai_llama_int4", "onnxruntime-genai's model builder", f"not installed: {e}"))
        return []
    src, built = out / "genai_src", out / "genai_built"
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).eval().save_pretrained(str(src))
    tok = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(256)}, unk_token="t0"))  # the builder wants one
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", bos_token="t1", eos_token="t2").save_pretrained(str(src))
    what = "onnxruntime-genai model builder int4 (cpu) of a 2-layer Llama"
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(src), "-o", str(built), "-p", "int4",
           "-e", "cpu", "-c", str(out / "genai_cache")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        failed.append(("genai_llama_int4", what, f"the builder failed: {p.stderr.strip().splitlines()[-1:]}"))
        return []
    m = onnx.load(str(built / "model.onnx"))  # external data read in: one self-contained file per row
    made = []
    for stem in stems:
        onnx.save(m, str(out / f"{stem}.onnx"))
        made.append((stem, what + (": a decoding step on a 7-token cache" if stem.endswith("step") else ": an 8-token prompt"),
                     "float"))
    return made


def genai_feeds(stem, rng):
    """Feeds of the genai rows: batch 2, an 8-token prompt on an empty cache, or 1 token on 7 cached."""
    step = stem.endswith("step")
    S, P = (1, 7) if step else (8, 0)
    feeds = {"input_ids": rng.integers(0, 256, size=(2, S)).astype(np.int64),
             "attention_mask": np.ones((2, P + S), np.int64)}
    for layer in range(2):
        for kv in ("key", "value"):
            feeds[f"past_key_values.{layer}.{kv}"] = rng.standard_normal((2, 2, P, 16)).astype(np.float32)
    return feeds


def make_float16(out, only):
    from onnxconverter_common import float16

    made = []
    for src in ("resnet_tiny_ts", "bert_ts"):
        path = REAL / f"{src}.onnx"
        stem = f"{src}_fp16"
        if not path.exists() or (only and not re.search(only, stem)):
            continue
        m = float16.convert_float_to_float16(onnx.load(str(path)), keep_io_types=True)
        onnx.save(m, str(out / f"{stem}.onnx"))
        made.append((stem, f"float16 conversion of {src} (float32 inputs and outputs)", "float16"))
    return made


def make_classical(out, only):
    from skl2onnx import to_onnx
    from sklearn.cluster import KMeans
    from sklearn.compose import ColumnTransformer
    from sklearn.datasets import make_classification, make_regression
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.svm import SVC

    X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=3, random_state=0)
    X = X.astype(np.float32)
    Xr, yr = make_regression(n_samples=300, n_features=8, random_state=0)
    Xr = Xr.astype(np.float32)
    Xc = np.concatenate([np.random.default_rng(0).integers(0, 4, size=(300, 2)).astype(np.float32), X[:, :4]], axis=1)
    no_zipmap = {"zipmap": False}
    models = {
        "skl_scaler_logreg": (lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, y), X, no_zipmap),
        "skl_random_forest": (lambda: RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0).fit(X, y), X, no_zipmap),
        "skl_gradient_boosting": (lambda: GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0).fit(Xr, yr), Xr, None),
        "skl_svc": (lambda: SVC(probability=False).fit(X, y), X, None),
        "skl_kmeans": (lambda: KMeans(n_clusters=3, n_init=2, random_state=0).fit(X), X, None),
        "skl_onehot_logreg": (lambda: make_pipeline(
            ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), [0, 1])], remainder="passthrough"),
            LogisticRegression(max_iter=500)).fit(Xc, y), Xc, no_zipmap),
    }
    made = []
    for name, (fit, sample, options) in models.items():
        if only and not re.search(only, name):
            continue
        est = fit()
        onx = to_onnx(est, sample[:1], target_opset={"": 17, "ai.onnx.ml": 3},
                      options={id(est): options} if options else None)
        onnx.save(onx, str(out / f"{name}.onnx"))
        made.append((name, f"skl2onnx {type(est).__name__}", "classical"))

    import lightgbm
    import onnxmltools
    import xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    boosters = {
        "lgbm_classifier": (lambda: lightgbm.LGBMClassifier(n_estimators=10, num_leaves=8, verbose=-1).fit(X, y), X),
        "lgbm_regressor": (lambda: lightgbm.LGBMRegressor(n_estimators=10, num_leaves=8, verbose=-1).fit(Xr, yr), Xr),
        "xgb_classifier": (lambda: xgboost.XGBClassifier(n_estimators=10, max_depth=3).fit(X, y), X),
        "xgb_regressor": (lambda: xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(Xr, yr), Xr),
    }
    for name, (fit, sample) in boosters.items():
        if only and not re.search(only, name):
            continue
        est = fit()
        types = [("input", FloatTensorType([None, sample.shape[1]]))]
        conv = onnxmltools.convert_lightgbm if name.startswith("lgbm") else onnxmltools.convert_xgboost
        kwargs = {"zipmap": False} if name.endswith("classifier") and name.startswith("lgbm") else {}
        onx = conv(est, initial_types=types, target_opset=15, **kwargs)  # the highest onnxmltools 1.16 writes
        onnx.save(onx, str(out / f"{name}.onnx"))
        made.append((name, f"onnxmltools {type(est).__name__}", "classical"))
    return made


def feeds_for(path, rng):
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else (8 if "seq" in str(d).lower() else 2) for d in i.shape]
        if i.type == "tensor(float)":
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
        elif i.type == "tensor(int64)":
            feeds[i.name] = (np.ones(shape, np.int64) if "mask" in i.name else rng.integers(0, 100, size=shape).astype(np.int64))
        else:
            raise RuntimeError(f"input {i.name} of type {i.type}: the sweep feeds float and int64 only")
    return sess, feeds


def run_onnxscope(cli, path, npz, engine, names, work):
    out = work / f"{path.stem}_{engine}.h5"
    try:
        p = subprocess.run([cli, "run", str(path), "--engine", engine, "--inputs", str(npz), "--out", str(out)],
                           capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return None, "did not finish within 30 minutes"
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if "error" in l] or p.stderr.splitlines() or ["(no message)"]
        return None, lines[0][:160]
    got = read_tensors(str(out), names)
    out.unlink()
    return got, None


def dequantize_steps(path):
    """{graph output: its quantization step} for outputs a DequantizeLinear with one scale makes: a
    quantized value read as float, which agrees within one step as the quantized outputs do."""
    m = onnx.load(str(path), load_external_data=False)
    inits = {t.name: t for t in m.graph.initializer}
    outs = {o.name for o in m.graph.output}
    steps = {}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] in outs and n.input[1] in inits:
            scale = onnx.numpy_helper.to_array(inits[n.input[1]])
            if scale.size == 1:
                steps[n.output[0]] = float(scale.reshape(-1)[0])
    return steps


def compare(got, want, kind, steps=None):
    """(ok, largest difference as text). steps: {output: quantization step} of dequantized outputs."""
    worst, ok = 0.0, True
    notes = []
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            return False, f"output {name} missing"
        if g.shape != w.shape or g.dtype != w.dtype:
            return False, f"{name}: {g.dtype}{list(g.shape)} against {w.dtype}{list(w.shape)}"
        if steps and name in steps and np.all(np.isfinite(g)) and np.all(np.isfinite(w)):
            step = steps[name]
            d = np.abs(g.astype(np.float64) - w.astype(np.float64))
            worst = max(worst, float(d.max(initial=0)))
            apart = int((d > step * 1e-3).sum())
            ok &= bool(np.all(d <= step * (1 + 1e-4)))  # two dequantized values, each rounded to float
            if apart:
                notes.append(f"{name}: {apart} of {w.size} values {float(d.max()) / step:.3g} step(s) of {step:.3g} apart")
            continue
        if w.dtype.kind == "f":
            tol = 1e-2 if kind == "float16" else 1e-4
            gf, wf = g.astype(np.float64), w.astype(np.float64)
            if not np.array_equal(np.isnan(gf), np.isnan(wf)) or not np.array_equal(np.isinf(gf), np.isinf(wf)):
                return False, f"{name}: non-finite values differ"
            fin = np.isfinite(wf)
            d = np.abs(gf - wf)[fin]
            if d.size:
                # Held to the output's own scale: logits of 1e-10 (a random-weight network quantized
                # to nearly nothing) agree only if they agree to 1e-4 of that, not of 1.
                scale = float(np.abs(wf[fin]).max())
                worst = max(worst, float(d.max()))
                ok &= bool(np.all(d <= tol * scale + tol * np.abs(wf[fin])))
                if scale < 1e-3:
                    notes.append(f"{name}: outputs of at most {scale:.1e}")
        elif w.dtype in (np.uint8, np.int8):
            d = np.abs(g.astype(np.int32) - w.astype(np.int32))
            worst = max(worst, float(d.max(initial=0)))
            ok &= int(d.max(initial=0)) <= 1
            if d.max(initial=0) == 1:
                notes.append(f"{int((d == 1).sum())} value(s) one step apart")
        else:
            n = int((g != w).sum())
            ok &= n == 0
            if n:
                notes.append(f"{name}: {n} of {w.size} differ")
    return ok, f"{worst:.2e}" + (f" ({'; '.join(notes)})" if notes else "")


def exact_matmul_nbits(path, names, feeds):
    """onnxruntime's outputs with every MatMulNBits at accuracy_level 0, or None when the model has
    none above 0. At level 4 (what the genai builder writes for CPU) onnxruntime may quantize A to int8
    per block, as the attribute allows; the operator's formula, which onnxscope computes, keeps A float."""
    import onnxruntime as ort

    m = onnx.load(str(path))
    changed = False
    for n in m.graph.node:
        if n.op_type == "MatMulNBits":
            for at in n.attribute:
                if at.name == "accuracy_level" and at.i > 0:
                    at.i, changed = 0, True
    if not changed:
        return None
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip(names, sess.run(names, feeds)))


def trace(cli, path, npz, work):
    """Why a model differs: onnxscope's reference against onnxruntime's own intermediate tensors
    (scripts/dump_onnxruntime.py, graph rewrites off) with `onnxscope diff`, each node re-run on
    onnxruntime's inputs (the error it introduces itself), and where the two runs first part."""
    import json

    ours, theirs = work / f"{path.stem}_trace_ours.h5", work / f"{path.stem}_trace_ort.h5"
    try:
        subprocess.run([cli, "run", str(path), "--engine", "reference", "--inputs", str(npz), "--out", str(ours)],
                       capture_output=True, check=True, timeout=1800)
        subprocess.run([sys.executable, str(ROOT / "scripts" / "dump_onnxruntime.py"), str(path), "--out", str(theirs),
                        "--inputs-from", str(ours)], capture_output=True, check=True, timeout=1800)
        p = subprocess.run([cli, "diff", str(path), "--engines", f"dump:{theirs},reference", "--inputs-from", str(ours),
                            "--quant-steps", "1", "--json"], capture_output=True, text=True, timeout=3600)
        d = json.loads(p.stdout)
    except (subprocess.SubprocessError, ValueError) as e:
        return f"not traced ({type(e).__name__})"
    finally:
        for f in (ours, theirs):
            f.unlink(missing_ok=True)
    worst_float, worst_steps, worst_node, quantizing = 0.0, 0.0, "", False
    for n in d.get("nodes", []):
        outs = n.get("outputs", [])
        if any(o.get("quant_step", 0) > 0 for o in outs) or any(o.get("dtype_b") in ("uint8", "int8") for o in outs):
            quantizing = True
            intro = n.get("introduced", 0.0) / max(o.get("quant_step", 0) or 1.0 for o in outs) \
                if all(o.get("dtype_b") == "float" for o in outs) else n.get("introduced", 0.0)
            worst_steps = max(worst_steps, intro)
        elif n.get("introduced", 0.0) > worst_float:
            worst_float, worst_node = n.get("introduced", 0.0), n.get("node", "")
    first = d.get("first_divergence")
    if not first:
        return ("traced against onnxruntime's own intermediate tensors (its run with every tensor exposed): every "
                "node within one quantization step of them; onnxruntime's usual run rounds the outputs otherwise")
    return (f"traced against onnxruntime's own intermediate tensors: every node fed onnxruntime's inputs agrees "
            f"(largest error a float node introduces {worst_float:.1e}{f' at {worst_node}' if worst_node else ''}"
            + (f", a quantizing node {worst_steps:.3g} step(s)); the runs first part at {first} and the gap grows from "
               f"values that round to the neighbouring quantization step" if quantizing else
               f"); the runs first part at {first}") + f" ({d.get('diverging', '?')} nodes diverge)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--onnxscope", default=str(ROOT / "build" / "app" / "onnxscope"))
    ap.add_argument("--only", default="", help="models whose name matches this regular expression")
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--no-trace", action="store_true",
                    help="do not trace a quantized model that differs (onnxscope diff against onnxruntime's tensors)")
    ap.add_argument("--public", action="store_true",
                    help="also the public benchmark list (scripts/make_bench_models.py) through onnxruntime's "
                         "tools: about 60 models more, an hour or more on 2 cores")
    a = ap.parse_args()
    import onnxruntime as ort

    a.out.mkdir(parents=True, exist_ok=True)
    if not (REAL / "bert_ts.onnx").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_real_models.py")], check=True)
    failed = []
    made = (make_ort_tools(a.out, a.only, failed, a.public) + make_genai(a.out, a.only, failed) +
            make_float16(a.out, a.only) + make_classical(a.out, a.only))
    rows = [(stem, what, [("TOOL FAILED", why), ("TOOL FAILED", "")], "") for stem, what, why in failed]
    for stem, what, cells, _ in rows:
        print(f"{stem:30s} {cells[0][1]}", flush=True)
    print(f"onnxruntime {ort.__version__}; {len(made)} models in {a.out}", flush=True)
    for stem, what, kind in made:
        path = a.out / f"{stem}.onnx"
        sess, feeds = feeds_for(path, np.random.default_rng(zlib.crc32(stem.encode())))  # the same with --only
        if stem.startswith("genai_"):
            feeds = genai_feeds(stem, np.random.default_rng(zlib.crc32(stem.encode())))
        npz = a.out / f"{stem}_inputs.npz"
        np.savez(npz, **feeds)
        names = [o.name for o in sess.get_outputs()]
        want = dict(zip(names, sess.run(names, feeds)))
        # onnxruntime without its graph rewrites: the graph's own arithmetic. Its fusions (quantize_dynamic's
        # MatMulInteger into MatMulIntegerToFloat, ...) round differently, a quantization step apart at times.
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        plain = dict(zip(names, ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(names, feeds)))
        exact = exact_matmul_nbits(path, names, feeds)
        cells = []
        for engine in ("reference", "cpu"):
            got, err = run_onnxscope(a.onnxscope, path, npz, engine, set(names), a.out)
            if err:
                cells.append(("ERROR", err))
            else:
                steps = dequantize_steps(path) if kind == "quantized" else None
                ok, diff = compare(got, want, kind, steps)
                if not ok:
                    ok_plain, diff_plain = compare(got, plain, kind, steps)
                    if ok_plain:
                        cells.append(("ok*", f"{diff_plain} (* onnxruntime unoptimized; optimized {diff})"))
                        continue
                    if exact is not None:
                        ok_exact, diff_exact = compare(got, exact, kind, steps)
                        if ok_exact:
                            cells.append(("ok+", f"{diff_exact} (+ onnxruntime with MatMulNBits accuracy_level 0; "
                                                 f"at the model's level 4 it rounds A to int8 blocks: {diff})"))
                            continue
                cells.append(("ok" if ok else "DIFFERS", diff))
        reason = ""
        if all(c[0].startswith("ok") for c in cells):
            npz.unlink()  # kept where a run differs or fails: the inputs to look into it with
        elif any(c[0] == "DIFFERS" for c in cells) and not a.no_trace:
            reason = trace(a.onnxscope, path, npz, a.out)
        rows.append((stem, what, cells, reason))
        print(f"{stem:30s} reference {cells[0][0]:8s} {cells[0][1]:28s} cpu {cells[1][0]:8s} {cells[1][1]}", flush=True)
        if reason:
            print(f"{'':30s} {reason}", flush=True)
    good = sum(all(c[0].startswith("ok") for c in r[2]) for r in rows)
    print(f"{good} of {len(rows)} models agree with onnxruntime on both engines "
          "(ok*: with onnxruntime's own graph run without its rewrites, where its fused kernels round otherwise; "
          "ok+: with its MatMulNBits at accuracy_level 0, where level 4 rounds A to int8)")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| model | made by | reference | max diff | cpu | max diff | why they differ |\n"
                    "|---|---|---|---|---|---|---|\n")
            for stem, what, cells, reason in rows:
                f.write(f"| {stem} | {what} | {cells[0][0]} | {cells[0][1]} | {cells[1][0]} | {cells[1][1]} | {reason} |\n")
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
