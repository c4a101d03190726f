"""GLUE sequence classification on the shared fine-tuning machinery.

Features, cached records, evaluation with exact metrics, prediction files and the raw-text
SavedModel export, for the GLUE tasks and for your own data (a `CustomProcessor`).
"""

from __future__ import annotations

from absl import logging
import numpy as np

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.fileio import write_text_atomic
from albert_tf.engine import finetuning
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.engine.records import cached_records
from albert_tf.modeling.finetuning_models import AlbertClassifier
from albert_tf.tasks.glue.metrics import custom_metrics, glue_metrics
from albert_tf.tasks.glue.processors import (
    best_checkpoint_metric,
    canonical_task_name,
    get_processor,
)
from albert_tf.tasks.glue.serving import export_text_classifier
from albert_tf.tasks.glue.submission import submission_file_name, write_submission
from albert_tf.tasks.metrics import best_threshold, multilabel_scores
from albert_tf.tasks.serving import saved_model_exporter
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.packing import pack_ids

CUSTOM_PREDICTIONS = "test_predictions.tsv"  # a custom task's `index\tprediction` (label) file


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

    >>> from albert_tf.tasks.glue.task import classifier_feature_spec
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
    >>> from albert_tf.tasks.glue.reader import InputExample
    >>> from albert_tf.tasks.glue.task import example_to_record
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


