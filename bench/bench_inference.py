"""Inference benchmark of an ALBERT-base classifier (vocab 30000, E 128, H 768, 12 layers, 12
heads, FFN 3072, 2 labels; random weights, biases and LayerNorms included) on every way albert_tf
deploys it, and, when the `bench` extra is installed, its peers side by side in the same run.

Rows (`--rows` picks some, comma-separated; default: every row whose packages are installed):

    keras_xla            albert_tf's Keras model, a tf.function with jit_compile (XLA)
    savedmodel_text      the raw-text SavedModel (AlbertTextClassifier.export; tokenizing in the
                         graph included: its inputs are strings of ≥128 pieces, cut to 128)
    litert_float32, litert_float16, litert_dynamic_int8, litert_int8
                         LiteRT files run by ai-edge-litert's Interpreter (XNNPACK, the default);
                         `_latest` adds experimental_default_delegate_latest_features (XNNPACK's
                         newer int8 kernels), `_noxnnpack` runs TFLite's own kernels (ruy)
    ort_plain, ort_fused albert_tf.export_onnx (optimize False / True) in ONNX Runtime
    ort_dynamic_int8     ONNX Runtime's quantize_dynamic of ort_plain's file (int8 weights, VNNI)
    torch                transformers' AlbertForSequenceClassification, same weights
                         (albert_tf.export_huggingface), torch.inference_mode
    ort_hf               ONNX Runtime on transformers' model exported by torch.onnx (opset 17)
    ort_hf_dynamic_int8  ONNX Runtime's quantize_dynamic of ort_hf's file (the peers' int8)
    openvino_ours, openvino_hf
                         OpenVINO on our ONNX file and on torch's, f32 precision;
                         `_bf16` rows: OpenVINO's bf16 inference precision (its default on CPUs
                         with AVX512_BF16 / AMX)
    openvino_hf_int8     OpenVINO on torch's file with int8 weights (NNCF's compress_weights)

Each row's file is prepared in a fresh Python process, and each row runs in another, with
`--threads` threads (default 2): load the file, one warm-up call per shape, then batch 1 × 128
latency (median and min of `--reps` calls) and batch 32 × 128 throughput (median of
`--batch_reps` calls, sequences per second). Memory: the process's peak resident set (VmHWM)
and its rise over the resident set before the file is loaded (runtime imported): file, weights
as the runtime holds them, and working memory. Size: the file(s) the row loads. Agreement: the
largest |Δ probability| on the 32 throughput sequences against the Keras model, and how many of
their 32 argmax labels agree.

The LiteRT files come from `albert_tf.export_litert(model, path, max_seq_length=128,
quantize=...)` (batch 1: a batch of 32 is 32 calls); int8 calibrates on 8 random sequences.
Prepared files are kept in `--work_dir` (per shape), so a second run only measures.

    python bench/bench_inference.py                          # every row at ALBERT-base shape
    python bench/bench_inference.py --quick                  # 2 layers, fewer calls: minutes
    python bench/bench_inference.py --rows ort_plain,ort_fused,ort_hf --reps 20

Prints a table and, last, one JSON line per row. Wall times on a shared machine are noisy: note
the load (`uptime`, printed) and compare rows of the same run.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SEQ = 128
THROUGHPUT_BATCH = 32
LITERT_QUANT = ("float32", "float16", "dynamic_int8", "int8")
ROWS = (
    ["keras_xla", "savedmodel_text"]
    + [f"litert_{q}" for q in LITERT_QUANT]
    + [f"litert_{q}_{v}" for q in ("dynamic_int8", "int8") for v in ("latest", "noxnnpack")]
    + ["ort_plain", "ort_fused", "ort_dynamic_int8", "torch", "ort_hf", "ort_hf_dynamic_int8"]
    + ["openvino_ours", "openvino_hf", "openvino_ours_bf16", "openvino_hf_int8"]
)
NEEDS = {  # row prefix -> packages it needs besides TensorFlow
    "litert": ["ai_edge_litert"],
    "ort": ["onnxruntime", "tf2onnx"],
    "torch": ["torch", "transformers"],
    "ort_hf": ["torch", "transformers", "onnxruntime"],
    "openvino": ["openvino", "tf2onnx"],
    "openvino_hf": ["openvino", "torch", "transformers"],
    "openvino_hf_int8": ["openvino", "nncf", "torch", "transformers"],
}


def _needs(row):
    for prefix in sorted(NEEDS, key=len, reverse=True):
        if row.startswith(prefix):
            return NEEDS[prefix]
    return []


def available(row):
    return all(importlib.util.find_spec(p) is not None for p in _needs(row))


# ---- the model and its files (parent process) ---------------------------------------------
def base_config(layers):
    sys.path.insert(0, str(ROOT))
    from albert_tf import AlbertConfig

    return AlbertConfig(
        vocab_size=30000,
        embedding_size=128,
        hidden_size=768,
        num_hidden_layers=layers,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=512,
    )


def sequences(batch, seed):
    """int32 features [batch, 128], every position real (no padding: each runtime does the same
    work)."""
    ids = np.random.default_rng(seed).integers(5, 30000, (batch, SEQ)).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}


def texts(batch):
    """Raw strings of the repository's test corpus, each ≥128 SentencePiece pieces long."""
    words = (ROOT / "tests/data/fixtures/corpus.txt").read_text(encoding="utf-8").split()
    return [" ".join(words[i * 200 : (i + 1) * 200]) for i in range(batch)]


