"""GLUE server submission files: each task's file name and its ``index\\tprediction`` rows,
written atomically so a half-written file is never uploaded."""

from __future__ import annotations

from typing import Iterable

from albert_tf.core.fileio import write_text_atomic
from albert_tf.tasks.glue.processors import canonical_task_name, get_processor
from albert_tf.tasks.glue.reader import DataProcessor

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
    indices, preds = list(guids_or_indices), list(predictions)
    if len(indices) != len(preds):
        raise ValueError(f"{len(indices)} indices but {len(preds)} predictions")
    lines = ["index\tprediction\n"]
    lines += [f"{idx}\t{_format_prediction(p, processor)}\n" for idx, p in zip(indices, preds)]
    _atomic_write(path, "".join(lines))
    return path


def _atomic_write(path: str, text: str) -> None:
    """Write ``text`` so that readers see the old file or the whole new one."""
    write_text_atomic(path, text)
