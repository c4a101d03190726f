"""Benchmark: the builder's former hand-written Example encoder + numpy CRC32C framing
against tf.train.Example + tf.io.TFRecordWriter, inside the builder's real round loop.

Every variant runs `albert_tf.pretraining.builder._round_job` itself (make instances ->
stats -> encode -> shuffle buffer -> write) with its `ExampleSerializer` and
`record_writer` swapped by `unittest.mock.patch`. The hand-written encoder and framing
(the builder's path until issue 13) live in bench/handwritten_tfrecord.py. Variants:

  a  hand-written ExampleEncoder.encode + frame_records (the builder before issue 13)
  b  a new tf.train.Example per instance (Google's layout) + TFRecordWriter.write
  c  one tf.train.Example template whose value lists are overwritten, serialised with
     deterministic=True (sorted map keys) + TFRecordWriter: the builder's own
     albert_tf.pretraining.writer, unpatched
  d  hand-written ExampleEncoder.encode + TFRecordWriter (our bytes, TensorFlow's CRC)

For each max_seq_length it times, alternating the variants and rotating their order in
every repeat: instance making alone (a null encoder and writer), encode + write alone
(the same loop fed pre-made instances) and end to end, in wall and process CPU seconds
(the machine may be shared). It checks that a, b and c give the same records (bytes,
else parsed tf.train.Examples) and that frame_records frames like TFRecordWriter, and
exits with an error if not. Then each variant runs one round over a bigger corpus in a
fresh process, as a builder worker would: import times, peak RSS, whether TensorFlow got
loaded, and whether every process wrote the same bytes. Prints tables and one JSON line.

    python bench/bench_tfrecord_writer.py [--mb 3] [--seq 128,512] [--repeats 3]
        [--worker-mb 10] [--worker-repeats 3] [--worker-variants a,b,c]
"""

import argparse
import contextlib
import hashlib
import json
import os
import pathlib
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from unittest import mock

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("ALBERT_TF_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "data" / "wiki" / "AA" / "wiki_00"
SPM_MODEL = SHARED / "fixtures" / "spm.model"
sys.path.insert(0, str(ROOT))  # this checkout's albert_tf, not an installed one
sys.path.insert(0, str(ROOT / "bench"))  # handwritten_tfrecord
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

VARIANTS = {
    "a": "hand-written encoder + frame_records (before issue 13)",
    "b": "tf.train.Example per instance + TFRecordWriter",
    "c": "tf.train.Example template, deterministic + TFRecordWriter (builder)",
    "d": "hand-written encoder + TFRecordWriter",
}
USES_TF = {"a": False, "b": True, "c": True, "d": True}


# --------------------------------------------------------------------------- variants


class TFExampleEncoder:
    """(b) Google's create_int_feature / create_float_feature: a new Example each time."""

    def __init__(self, max_seq_length: int, max_predictions_per_seq: int):
        import tensorflow as tf

        from albert_tf.pretraining.writer import FEATURE_NAMES, ExampleSerializer

        self.values = ExampleSerializer(max_seq_length, max_predictions_per_seq).values
        self.names, self.train = FEATURE_NAMES, tf.train

    def encode(self, inst) -> bytes:
        t = self.train
        feature = {}
        for name, values in zip(self.names, self.values(inst)):
            if name == "masked_lm_weights":
                feature[name] = t.Feature(float_list=t.FloatList(value=values))
            else:
                feature[name] = t.Feature(int64_list=t.Int64List(value=values))
        return t.Example(features=t.Features(feature=feature)).SerializeToString()


class NullEncoder:
    """Encodes nothing: the loop then times instance making (and stats) alone."""

    def __init__(self, *args):
        pass

    def encode(self, inst) -> bytes:
        return b""


class NullWriter:
    """Writes nothing (the interface of tf.io.TFRecordWriter)."""

    def __init__(self, path: str):
        pass

    def write(self, record: bytes):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def _encoder_factory(variant: str, vocab_size: int):
    """(max_seq_length, max_predictions_per_seq) -> the variant's encoder."""
    import handwritten_tfrecord as hw

    from albert_tf.pretraining.writer import ExampleSerializer

    def handwritten(L, P):
        return hw.ExampleEncoder(L, P, vocab_size)

    return {
        "a": handwritten,
        "b": TFExampleEncoder,
        "c": ExampleSerializer,
        "d": handwritten,
        "null": NullEncoder,
    }[variant]


def _writer_factory(variant: str):
    """path -> the variant's record writer."""
    import handwritten_tfrecord as hw

    from albert_tf.pretraining.writer import record_writer

    return {
        "a": hw.FramingWriter,
        "b": record_writer,
        "c": record_writer,
        "d": record_writer,
        "null": NullWriter,
    }[variant]


def run_round(variant: str, job: dict, out_path: str, instances=None) -> dict:
    """Runs the builder's _round_job once with `variant`'s encoder and writer.

    instances: pre-made TrainingInstances fed in place of iter_round_instances, to time
    encode + write alone. Returns wall and CPU seconds, the instance count and the path
    that holds the records.
    """
    from albert_tf.pretraining import builder as pt

    args = (job["cache_dir"], job["id_code"], 0, 0, job["options"], job["vocab"], out_path)
    with contextlib.ExitStack() as stack:
        w0, c0 = time.perf_counter(), time.process_time()
        stack.enter_context(
            mock.patch.object(pt, "ExampleSerializer", _encoder_factory(variant, job["vocab"].size))
        )
        stack.enter_context(mock.patch.object(pt, "record_writer", _writer_factory(variant)))
        if instances is not None:
            stack.enter_context(
                mock.patch.object(pt, "iter_round_instances", lambda *a: iter(instances))
            )
        _, counters, _ = pt._round_job(args)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"wall": wall, "cpu": cpu, "instances": counters["instances"], "path": out_path}


