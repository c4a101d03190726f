"""Raw documents of the builder's input files: the plain and WikiExtractor formats,
sentence splitting, and the input / output file lists."""

from __future__ import annotations

import re
from typing import Iterator

from albert_tf.core import fileio
from albert_tf.pretraining.options import BuilderOptions

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_GLOB_MAGIC = re.compile(r"[*?[]")


def split_sentences(paragraph: str) -> list[str]:
    """Splits a paragraph at '.', '!' or '?' followed by space and a capital/digit."""
    return [s for s in _SENTENCE_SPLIT.split(paragraph) if s.strip()]


def _detect_format(path: str) -> str:
    """'wiki' if the first non-blank line opens a WikiExtractor <doc>, else 'lines'."""
    with fileio.open_text(path, errors="replace") as f:
        for line in f:
            if line.strip():
                return "wiki" if line.lstrip().startswith("<doc") else "lines"
    return "lines"


def iter_raw_documents(path: str, options: BuilderOptions) -> Iterator[list[str]]:
    """Yields documents of `path` as lists of raw sentence strings, in file order.

    "lines": one sentence per line, blank lines between documents (Google's format).
    "wiki": WikiExtractor output; <doc ...> / </doc> lines delimit documents, the title
    line after <doc> is dropped (unless keep_wiki_titles), blank lines are paragraph
    breaks, and paragraphs are split into sentences (unless split_wiki_sentences=False).
    """
    fmt = options.input_format
    if fmt == "auto":
        fmt = _detect_format(path)
    reader = _iter_wiki if fmt == "wiki" else _iter_lines
    with fileio.open_text(path) as f:
        try:
            yield from reader(f, options)
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not valid UTF-8 text ({e})") from None


def _iter_lines(f, options: BuilderOptions) -> Iterator[list[str]]:
    """Blank-line separated documents, one sentence per line."""
    doc: list[str] = []
    for line in f:
        if line.strip():
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def _iter_wiki(f, options: BuilderOptions) -> Iterator[list[str]]:
    """WikiExtractor <doc> documents (see iter_raw_documents)."""
    doc: list[str] = []
    expect_title = False
    for line in f:
        stripped = line.strip()
        if stripped.startswith("<doc"):
            if doc:
                yield doc
            doc, expect_title = [], True
        elif stripped.startswith("</doc>"):
            if doc:
                yield doc
            doc, expect_title = [], False
        elif not stripped:
            continue
        elif expect_title:
            expect_title = False
            if options.keep_wiki_titles:
                doc.append(stripped)
        elif options.split_wiki_sentences:
            doc.extend(split_sentences(stripped))
        else:
            doc.append(stripped)
    if doc:
        yield doc


def expand_input_files(spec) -> list:
    """Comma-separated list (or sequence) of paths or globs -> existing, non-empty files, on
    any filesystem (gs://...: globs are matched by tf.io.gfile).

    Raises FileNotFoundError / ValueError naming the offending pattern or file.
    """
    patterns = spec.split(",") if isinstance(spec, str) else list(spec)
    files: list = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        matches = fileio.glob(pattern) if _GLOB_MAGIC.search(pattern) else [pattern]
        if not matches:
            raise FileNotFoundError(f"no input file matches {pattern!r}")
        for path in matches:
            if not fileio.isfile(path):
                raise FileNotFoundError(f"input file not found: {path}")
            if fileio.getsize(path) == 0:
                raise ValueError(f"input file is empty: {path}")
            files.append(path)
    if not files:
        raise ValueError("no input files given")
    return files


def split_output_files(spec) -> list:
    """Comma-separated list (or sequence) of output paths."""
    paths = spec.split(",") if isinstance(spec, str) else list(spec)
    paths = [p.strip() for p in paths if p.strip()]
    if not paths:
        raise ValueError("no output files given")
    return paths
