"""albert_tf's fine-tuning training speed at several commits, side by side: the training half of
`bench_finetune.py` (AlbertClassifier, bucketed and padding-free, Keras' Adam, the MRPC + SST-2
sample rows as classifier records, the same SentencePiece model) with the package taken from
each commit (`git archive` into a temporary folder), so that a change in the figure can be
pinned on the code or cleared of it.

The records and the SentencePiece model are made once, by this tree's code. Each commit's
package runs in its own child process, which traces and warms up once and then answers the
parent's turns (commit A, B, C, A, B, ...), so drift on a shared machine hits every commit
alike; each figure is the median over `--rounds` of the seconds of `--steps` training steps.

    python bench/bench_commits.py --commits HEAD,6ad7660,5da60de     # quick shape, seq 128

Ends with one JSON line per commit: median seconds, examples/s, ratio to the first commit.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


def child(a):
    """Trains with the package on sys.path[0]; one timed `fit` per line on stdin."""
    import keras

    from albert_tf import AlbertConfig
    from albert_tf.engine.finetuning import records_dataset
    from albert_tf.modeling.padding_free import set_padding_free

    try:
        from albert_tf.modeling.finetuning_models import AlbertClassifier
    except ImportError:  # before the modeling/ renames of 2026-12-07
        from albert_tf.modeling.tasks import AlbertClassifier

    with open(a.records + ".spec") as f:
        spec = {k: tuple(v) for k, v in json.load(f).items()}
    config = AlbertConfig.from_preset("albert_base_v2", **QUICK)
    model = set_padding_free(AlbertClassifier(config, 2, dropout_prob=0.0), True)
    model.compile(optimizer=keras.optimizers.Adam(1e-5))
    ds = records_dataset(a.records, spec, a.batch, True, seed=1, seq_length=a.seq)
    lengths = [int(b["input_ids"].shape[1]) for b in ds.take(a.steps)]
    fit = lambda: model.fit(ds, steps_per_epoch=a.steps, epochs=1, verbose=0)  # noqa: E731
    fit()
    print(json.dumps({"bucket_lengths": lengths}), flush=True)
    for _ in sys.stdin:
        t0 = time.perf_counter()
        fit()
        print(json.dumps({"s": time.perf_counter() - t0}), flush=True)


def prepare(folder, seq):
    """The records at `seq` (+ their spec as JSON) with bench_finetune's data and tokenizer."""
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    import bench_finetune

    spm = bench_finetune.bench_spm(folder, 8000)
    path, _, spec = bench_finetune.records(seq, folder, spm, 4)
    with open(path + ".spec", "w") as f:
        json.dump(spec, f)
    return path


def start(commit, folder, a, records):
    tree = os.path.join(folder, commit.replace("/", "_"))
    os.makedirs(tree)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "albert_tf"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    args = [sys.executable, __file__, "--child", "--records", records, "--seq", str(a.seq)]
    args += ["--steps", str(a.steps), "--batch", str(a.batch)]
    return subprocess.Popen(
        args, env=env, cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def answer(commit, proc):
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"error: the child process of {commit} ended (exit {proc.wait()})")
    return json.loads(line)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commits", default="HEAD,HEAD~1")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--records", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return child(a)
    commits = a.commits.split(",")
    with tempfile.TemporaryDirectory() as folder:
        records = prepare(folder, a.seq)
        procs, lengths = {}, {}
        for commit in commits:
            procs[commit] = start(commit, folder, a, records)
            lengths[commit] = answer(commit, procs[commit])["bucket_lengths"]
        times = {c: [] for c in commits}
        for _ in range(a.rounds):
            for commit, proc in procs.items():
                proc.stdin.write("go\n")
                proc.stdin.flush()
                times[commit].append(answer(commit, proc)["s"])
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    first = statistics.median(times[commits[0]])
    for commit in commits:
        med = statistics.median(times[commit])
        line = {
            "commit": commit,
            "seq": a.seq,
            "bucket_lengths": lengths[commit],
            "median_s": round(med, 3),
            "train_ex_s": round(a.steps * a.batch / med, 2),
            "time_ratio_to_first": round(med / first, 3),
            "rounds_s": [round(t, 2) for t in times[commit]],
            "load": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(line))


if __name__ == "__main__":
    main()