# --------------------------------------------------------------------------- set-up


def make_corpus(path: pathlib.Path, megabytes: float):
    """Repeats the shared Wikipedia extract (WikiExtractor format) to `megabytes` MB."""
    text = CORPUS.read_text(encoding="utf-8").rstrip("\n") + "\n"
    copies = max(1, round(megabytes * 1_000_000 / len(text.encode("utf-8"))))
    path.write_text(text * copies, encoding="utf-8")


def prepare_job(corpus: pathlib.Path, cache_dir: str, seq: int) -> dict:
    """Tokenises `corpus` into a token cache; returns what _round_job needs."""
    from albert_tf.pretraining import builder as pt

    options = pt.BuilderOptions(max_seq_length=seq, max_predictions_per_seq=20, dupe_factor=1)
    spec = pt.TokenizerSpec(spm_model_file=str(SPM_MODEL))
    vocab = pt.VocabTables.from_tokenizer(pt.load_tokenizer(spec), spm=True)
    info = pt.TokenCache.write(str(corpus), cache_dir, spec, options, vocab.size)
    return {
        "cache_dir": cache_dir,
        "id_code": info["id_typecode"],
        "options": options,
        "vocab": vocab,
        "seq": seq,
        "corpus_bytes": corpus.stat().st_size,
    }


def premade_instances(job: dict) -> list:
    """The instances _round_job makes for round 0 of file 0 (same seed)."""
    import random

    from albert_tf.pretraining import builder as pt

    rng = random.Random(pt.round_seed(job["options"].random_seed, 0, 0))
    cache = pt.TokenCache(job["cache_dir"], job["id_code"])
    try:
        return list(pt.iter_round_instances(cache, job["options"], job["vocab"], rng))
    finally:
        cache.close()


# --------------------------------------------------------------------------- checks