class Files:
    """The model's files in a work folder, each made the first time a row needs it."""

    def __init__(self, work, config):
        self.work, self.config = work, config
        self._model = None

    def path(self, name):
        return str(self.work / name)

    def model(self):
        if self._model is None:
            from albert_tf import AlbertClassifier

            model = AlbertClassifier(self.config, 2)
            rng = np.random.default_rng(0)
            for v in model.weights:
                base = 1.0 if "gamma" in v.path else 0.0
                v.assign((base + 0.05 * rng.standard_normal(v.shape)).astype("float32"))
            self._model = model
        return self._model

    def make(self, name, write):
        path = self.path(name)
        if not os.path.exists(path):
            started = time.perf_counter()
            write(path)
            print(f"  prepared {name} in {time.perf_counter() - started:.0f} s", flush=True)
        return path

    def weights(self):
        def write(path):
            self.model().save_weights(path)
            probs = self.model()(sequences(THROUGHPUT_BATCH, 1))["probabilities"].numpy()
            np.save(self.path("reference.npy"), probs)

        return self.make("model.weights.h5", write)

    def config_json(self):
        return self.make("albert_config.json", self.config.to_json_file)

    def text_savedmodel(self):
        def write(path):
            from albert_tf import AlbertTextClassifier, AlbertTextPreprocessor

            spm = str(ROOT / "tests/data/fixtures/spm.model")
            pre = AlbertTextPreprocessor(spm_model_file=spm, sequence_length=SEQ)
            text_model = AlbertTextClassifier(self.config, 2, preprocessor=pre)
            text_model.set_weights(self.model().get_weights())
            text_model.export(path, verbose=False)

        return self.make("text_savedmodel", write)

    def onnx(self, fused=False):
        def write(path):
            from albert_tf import export_onnx

            export_onnx(self.model(), path, optimize=fused)

        return self.make("fused.onnx" if fused else "plain.onnx", write)

    def onnx_int8(self):
        def write(path):
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(self.onnx(), path, weight_type=QuantType.QInt8)

        return self.make("plain_dynamic_int8.onnx", write)

    def huggingface(self):
        def write(path):
            from albert_tf import export_huggingface

            export_huggingface(self.model(), path)

        return self.make("huggingface", write)

    def hf_onnx(self):
        folder = self.huggingface()
        return self.make("hf.onnx", lambda path: torch_onnx_export(folder, path))

    def hf_onnx_int8(self):
        def write(path):
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(self.hf_onnx(), path, weight_type=QuantType.QInt8)

        return self.make("hf_dynamic_int8.onnx", write)

    def openvino_hf_int8(self):
        def write(path):
            import nncf
            import openvino as ov

            compressed = nncf.compress_weights(ov.Core().read_model(self.hf_onnx()))
            ov.save_model(compressed, path)

        return self.make("hf_int8.xml", write)

    def litert(self, quantize):
        def write(path):
            litert_file(self.model(), path, quantize)

        return self.make(f"{quantize}.tflite", write)


