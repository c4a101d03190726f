"""Pieces/s of ALBERT tokenization: a re-creation of Google's pipeline, the Python path, the graph.

Usage: python bench/bench_tokenization.py [--mb 2] [--batch 1024] [--repeats 3]
       [--graph_only] [--baseline GIT_REF]
Text is corpus.txt repeated to --mb megabytes; every path runs preprocess_text(lower=True)
then tokenization to ids. Prints figures only (best of --repeats). --baseline times the
in-graph tokenizer of GIT_REF and this tree's in alternate rounds in one process (their ids
checked equal first) and prints the ratio: on a shared machine the ratio is the stable figure.
"""

import argparse
import importlib.util
import os
import pathlib
import statistics
import subprocess
import tempfile
import time
import unicodedata

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("ALBERT_TF_SHARED", ROOT.parent / "shared"))
FIXTURES = SHARED / "fixtures"
UNDERLINE = "\u2581"


def load_lines(mb: float) -> list:
    """corpus.txt lines (blank ones dropped), repeated to about mb megabytes of UTF-8."""
    lines = [l for l in (FIXTURES / "corpus.txt").read_text(encoding="utf-8").split("\n") if l]
    size = sum(len(l.encode("utf-8")) + 1 for l in lines)
    reps = max(1, round(mb * 1e6 / size))
    return lines * reps


# ----- a re-creation of Google's pipeline, from the description of its behaviour


def google_preprocess(text: str, lower: bool) -> str:
    """Whitespace collapse, NFKD, per-character combining filter, optional lowercase."""
    out = " ".join(text.strip().split())
    out = unicodedata.normalize("NFKD", out)
    out = "".join([c for c in out if not unicodedata.combining(c)])
    return out.lower() if lower else out


def google_encode_pieces(sp, text: str) -> list:
    """EncodeAsPieces, then the digit+',' re-encoding (bytes in, '▁' kept) per piece."""
    pieces = sp.EncodeAsPieces(text)
    new_pieces = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur = sp.EncodeAsPieces(
                piece[:-1].encode("utf-8").replace(UNDERLINE.encode("utf-8"), b"")
            )
            cur.append(piece[-1])
            new_pieces.extend(cur)
        else:
            new_pieces.append(piece)
    return new_pieces


def google_ids(sp, lines) -> int:
    """Google's tokenize + convert_tokens_to_ids (PieceToId per piece); returns pieces."""
    n = 0
    for line in lines:
        pieces = google_encode_pieces(sp, google_preprocess(line, True))
        ids = [sp.PieceToId(p if isinstance(p, str) else p.decode("utf-8")) for p in pieces]
        n += len(ids)
    return n


# ----- this package


def python_path(tok, lines) -> int:
    """preprocess_text + tokenize + convert_tokens_to_ids per line (the builders' usage)."""
    from albert_tf.text.normalization import preprocess_text

    n = 0
    for line in lines:
        n += len(tok.convert_tokens_to_ids(tok.tokenize(preprocess_text(line, lower=True))))
    return n


def python_encode(tok, lines) -> int:
    """preprocess_text + encode (ids directly) per line."""
    from albert_tf.text.normalization import preprocess_text

    return sum(len(tok.encode(preprocess_text(line, lower=True))) for line in lines)


def python_batch(tok, lines, batch) -> int:
    """preprocess_text per line + encode_batch per chunk of lines."""
    from albert_tf.text.normalization import preprocess_text

    n = 0
    for i in range(0, len(lines), batch):
        chunk = [preprocess_text(l, lower=True) for l in lines[i : i + batch]]
        n += sum(map(len, tok.encode_batch(chunk)))
    return n


def graph_path(fn, batches) -> int:
    """The in-graph tokenizer (preprocessing included) over pre-made string batches."""
    n = 0
    for b in batches:
        n += int(fn(b).flat_values.shape[0])
    return n


def timed(name, fn, repeats):
    """Runs fn repeats times; prints and returns the best pieces/s."""
    best, pieces = 0.0, 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        pieces = fn()
        best = max(best, pieces / (time.perf_counter() - t0))
    print(f"{name:<44s} {best / 1e6:6.2f} M pieces/s  ({pieces} pieces)", flush=True)
    return best