def check_equality(job: dict, instances: list, tmp: str) -> dict:
    """Do a, b and c give identical records, parsed Examples and TFRecord files?"""
    import handwritten_tfrecord as hw
    import tensorflow as tf

    L, P, size = job["seq"], job["options"].max_predictions_per_seq, job["vocab"].size
    encoders = {v: _encoder_factory(v, size)(L, P) for v in ("a", "b", "c")}
    recs = {v: [e.encode(i) for i in instances] for v, e in encoders.items()}
    parse = tf.train.Example.FromString
    out = {}
    for v in ("b", "c"):
        out[f"a_{v}_bytes_equal"] = recs["a"] == recs[v]
        out[f"a_{v}_parsed_equal"] = all(parse(x) == parse(y) for x, y in zip(recs["a"], recs[v]))
    out["a_b_parsed_equal_count"] = sum(parse(x) == parse(y) for x, y in zip(recs["a"], recs["b"]))
    out["records"] = len(instances)
    # the framing alone: frame_records vs TFRecordWriter over the very same payloads
    path = os.path.join(tmp, "framing.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for r in recs["b"]:
            w.write(r)
    out["framing_bytes_equal"] = pathlib.Path(path).read_bytes() == hw.frame_records(recs["b"])
    # whole builder outputs: the same loop, so the same record order
    files = {
        v: run_round(v, job, os.path.join(tmp, f"check_{v}.tfrecord"))["path"] for v in ("a", "b")
    }
    data = {v: pathlib.Path(p).read_bytes() for v, p in files.items()}
    out["output_files_bytes_equal"] = data["a"] == data["b"]
    read = {v: [parse(r.numpy()) for r in tf.data.TFRecordDataset(p)] for v, p in files.items()}
    out["output_files_parsed_equal"] = (
        len(read["a"]) == len(read["b"]) > 0 and read["a"] == read["b"]
    )
    out["feature_order_a"] = _feature_order(recs["a"][0])
    out["feature_order_b"] = _feature_order(recs["b"][0])
    return out


def _feature_order(record: bytes) -> list:
    """Feature names in the order they appear on the wire (map entries of field 1)."""
    import tensorflow as tf

    names = list(tf.train.Example.FromString(record).features.feature)
    return sorted(names, key=lambda n: record.find(n.encode()))


# --------------------------------------------------------------------------- timing


def spread(values: list) -> dict:
    """Median, min and max."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def time_in_process(job: dict, variants: list, repeats: int, tmp: str) -> dict:
    """make / encode+write / end-to-end timings per variant, alternated over repeats."""
    instances = premade_instances(job)
    runs = {("make", "null"): []}
    for v in variants:
        runs[("encode_write", v)] = []
        runs[("e2e", v)] = []
    for rep in range(repeats):
        order = variants[rep % len(variants) :] + variants[: rep % len(variants)]
        runs[("make", "null")].append(run_round("null", job, os.path.join(tmp, "null")))
        for v in order:
            out = os.path.join(tmp, f"{v}.tfrecord")
            runs[("encode_write", v)].append(run_round(v, job, out, instances))
            runs[("e2e", v)].append(run_round(v, job, out))
    n = len(instances)
    for key, rs in runs.items():
        if any(r["instances"] != n for r in rs):
            raise RuntimeError(f"{key}: instance count differs from the pre-made {n}")
    return {
        "instances": n,
        "runs": {
            f"{k[0]}/{k[1]}": {
                "wall": spread([r["wall"] for r in rs]),
                "cpu": spread([r["cpu"] for r in rs]),
            }
            for k, rs in runs.items()
        },
    }


# --------------------------------------------------------------------------- worker processes


def worker_child(variant: str, job_file: str, out_path: str):
    """One builder worker in a fresh process: imports (TensorFlow for the library
    variants), then one round; prints a JSON line of times and peak RSS."""
    w0, c0 = time.perf_counter(), time.process_time()
    import albert_tf.pretraining.builder  # noqa: F401  (what a worker imports)

    base = {
        "import_s": time.perf_counter() - w0,
        "import_cpu": time.process_time() - c0,
        "rss_after_import": _peak_rss(),
    }
    tf_import = {"tf_import_s": 0.0, "tf_import_cpu": 0.0}
    if USES_TF[variant]:
        w1, c1 = time.perf_counter(), time.process_time()
        import tensorflow  # noqa: F401

        tf_import = {
            "tf_import_s": time.perf_counter() - w1,
            "tf_import_cpu": time.process_time() - c1,
        }
    after = _peak_rss()
    with open(job_file, "rb") as f:
        job = pickle.load(f)
    r = run_round(variant, job, out_path)
    digest = hashlib.sha256(pathlib.Path(out_path).read_bytes()).hexdigest()
    print(
        json.dumps(
            {
                **base,
                **tf_import,
                "rss_after_imports": after,
                "sha256": digest,
                "round_s": r["wall"],
                "round_cpu": r["cpu"],
                "instances": r["instances"],
                "peak_rss": _peak_rss(),
                "tf_loaded": "tensorflow" in sys.modules,
            }
        )
    )


def _peak_rss() -> int:
    """Peak RSS of this process image in bytes (VmHWM: unlike ru_maxrss, kept across exec
    on Linux, it does not inherit the parent's high-water mark)."""
    from albert_tf.pretraining.builder import peak_rss_bytes

    return peak_rss_bytes()


def time_workers(job: dict, variants: list, repeats: int, tmp: str) -> dict:
    """Runs worker_child for each variant in turn, `repeats` times (order rotated)."""
    job_file = os.path.join(tmp, "worker_job.pkl")
    with open(job_file, "wb") as f:
        pickle.dump({k: job[k] for k in ("cache_dir", "id_code", "options", "vocab")}, f)
    results: dict = {v: [] for v in variants}
    for rep in range(repeats):
        for v in variants[rep % len(variants) :] + variants[: rep % len(variants)]:
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--worker-child",
                    v,
                    job_file,
                    os.path.join(tmp, f"worker_{v}.tfrecord"),
                ],
                capture_output=True,
                text=True,
                check=True,
                env=dict(os.environ),
            )
            results[v].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    summary = {}
    for v, rs in results.items():
        keys = [k for k in rs[0] if k not in ("instances", "tf_loaded", "sha256")]
        summary[v] = {k: statistics.median(r[k] for r in rs) for k in keys}
        summary[v]["instances"] = rs[0]["instances"]
        summary[v]["tf_loaded"] = rs[0]["tf_loaded"]
        summary[v]["same_bytes_every_process"] = len({r["sha256"] for r in rs}) == 1
        total = [r["import_s"] + r["tf_import_s"] + r["round_s"] for r in rs]
        total_cpu = [r["import_cpu"] + r["tf_import_cpu"] + r["round_cpu"] for r in rs]
        summary[v]["total_s"] = spread(total)
        summary[v]["total_cpu"] = spread(total_cpu)
    return summary


