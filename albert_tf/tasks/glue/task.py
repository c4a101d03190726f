"""The GLUE tasks on the generic text classifier (tasks.classification): GLUE's processors,
metrics, best-checkpoint metric and server submission files, MNLI's mismatched and diagnostic
sets, and `run_glue`, Google's run_classifier.py as one call.
"""

from __future__ import annotations

from absl import logging

from albert_tf.core import fileio
from albert_tf.engine import finetuning
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.tasks.classification.serving import export_text_classifier
from albert_tf.tasks.classification.task import ClassifierTask, classifier_model_fn
from albert_tf.tasks.glue.metrics import glue_metrics
from albert_tf.tasks.glue.processors import (
    best_checkpoint_metric,
    canonical_task_name,
    get_processor,
)
from albert_tf.tasks.glue.submission import submission_file_name, write_submission
from albert_tf.tasks.serving import saved_model_exporter
from albert_tf.text.encoding import TextEncoder


class GlueTask(ClassifierTask):
    """One GLUE task (or your own classification data) for the fine-tuning engine.

    A `ClassifierTask` on GLUE's processor: it gives what `run_glue` and the engine's
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
        super().__init__(
            processor or get_processor(task_name), data_dir, encoder, max_seq_length, cache_dir
        )
        self.task = processor.task_name if processor else canonical_task_name(task_name)

    def processor_of(self, task):
        """The processor that reads `task`: this task's own, or the GLUE task's of that name
        (MNLI's "mnli-mm" and "ax" are read from the same folder).

        Args:
            task: str. A task name.

        Returns:
            DataProcessor. The processor.

        Raises:
            KeyError: when `task` is neither this task nor a GLUE task.
        """
        return self.processor if task == self.task else get_processor(task)

    @property
    def best_metric(self):
        """The dev metric that picks the best checkpoint (higher is better).

        Returns:
            str. "matthews_corrcoef" for CoLA, "pearson" for STS-B and regression,
            "micro_f1" for multi-label and "accuracy" otherwise (MRPC and QQP included, as
            Google's run_classifier).
        """
        if self.task == "custom":
            return super().best_metric
        return best_checkpoint_metric(self.task)

    def _metrics(self, preds, labels):
        """GLUE's metrics of the task, or a custom task's (by its label count)."""
        if self.task == "custom":
            return super()._metrics(preds, labels)
        return glue_metrics(self.task, preds, labels)

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
        results = super().evaluate(model, batch_size)
        if self.task == "mnli":
            mm_preds, _ = self.predictions(model, "dev", batch_size, task="mnli-mm")
            results["mismatched_accuracy"] = glue_metrics(
                "mnli-mm", mm_preds, self._labels("dev", "mnli-mm")
            )["accuracy"]
        return results

    def _prediction_tasks(self) -> list:
        """This task, and for MNLI the mismatched set and (when present) the diagnostic AX."""
        tasks = [self.task] + (["mnli-mm"] if self.task == "mnli" else [])
        if self.task == "mnli":
            try:
                self.examples("test", "ax")
                tasks.append("ax")
            except FileNotFoundError:
                logging.info("no diagnostic set under %s: AX.tsv not written", self.data_dir)
        return tasks

    def _write_labels(self, output_dir, task, indices, preds) -> str:
        """The GLUE server's `<TASK>.tsv` (`test_predictions.tsv` for a custom task)."""
        if task == "custom":
            return super()._write_labels(output_dir, task, indices, preds)
        path = fileio.join(output_dir, submission_file_name(task))
        return write_submission(path, task, indices, preds)


def run_glue(
    config,
    task: ClassifierTask,
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
        task: ClassifierTask. The task and its data (a GlueTask, or any ClassifierTask).
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
