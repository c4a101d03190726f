"""Benchmark of the pretraining data builder: examples/s and peak memory vs corpus size.

Builds MLM + SOP TFRecords (seq 128, dupe_factor 5, the fixture SentencePiece model)
from 1, 2 and 4 MB of text made by repeating ../shared/fixtures/corpus.txt. Each size
runs in a fresh Python process so that its peak RSS is its own: the main process's
VmHWM, and the builder's worker_peak_rss_bytes (each worker's own VmHWM; ru_maxrss of a
spawned worker starts at its parent's peak). Prints a table with wall-clock examples/s and, since
the machine may be shared, examples per CPU-second (user + system, all processes).

    python bench/bench_pretraining_data.py [--sizes 1,2,4] [--workers 1,2] [--dupe 5]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("ALBERT_TF_SHARED", ROOT.parent / "shared"))
FIXTURES = SHARED / "fixtures"

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from albert_tf.pretraining.builder import build_pretraining_data, peak_rss_bytes
t0 = time.perf_counter()
stats = build_pretraining_data({inp!r}, {out!r}, spm_model_file={spm!r},
                               max_seq_length=128, max_predictions_per_seq=20,
                               dupe_factor={dupe}, num_workers={workers})
wall = time.perf_counter() - t0
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
self_rss, child_rss = peak_rss_bytes(), stats["worker_peak_rss_bytes"]
cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
print(json.dumps({{"instances": stats["instances"], "wall": wall, "cpu": cpu,
                   "self_rss": self_rss, "child_rss": child_rss,
                   "output_bytes": sum(__import__("os").path.getsize(p)
                                       for p in stats["output_files"])}}))
"""


def make_corpus(path: pathlib.Path, megabytes: float):
    """Repeats corpus.txt (whole documents) until the file holds `megabytes` MB."""
    text = (FIXTURES / "corpus.txt").read_text(encoding="utf-8").strip() + "\n\n"
    target = int(megabytes * 1_000_000)
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        while written < target:
            f.write(text)
            written += len(text.encode("utf-8"))


def run_one(inp: pathlib.Path, out: pathlib.Path, workers: int, dupe: int) -> dict:
    """Builds once in a fresh interpreter; returns its JSON line."""
    code = _CHILD.format(
        root=str(ROOT),
        inp=str(inp),
        out=str(out),
        spm=str(FIXTURES / "spm.model"),
        dupe=dupe,
        workers=workers,
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4", help="corpus sizes in MB")
    parser.add_argument("--workers", default="1,2", help="num_workers values")
    parser.add_argument("--dupe", type=int, default=5, help="dupe_factor")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_pretraining_") as tmp:
        tmp = pathlib.Path(tmp)
        for mb in (float(s) for s in args.sizes.split(",")):
            inp = tmp / f"corpus_{mb:g}mb.txt"
            make_corpus(inp, mb)
            for workers in (int(w) for w in args.workers.split(",")):
                r = run_one(inp, tmp / "out.tfrecord", workers, args.dupe)
                rows.append((mb, workers, r))
    print(
        f"{'text MB':>8} {'workers':>7} {'examples':>9} {'wall s':>7} {'examples/s':>10} "
        f"{'CPU s':>6} {'examples/CPU-s':>14} {'peak RSS main MiB':>17} "
        f"{'peak RSS worker MiB':>19}"
    )
    for mb, workers, r in rows:
        child = f"{r['child_rss'] / 2**20:.0f}" if workers > 1 else "-"
        print(
            f"{mb:>8g} {workers:>7} {r['instances']:>9} {r['wall']:>7.2f} "
            f"{r['instances'] / r['wall']:>10.0f} {r['cpu']:>6.2f} "
            f"{r['instances'] / r['cpu']:>14.0f} {r['self_rss'] / 2**20:>17.0f} {child:>19}"
        )


if __name__ == "__main__":
    main()
