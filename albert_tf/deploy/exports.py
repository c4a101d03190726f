"""A fine-tuned model's exports, every format in the same new version folder of `export_dir`
(the drivers' `--export_dir`, `--export_format` and `--quantize`, albert_tf.drivers.exports):

    export_dir/<unix seconds>/
        saved_model.pb, variables/, assets/   the raw-text SavedModel (TF Serving)
        model.tflite                          LiteRT, Task Library metadata where a client exists
        quantization_report.json              quantized: the file vs float32 Keras on dev
        model.onnx                            ONNX (albert_tf.deploy.onnx)
        README.md                             how to load each

The LiteRT file of a quantized export is measured on the task's dev set with ai-edge-litert:
the task's own metric of the file and of the float32 Keras model, the share of equal decisions
and the largest probability change (`quantization.compare_outputs`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging as pylogging

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import AlbertError, InputError, TrainingError
from albert_tf.deploy import quantization
from albert_tf.deploy.export_formats import (
    LITERT,
    ONNX,
    QUANTIZE_MODES,
    SAVED_MODEL,
    parse_export_formats,
)
from albert_tf.deploy.litert import export_litert, model_kind
from albert_tf.deploy.runtime import load_litert
from albert_tf.engine.finetuning import bucket_by_length
from albert_tf.engine.records import decode
from albert_tf.tasks import serving

LITERT_FILE = "model.tflite"
ONNX_FILE = "model.onnx"
REPORT_FILE = "quantization_report.json"
LITERT_README = """# LiteRT ({kind}, quantize={quantize}): `model.tflite`, {size:,} bytes

Python (ai-edge-litert, `pip install ai-edge-litert`):

    from ai_edge_litert.interpreter import Interpreter
    runner = Interpreter(model_path="{path}").get_signature_runner()
    outputs = runner({call})   # int32 arrays, shapes below

or `albert_tf.load_litert("{path}")`, which takes the same inputs as NumPy arrays.
{client}
Inputs: {inputs}
Outputs: {outputs}
{report}"""
CLIENT_README = {
    "BertNLClassifier": "Android / iOS: the TFLite Task Library's `BertNLClassifier` takes raw "
    "text (the tokenizer and the label file are inside the file):\n"
    "`BertNLClassifier.createFromFile(context, \"model.tflite\").classify(text)` (Java), "
    "`TFLBertNLClassifier.bertNLClassifier(modelPath:)` (Swift).\n",
    "BertQuestionAnswerer": "Android / iOS: the TFLite Task Library's `BertQuestionAnswerer` "
    "answers raw (question, context): `BertQuestionAnswerer.createFromFile(context, "
    '"model.tflite").answer(context, question)` (Java), '
    "`TFLBertQuestionAnswerer.questionAnswerer(modelPath:)` (Swift).\n",
}
ONNX_README = """# ONNX: `model.onnx`

Runs in ONNX Runtime (`onnxruntime.InferenceSession("{path}")`) and OpenVINO; see
docs/deployment.md.
"""


def litert_arguments(task) -> dict:
    """export_litert's tokenizer, length and label arguments for a task (GLUE, SQuAD, RACE,
    NER: each names its tokenizer files on its encoder or on itself)."""
    owner = getattr(task, "encoder", task)
    settings = getattr(task, "s", owner)
    args = {
        "max_seq_length": int(task.max_seq_length),
        "spm_model_file": getattr(owner, "spm_model_file", None),
        "vocab_file": getattr(owner, "vocab_file", None),
        "do_lower_case": bool(getattr(settings, "do_lower_case", True)),
    }
    processor = getattr(task, "processor", None)
    if processor is not None and not getattr(task, "is_regression", False):
        args["labels"] = [str(label) for label in processor.get_labels()]
    if processor is not None and processor.has_text_b():
        # BertNLClassifier feeds one text: a pair task's file must not claim that client
        args["task_library"] = False
    return args


def _records(task, split):
    """(path, spec) of a task's cached records of a split, or None where it has none."""
    if split == "dev" and hasattr(task, "predict_data"):  # SQuAD: its predict_file's features
        try:
            return task.predict_data()[2], task.predict_spec
        except (ValueError, FileNotFoundError, InputError):
            return None
    try:
        return task.records(split)[0], task.spec
    except (ValueError, FileNotFoundError, InputError, KeyError):
        return None


def calibration_examples(task, count=quantization.CALIBRATION_EXAMPLES) -> list:
    """The first `count` train records of a task (else dev), as feature dicts: what int8
    calibrates the activations' ranges on.

    Raises:
        InputError: The task has no records to calibrate on.
    """
    found = _records(task, "train") or _records(task, "dev")
    if found is None:
        raise InputError("quantize=int8: no train or dev records to calibrate the ranges on")
    path, spec = found
    ds = tf.data.TFRecordDataset(str(path)).take(count).map(lambda s: decode(s, spec))
    return [{k: v.numpy() for k, v in example.items()} for example in ds]


