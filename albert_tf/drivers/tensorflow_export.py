"""A fine-tuning driver's `--export_dir` on another Keras backend (JAX): the export runs in a
TensorFlow process that the driver starts itself.

The raw-text SavedModel, the LiteRT file and the ONNX file are TensorFlow graphs of the model
(`albert_tf.deploy.exports`), which JAX's Keras layers cannot be traced into. So after a JAX run
the driver hands the model it would export to the command a TensorFlow user runs to export a
trained checkpoint: the same driver and flags under KERAS_BACKEND=tensorflow, with
`--nodo_train --nodo_eval --nodo_predict`, its output folder a scratch folder holding the weights
as `model.ckpt-best` (Google's TF1 format, lossless) and the run's label files, the features
cached where this run cached them, on one CPU device. It writes the same version folder a
TensorFlow run writes; its warnings join this run's closing summary, and its failure is this
run's one `error:` line.
"""

from __future__ import annotations

import sys

from absl import logging

from albert_tf.core import fileio
from albert_tf.core.errors import InputError, TrainingError
from albert_tf.core.tensorflow_process import failure_line, run_in_tensorflow
from albert_tf.engine.run_summary import read_run_summary
from albert_tf.tasks.classification.custom import LABELS_FILE as CUSTOM_LABELS_FILE

# the flags that make the driver's command an export of the handed-over weights on one device
EXPORT_ONLY = ("--nodo_train", "--nodo_eval", "--nodo_predict", "--nouse_tpu")


def child_flags(FLAGS, run_dir, checkpoint) -> list:
    """The flags added to the driver's command line in the TensorFlow process (absl: the last
    value of a flag wins).

    Args:
        FLAGS: The driver's parsed flags.
        run_dir: The child's output folder.
        checkpoint: The handed-over weights (a TF1 checkpoint prefix).

    Returns:
        The flags, as `--name=value` strings.
    """
    return [
        *EXPORT_ONLY,
        "--strategy_type=one_device",
        "--dtype=float32",  # the handed-over model is the float32 one
        f"--output_dir={run_dir}",
        f"--init_checkpoint={checkpoint}",
        f"--cached_dir={FLAGS.cached_dir or FLAGS.output_dir}",
    ]


def run_files() -> tuple:
    """The files of a run folder the driver reads again when it only exports: the label ids of
    a custom classifier and of NER."""
    # deferred: the NER task imports TensorFlow; the flags are checked before it loads
    from albert_tf.tasks.ner.task import LABELS_FILE as NER_LABELS_FILE

    return tuple(dict.fromkeys((CUSTOM_LABELS_FILE, NER_LABELS_FILE)))


def exporter_in_tensorflow(FLAGS, argv=None):
    """The engine's export_fn of a driver on a Keras backend other than TensorFlow: the
    export runs in a TensorFlow process (see the module docstring).

    Args:
        FLAGS: The driver's parsed flags (export_dir, output_dir, cached_dir, verbose_errors).
        argv: The driver's command line, script first; default `sys.argv` (what absl parsed).

    Returns:
        export_fn: model → the version folder the TensorFlow process wrote. Its `warnings`
        (a list) collects what that process warned about, for the closing summary.
    """
    command = list(argv or sys.argv)
    warnings = []

    def export_fn(model):
        # deferred: TF1 checkpoints need TensorFlow; the flags are checked before it loads
        from albert_tf.formats.tf1 import BEST_CHECKPOINT, save_original_checkpoint

        logging.info(
            "export to %s: in a TensorFlow process (KERAS_BACKEND=tensorflow), from this "
            "run's weights",
            FLAGS.export_dir,
        )
        with fileio.scratch_folder() as run_dir:
            checkpoint = fileio.join(run_dir, BEST_CHECKPOINT)
            save_original_checkpoint(model, checkpoint)
            for name in run_files():
                if fileio.isfile(fileio.join(FLAGS.output_dir, name)):
                    fileio.copy(fileio.join(FLAGS.output_dir, name), fileio.join(run_dir, name))
            run = run_in_tensorflow([*command, *child_flags(FLAGS, run_dir, checkpoint)])
            if run.returncode != 0:
                if getattr(FLAGS, "verbose_errors", False):
                    sys.stderr.write(run.stderr)
                error = InputError if run.returncode == InputError.exit_code else TrainingError
                raise error(f"the export's TensorFlow process: {failure_line(run)}")
            summary = read_run_summary(run_dir) or {}
        warnings.extend(summary.get("warnings", []))
        return version_folder(summary, FLAGS.export_dir)

    export_fn.warnings = warnings
    return export_fn


def version_folder(summary, export_dir) -> str:
    """The version folder a run summary lists in `export_dir`.

    Args:
        summary: A run_summary.json's contents.
        export_dir: The export folder.

    Returns:
        The folder.

    Raises:
        TrainingError: The summary lists none.

    Example:

    >>> version_folder({"files": [{"path": "/e/17/README.md"}, {"path": "/e/17"}]}, "/e")
    '/e/17'
    """
    parent = fileio.abspath(export_dir).rstrip("/")
    found = [
        f["path"]
        for f in summary.get("files", [])
        if fileio.dirname(f["path"].rstrip("/")) == parent
    ]
    if not found:
        raise TrainingError(f"the export's TensorFlow process listed no version of {export_dir}")
    return found[0]