# --------------------------------------------------------------------------- report


def _fmt(s: dict) -> str:
    """median [min-max]."""
    return f"{s['median']:.3f} [{s['min']:.3f}-{s['max']:.3f}]"


def print_seq_table(seq: int, res: dict, variants: list):
    n, runs = res["instances"], res["runs"]
    print(
        f"\nmax_seq_length {seq}, max_predictions 20: {n} instances per round; "
        f"seconds as median [min-max], wall / process CPU"
    )
    make = runs["make/null"]
    print(
        f"  instance making alone (all variants): wall {_fmt(make['wall'])}  "
        f"cpu {_fmt(make['cpu'])}"
    )
    print(
        f"  {'variant':<60} {'enc+write wall':>22} {'enc+write cpu':>22} "
        f"{'e2e wall':>22} {'e2e cpu':>22} {'e2e ex/s':>9} {'ex/CPU-s':>9}"
    )
    for v in variants:
        ew, ee = runs[f"encode_write/{v}"], runs[f"e2e/{v}"]
        print(
            f"  {v + ' ' + VARIANTS[v]:<60} {_fmt(ew['wall']):>22} {_fmt(ew['cpu']):>22} "
            f"{_fmt(ee['wall']):>22} {_fmt(ee['cpu']):>22} "
            f"{n / ee['wall']['median']:>9.0f} {n / ee['cpu']['median']:>9.0f}"
        )


def ratios(res: dict, variants: list) -> dict:
    """End-to-end speed of a over each other variant (median wall and CPU)."""
    runs = res["runs"]
    out = {}
    for v in variants:
        if v != "a":
            for clock in ("wall", "cpu"):
                out[f"a_over_{v}_{clock}"] = (
                    runs[f"e2e/{v}"][clock]["median"] / runs["e2e/a"][clock]["median"]
                )
    return out


