"""The GLUE tasks' processors (column layouts, label sets, files) and their registry by name,
as Google's classifier_utils, plus the dev metric that picks each task's best checkpoint."""

from __future__ import annotations

import logging

from albert_tf.tasks.classification.reader import (
    ColumnLayout,
    DataProcessor,
    GlueFormatError,
    iter_tsv,
    resolve_task_file,
)

logger = logging.getLogger(__name__)


# The first line of each GLUE task's train and dev files (CoLA's have no header), to tell
# the user which task a folder holds when --task_name reads it with another task's columns.
GLUE_HEADERS = {
    "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String": ("mrpc",),
    "sentence\tlabel": ("sst-2",),
    "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore": (
        "sts-b",
    ),
    "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate": ("qqp",),
    "index\tquestion\tsentence\tlabel": ("qnli",),
    "index\tsentence1\tsentence2\tlabel": ("rte", "wnli"),
}


def tasks_with_header(path) -> tuple:
    """The GLUE tasks whose train/dev files start with the same line as the file at `path`.

    Args:
        path: A tab-separated file.

    Returns:
        The task names (e.g. `("mrpc",)`); empty when the header is no GLUE task's, or for
        MNLI, whose header starts "index\tpromptID".

    Example:

    >>> tasks_with_header("tests/data/samples/MRPC/train.tsv")
    ('mrpc',)
    """
    for _, fields in iter_tsv(path):
        line = "\t".join(fields)
        if line.startswith("index\tpromptID\tpairID"):
            return ("mnli",)
        return GLUE_HEADERS.get(line, ())
    return ()


class GlueProcessor(DataProcessor):
    """The base of the GLUE tasks' processors: a bad row's message says when the file's
    header is another GLUE task's (a folder read with the wrong task name)."""

    def _other_task_hint(self, path) -> str:
        """ "; the file's columns look like MRPC's" when its header is another task's."""
        looks = tasks_with_header(path)
        if not looks or self.task_name.split("-mm")[0] in looks:
            return ""
        names = " or ".join(n.upper() for n in looks)
        mine = self.task_name.upper()
        return f"; the file's columns look like {names}'s, not {mine}'s: check task_name"


class ColaProcessor(GlueProcessor):
    """CoLA: train/dev headerless (source, label, *, sentence); test (index, sentence)."""

    task_name, task_dir, labels = "cola", "CoLA", ("0", "1")

    def layout(self, split):
        if split == "test":
            return ColumnLayout(text_a=1, guid=0)
        return ColumnLayout(text_a=3, label=1, header=False)


class Sst2Processor(GlueProcessor):
    """SST-2: train/dev (sentence, label); test (index, sentence)."""

    task_name, task_dir, labels = "sst-2", "SST-2", ("0", "1")

    def layout(self, split):
        if split == "test":
            return ColumnLayout(text_a=1, guid=0)
        return ColumnLayout(text_a=0, label=1)


class MrpcProcessor(GlueProcessor):
    """MRPC: (Quality, #1 ID, #2 ID, #1 String, #2 String); test's first column is index."""

    task_name, task_dir, labels = "mrpc", "MRPC", ("0", "1")

    def layout(self, split):
        if split == "test":
            return ColumnLayout(text_a=3, text_b=4, guid=0)
        return ColumnLayout(text_a=3, text_b=4, label=0)


class StsbProcessor(GlueProcessor):
    """STS-B: regression on the last column (score); sentences in columns 7 and 8."""

    task_name, task_dir, is_regression = "sts-b", "STS-B", True

    def layout(self, split):
        if split == "test":
            return ColumnLayout(text_a=7, text_b=8, guid=0)
        return ColumnLayout(text_a=7, text_b=8, label=-1, guid=0)


class QqpProcessor(GlueProcessor):
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
            return ColumnLayout(text_a=1, text_b=2, guid=0)
        return ColumnLayout(text_a=3, text_b=4, label=5, guid=0)

    def _read_split(self, data_dir, split):
        self.skipped_rows[split] = 0
        self.skipped_messages[split] = []
        return super()._read_split(data_dir, split)

    def _bad_row(self, message, split):
        self.skipped_rows[split] += 1
        self.skipped_messages[split].append(message)

    def _done_split(self, path, split):
        if self.skipped_rows[split]:
            logger.warning("QQP: skipped %d malformed rows in %s", self.skipped_rows[split], path)


_NLI_LABELS = ("contradiction", "entailment", "neutral")


