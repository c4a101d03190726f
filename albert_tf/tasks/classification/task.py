"""Text classification on the shared fine-tuning machinery, the base of every classifier task.

Features, cached records, evaluation with exact metrics, prediction files and the raw-text
SavedModel export, for single-label and multi-label classification and for regression, on
any processor: your own files (a `CustomProcessor`), or GLUE's (`tasks.glue.task.GlueTask`).
"""

from __future__ import annotations

from absl import logging
import numpy as np

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.fileio import write_text_atomic
from albert_tf.engine import finetuning
from albert_tf.engine.records import cached_records
from albert_tf.modeling.finetuning_models import AlbertClassifier
from albert_tf.tasks.classification.metrics import custom_metrics
from albert_tf.tasks.classification.prediction_files import (
    CUSTOM_PREDICTIONS,
    write_label_predictions,
    write_table,
)
from albert_tf.tasks.metrics import best_threshold, multilabel_scores
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.packing import pack_ids


def classifier_feature_spec(
    max_seq_length: int, is_regression: bool, multi_label_count: int = 0
) -> dict:
    """The feature layout of classifier records, as Google's run_classifier writes them.

    Args:
        max_seq_length: int. The length L of every record's token features.
        is_regression: bool. The label is a float (regression) instead of an int64 class id.
        multi_label_count: int. For a multi-label task, the number of labels: the record then
            holds a 0/1 float `label_vector` of that length instead of `label_ids`. 0 (the
            default) for a single-label task.

    Returns:
        dict. Feature name -> (dtype name, length): `input_ids`, `input_mask`, `segment_ids`
        (int64, L), `label_ids` (1) or `label_vector`, and `is_real_example` (int64, 1).

    Example:

    >>> from albert_tf.tasks.classification.task import classifier_feature_spec
    >>> classifier_feature_spec(8, is_regression=False)
    {'input_ids': ('int64', 8), 'input_mask': ('int64', 8), 'segment_ids': ('int64', 8),
     'label_ids': ('int64', 1), 'is_real_example': ('int64', 1)}
    >>> classifier_feature_spec(8, False, multi_label_count=3)["label_vector"]
    ('float', 3)
    """
    L = max_seq_length
    label = (
        {"label_vector": ("float", multi_label_count)}
        if multi_label_count
        else {"label_ids": ("float" if is_regression else "int64", 1)}
    )
    return {
        "input_ids": ("int64", L),
        "input_mask": ("int64", L),
        "segment_ids": ("int64", L),
        **label,
        "is_real_example": ("int64", 1),
    }


def example_to_record(
    example,
    label_map,
    encoder: TextEncoder,
    max_seq_length,
    is_regression,
    multi_label: bool = False,
):
    """Encodes one example as a classifier record: `[CLS] A [SEP] (B [SEP])` and its label.

    The texts are tokenized and packed as Google's run_classifier packs them (a pair too long
    for `max_seq_length - 3` pieces loses pieces from the end of its longer text, one at a
    time), then padded to `max_seq_length`. An example without a label (a test example)
    gets label 0, or a vector of zeros.

    Args:
        example: InputExample. The example (`text_a`, optional `text_b`, `label`).
        label_map: dict. Label name -> id; for a multi-label task, its keys in id order.
        encoder: TextEncoder. The tokenizer.
        max_seq_length: int. The length of the packed features.
        is_regression: bool. The label is a number (stored as a float).
        multi_label: bool. The label is a tuple of names, stored as a 0/1 `label_vector` over
            `label_map`. Default False.

    Returns:
        dict. `input_ids`, `input_mask`, `segment_ids` (lists of `max_seq_length` ints),
        `is_real_example` (1) and `label_ids` (an int or float) or `label_vector`.

    Raises:
        KeyError: when a classification label is not in `label_map`.

    Example:

    >>> import albert_tf
    >>> from albert_tf.tasks.classification.reader import InputExample
    >>> from albert_tf.tasks.classification.task import example_to_record
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file="tests/data/fixtures/spm.model")
    >>> record = example_to_record(InputExample("train-0", "the list", "a dog", "1"),
    ...                            {"0": 0, "1": 1}, encoder, 10, is_regression=False)
    >>> record["input_ids"]
    [2, 14, 90, 3, 17, 308, 127, 3, 0, 0]
    >>> record["segment_ids"], record["label_ids"]
    ([0, 0, 0, 0, 1, 1, 1, 1, 0, 0], 1)
    """
    ids_b = encoder.ids(example.text_b) if example.text_b is not None else None
    record = dict(
        pack_ids(
            encoder.ids(example.text_a),
            ids_b,
            max_seq_length,
            encoder.cls_id,
            encoder.sep_id,
            encoder.pad_id,
        )
    )
    record["is_real_example"] = 1
    if multi_label:  # a 0/1 vector over the label set (zeros for an unlabelled test example)
        record["label_vector"] = [float(name in (example.label or ())) for name in label_map]
        return record
    if example.label is None:
        label = 0
    elif is_regression:
        label = float(example.label)
    else:
        label = label_map[example.label]
    record["label_ids"] = label
    return record


