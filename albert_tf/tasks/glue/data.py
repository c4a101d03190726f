"""GLUE task readers, label sets and submission files, as Google's classifier_utils.

Pure Python (no TensorFlow). Each task has a processor that turns the official GLUE
release files into :class:`InputExample` objects; the fine-tuning engine tokenizes
and packs them.

``data_dir`` convention: the folder that *holds the task folders* (the GLUE release
root, e.g. ``/work/shared/data`` with ``CoLA/``, ``MNLI/``, ``diagnostic/`` ...), as
ALBERT's ``classifier_utils`` does (it reads ``data_dir/MNLI/train.tsv``). For
convenience the task folder itself is also accepted: a file is looked up first at
``data_dir/<TaskDir>/<file>``, then at ``data_dir/<file>``.

Files are read like Google's ``csv.reader(delimiter="\\t", quotechar=None)``: tab
separated, no quoting (quote characters stay in the text), UTF-8 with an optional BOM,
LF or CRLF line endings. Wholly empty lines are skipped. Text is returned raw; case
folding and normalisation are the tokenizer's job.

guids: test examples carry the file's own ``index`` column (or the 0-based data-row
number where the file has none), which is what the GLUE server expects in the
submission; train/dev guids are ``"<split>-<index or row number>"``.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Iterable, Iterator, List, Optional, Sequence, Union

from albert_tf.errors import InputError

logger = logging.getLogger(__name__)

Label = Union[str, float, None]


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One GLUE example: a sentence (pair) and its label (None on test sets)."""

    guid: str
    text_a: str
    text_b: Optional[str] = None
    label: Label = None


class GlueFormatError(InputError):
    """A row of a GLUE file that cannot be read (names the file and line)."""


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where a split's fields live: column indices (negative allowed for label)."""

    text_a: int
    text_b: Optional[int] = None
    label: Optional[int] = None
    guid: Optional[int] = None  # column with the example index; None -> row number
    header: bool = True

    def min_columns(self) -> int:
        """Fewest columns a row needs so that every index points at its own field."""
        positive = [c for c in (self.text_a, self.text_b, self.label, self.guid)
                    if c is not None and c >= 0]
        need = max(positive) + 1
        if self.label is not None and self.label < 0:
            need += -self.label  # label counted from the end must not overlap text
        return need


def iter_tsv(path: str) -> Iterator[tuple[int, List[str]]]:
    """Yield (1-based line number, fields) for each non-empty line of a GLUE tsv.

    Splits on tab only (QUOTE_NONE), strips a UTF-8 BOM and LF/CRLF endings; a lone
    CR inside a field is kept, as csv with quoting disabled would not split on it.
    """
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise GlueFormatError(f"{path}, line {lineno}: not UTF-8 text "
                                      f"(byte {raw[e.start]:#04x} at column {e.start + 1})") from None
            line = line.rstrip("\n")
            if line.endswith("\r"):
                line = line[:-1]
            if line:
                yield lineno, line.split("\t")


def resolve_task_file(data_dir: str, task_dir: str, filename: str) -> str:
    """Path of ``filename``: ``data_dir/task_dir/filename``, else ``data_dir/filename``."""
    candidates = [os.path.join(data_dir, task_dir, filename), os.path.join(data_dir, filename)]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"GLUE file {filename!r} not found; looked for {candidates[0]} and {candidates[1]} "
        f"(data_dir should be the folder holding {task_dir}/)")


class DataProcessor:
    """Base GLUE processor: subclasses declare the task folder, files, layouts, labels."""

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

    def label_map(self) -> dict:
        """Label name -> id, in get_labels() order."""
        return {label: i for i, label in enumerate(self.labels)}

    # -- internals -----------------------------------------------------------------

    def layout(self, split: str) -> _Layout:
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
                self._bad_row(f"{path}, line {lineno}: {err}", split)
        self._done_split(path, split)
        return examples

    def _make_example(self, fields: List[str], layout: _Layout, split: str,
                      row_number: int) -> InputExample:
        """Build one example from a row's fields, or raise GlueFormatError."""
        need = layout.min_columns()
        if len(fields) < need:
            raise GlueFormatError(
                f"expected at least {need} tab-separated columns, got {len(fields)}")
        index = fields[layout.guid] if layout.guid is not None else str(row_number)
        guid = index if split == "test" else f"{split}-{index}"
        text_b = fields[layout.text_b] if layout.text_b is not None else None
        label = None
        if layout.label is not None:
            label = self._parse_label(fields[layout.label])
        return InputExample(guid=guid, text_a=fields[layout.text_a], text_b=text_b,
                            label=label)

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

    def _bad_row(self, message: str, split: str) -> None:
        """A malformed row: raise (QQP overrides this to skip and count)."""
        raise GlueFormatError(message)

    def _done_split(self, path: str, split: str) -> None:
        """Hook after a split is read (QQP logs its skipped rows)."""


