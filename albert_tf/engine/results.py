"""Google's eval_results.txt: the `key = value` layout of one evaluation, appended per
evaluation so the file reads as Google's run_classifier/run_squad write it."""
import os

from albert_tf.fileio import write_text_atomic


def format_results(results: dict) -> str:
    """Google's eval_results.txt layout: one `key = value` line per metric, sorted."""
    return "".join(f"{k} = {results[k]}\n" for k in sorted(results))


def append_results(output_dir: str, results: dict):
    """Add one block to output_dir/eval_results.txt, atomically (a kill never leaves half a block)."""
    path = os.path.join(output_dir, "eval_results.txt")
    old = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    write_text_atomic(path, old + format_results(results) + "\n")
