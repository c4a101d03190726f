"""A classifier's test prediction files: `test_results.tsv` (a row of probabilities, or the
predicted value, per example, as Google's run_classifier writes it) and an
`index\\tprediction` file of label names, each written atomically."""

from __future__ import annotations

from typing import Iterable

from albert_tf.core import fileio
from albert_tf.core.fileio import write_text_atomic
from albert_tf.tasks.classification.reader import DataProcessor

TEST_RESULTS = "test_results.tsv"  # Google's run_classifier's probabilities file
CUSTOM_PREDICTIONS = "test_predictions.tsv"  # a custom task's `index\tprediction` (label) file


def write_table(output_dir, table) -> str:
    """Writes test_results.tsv: a row of tab-separated values per test example.

    Args:
        output_dir: str. The folder to write to.
        table: 2-D array. The probabilities per example (or the regression predictions, one
            column).

    Returns:
        str. The path written.

    Example:

    >>> import os, tempfile
    >>> path = write_table(tempfile.mkdtemp(), [[0.25, 0.75]])
    >>> os.path.basename(path), open(path).read()
    ('test_results.tsv', '0.25000000\\t0.75000000\\n')
    """
    path = fileio.join(output_dir, TEST_RESULTS)
    write_text_atomic(path, "".join("\t".join(f"{v:.8f}" for v in row) + "\n" for row in table))
    return path


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


def write_label_predictions(
    path: str, indices: Iterable, predictions: Iterable, processor: DataProcessor
) -> str:
    """Writes an `index\\tprediction` file: a header, then one row per example.

    Args:
        path: str. The file to write (atomically: readers see the old file or the new one).
        indices: The examples' indices (test guids' bare index, or ints), written as given.
        predictions: Label ids or label names (numbers for regression).
        processor: DataProcessor. Gives the label names (and whether it is a regression).

    Returns:
        str. `path`.

    Raises:
        ValueError: when the counts differ, or a prediction is not one of the labels.

    Example:

    >>> import os, tempfile, albert_tf
    >>> processor = albert_tf.CustomProcessor(
    ...     {"train": "tests/data/samples/SST-2/train.tsv"}, text_a_column="sentence")
    >>> path = os.path.join(tempfile.mkdtemp(), "test_predictions.tsv")
    >>> print(open(write_label_predictions(path, [0, 1], [1, 0], processor)).read(), end="")
    index	prediction
    0	1
    1	0
    """
    indices, preds = list(indices), list(predictions)
    if len(indices) != len(preds):
        raise ValueError(f"{len(indices)} indices but {len(preds)} predictions")
    lines = ["index\tprediction\n"]
    lines += [f"{idx}\t{_format_prediction(p, processor)}\n" for idx, p in zip(indices, preds)]
    write_text_atomic(path, "".join(lines))
    return path
