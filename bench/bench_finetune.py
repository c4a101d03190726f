"""Benchmark of fine-tuning and prediction: albert_tf (length-bucketed and padding-free, the
fine-tuning defaults) against
keras-hub's AlbertTextClassifier (fixed length) at the same shape, random init both, on the same
GLUE-length sentence pairs, plus the machine's raw GEMM rate.

Data: the MRPC and SST-2 samples of tests/data (train + dev rows) at seq 512 and 128, encoded
with `--spm_model_file` (pass Google's 30k-clean.model for the released lengths) or, by
default, a SentencePiece model of `--spm_vocab` pieces (ALBERT recipe) trained in the run on the
demo's corpus (CPython's docs and docstrings) plus the sample rows: the 1,000-piece test fixture
cuts words into ~2x the pieces a 30k vocabulary does, which would overstate GLUE lengths. Runs
alternate (albert_tf, keras-hub, ...) so
that drift of a shared machine hits both alike; each figure is the median over the rounds of
examples/s after one warm-up call. The utilisation is albert_tf's training FLOPs (≈ 3 × the
forward matmul FLOPs at the lengths it actually ran) per second over the GEMM rate.

    python bench/bench_finetune.py --quick       # hidden 256, 4 layers: a few minutes on 2 cores
    python bench/bench_finetune.py --shape base  # ALBERT-base

Ends with one JSON line per sequence length.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import AlbertConfig  # noqa: E402
from albert_tf.engine.finetuning import predict_records, records_dataset  # noqa: E402
from albert_tf.engine.records import decode  # noqa: E402

DATA = ROOT / "tests" / "data" / "samples"
QUICK = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


def gemm_gflops(n=2048, repeats=10) -> float:
    """float32 tf.matmul rate of n×n matrices (best of `repeats`)."""
    a, b = tf.random.normal([n, n]), tf.random.normal([n, n])
    tf.matmul(a, b).numpy()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        tf.matmul(a, b).numpy()
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def bench_spm(cache: str, vocab: int) -> str:
    """A `vocab`-piece SentencePiece model (ALBERT recipe) of the demo corpus + the sample rows."""
    from albert_tf.pretraining.demo import demo_documents, write_corpus
    from albert_tf.text.spm_train import train_sentencepiece

    corpus = write_corpus([d for _, d in demo_documents()], os.path.join(cache, "corpus.txt"))
    samples = [str(DATA / t / f) for t in ("MRPC", "SST-2") for f in ("train.tsv", "dev.tsv")]
    return train_sentencepiece(
        [corpus] + [f for f in samples if os.path.exists(f)],
        os.path.join(cache, f"bench-{vocab}"),
        vocab,
        hard_vocab_limit=False,
    )


def records(seq: int, cache: str, spm_model_file: str, copies: int):
    """(path, count, spec) of MRPC + SST-2 sample rows as classifier records at `seq`, the rows
    `copies` times (a dev-set-sized file: per-call costs of bucketed prediction amortise as they
    do on SST-2's 872 or MRPC's 408 dev rows, not on 200)."""
    from albert_tf.engine.records import write_records
    from albert_tf.tasks.classification.task import example_to_record
    from albert_tf.tasks.glue.task import GlueTask
    from albert_tf.text.encoding import TextEncoder

    encoder = TextEncoder.from_files(spm_model_file, do_lower_case=True)
    rows = []
    for name in ("mrpc", "sst-2"):
        task = GlueTask(name, str(DATA), encoder, seq, cache)
        labels = task.processor.label_map()
        for split in ("train", "dev"):
            rows += [
                example_to_record(e, labels, encoder, seq, False) for e in task.examples(split)
            ]
    spec = GlueTask("mrpc", str(DATA), encoder, seq, cache).spec
    path = os.path.join(cache, f"bench-{seq}.tf_record")
    return path, write_records(path, rows * copies, spec), spec


def flops_per_example(c: AlbertConfig, lengths) -> float:
    """Training FLOPs of one example ≈ 3 × forward: per layer per token 2·(4H² + 2HI) matmul
    and 4·T·H attention, plus the E→H projection."""
    h, i, layers = c.hidden_size, c.intermediate_size, c.num_hidden_layers
    t = np.asarray(lengths, np.float64)
    forward = t * (layers * (2 * (4 * h * h + 2 * h * i) + 4 * t * h) + 2 * c.embedding_size * h)
    return float(3 * forward.mean())


def keras_hub_model(c: AlbertConfig):
    import keras_hub

    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=c.vocab_size,
        num_layers=c.num_hidden_layers,
        num_heads=c.num_attention_heads,
        embedding_dim=c.embedding_size,
        hidden_dim=c.hidden_size,
        intermediate_dim=c.intermediate_size,
        dropout=0.0,
        max_sequence_length=c.max_position_embeddings,
    )
    model = keras_hub.models.AlbertTextClassifier(backbone, 2, preprocessor=None, dropout=0.0)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def keras_hub_dataset(path, spec, batch, repeat):
    def convert(r):
        x = {
            "token_ids": r["input_ids"],
            "segment_ids": r["segment_ids"],
            "padding_mask": r["input_mask"] > 0,
        }
        return x, tf.reshape(r["label_ids"], [-1])

    ds = tf.data.TFRecordDataset(path).map(lambda s: decode(s, spec))
    ds = ds.repeat() if repeat else ds
    return ds.batch(batch, drop_remainder=True).map(convert).prefetch(2)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_seq(c, seq, batch, steps, rounds, cache, spm_model_file, copies, padding_free=True):
    from albert_tf.modeling.finetuning_models import AlbertClassifier
    from albert_tf.modeling.padding_free import set_padding_free

    path, n, spec = records(seq, cache, spm_model_file, copies)
    ours = set_padding_free(AlbertClassifier(c, 2, dropout_prob=0.0), padding_free)
    ours.compile(optimizer=keras.optimizers.Adam(1e-5))
    hub = keras_hub_model(c)
    train_ours = records_dataset(path, spec, batch, True, seed=1, seq_length=seq)
    train_hub = keras_hub_dataset(path, spec, batch, repeat=True)
    taken = list(train_ours.take(steps))
    lengths = [b["input_ids"].shape[1] for b in taken]
    real = [float(np.mean(np.sum(b["input_mask"].numpy() > 0, axis=1))) for b in taken]
    runs = {
        "ours_train": (lambda: ours.fit(train_ours, steps_per_epoch=steps, epochs=1, verbose=0)),
        "hub_train": (lambda: hub.fit(train_hub, steps_per_epoch=steps, epochs=1, verbose=0)),
        "ours_predict": (lambda: predict_records(ours, path, spec, n, batch, seq_length=seq)),
        "hub_predict": (
            lambda: hub.predict(keras_hub_dataset(path, spec, batch, False), verbose=0)
        ),
    }
    for fn in runs.values():  # warm-up: traces every shape
        fn()
    times = {k: [] for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            times[k].append(timed(fn))
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {
        "seq": seq,
        "records": n,
        "padding_free": padding_free,
        "mean_bucket_length": float(np.mean(lengths)),
        "mean_real_length": float(np.mean(real)),
        "albert_tf_train_ex_s": steps * batch / med["ours_train"],
        "keras_hub_train_ex_s": steps * batch / med["hub_train"],
        "albert_tf_predict_ex_s": n / med["ours_predict"],
        "keras_hub_predict_ex_s": n / med["hub_predict"],
        "train_flops_per_example": flops_per_example(c, real if padding_free else lengths),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="hidden 256, 4 layers, 6 steps, 2 rounds")
    p.add_argument("--shape", default="base", help="albert_<shape>_v2 (ignored with --quick)")
    p.add_argument("--seqs", default="512,128")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--copies", type=int, default=4, help="times the sample rows are repeated")
    p.add_argument(
        "--nopadding_free",
        action="store_true",
        help="albert_tf computes padded positions too (bucketed only)",
    )
    p.add_argument("--spm_model_file", default=None, help="e.g. a release's 30k-clean.model")
    p.add_argument(
        "--spm_vocab",
        type=int,
        default=8000,
        help="pieces of the SentencePiece model trained in the run (no --spm_model_file)",
    )
    a = p.parse_args()
    c = AlbertConfig.from_preset(f"albert_{a.shape}_v2", **(QUICK if a.quick else {}))
    steps, rounds = a.steps or (6 if a.quick else 20), a.rounds or (2 if a.quick else 3)
    shape = "quick(H256,L4,I1024)" if a.quick else a.shape
    gflops = gemm_gflops()
    lines = []
    with tempfile.TemporaryDirectory() as cache:
        spm_model_file = a.spm_model_file or bench_spm(cache, a.spm_vocab)
        for seq in map(int, a.seqs.split(",")):
            r = bench_seq(
                c,
                seq,
                a.batch,
                steps,
                rounds,
                cache,
                spm_model_file,
                a.copies,
                not a.nopadding_free,
            )
            util = r["albert_tf_train_ex_s"] * r.pop("train_flops_per_example") / (gflops * 1e9)
            lines.append(
                {"shape": shape, **r, "gemm_gflops": gflops, "train_flops_utilisation": util}
            )
    for line in lines:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in line.items()}))


if __name__ == "__main__":
    main()
