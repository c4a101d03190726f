"""Markdown tables for the paper reproductions: printed and written to <output_dir>/<name>.md."""

from __future__ import annotations

from albert_tf.core import fileio
from albert_tf.core.fileio import write_text_atomic


def markdown_table(header: list, rows: list) -> str:
    """A GitHub Markdown table; cells are str()-ed."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def publish(output_dir: str, name: str, title: str, table: str, notes: str = "") -> str:
    """Print the table and write it (with title and notes) to output_dir/name.md; returns the
    text."""
    text = f"### {title}\n\n{table}" + (f"\n{notes.strip()}\n" if notes else "")
    print(text)
    fileio.makedirs(output_dir)
    write_text_atomic(fileio.join(output_dir, f"{name}.md"), text)
    return text


def mean_spread(values: list) -> str:
    """'mean ± half-range' of a list of numbers (the spread over seeds), 3 decimals."""
    mean = sum(values) / len(values)
    half = (max(values) - min(values)) / 2
    return f"{mean:.3f} ± {half:.3f}"
