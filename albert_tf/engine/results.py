"""Google's eval_results.txt: the `key = value` layout of one evaluation, appended per
evaluation so the file reads as Google's run_classifier/run_squad write it."""

from albert_tf.core import fileio


def format_results(results: dict) -> str:
    """Google's eval_results.txt layout: one `key = value` line per metric, sorted."""
    return "".join(f"{k} = {results[k]}\n" for k in sorted(results))


def append_results(output_dir: str, results: dict):
    """Add one block to output_dir/eval_results.txt, atomically (a kill never leaves half a
    block)."""
    path = fileio.join(output_dir, "eval_results.txt")
    old = fileio.read_text(path) if fileio.exists(path) else ""
    fileio.write_text(path, old + format_results(results) + "\n")