class GlueTask:
    """One GLUE task (or your own classification data) for the fine-tuning engine.

    Holds the task's data processor and gives what `run_glue` and the engine's
    `run_finetuning` need: the examples and cached TFRecord features of each split, the dev
    metrics (exactly as GLUE defines them, on the real examples only), the metric that picks
    the best checkpoint, and the test prediction files (Google's `test_results.tsv` and the
    GLUE server's `<TASK>.tsv`). Records are cached in `cache_dir`, keyed by everything that
    changes them (task, split, length, tokenizer, data files), so a second run reuses them.

    MNLI also evaluates and predicts the mismatched set (and the diagnostic set AX when its
    file is in `data_dir`). A multi-label custom task scores micro / macro F1 at the
    threshold chosen on dev, which its test predictions and export use too.

    Args:
        task_name: str. A GLUE task name, case-insensitive: "cola", "sst-2", "mrpc",
            "sts-b", "qqp", "mnli", "qnli", "rte", "wnli" (and a few aliases such as
            "sst2"). Ignored when `processor` is given.
        data_dir: str. The GLUE data folder, holding a folder per task as GLUE's download
            lays it out (`MRPC/train.tsv`, ...). May be None with a `processor` that knows
            its files.
        encoder: TextEncoder. The tokenizer (SentencePiece model or WordPiece vocabulary).
        max_seq_length: int. The length of the packed features, in pieces.
        cache_dir: str. The folder for the cached TFRecord files.
        processor: DataProcessor or None. A processor that replaces the GLUE one, e.g. a
            `CustomProcessor` for your own files (the task is then named "custom").
            Default None.

    Raises:
        KeyError: when `task_name` is not a GLUE task and no `processor` is given.

    Example:

    >>> import tempfile, albert_tf
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file="tests/data/fixtures/spm.model")
    >>> task = albert_tf.GlueTask("MRPC", "tests/data/samples", encoder, 32, tempfile.mkdtemp())
    >>> task.task, task.processor.get_labels(), task.best_metric
    ('mrpc', ['0', '1'], 'accuracy')
    >>> len(task.examples("train")), task.examples("test")[0].label
    (50, None)
    >>> path, count = task.records("dev")
    >>> count
    50

    Your own data, through a `CustomProcessor`:

    >>> processor = albert_tf.CustomProcessor(data_dir="tests/data/samples/SST-2",
    ...                                       text_a_column="sentence")
    >>> task = albert_tf.GlueTask("custom", None, encoder, 32, tempfile.mkdtemp(),
    ...                           processor=processor)
    >>> task.task, task.processor.num_labels, task.records("train")[1]
    ('custom', 2, 50)
    """

    def __init__(
        self, task_name, data_dir, encoder: TextEncoder, max_seq_length, cache_dir, processor=None
    ):
        self.task = processor.task_name if processor else canonical_task_name(task_name)
        self.processor = processor or get_processor(self.task)
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

    def examples(self, split, task=None):
        """The examples of a split, read once.

        Args:
            split: str. "train", "dev" or "test".
            task: str or None. Another GLUE task read from the same data folder (MNLI's
                "mnli-mm" and "ax"); None for this task. Default None.

        Returns:
            list of InputExample. The split's examples (test labels are None).
        """
        key = (task or self.task, split)
        if key not in self._examples:
            proc = self.processor if key[0] == self.task else get_processor(key[0])
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
            task: str or None. Another GLUE task of the same data folder ("mnli-mm", "ax");
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
            str. "matthews_corrcoef" for CoLA, "pearson" for STS-B and regression,
            "micro_f1" for multi-label and "accuracy" otherwise (MRPC and QQP included, as
            Google's run_classifier).
        """
        if self.task == "custom":
            return (
                "pearson" if self.is_regression else "micro_f1" if self.multi_label else "accuracy"
            )
        return best_checkpoint_metric(self.task)

    def _metrics(self, preds, labels):
        """GLUE's metrics of the task, or a custom task's (by its label count)."""
        if self.task == "custom":
            return custom_metrics(preds, labels, self.processor.num_labels, self.is_regression)
        return glue_metrics(self.task, preds, labels)

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
            task: str or None. Another GLUE task of the same data folder; None for this one.
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

        The metrics are GLUE's, computed exactly on the real examples only; MNLI adds the
        mismatched accuracy. A multi-label task reports micro / macro F1 and exact match at
        the threshold with the best dev micro F1, the same at 0.5, and the threshold.

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
        if self.task == "mnli":
            mm_preds, _ = self.predictions(model, "dev", batch_size, task="mnli-mm")
            results["mismatched_accuracy"] = glue_metrics(
                "mnli-mm", mm_preds, self._labels("dev", "mnli-mm")
            )["accuracy"]
        return results

    # ----- multi-label (a custom task with --multi_label)

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
        results = _write_table(output_dir, probs)
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
        for regression), as Google's run_classifier writes it; `<TASK>.tsv` is the file the
        GLUE server takes (`test_predictions.tsv` for a custom task). MNLI also writes the
        mismatched set and, when the diagnostic set is present, AX.tsv. A multi-label task
        writes the probabilities and `test_predictions.tsv` with the labels at the threshold
        chosen on dev.

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
        tasks = [self.task] + (["mnli-mm"] if self.task == "mnli" else [])
        if self.task == "mnli":
            try:
                self.examples("test", "ax")
                tasks.append("ax")
            except FileNotFoundError:
                logging.info("no diagnostic set under %s: AX.tsv not written", self.data_dir)
        for task in tasks:
            preds, out = self.predictions(model, "test", batch_size, task)
            examples = self.examples("test", task)
            if task == self.task:
                table = out["predictions"][:, None] if self.is_regression else out["probabilities"]
                written.append(_write_table(output_dir, table))
            custom = task == "custom"
            name = CUSTOM_PREDICTIONS if custom else submission_file_name(task)
            path = fileio.join(output_dir, name)
            write_submission(
                path,
                task,
                [e.guid.split("-")[-1] for e in examples],
                preds,
                processor=self.processor if custom else None,
            )
            written.append(path)
        return written


def _write_table(output_dir, table) -> str:
    """test_results.tsv: a row of tab-separated values (probabilities, or the regression
    prediction) per test example, as Google's run_classifier writes it."""
    path = fileio.join(output_dir, "test_results.tsv")
    write_text_atomic(path, "".join("\t".join(f"{v:.8f}" for v in row) + "\n" for row in table))
    return path


def classifier_model_fn(config, task: GlueTask, dropout_prob=0.1):
    """Returns a function that builds the task's classifier (what the engine calls).

    Args:
        config: AlbertConfig. The encoder's configuration.
        task: GlueTask. The task: its label count, regression and multi-label settings.
        dropout_prob: float. The dropout before the classifier layer. Default 0.1.

    Returns:
        callable. A function of no arguments that returns a new `AlbertClassifier`.

    Example:

    >>> import tempfile, albert_tf
    >>> from albert_tf.tasks.glue.task import classifier_model_fn
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


def run_glue(
    config,
    task: GlueTask,
    opts: FineTuningOptions,
    strategy=None,
    *,
    do_train=False,
    do_eval=False,
    do_predict=False,
    dropout_prob=0.1,
    export_dir=None,
    export_fn=None,
) -> dict:
    """Fine-tunes, evaluates and predicts a GLUE task, as Google's run_classifier.py does.

    Training evaluates each saved checkpoint on dev (with `do_eval`) and keeps the best one
    as `model.ckpt-best` in `opts.output_dir`; evaluation and prediction then use that best
    checkpoint (else `opts.init_checkpoint`). `export_dir` also exports a SavedModel whose
    serving signature takes raw strings (see `load_saved_model`).

    Args:
        config: AlbertConfig. The encoder's configuration.
        task: GlueTask. The task and its data.
        opts: FineTuningOptions. The run's settings (Google's flag names): output_dir,
            init_checkpoint, batch sizes, learning_rate, train_step, warmup_step,
            save_checkpoints_steps, ...
        strategy: tf.distribute.Strategy or None. Where to run; None for the default
            strategy. Default None.
        do_train: bool. Fine-tune on the train split. Default False.
        do_eval: bool. Compute the dev metrics (during training, and of the best
            checkpoint). Default False.
        do_predict: bool. Write the test split's prediction files. Default False.
        dropout_prob: float. The dropout before the classifier layer. Default 0.1.
        export_dir: str or None. Export a raw-text SavedModel into a new version folder
            `export_dir/<unix seconds>/`. Default None (no export).
        export_fn: callable or None. `export_fn(model)` exports the trained model instead
            (the driver's --export_format exports: SavedModel, LiteRT, ONNX in one version
            folder); returns the folder written. Default None.

    Returns:
        dict. The dev metrics (with `do_eval`), "prediction_files" (with `do_predict`) and
        "export_dir" (the version folder written).

    Raises:
        ValueError: when none of do_train, do_eval, do_predict or export_dir is given.

    Example:

    >>> import os, tempfile, albert_tf
    >>> from albert_tf.engine.finetuning_options import FineTuningOptions
    >>> tiny = "tests/data/fixtures/albert_tiny"  # a model in Google's release layout
    >>> config = albert_tf.AlbertConfig.from_json_file(f"{tiny}/albert_config.json")
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file=f"{tiny}/30k-clean.model")
    >>> work = tempfile.mkdtemp()
    >>> task = albert_tf.GlueTask("mrpc", "tests/data/samples", encoder, 32, work)
    >>> opts = FineTuningOptions(output_dir=os.path.join(work, "out"),
    ...                          init_checkpoint=f"{tiny}/model.ckpt-best",
    ...                          train_batch_size=8, train_step=2, save_checkpoints_steps=2,
    ...                          verbose=0)
    >>> results = albert_tf.run_glue(config, task, opts, do_train=True, do_eval=True,
    ...                              do_predict=True)
    >>> sorted(results)
    ['accuracy', 'f1', 'loss', 'prediction_files']
    >>> [os.path.basename(p) for p in results["prediction_files"]]
    ['test_results.tsv', 'MRPC.tsv']
    >>> os.path.exists(os.path.join(work, "out", "model.ckpt-best.index"))
    True
    """
    export_fn = export_fn or saved_model_exporter(export_text_classifier, task, export_dir)
    return finetuning.run_finetuning(
        task,
        classifier_model_fn(config, task, dropout_prob),
        opts,
        strategy,
        do_train=do_train,
        do_eval=do_eval,
        do_predict=do_predict,
        export_fn=export_fn,
    )