def torch_onnx_export(folder, path):
    """transformers' model in `folder` exported by torch.onnx (TorchScript exporter, opset 17,
    dynamic batch and length), as Hugging Face's ONNX exports are."""
    import torch
    import transformers

    model = transformers.AlbertForSequenceClassification.from_pretrained(folder).eval()
    f = sequences(2, 2)
    args = tuple(torch.tensor(f[k], dtype=torch.long) for k in f)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    torch.onnx.export(
        model,
        args,
        path,
        input_names=names,
        output_names=["logits"],
        dynamic_axes={**axes, "logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )


def litert_file(model, path, quantize):
    """albert_tf.export_litert's file of `model` at [1, 128] ("float32" is quantize="none");
    int8 calibrates on 8 random sequences."""
    import albert_tf

    examples = [sequences(1, 100 + i) for i in range(8)] if quantize == "int8" else None
    return albert_tf.export_litert(
        model,
        path,
        max_seq_length=SEQ,
        quantize="none" if quantize == "float32" else quantize,
        representative_dataset=examples,
    )


def prepare(row, files):
    """(kind, paths, options) the child process needs for `row`."""
    if row == "keras_xla":
        return {"paths": [files.weights(), files.config_json()]}
    if row == "savedmodel_text":
        files.weights()
        return {"paths": [files.text_savedmodel()]}
    files.weights()
    if row.startswith("litert_"):
        quantize = next(q for q in LITERT_QUANT[::-1] if row[len("litert_") :].startswith(q))
        return {"paths": [files.litert(quantize)], "variant": row.split(quantize)[-1]}
    paths = {
        "ort_plain": files.onnx,
        "ort_fused": lambda: files.onnx(fused=True),
        "ort_dynamic_int8": files.onnx_int8,
        "torch": files.huggingface,
        "ort_hf": files.hf_onnx,
        "ort_hf_dynamic_int8": files.hf_onnx_int8,
        "openvino_hf_int8": files.openvino_hf_int8,
        "openvino_ours": files.onnx,
        "openvino_ours_bf16": files.onnx,
        "openvino_hf": files.hf_onnx,
    }
    return {"paths": [paths[row]()]}


# ---- one row (child process) ----------------------------------------------------------------
def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def runner(row, paths, threads, variant):
    """A function features → probabilities [batch, 2] for `row`, its file(s) loaded."""
    if row == "keras_xla":
        return keras_runner(paths)
    if row == "savedmodel_text":
        sys.path.insert(0, str(ROOT))
        import albert_tf

        loaded = albert_tf.load_saved_model(paths[0])  # held: .serve alone loses the variables
        return lambda f: loaded.serve(f["text"])["probabilities"].numpy()
    if row.startswith("litert_"):
        return litert_runner(paths[0], threads, variant)
    if row.startswith("ort_"):
        return ort_runner(paths[0], threads)
    if row == "torch":
        return torch_runner(paths[0], threads)
    return openvino_runner(paths[0], threads, "bf16" if row.endswith("_bf16") else "f32")


def softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def keras_runner(paths):
    sys.path.insert(0, str(ROOT))
    import tensorflow as tf

    from albert_tf import AlbertClassifier, AlbertConfig

    model = AlbertClassifier(AlbertConfig.from_json_file(paths[1]), 2)
    model.load_weights(paths[0])
    call = tf.function(lambda f: model(f, training=False)["probabilities"], jit_compile=True)
    return lambda f: call(f).numpy()


def litert_runner(path, threads, variant):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    options = {"num_threads": threads}
    if variant == "_latest":
        options["experimental_default_delegate_latest_features"] = True
    if variant == "_noxnnpack":
        options["experimental_op_resolver_type"] = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    run = Interpreter(model_path=path, **options).get_signature_runner()

    def each(f):  # a LiteRT file takes batch 1: a batch is one call per sequence
        rows = range(len(f["input_ids"]))
        return np.concatenate(
            [run(**{k: v[i : i + 1] for k, v in f.items()})["probabilities"] for i in rows]
        )

    return each


def ort_runner(path, threads):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = {i.name: i.type for i in session.get_inputs()}
    hf = {"input_mask": "attention_mask", "segment_ids": "token_type_ids"}

    def run(f):
        feed = {}
        for key, value in f.items():
            name = key if key in names else hf[key]
            feed[name] = value.astype(np.int64 if "int64" in names[name] else np.int32)
        if "probabilities" in [o.name for o in session.get_outputs()]:
            return session.run(["probabilities"], feed)[0]
        return softmax(session.run(["logits"], feed)[0])

    return run


def torch_runner(folder, threads):
    import torch
    import transformers

    torch.set_num_threads(threads)
    model = transformers.AlbertForSequenceClassification.from_pretrained(folder).eval()

    def run(f):
        with torch.inference_mode():
            ids, mask, seg = (torch.from_numpy(f[k].astype(np.int64)) for k in f)
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=seg).logits
        return softmax(logits.numpy())

    return run


def openvino_runner(path, threads, precision):
    import openvino as ov

    config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision}
    compiled = ov.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    inputs = [i.get_any_name() for i in compiled.inputs]
    hf = {"input_mask": "attention_mask", "segment_ids": "token_type_ids"}
    output = next((o for o in compiled.outputs if "probabilities" in o.get_names()), None)

    def run(f):
        feed = {}
        for key, value in f.items():
            name = key if key in inputs else hf[key]
            feed[name] = value.astype(np.int64 if name in hf.values() else np.int32)
        result = request.infer(feed)
        if output is not None:
            return result[output]
        return softmax(result[compiled.outputs[0]])

    return run