class ColaProcessor(DataProcessor):
    """CoLA: train/dev headerless (source, label, *, sentence); test (index, sentence)."""

    task_name, task_dir, labels = "cola", "CoLA", ("0", "1")

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=1, guid=0)
        return _Layout(text_a=3, label=1, header=False)


class Sst2Processor(DataProcessor):
    """SST-2: train/dev (sentence, label); test (index, sentence)."""

    task_name, task_dir, labels = "sst-2", "SST-2", ("0", "1")

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=1, guid=0)
        return _Layout(text_a=0, label=1)


class MrpcProcessor(DataProcessor):
    """MRPC: (Quality, #1 ID, #2 ID, #1 String, #2 String); test's first column is index."""

    task_name, task_dir, labels = "mrpc", "MRPC", ("0", "1")

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=3, text_b=4, guid=0)
        return _Layout(text_a=3, text_b=4, label=0)


class StsbProcessor(DataProcessor):
    """STS-B: regression on the last column (score); sentences in columns 7 and 8."""

    task_name, task_dir, is_regression = "sts-b", "STS-B", True

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=7, text_b=8, guid=0)
        return _Layout(text_a=7, text_b=8, label=-1, guid=0)


class QqpProcessor(DataProcessor):
    """QQP: (id, qid1, qid2, q1, q2, is_duplicate); test (id, q1, q2).

    Malformed rows are skipped, as Google's reader does; ``skipped_rows[split]`` counts
    them and ``skipped_messages[split]`` says where they were.
    """

    task_name, task_dir, labels = "qqp", "QQP", ("0", "1")

    def __init__(self):
        self.skipped_rows: dict = {}
        self.skipped_messages: dict = {}

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=1, text_b=2, guid=0)
        return _Layout(text_a=3, text_b=4, label=5, guid=0)

    def _read_split(self, data_dir, split):
        self.skipped_rows[split] = 0
        self.skipped_messages[split] = []
        return super()._read_split(data_dir, split)

    def _bad_row(self, message, split):
        self.skipped_rows[split] += 1
        self.skipped_messages[split].append(message)

    def _done_split(self, path, split):
        if self.skipped_rows[split]:
            logger.warning("QQP: skipped %d malformed rows in %s",
                           self.skipped_rows[split], path)


_NLI_LABELS = ("contradiction", "entailment", "neutral")


class MnliProcessor(DataProcessor):
    """MNLI matched: sentence1/2 in columns 8/9, gold label last; test unlabeled."""

    task_name, task_dir, labels = "mnli", "MNLI", _NLI_LABELS
    files = {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"}

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=8, text_b=9, guid=0)
        return _Layout(text_a=8, text_b=9, label=-1, guid=0)


class MnliMismatchedProcessor(MnliProcessor):
    """MNLI mismatched ("mismnli"): same training set, mismatched dev/test files."""

    task_name = "mnli-mm"
    files = {"train": "train.tsv", "dev": "dev_mismatched.tsv",
             "test": "test_mismatched.tsv"}


class _IndexPairProcessor(DataProcessor):
    """Tasks laid out (index, sentence1, sentence2, label); test without label."""

    def layout(self, split):
        if split == "test":
            return _Layout(text_a=1, text_b=2, guid=0)
        return _Layout(text_a=1, text_b=2, label=-1, guid=0)


class QnliProcessor(_IndexPairProcessor):
    """QNLI (GLUE v2): question/sentence entailment."""

    task_name, task_dir, labels = "qnli", "QNLI", ("entailment", "not_entailment")


class RteProcessor(_IndexPairProcessor):
    """RTE: sentence-pair entailment."""

    task_name, task_dir, labels = "rte", "RTE", ("entailment", "not_entailment")


class WnliProcessor(_IndexPairProcessor):
    """WNLI: Winograd-derived entailment, labels 0/1."""

    task_name, task_dir, labels = "wnli", "WNLI", ("0", "1")


class AxProcessor(DataProcessor):
    """GLUE diagnostic (AX): test only, predicted with an MNLI model; MNLI's labels.

    Reads ``diagnostic/diagnostic-full.tsv`` (annotated: premise 5, hypothesis 6,
    label 7; guid is the data-row number, which is AX.tsv's index) or, if that is
    absent, the unlabeled ``diagnostic/diagnostic.tsv`` (index, sentence1, sentence2).
    """

    task_name, task_dir, labels = "ax", "diagnostic", _NLI_LABELS
    files = {"test": "diagnostic-full.tsv"}
    _UNLABELED = "diagnostic.tsv"

    def layout(self, split):
        return _Layout(text_a=5, text_b=6, label=7)

    def get_test_examples(self, data_dir):
        try:
            resolve_task_file(data_dir, self.task_dir, self.files["test"])
        except FileNotFoundError:
            return self._read_unlabeled(data_dir)
        return self._read_split(data_dir, "test")

    def _read_unlabeled(self, data_dir):
        """Read the unlabeled GLUE diagnostic.tsv (index, sentence1, sentence2)."""
        path = resolve_task_file(data_dir, self.task_dir, self._UNLABELED)
        layout = _Layout(text_a=1, text_b=2, guid=0)
        rows = iter_tsv(path)
        next(rows, None)
        examples = []
        for row_number, (lineno, fields) in enumerate(rows):
            try:
                examples.append(self._make_example(fields, layout, "test", row_number))
            except GlueFormatError as err:
                raise GlueFormatError(f"{path}, line {lineno}: {err}") from None
        return examples