def load_baseline(ref: str):
    """GraphTokenizer of albert_tf/text/graph_tokenizer.py as it is at git ref."""
    src = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:albert_tf/text/graph_tokenizer.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = pathlib.Path(tempfile.mkdtemp()) / "baseline_graph_tokenizer.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_graph_tokenizer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GraphTokenizer


def compare(args, batches):
    """Baseline vs this tree's graph tokenizer, alternate rounds; prints bests and the ratio."""
    import tensorflow as tf

    from albert_tf.text.graph_tokenizer import GraphTokenizer

    spec = [tf.TensorSpec([None], tf.string)]
    fns = {
        f"graph @ {args.baseline}": load_baseline(args.baseline)(args.model),
        "graph @ this tree": GraphTokenizer(args.model),
    }
    fns = {k: tf.function(g.tokenize, input_signature=spec) for k, g in fns.items()}
    old, new = fns.values()
    for b in batches:
        assert old(b).to_list() == new(b).to_list(), "baseline and this tree's ids differ"
    rates = {k: [] for k in fns}
    for _ in range(args.repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            pieces = graph_path(fn, batches)
            rates[name].append(pieces / (time.perf_counter() - t0))
    for name, r in rates.items():
        print(
            f"{name:<44s} {max(r) / 1e6:6.2f} M pieces/s best, "
            f"{statistics.median(r) / 1e6:.2f} median  ({pieces} pieces)"
        )
    old_r, new_r = rates.values()
    print(
        f"this tree / baseline: {max(new_r) / max(old_r):.2f}x best to best, "
        f"{statistics.median(n / o for n, o in zip(new_r, old_r)):.2f}x median of rounds"
    )


def main():
    """Parses flags and prints each path's pieces/s."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default=str(FIXTURES / "spm.model"))
    ap.add_argument("--graph_only", action="store_true", help="skip the Python paths")
    ap.add_argument("--baseline", help="a git ref: A/B its graph tokenizer against this tree's")
    args = ap.parse_args()

    import sentencepiece as spm

    from albert_tf.text.tokenization import FullTokenizer

    lines = load_lines(args.mb)
    mb = sum(len(l.encode("utf-8")) + 1 for l in lines) / 1e6
    print(f"{len(lines)} lines, {mb:.2f} MB, model {args.model}, {os.cpu_count()} CPUs")
    import tensorflow as tf

    batches = [tf.constant(lines[i : i + args.batch]) for i in range(0, len(lines), args.batch)]
    if args.baseline:
        return compare(args, batches)
    google = None
    if not args.graph_only:
        sp = spm.SentencePieceProcessor(model_file=args.model)
        tok = FullTokenizer(spm_model_file=args.model)
        google = timed(
            "Google's pipeline (re-creation)", lambda: google_ids(sp, lines), args.repeats
        )
        py = timed(
            "Python: tokenize + convert_tokens_to_ids",
            lambda: python_path(tok, lines),
            args.repeats,
        )
        timed("Python: encode", lambda: python_encode(tok, lines), args.repeats)
        timed(
            f"Python: encode_batch ({args.batch} lines)",
            lambda: python_batch(tok, lines, args.batch),
            args.repeats,
        )

    from albert_tf.text.graph_tokenizer import GraphTokenizer

    g = GraphTokenizer(args.model)
    fn = tf.function(g.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    fn(batches[0])
    graph = timed(
        f"graph: batched ({args.batch} lines), with preprocess",
        lambda: graph_path(fn, batches),
        args.repeats,
    )
    ds = (
        tf.data.Dataset.from_tensor_slices(lines)
        .batch(args.batch)
        .map(lambda b: g.tokenize(b).flat_values, num_parallel_calls=tf.data.AUTOTUNE)
    )
    graph_ds = timed(
        f"graph: tf.data batched ({args.batch}), parallel map",
        lambda: sum(int(x.shape[0]) for x in ds),
        args.repeats,
    )
    if google:
        print(
            f"ratios vs Google's: Python {py / google:.2f}x, graph {graph / google:.2f}x, "
            f"graph via tf.data {graph_ds / google:.2f}x"
        )


if __name__ == "__main__":
    main()