class _Recorder:
    """A model's `predict` as the tasks call it, keeping its outputs on the real examples (and
    their input_mask) for `compare_outputs`; LiteRT outputs reshaped as Keras' (`like`)."""

    def __init__(self, model, like=None):
        self.model, self.like, self.outputs, self.mask = model, like, None, None

    def predict(self, dataset, verbose=0):
        outputs = self.model.predict(dataset, verbose=0)
        if self.like is not None:
            outputs = {
                k: np.reshape(v, (-1, *self.like[k].shape[1:])) if k in self.like else v
                for k, v in outputs.items()
            }
        batches = [b[0] if isinstance(b, tuple) else b for b in dataset]
        mask = np.concatenate([np.asarray(b["input_mask"]) for b in batches])
        real = mask.reshape(len(mask), -1).any(-1)  # eval sets are padded with all-zero fakes
        if "is_real_example" in batches[0]:
            flags = np.concatenate([np.asarray(b["is_real_example"]) for b in batches])
            real &= flags.reshape(-1) > 0
        self.outputs = {k: np.asarray(v)[real] for k, v in outputs.items()}
        self.mask = mask[real]
        return outputs


class _ExpectedRetracing(pylogging.Filter):
    """Drops TensorFlow's "triggered tf.function retracing" warning: Keras' predict traces once
    per batch shape, and the report predicts at full length after the eval's bucketed lengths,
    so those traces are bounded and expected, not the fault the warning is about."""

    def filter(self, record):
        return "triggered tf.function retracing" not in record.getMessage()


@contextlib.contextmanager
def expected_retracing():
    """While open, TensorFlow's frequent-retracing warning is not printed; every other line
    of the `tensorflow` logger is.

    Returns:
        A context manager.

    Example:

    >>> import logging
    >>> from albert_tf.deploy.exports import expected_retracing
    >>> with expected_retracing():
    ...     logging.getLogger("tensorflow").filters[-1].filter(
    ...         logging.makeLogRecord({"msg": "5 calls triggered tf.function retracing"}))
    False
    """
    logger, drop = pylogging.getLogger("tensorflow"), _ExpectedRetracing()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def quantization_report(model, task, path, quantize, batch_size) -> dict:
    """The quantized LiteRT file at `path` vs the float32 Keras model on the task's dev set:
    each one's task metrics (the task's own `evaluate`), agreement, probability change."""
    keras_run = _Recorder(model)
    with bucket_by_length(False), expected_retracing():  # full length: the file's shape
        keras_metrics = task.evaluate(keras_run, batch_size)
        lite_run = _Recorder(load_litert(path), like=keras_run.outputs)
        lite_metrics = task.evaluate(lite_run, batch_size)
    comparison = quantization.compare_outputs(
        model_kind(model), keras_run.outputs, lite_run.outputs, keras_run.mask
    )
    return {
        "quantize": quantize,
        "file": LITERT_FILE,
        "size_bytes": fileio.getsize(path),
        "runtime": "ai-edge-litert",
        "split": "dev",
        **comparison,
        "metrics": {"keras_float32": keras_metrics, f"litert_{quantize}": lite_metrics},
    }


def _report_lines(report) -> str:
    if report is None:
        return ""
    keras_m, lite_m = report["metrics"].values()
    metrics = ", ".join(f"{k} {keras_m[k]:.4g} → {lite_m[k]:.4g}" for k in keras_m if k in lite_m)
    return (
        f"\nDev set, float32 Keras → this file ({REPORT_FILE}): {metrics}; agreement "
        f"{report['agreement']}, largest probability change {report['max_probability_change']}.\n"
    )


def litert_writer(model, task, quantize, batch_size, warnings=None):
    """The version folder's LiteRT writer: model.tflite (and quantization_report.json; a
    report whose agreement is under quantization.AGREEMENT_FLOOR logs a warning, also added to
    the `warnings` list)."""

    def write(folder, target):
        path = fileio.join(folder, LITERT_FILE)
        args = litert_arguments(task)
        examples = calibration_examples(task) if quantize == "int8" else None
        out = export_litert(model, path, quantize=quantize, representative_dataset=examples, **args)
        report = None
        if quantize != "none":
            try:
                report = quantization_report(model, task, path, quantize, batch_size)
            except (ValueError, FileNotFoundError, InputError) as e:
                logging.warning("no quantization report: no dev set to measure on (%s)", e)
            if report is not None:
                fileio.write_json(fileio.join(folder, REPORT_FILE), report, indent=1)
                _warn(quantization.agreement_warning(report), warnings)
        call = ", ".join(f"{n}=..." for n in out.inputs)
        shapes = lambda d: ", ".join(f"`{k}` {v[1].lower()} {v[0]}" for k, v in d.items())
        note = f"({out.note})\n" if out.note else ""
        return LITERT_README.format(
            kind=out.kind,
            quantize=quantize,
            size=out.size,
            path=fileio.join(target, LITERT_FILE),
            call=call,
            client=CLIENT_README.get(out.task_library, "") + note,
            inputs=shapes(out.inputs),
            outputs=shapes(out.outputs),
            report=_report_lines(report),
        )

    return write


