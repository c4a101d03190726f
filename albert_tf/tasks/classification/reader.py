"""Reading one split of a classification task: tab-separated rows through a column layout
into InputExamples, each bad row reported with its file and line (the base of every
processor: GLUE's and the custom files').

Files are read like Google's ``csv.reader(delimiter="\\t", quotechar=None)``: tab
separated, no quoting (quote characters stay in the text), UTF-8 with an optional BOM,
LF or CRLF line endings. Wholly empty lines are skipped. Text is returned raw; case
folding and normalisation are the tokenizer's job.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, List, Optional, Sequence, Union

from albert_tf.core import fileio
from albert_tf.core.errors import InputError

Label = Union[str, float, None]


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One classification example: a sentence (pair) and its label (None on test sets)."""

    guid: str
    text_a: str
    text_b: Optional[str] = None
    label: Label = None


class GlueFormatError(InputError):
    """A row of a data file (GLUE's or your own) that cannot be read (names the file and line)."""


@dataclasses.dataclass(frozen=True)
class ColumnLayout:
    """Where a split's fields live: column indices (negative allowed for label)."""

    text_a: int
    text_b: Optional[int] = None
    label: Optional[int] = None
    guid: Optional[int] = None  # column with the example index; None -> row number
    header: bool = True

    def min_columns(self) -> int:
        """Fewest columns a row needs so that every index points at its own field."""
        positive = [
            c for c in (self.text_a, self.text_b, self.label, self.guid) if c is not None and c >= 0
        ]
        need = max(positive) + 1
        if self.label is not None and self.label < 0:
            need += -self.label  # label counted from the end must not overlap text
        return need


def iter_tsv(path: str) -> Iterator[tuple[int, List[str]]]:
    """Yield (1-based line number, fields) for each non-empty line of a GLUE tsv.

    Splits on tab only (QUOTE_NONE), strips a UTF-8 BOM and LF/CRLF endings; a lone
    CR inside a field is kept, as csv with quoting disabled would not split on it.
    """
    for lineno, line in fileio.numbered_lines(path, GlueFormatError):
        if line:
            yield lineno, line.split("\t")


def resolve_task_file(data_dir: str, task_dir: str, filename: str) -> str:
    """Path of ``filename``: ``data_dir/task_dir/filename``, else ``data_dir/filename``."""
    candidates = [fileio.join(data_dir, task_dir, filename), fileio.join(data_dir, filename)]
    for path in candidates:
        if fileio.isfile(path):
            return path
    raise FileNotFoundError(
        f"GLUE file {filename!r} not found; looked for {candidates[0]} and {candidates[1]} "
        f"(data_dir should be the folder holding {task_dir}/)"
    )


class DataProcessor:
    """Base processor: subclasses declare the task folder, files, layouts, labels."""

    task_name: str = ""
    task_dir: str = ""
    labels: Sequence[str] = ()
    is_regression: bool = False
    # split name -> file name inside task_dir; a split missing here is unavailable
    files: dict = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}

    def get_train_examples(self, data_dir: str) -> List[InputExample]:
        """Training examples of the task."""
        return self._read_split(data_dir, "train")

    def get_dev_examples(self, data_dir: str) -> List[InputExample]:
        """Development (evaluation) examples of the task."""
        return self._read_split(data_dir, "dev")

    def get_test_examples(self, data_dir: str) -> List[InputExample]:
        """Test examples (label None: the GLUE test sets are unlabeled)."""
        return self._read_split(data_dir, "test")

    def get_labels(self) -> List[str]:
        """Label names in id order (empty for regression)."""
        return list(self.labels)

    @property
    def num_labels(self) -> int:
        """Width of the classifier output: 1 for regression, else the label count."""
        return 1 if self.is_regression else len(self.labels)

    def has_text_b(self) -> bool:
        """Whether examples are sentence pairs (the raw-text export takes two strings)."""
        return self.layout("dev").text_b is not None

    def label_map(self) -> dict:
        """Label name -> id, in get_labels() order."""
        return {label: i for i, label in enumerate(self.labels)}

    # -- internals -----------------------------------------------------------------

    def layout(self, split: str) -> ColumnLayout:
        """Column layout of ``split``; subclasses override."""
        raise NotImplementedError

    def _read_split(self, data_dir: str, split: str) -> List[InputExample]:
        """Read one split's file into examples, validating every row."""
        filename = self.files.get(split)
        if filename is None:
            raise ValueError(f"task {self.task_name!r} has no {split} split")
        path = resolve_task_file(data_dir, self.task_dir, filename)
        layout = self.layout(split)
        examples = []
        rows = iter_tsv(path)
        if layout.header:
            next(rows, None)
        for row_number, (lineno, fields) in enumerate(rows):
            try:
                examples.append(self._make_example(fields, layout, split, row_number))
            except GlueFormatError as err:
                self._bad_row(f"{path}, line {lineno}: {err}{self._other_task_hint(path)}", split)
        self._done_split(path, split)
        return examples

    def _make_example(
        self, fields: List[str], layout: ColumnLayout, split: str, row_number: int
    ) -> InputExample:
        """Build one example from a row's fields, or raise GlueFormatError."""
        need = layout.min_columns()
        if len(fields) < need:
            raise GlueFormatError(
                f"expected at least {need} tab-separated columns, got {len(fields)}"
            )
        index = fields[layout.guid] if layout.guid is not None else str(row_number)
        guid = index if split == "test" else f"{split}-{index}"
        text_b = fields[layout.text_b] if layout.text_b is not None else None
        label = None
        if layout.label is not None:
            label = self._parse_label(fields[layout.label])
        return InputExample(guid=guid, text_a=fields[layout.text_a], text_b=text_b, label=label)

    def _parse_label(self, raw: str) -> Label:
        """Check a label against the task's label set (float for regression)."""
        if self.is_regression:
            try:
                return float(raw)
            except ValueError:
                raise GlueFormatError(f"label {raw!r} is not a number") from None
        if raw not in self.labels:
            raise GlueFormatError(f"label {raw!r} not in {list(self.labels)}")
        return raw

    def _other_task_hint(self, path) -> str:
        """What to add to a bad row's message about the file as a whole ("" here; the GLUE
        processors say when the file's columns look like another task's)."""
        return ""

    def _bad_row(self, message: str, split: str) -> None:
        """A malformed row: raise (QQP overrides this to skip and count)."""
        raise GlueFormatError(message)

    def _done_split(self, path: str, split: str) -> None:
        """Hook after a split is read (QQP logs its skipped rows)."""
