"""GLUE server submission files: each task's file name and its ``index\\tprediction`` rows,
written atomically so a half-written file is never uploaded."""

from __future__ import annotations

from typing import Iterable

from albert_tf.tasks.classification.prediction_files import write_label_predictions
from albert_tf.tasks.classification.reader import DataProcessor
from albert_tf.tasks.glue.processors import canonical_task_name, get_processor

_SUBMISSION_FILES = {
    "cola": "CoLA.tsv",
    "sst-2": "SST-2.tsv",
    "mrpc": "MRPC.tsv",
    "sts-b": "STS-B.tsv",
    "qqp": "QQP.tsv",
    "mnli": "MNLI-m.tsv",
    "mnli-mm": "MNLI-mm.tsv",
    "qnli": "QNLI.tsv",
    "rte": "RTE.tsv",
    "wnli": "WNLI.tsv",
    "ax": "AX.tsv",
}


def submission_file_name(task_name: str) -> str:
    """File name the GLUE server expects for the task's test predictions."""
    return _SUBMISSION_FILES[canonical_task_name(task_name)]


def write_submission(
    path: str,
    task_name: str,
    guids_or_indices: Iterable,
    predictions: Iterable,
    processor: DataProcessor = None,
) -> str:
    """Write a GLUE server file (``index\\tprediction`` header, one row per example).

    ``guids_or_indices``: test guids from the processor (their bare index) or ints;
    written as given. ``predictions``: label ids or label names (floats for STS-B).
    ``processor`` gives the label names where the task is not a GLUE one (a custom task).
    Written to a temp file in the same folder, then os.replace'd; returns ``path``.
    """
    processor = processor or get_processor(task_name)
    return write_label_predictions(path, guids_or_indices, predictions, processor)