def measure(row, spec, args):
    """The child's measurements of `row` as a dict."""
    before = rss("VmRSS")
    started = time.perf_counter()
    run = runner(row, spec["paths"], args.threads, spec.get("variant", ""))
    load = time.perf_counter() - started
    one, many = sequences(1, 0), sequences(THROUGHPUT_BATCH, 1)
    if row == "savedmodel_text":
        one, many = {"text": np.array(texts(1))}, {"text": np.array(texts(THROUGHPUT_BATCH))}
    first = time.perf_counter()
    run(one)
    first = time.perf_counter() - first
    probs = run(many)
    times = []
    for _ in range(args.reps):
        t = time.perf_counter()
        run(one)
        times.append(time.perf_counter() - t)
    batch_times = []
    for _ in range(args.batch_reps):
        t = time.perf_counter()
        run(many)
        batch_times.append(time.perf_counter() - t)
    return {
        "row": row,
        "load_s": load,
        "first_call_s": first,
        "latency_ms": 1000 * float(np.median(times)),
        "latency_min_ms": 1000 * float(min(times)),
        "throughput_seq_s": THROUGHPUT_BATCH / float(np.median(batch_times)),
        "peak_rss_mb": rss("VmHWM") / 2**20,
        "rss_rise_mb": (rss("VmHWM") - before) / 2**20,
        "probabilities": np.asarray(probs, np.float64).tolist(),
    }


# ---- the table ------------------------------------------------------------------------------
def size_mb(paths):
    total = 0
    for p in paths:
        if os.path.isdir(p):
            total += sum(f.stat().st_size for f in pathlib.Path(p).rglob("*") if f.is_file())
        elif p.endswith((".onnx", ".tflite", ".h5")) or os.path.basename(p) == "huggingface":
            total += os.path.getsize(p)
        elif p.endswith(".xml"):  # OpenVINO's IR: the graph and its weights (.bin)
            total += os.path.getsize(p) + os.path.getsize(p[: -len(".xml")] + ".bin")
    return total / 1e6


def prepare_row(row, args):
    """`prepare` in a fresh process (the files' converters once crashed the parent): the
    row's spec, or {"error": ...}."""
    cmd = [sys.executable, __file__, "--_prepare", row, "--layers", str(args.layers)]
    cmd += ["--work_dir", args.work_dir]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    for line in done.stdout.splitlines():
        if line.startswith("  prepared"):
            print(line, flush=True)
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"error": f"prepare: exit {done.returncode}: " + " | ".join(tail)[-300:]}
    return json.loads(lines[-1])