PROCESSORS = {
    "cola": ColaProcessor,
    "sst-2": Sst2Processor,
    "mrpc": MrpcProcessor,
    "sts-b": StsbProcessor,
    "qqp": QqpProcessor,
    "mnli": MnliProcessor,
    "mnli-mm": MnliMismatchedProcessor,
    "mismnli": MnliMismatchedProcessor,  # Google's name
    "qnli": QnliProcessor,
    "rte": RteProcessor,
    "wnli": WnliProcessor,
    "ax": AxProcessor,
}

_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "mnli-m": "mnli", "mnli_mm": "mnli-mm",
            "diagnostic": "ax"}


def canonical_task_name(task_name: str) -> str:
    """Registry key for a task name (case-insensitive, a few common aliases)."""
    name = task_name.strip().lower()
    name = _ALIASES.get(name, name)
    if name not in PROCESSORS:
        raise KeyError(f"unknown GLUE task {task_name!r}; known tasks: "
                       f"{', '.join(sorted(PROCESSORS))}")
    return "mnli-mm" if name == "mismnli" else name


def get_processor(task_name: str) -> DataProcessor:
    """A fresh processor for ``task_name`` (case-insensitive); KeyError lists the tasks."""
    return PROCESSORS[canonical_task_name(task_name)]()


_SUBMISSION_FILES = {
    "cola": "CoLA.tsv", "sst-2": "SST-2.tsv", "mrpc": "MRPC.tsv", "sts-b": "STS-B.tsv",
    "qqp": "QQP.tsv", "mnli": "MNLI-m.tsv", "mnli-mm": "MNLI-mm.tsv", "qnli": "QNLI.tsv",
    "rte": "RTE.tsv", "wnli": "WNLI.tsv", "ax": "AX.tsv",
}


def submission_file_name(task_name: str) -> str:
    """File name the GLUE server expects for the task's test predictions."""
    return _SUBMISSION_FILES[canonical_task_name(task_name)]


# Metric (a key of albert_tf.tasks.glue.metrics.glue_metrics) that picks the best checkpoint;
# higher is better for all. MRPC/QQP use accuracy as Google's run_classifier does and
# as the ALBERT paper's dev numbers report (F1 is still computed and logged).
_BEST_METRIC = {"cola": "matthews_corrcoef", "sts-b": "pearson"}


def best_checkpoint_metric(task_name: str) -> str:
    """Name of the dev metric used to keep the best checkpoint (higher is better)."""
    return _BEST_METRIC.get(canonical_task_name(task_name), "accuracy")


def _format_prediction(prediction, processor: DataProcessor) -> str:
    """A prediction as the GLUE server wants it: label name, or float for STS-B."""
    if processor.is_regression:
        return repr(float(prediction))
    labels = processor.get_labels()
    if isinstance(prediction, str):
        if prediction not in labels:
            raise ValueError(f"prediction {prediction!r} not in labels {labels}")
        return prediction
    index = int(prediction)
    if index != prediction or not 0 <= index < len(labels):
        raise ValueError(f"prediction {prediction!r} is not a label id in 0..{len(labels) - 1}")
    return labels[index]


def write_submission(path: str, task_name: str, guids_or_indices: Iterable,
                     predictions: Iterable) -> str:
    """Write a GLUE server file (``index\\tprediction`` header, one row per example).

    ``guids_or_indices``: test guids from the processor (their bare index) or ints;
    written as given. ``predictions``: label ids or label names (floats for STS-B).
    Written to a temp file in the same folder, then os.replace'd; returns ``path``.
    """
    processor = get_processor(task_name)
    indices, preds = list(guids_or_indices), list(predictions)
    if len(indices) != len(preds):
        raise ValueError(f"{len(indices)} indices but {len(preds)} predictions")
    lines = ["index\tprediction\n"]
    lines += [f"{idx}\t{_format_prediction(p, processor)}\n" for idx, p in zip(indices, preds)]
    _atomic_write(path, "".join(lines))
    return path


def _atomic_write(path: str, text: str) -> None:
    """Write ``text`` so that readers see the old file or the whole new one."""
    from albert_tf.fileio import write_text_atomic
    write_text_atomic(path, text)