def print_worker_table(mb: float, seq: int, summary: dict):
    print(
        f"\none builder worker in a fresh process, one round over {mb:g} MB "
        f"(seq {seq}); medians, wall / process CPU seconds"
    )
    print(
        f"  {'variant':<60} {'import':>6} {'TF import':>15} {'round':>13} "
        f"{'total':>13} {'ex/s':>6} {'ex/CPU-s':>8} {'RSS after imports MiB':>21} "
        f"{'peak RSS MiB':>12}"
    )
    for v, s in summary.items():
        tot, cpu = s["total_s"]["median"], s["total_cpu"]["median"]
        print(
            f"  {v + ' ' + VARIANTS[v]:<60} {s['import_s']:>6.2f} "
            f"{s['tf_import_s']:>7.2f} / {s['tf_import_cpu']:>5.2f} "
            f"{s['round_s']:>5.2f} / {s['round_cpu']:>5.2f} {tot:>5.2f} / {cpu:>5.2f} "
            f"{s['instances'] / tot:>6.0f} {s['instances'] / cpu:>8.0f} "
            f"{s['rss_after_imports'] / 2**20:>21.0f} {s['peak_rss'] / 2**20:>12.0f}"
        )
    print(
        "  TensorFlow loaded in the worker after its round: "
        + ", ".join(f"{v} {s['tf_loaded']}" for v, s in summary.items())
    )
    print(
        "  same output bytes in every process: "
        + ", ".join(f"{v} {s['same_bytes_every_process']}" for v, s in summary.items())
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=3.0, help="in-process corpus, MB")
    parser.add_argument("--seq", default="128,512", help="max_seq_length values")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default="a,b,c,d")
    parser.add_argument("--worker-mb", type=float, default=10.0, help="0 skips workers")
    parser.add_argument("--worker-seq", type=int, default=128)
    parser.add_argument("--worker-repeats", type=int, default=3)
    parser.add_argument("--worker-variants", default="a,b,c")
    parser.add_argument("--worker-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_child:
        worker_child(*args.worker_child)
        return
    variants = _variant_list(args.variants, "--variants")
    if variants[0] != "a":
        parser.error("--variants must start with a (the ratios are against it)")
    worker_variants = _variant_list(args.worker_variants, "--worker-variants")
    if args.repeats < 1 or args.worker_repeats < 1 or args.mb <= 0:
        parser.error("--repeats and --worker-repeats must be >= 1, --mb > 0")
    for path in (CORPUS, SPM_MODEL):
        if not path.is_file():
            parser.error(f"missing input {path} (set ALBERT_TF_SHARED)")
    figures = run_all(args, variants, worker_variants)
    print(json.dumps(figures))


def _variant_list(spec: str, flag: str) -> list:
    out = [v.strip() for v in spec.split(",") if v.strip()]
    bad = [v for v in out if v not in VARIANTS]
    if bad or not out:
        raise SystemExit(
            f"{flag}: unknown variant(s) {bad or spec!r}; choose from {','.join(VARIANTS)}"
        )
    return out


def _require_same_records(seq: int, checks: dict):
    """The timings compare like with like only if every path writes the same Examples."""
    failed = [
        k
        for k in (
            "a_b_parsed_equal",
            "a_c_parsed_equal",
            "framing_bytes_equal",
            "output_files_parsed_equal",
        )
        if not checks[k]
    ]
    if failed:
        raise SystemExit(f"seq {seq}: the variants' records differ ({', '.join(failed)})")


def run_all(args, variants: list, worker_variants: list) -> dict:
    """Runs every section, prints the tables, returns the figures."""
    from google.protobuf.internal import api_implementation

    w0 = time.perf_counter()
    import tensorflow as tf

    figures = {
        "protobuf_backend": api_implementation.Type(),
        "tensorflow": tf.__version__,
        "main_process_tf_import_s": time.perf_counter() - w0,
        "load_average_start": os.getloadavg(),
        "corpus": str(CORPUS),
        "mb": args.mb,
        "repeats": args.repeats,
        "seq": {},
    }
    print(
        f"protobuf backend: {figures['protobuf_backend']}; tensorflow {tf.__version__}; "
        f"load average {figures['load_average_start']}"
    )
    with tempfile.TemporaryDirectory(prefix="bench_tfrecord_") as tmp:
        corpus = pathlib.Path(tmp) / "corpus.txt"
        make_corpus(corpus, args.mb)
        for seq in (int(s) for s in args.seq.split(",")):
            job = prepare_job(corpus, os.path.join(tmp, f"cache{seq}"), seq)
            checks = check_equality(job, premade_instances(job)[:500], tmp)
            res = time_in_process(job, variants, args.repeats, tmp)
            print_seq_table(seq, res, variants)
            print(
                f"  a/b records: bytes equal {checks['a_b_bytes_equal']}, parsed equal "
                f"{checks['a_b_parsed_equal']}; framing bytes equal "
                f"{checks['framing_bytes_equal']}; output files bytes equal "
                f"{checks['output_files_bytes_equal']}, parsed equal "
                f"{checks['output_files_parsed_equal']}"
            )
            print(
                f"  feature order on the wire: a {checks['feature_order_a']}, "
                f"b {checks['feature_order_b']}"
            )
            _require_same_records(seq, checks)
            r = ratios(res, variants)
            print("  end-to-end speed ratios: " + ", ".join(f"{k} {x:.2f}" for k, x in r.items()))
            figures["seq"][seq] = {**res, "checks": checks, "ratios": r}
        if args.worker_mb > 0:
            wcorpus = pathlib.Path(tmp) / "worker_corpus.txt"
            make_corpus(wcorpus, args.worker_mb)
            job = prepare_job(wcorpus, os.path.join(tmp, "worker_cache"), args.worker_seq)
            summary = time_workers(job, worker_variants, args.worker_repeats, tmp)
            print_worker_table(args.worker_mb, args.worker_seq, summary)
            figures["workers"] = {
                "mb": args.worker_mb,
                "seq": args.worker_seq,
                "repeats": args.worker_repeats,
                "variants": summary,
            }
    figures["load_average_end"] = os.getloadavg()
    return figures


if __name__ == "__main__":
    main()