class MnliProcessor(GlueProcessor):
    """MNLI matched: sentence1/2 in columns 8/9, gold label last; test unlabeled."""

    task_name, task_dir, labels = "mnli", "MNLI", _NLI_LABELS
    files = {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"}

    def layout(self, split):
        if split == "test":
            return ColumnLayout(text_a=8, text_b=9, guid=0)
        return ColumnLayout(text_a=8, text_b=9, label=-1, guid=0)


class MnliMismatchedProcessor(MnliProcessor):
    """MNLI mismatched ("mismnli"): same training set, mismatched dev/test files."""

    task_name = "mnli-mm"
    files = {"train": "train.tsv", "dev": "dev_mismatched.tsv", "test": "test_mismatched.tsv"}


class _IndexPairProcessor(GlueProcessor):
    """Tasks laid out (index, sentence1, sentence2, label); test without label."""

    def layout(self, split):
        if split == "test":
            return ColumnLayout(text_a=1, text_b=2, guid=0)
        return ColumnLayout(text_a=1, text_b=2, label=-1, guid=0)


class QnliProcessor(_IndexPairProcessor):
    """QNLI (GLUE v2): question/sentence entailment."""

    task_name, task_dir, labels = "qnli", "QNLI", ("entailment", "not_entailment")


class RteProcessor(_IndexPairProcessor):
    """RTE: sentence-pair entailment."""

    task_name, task_dir, labels = "rte", "RTE", ("entailment", "not_entailment")


class WnliProcessor(_IndexPairProcessor):
    """WNLI: Winograd-derived entailment, labels 0/1."""

    task_name, task_dir, labels = "wnli", "WNLI", ("0", "1")


class AxProcessor(GlueProcessor):
    """GLUE diagnostic (AX): test only, predicted with an MNLI model; MNLI's labels.

    Reads ``diagnostic/diagnostic-full.tsv`` (annotated: premise 5, hypothesis 6,
    label 7; guid is the data-row number, which is AX.tsv's index) or, if that is
    absent, the unlabeled ``diagnostic/diagnostic.tsv`` (index, sentence1, sentence2).
    """

    task_name, task_dir, labels = "ax", "diagnostic", _NLI_LABELS
    files = {"test": "diagnostic-full.tsv"}
    _UNLABELED = "diagnostic.tsv"

    def layout(self, split):
        return ColumnLayout(text_a=5, text_b=6, label=7)

    def get_test_examples(self, data_dir):
        try:
            resolve_task_file(data_dir, self.task_dir, self.files["test"])
        except FileNotFoundError:
            return self._read_unlabeled(data_dir)
        return self._read_split(data_dir, "test")

    def _read_unlabeled(self, data_dir):
        """Read the unlabeled GLUE diagnostic.tsv (index, sentence1, sentence2)."""
        path = resolve_task_file(data_dir, self.task_dir, self._UNLABELED)
        layout = ColumnLayout(text_a=1, text_b=2, guid=0)
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

_ALIASES = {
    "sst2": "sst-2",
    "stsb": "sts-b",
    "mnli-m": "mnli",
    "mnli_mm": "mnli-mm",
    "diagnostic": "ax",
}


def canonical_task_name(task_name: str) -> str:
    """Registry key for a task name (case-insensitive, a few common aliases)."""
    name = task_name.strip().lower()
    name = _ALIASES.get(name, name)
    if name not in PROCESSORS:
        raise KeyError(
            f"unknown GLUE task {task_name!r}; known tasks: {', '.join(sorted(PROCESSORS))}"
        )
    return "mnli-mm" if name == "mismnli" else name


def get_processor(task_name: str) -> DataProcessor:
    """A fresh processor for ``task_name`` (case-insensitive); KeyError lists the tasks."""
    return PROCESSORS[canonical_task_name(task_name)]()


# Metric (a key of albert_tf.tasks.glue.metrics.glue_metrics) that picks the best checkpoint;
# higher is better for all. MRPC/QQP use accuracy as Google's run_classifier does and
# as the ALBERT paper's dev numbers report (F1 is still computed and logged).
_BEST_METRIC = {"cola": "matthews_corrcoef", "sts-b": "pearson"}


def best_checkpoint_metric(task_name: str) -> str:
    """Name of the dev metric used to keep the best checkpoint (higher is better)."""
    return _BEST_METRIC.get(canonical_task_name(task_name), "accuracy")