def _warn(message, warnings):
    if message:
        logging.warning("%s", message)
        if warnings is not None:
            warnings.append(message)


def onnx_writer(model):
    """The version folder's ONNX writer: model.onnx by albert_tf.deploy.onnx.export_onnx."""

    def write(folder, target):
        # deferred: the ONNX exporter imports tf2onnx, needed only for an onnx export
        from albert_tf.deploy.onnx import export_onnx

        export_onnx(model, fileio.join(folder, ONNX_FILE))
        return ONNX_README.format(path=fileio.join(target, ONNX_FILE))

    return write


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """What a fine-tuned model's export writes: which formats go into the new version folder
    `export_dir/<unix seconds>/`, the LiteRT file's quantization and the batch size of its
    quantization report.

    Args:
        export_dir: The folder of version folders (TF Serving's model base path).
        formats: Export formats, a subset of EXPORT_FORMATS (a comma string or a sequence).
        quantize: The LiteRT file's mode, one of QUANTIZE_MODES (needs "litert" in formats).
        batch_size: The eval batch size of the quantization report's Keras run.

    Raises:
        InputError: An unknown format or mode, or a quantize mode without litert (errors name
            these arguments).

    Example:

    >>> ExportOptions("/tmp/exports", formats="saved_model,litert", quantize="float16").formats
    ('saved_model', 'litert')
    """

    export_dir: str
    formats: tuple = (SAVED_MODEL,)
    quantize: str = "none"
    batch_size: int = 8

    def __post_init__(self):
        object.__setattr__(self, "formats", parse_export_formats(self.formats, "formats"))
        object.__setattr__(self, "quantize", str(self.quantize or "none").strip().lower())
        if self.quantize not in QUANTIZE_MODES:
            raise InputError(f"quantize={self.quantize!r}: use one of {', '.join(QUANTIZE_MODES)}")
        if self.quantize != "none" and LITERT not in self.formats:
            raise InputError(
                f"quantize={self.quantize!r} quantizes the LiteRT file: add litert to formats"
            )


def exporter(export, task, options: ExportOptions):
    """The engine's export_fn (`run_finetuning(..., export_fn=...)`): model → the version
    folder it wrote, holding every format of `options`.

    Args:
        export: The task's raw-text SavedModel export, `export(model, task, export_dir,
            also=writers)` (e.g. tasks.classification.serving.export_text_classifier).
        task: The fine-tuning task (its tokenizer files, labels, and dev records for a
            quantization report).
        options: ExportOptions.

    Returns:
        A function model → the new version folder. Its `warnings` attribute (a list) collects
        what the export warned about, for the run's closing summary.
    """
    formats = options.formats
    warnings = []
    writers = lambda model: [
        *(
            [
                reported(
                    LITERT,
                    litert_writer(model, task, options.quantize, options.batch_size, warnings),
                )
            ]
            if LITERT in formats
            else []
        ),
        *([reported(ONNX, onnx_writer(model))] if ONNX in formats else []),
    ]

    def export_fn(model):
        if SAVED_MODEL in formats:
            return reported(SAVED_MODEL, export)(
                model, task, options.export_dir, also=writers(model)
            )
        return serving.write_version(options.export_dir, writers(model))

    export_fn.warnings = warnings
    return export_fn


def reported(export_format, write):
    """`write` whose failure (after training: a converter's traceback, pages of MLIR) is one
    TrainingError naming the format and the first line of its cause; the version folder's
    scratch is removed by `serving.write_version`.

    Args:
        export_format: The format `write` writes (one of EXPORT_FORMATS).
        write: A version-folder writer or a task's SavedModel export.

    Returns:
        `write`, its failures reported in one line.
    """

    def call(*args, **kwargs):
        try:
            return write(*args, **kwargs)
        except AlbertError:
            raise
        except Exception as e:  # noqa: BLE001  any exporter failure: one line, not a traceback
            if fileio.storage_error("the export", e) is not None:
                raise  # a full disk: the drivers' own one line
            cause = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            raise TrainingError(
                f"formats={export_format}: the export failed ({type(e).__name__}: {cause}); "
                "nothing was left in export_dir"
            ) from e

    return call


def export_model(model, task, export, options: ExportOptions) -> str:
    """Writes a fine-tuned model in every format of `options` into one new version folder:
    the raw-text SavedModel, model.tflite (with quantization_report.json when quantized) and
    model.onnx, with a README.md on loading each; what `--export_dir` does after a driver's run,
    in one Python call.

    Args:
        model: The fine-tuned Keras model (e.g. from `GlueTask.build_model`).
        task: Its fine-tuning task (e.g. a GlueTask).
        export: The task's raw-text SavedModel export (e.g.
            tasks.classification.serving.export_text_classifier).
        options: ExportOptions.

    Returns:
        The new version folder, `options.export_dir/<unix seconds>`.

    Example (a classifier fine-tuned by `run_glue`):

        options = ExportOptions("exports/mrpc", formats=("saved_model", "litert", "onnx"))
        folder = export_model(model, task, export_text_classifier, options)
    """
    return exporter(export, task, options)(model)