def run_row(row, spec, args, reference):
    cmd = [sys.executable, __file__, "--_child", row, "--_spec", json.dumps(spec)]
    cmd += ["--threads", str(args.threads), "--reps", str(args.reps)]
    cmd += ["--batch_reps", str(args.batch_reps)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"row": row, "error": " | ".join(tail)[-300:]}
    result = json.loads(lines[-1])
    probs = np.array(result.pop("probabilities"))
    result["size_mb"] = size_mb(spec["paths"])
    if row != "savedmodel_text":
        result["max_abs_dprob"] = float(np.abs(probs - reference).max())
        result["argmax_agree"] = int((probs.argmax(-1) == reference.argmax(-1)).sum())
    return result


HEADER = (
    f"{'row':27s} {'b1 ms':>7s} {'(min)':>7s} {'b32 seq/s':>9s} {'size MB':>8s} "
    f"{'peak MB':>8s} {'rise MB':>8s} {'|dp|max':>8s} {'agree':>6s}"
)


def table_line(r):
    if "error" in r:
        return f"{r['row']:27s} failed: {r['error']}"
    dp = f"{r['max_abs_dprob']:.1e}" if "max_abs_dprob" in r else "-"
    agree = f"{r['argmax_agree']}/32" if "argmax_agree" in r else "-"
    return (
        f"{r['row']:27s} {r['latency_ms']:7.1f} {r['latency_min_ms']:7.1f} "
        f"{r['throughput_seq_s']:9.2f} {r['size_mb']:8.1f} {r['peak_rss_mb']:8.0f} "
        f"{r['rss_rise_mb']:8.0f} {dp:>8s} {agree:>6s}"
    )


def work_files(args):
    """The Files of `args`' shape, in its folder of `--work_dir`."""
    config = base_config(args.layers)
    key = hashlib.sha256(config.to_json_string().encode()).hexdigest()[:10]
    files = Files(pathlib.Path(args.work_dir) / key, config)
    files.work.mkdir(parents=True, exist_ok=True)
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=None, help="comma-separated rows (default: all)")
    parser.add_argument("--quick", action="store_true", help="2 layers, 3 + 1 calls per row")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=10, help="batch-1 calls timed")
    parser.add_argument("--batch_reps", type=int, default=2, help="batch-32 calls timed")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "albert_bench"))
    parser.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_spec", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_prepare", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        print(json.dumps(measure(args._child, json.loads(args._spec), args)))
        return
    if args._prepare:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        if "torch" in _needs(args._prepare):
            # deferred: torch only where the row has it; its triton (what torch.onnx loads)
            # must load before TensorFlow, which crashes the process otherwise (SIGSEGV)
            import torch._dynamo  # noqa: F401
        print(json.dumps(prepare(args._prepare, work_files(args))))
        return
    if args.quick:
        args.layers, args.reps, args.batch_reps = 2, 3, 1
    rows = args.rows.split(",") if args.rows else ROWS
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"--rows: unknown {unknown}; choose from {', '.join(ROWS)}")
    files = work_files(args)
    print(
        f"ALBERT-base shape, {args.layers} layers, seq {SEQ}, {args.threads} threads; files in "
        f"{files.work}; load: {open('/proc/loadavg').read().split()[:3]}",
        flush=True,
    )
    results = []
    print(HEADER, flush=True)
    for row in rows:
        if not available(row):
            print(f"{row:27s} skipped: needs {', '.join(_needs(row))}", flush=True)
            continue
        spec = prepare_row(row, args)
        if "error" in spec:  # a row that cannot be prepared is reported
            results.append({"row": row, "error": spec["error"]})
            print(table_line(results[-1]), flush=True)
            continue
        reference = np.load(files.path("reference.npy"))
        results.append(run_row(row, spec, args, reference))
        print(table_line(results[-1]), flush=True)
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
    print(HEADER)
    print("\n".join(table_line(r) for r in results))
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
