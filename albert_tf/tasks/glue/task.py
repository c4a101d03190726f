"""GLUE sequence classification on the shared fine-tuning machinery: features, cached records,
evaluation with exact metrics, prediction files and the raw-text SavedModel export."""

from __future__ import annotations

from absl import logging
import numpy as np

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.fileio import write_text_atomic
from albert_tf.engine import finetuning
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
from albert_tf.tasks.serving import exporter
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.packing import pack_ids

CUSTOM_PREDICTIONS = "test_predictions.tsv"  # a custom task's `index\tprediction` (label) file


def classifier_feature_spec(
    max_seq_length: int, is_regression: bool, multi_label_count: int = 0
) -> dict:
    """Google's classifier records: ids/mask/segments [L], label_ids, is_real_example; a
    multi-label task has a 0/1 `label_vector` [labels] instead of label_ids."""
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
    """[CLS] A [SEP] (B [SEP]) with the shared packer, plus the label (or label vector)."""
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
    """One GLUE task: its processor, records per split, metrics and prediction files."""

    def __init__(
        self, task_name, data_dir, encoder: TextEncoder, max_seq_length, cache_dir, processor=None
    ):
        """`processor` (e.g. a CustomProcessor for your own files) replaces the GLUE one."""
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

    def examples(self, split, task=None):
        """Examples of a split ("train", "dev", "test") of this task or of `task` (mnli-mm, ax)."""
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
        """(path, count) of the cached records of a split; keyed by everything that changes them."""
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
        path, n = self.records(split, task)
        out = finetuning.predict_records(
            model, path, self.spec, n, batch_size, seq_length=self.max_seq_length
        )
        if self.is_regression:
            return out["predictions"], out
        return np.argmax(out["probabilities"], axis=-1), out

    def evaluate(self, model, batch_size) -> dict:
        """Dev metrics, exact, on real examples only; MNLI adds the mismatched accuracy."""
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
        """The threshold with the best dev micro F1 for `model`; 0.5 without a dev split."""
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
        """test_results.tsv (probabilities) and the GLUE server files; MNLI also writes the
        mismatched set and, when the diagnostic set is present, AX.tsv."""
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
    opts: finetuning.FineTuningOptions,
    strategy=None,
    *,
    do_train=False,
    do_eval=False,
    do_predict=False,
    dropout_prob=0.1,
    export_dir=None,
    export_fn=None,
) -> dict:
    """Google's run_classifier flow on the shared runner, plus a raw-text SavedModel export
    (to export_dir; or export_fn(model), e.g. the driver's --export_format exports)."""
    export_fn = export_fn or exporter(export_text_classifier, task, export_dir)
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