class ClassifierTask:
    """A text classification task for the fine-tuning engine: your own data, or GLUE's.

    Holds the task's data processor and gives what the engine's `run_finetuning` (and
    `run_glue`) needs: the examples and cached TFRecord features of each split, the dev
    metrics (on the real examples only), the metric that picks the best checkpoint, and the
    test prediction files (`test_results.tsv` and `test_predictions.tsv`). Records are cached
    in `cache_dir`, keyed by everything that changes them (task, split, length, tokenizer,
    data files), so a second run reuses them.

    The processor says what kind of classifier it is: single-label (accuracy, Matthews
    correlation, F1 or macro F1 by label count), regression (Pearson, Spearman, MSE), or
    multi-label (micro / macro F1 at the threshold chosen on dev, which its test predictions
    and export use too). `tasks.glue.task.GlueTask` adds the GLUE tasks' metrics and files.

    Args:
        processor: DataProcessor. The data: a `CustomProcessor` for your own files, or any
            processor (`task_name`, labels, `is_regression`, `get_*_examples`).
        data_dir: str or None. The folder the processor reads; None for a processor that
            knows its files.
        encoder: TextEncoder. The tokenizer (SentencePiece model or WordPiece vocabulary).
        max_seq_length: int. The length of the packed features, in pieces.
        cache_dir: str. The folder for the cached TFRecord files.

    Example:

    >>> import tempfile, albert_tf
    >>> from albert_tf.tasks.classification.task import ClassifierTask
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file="tests/data/fixtures/spm.model")
    >>> processor = albert_tf.CustomProcessor(data_dir="tests/data/samples/SST-2",
    ...                                       text_a_column="sentence")
    >>> task = ClassifierTask(processor, None, encoder, 32, tempfile.mkdtemp())
    >>> task.task, task.label_names, task.best_metric, task.records("train")[1]
    ('custom', ['0', '1'], 'accuracy', 50)
    """

    def __init__(self, processor, data_dir, encoder: TextEncoder, max_seq_length, cache_dir):
        self.task = processor.task_name
        self.processor = processor
        self.data_dir, self.encoder = data_dir, encoder
        self.max_seq_length, self.cache_dir = max_seq_length, cache_dir
        self.is_regression = self.processor.is_regression
        self.multi_label = bool(getattr(self.processor, "multi_label", False))
        self.spec = classifier_feature_spec(
            max_seq_length, self.is_regression, self.processor.num_labels if self.multi_label else 0
        )
        self._examples = {}

    @property
    def label_names(self):
        """The class names in label-id order (None for regression)."""
        return None if self.is_regression else list(self.processor.get_labels())

    def processor_of(self, task):
        """The processor that reads `task`: this task's own (GlueTask also reads MNLI's
        other sets from the same folder).

        Args:
            task: str. A task name.

        Returns:
            DataProcessor. The processor.

        Raises:
            KeyError: when `task` is not this task.
        """
        if task != self.task:
            raise KeyError(f"{task!r} is not this task ({self.task!r})")
        return self.processor

    def examples(self, split, task=None):
        """The examples of a split, read once.

        Args:
            split: str. "train", "dev" or "test".
            task: str or None. Another task read from the same data folder (MNLI's
                "mnli-mm" and "ax"); None for this task. Default None.

        Returns:
            list of InputExample. The split's examples (test labels are None).
        """
        key = (task or self.task, split)
        if key not in self._examples:
            proc = self.processor_of(key[0])
            reader = {
                "train": proc.get_train_examples,
                "dev": proc.get_dev_examples,
                "test": proc.get_test_examples,
            }[split]
            self._examples[key] = reader(self.data_dir)
        return self._examples[key]

    def records(self, split, task=None):
        """The cached TFRecord file of a split, written on first use.

        Args:
            split: str. "train", "dev" or "test".
            task: str or None. Another task of the same data folder ("mnli-mm", "ax");
                None for this task. Default None.

        Returns:
            tuple. `(path, count)`: the TFRecord file and its number of records.
        """
        task = task or self.task
        examples = self.examples(split, task)
        label_map = self.processor.label_map()
        params = {
            "task": task,
            "split": split,
            "max_seq_length": self.max_seq_length,
            "num_examples": len(examples),
            **self.encoder.fingerprint(),
            **self._data_key(split, task),
        }
        make = lambda: (
            example_to_record(
                e,
                label_map,
                self.encoder,
                self.max_seq_length,  # noqa: E731
                self.is_regression,
                self.multi_label,
            )
            for e in examples
        )
        return cached_records(self.cache_dir, f"{task}_{split}", params, self.spec, make)

    def _data_key(self, split, task):
        """What of the data files the records' cache key holds: GLUE's folder, or the
        processor's own key (a custom task's files, digests, columns and labels)."""
        if task == self.task and hasattr(self.processor, "cache_key"):
            return self.processor.cache_key(self.data_dir, split)
        return {"data": [fileio.abspath(self.data_dir)]}

    @property
    def best_metric(self):
        """The dev metric that picks the best checkpoint (higher is better).

        Returns:
            str. "pearson" for regression, "micro_f1" for multi-label and "accuracy"
            otherwise (GlueTask: "matthews_corrcoef" for CoLA, "pearson" for STS-B, and
            "accuracy" for MRPC and QQP too, as Google's run_classifier).
        """
        return "pearson" if self.is_regression else "micro_f1" if self.multi_label else "accuracy"

    def _metrics(self, preds, labels):
        """A custom task's metrics (by its label count); GlueTask's are GLUE's."""
        return custom_metrics(preds, labels, self.processor.num_labels, self.is_regression)

    def _labels(self, split, task=None):
        label_map = self.processor.label_map()
        ex = self.examples(split, task)
        return np.array([float(e.label) if self.is_regression else label_map[e.label] for e in ex])

    def predictions(self, model, split, batch_size, task=None):
        """Predicts a split with a model.

        Args:
            model: keras.Model. An `AlbertClassifier` (or a model with its outputs).
            split: str. "train", "dev" or "test".
            batch_size: int. The prediction batch size.
            task: str or None. Another task of the same data folder; None for this one.
                Default None.

        Returns:
            tuple. `(predictions, outputs)`: the predicted label ids (argmax; the predicted
            values for regression) [examples], and the model's outputs as NumPy arrays.
        """
        path, n = self.records(split, task)
        out = finetuning.predict_records(
            model, path, self.spec, n, batch_size, seq_length=self.max_seq_length
        )
        if self.is_regression:
            return out["predictions"], out
        return np.argmax(out["probabilities"], axis=-1), out

    def evaluate(self, model, batch_size) -> dict:
        """Computes the dev metrics of a model.

        The metrics are computed exactly on the real examples only (GlueTask: GLUE's; MNLI
        adds the mismatched accuracy). A multi-label task reports micro / macro F1 and exact
        match at the threshold with the best dev micro F1, the same at 0.5, and the threshold.

        Args:
            model: keras.Model. The classifier to evaluate.
            batch_size: int. The evaluation batch size.

        Returns:
            dict. Metric name -> float, including "loss" (the mean cross-entropy; the mean
            squared error for regression).
        """
        if self.multi_label:
            return self._evaluate_multi_label(model, batch_size)
        preds, out = self.predictions(model, "dev", batch_size)
        labels = self._labels("dev")
        results = self._metrics(preds, labels)
        if self.is_regression:
            results["loss"] = float(np.mean((preds - labels) ** 2))
        else:
            p = out["probabilities"][np.arange(len(labels)), labels.astype(int)]
            results["loss"] = float(-np.mean(np.log(np.maximum(p, 1e-12))))
        return results

    # ----- multi-label (a processor with multi_label)

    def _label_vectors(self, split):
        names = self.processor.labels
        return np.array([[n in e.label for n in names] for e in self.examples(split)], np.float64)

    def _probabilities(self, model, split, batch_size):
        path, n = self.records(split)
        return finetuning.predict_records(
            model, path, self.spec, n, batch_size, seq_length=self.max_seq_length
        )["probabilities"]

    def _evaluate_multi_label(self, model, batch_size) -> dict:
        """Micro / macro F1 and exact match at the threshold with the best dev micro F1 (the
        one test predictions use), those at 0.5, and the binary cross-entropy."""
        probs, targets = self._probabilities(model, "dev", batch_size), self._label_vectors("dev")
        threshold = best_threshold(probs, targets)
        results = {
            **multilabel_scores(probs, targets, threshold),
            "threshold": threshold,
            **{f"{k}_at_0.5": v for k, v in multilabel_scores(probs, targets).items()},
        }
        p = np.clip(probs.astype(np.float64), 1e-12, 1 - 1e-12)
        results["loss"] = float(-np.mean(targets * np.log(p) + (1 - targets) * np.log(1 - p)))
        return results

    def export_threshold(self, model, batch_size=32) -> float:
        """Chooses a multi-label task's threshold: the one with the best dev micro F1.

        Args:
            model: keras.Model. The multi-label classifier.
            batch_size: int. The prediction batch size. Default 32.

        Returns:
            float. The threshold among 0.05, 0.10, ..., 0.95 (the one nearest 0.5 on ties);
            0.5 when there is no dev split.
        """
        try:
            dev = self._probabilities(model, "dev", batch_size)
        except (FileNotFoundError, InputError):
            logging.info("multi-label: no dev split to choose a threshold on; 0.5")
            return 0.5
        return best_threshold(dev, self._label_vectors("dev"))

    def _write_multi_label_predictions(self, model, output_dir, batch_size) -> list:
        """test_results.tsv (a probability per label) and test_predictions.tsv (index, the
        labels at the dev-chosen threshold, joined by the label separator)."""
        threshold = self.export_threshold(model, batch_size)
        logging.info("multi-label test predictions at threshold %.2f (chosen on dev)", threshold)
        probs = self._probabilities(model, "test", batch_size)
        names, sep = self.processor.labels, self.processor.label_separator
        results = write_table(output_dir, probs)
        preds = fileio.join(output_dir, CUSTOM_PREDICTIONS)
        rows = ["index\tprediction\n"] + [
            f"{e.guid.split('-')[-1]}\t"
            f"{sep.join(n for n, p in zip(names, row) if p >= threshold)}\n"
            for e, row in zip(self.examples("test"), probs)
        ]
        write_text_atomic(preds, "".join(rows))
        return [results, preds]

    def write_predictions(self, model, output_dir, batch_size) -> list:
        """Writes the test split's prediction files.

        `test_results.tsv` holds a row of probabilities per test example (the predicted value
        for regression), as Google's run_classifier writes it; `test_predictions.tsv` the
        predicted label names (GlueTask: `<TASK>.tsv`, the file the GLUE server takes; MNLI
        also writes the mismatched set and, when the diagnostic set is present, AX.tsv). A
        multi-label task writes the probabilities and `test_predictions.tsv` with the labels
        at the threshold chosen on dev.

        Args:
            model: keras.Model. The classifier.
            output_dir: str. The folder to write to.
            batch_size: int. The prediction batch size.

        Returns:
            list of str. The paths written.
        """
        if self.multi_label:
            return self._write_multi_label_predictions(model, output_dir, batch_size)
        written = []
        for task in self._prediction_tasks():
            preds, out = self.predictions(model, "test", batch_size, task)
            if task == self.task:
                table = out["predictions"][:, None] if self.is_regression else out["probabilities"]
                written.append(write_table(output_dir, table))
            indices = [e.guid.split("-")[-1] for e in self.examples("test", task)]
            written.append(self._write_labels(output_dir, task, indices, preds))
        return written

    def _prediction_tasks(self) -> list:
        """The tasks whose test sets are predicted: this one (GlueTask adds MNLI's)."""
        return [self.task]

    def _write_labels(self, output_dir, task, indices, preds) -> str:
        """The `index\tprediction` file of a task's test predictions."""
        path = fileio.join(output_dir, CUSTOM_PREDICTIONS)
        return write_label_predictions(path, indices, preds, self.processor)


def classifier_model_fn(config, task: ClassifierTask, dropout_prob=0.1):
    """Returns a function that builds the task's classifier (what the engine calls).

    Args:
        config: AlbertConfig. The encoder's configuration.
        task: ClassifierTask. The task: its label count, regression and multi-label settings.
        dropout_prob: float. The dropout before the classifier layer. Default 0.1.

    Returns:
        callable. A function of no arguments that returns a new `AlbertClassifier`.

    Example:

    >>> import tempfile, albert_tf
    >>> from albert_tf.tasks.classification.task import classifier_model_fn
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file="tests/data/fixtures/spm.model")
    >>> task = albert_tf.GlueTask("sts-b", "tests/data/samples", encoder, 32, tempfile.mkdtemp())
    >>> config = albert_tf.AlbertConfig(vocab_size=1000, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = classifier_model_fn(config, task)()
    >>> type(model).__name__, model.is_regression
    ('AlbertClassifier', True)
    """
    return lambda: AlbertClassifier(
        config,
        task.processor.num_labels,
        dropout_prob,
        is_regression=task.is_regression,
        multi_label=task.multi_label,
    )
