"""LiteRT (.tflite) files of every albert_tf task model: `export_litert`.

The model is traced at fixed [1, max_seq_length] int32 inputs (what a phone app and the Task
Library feed), saved through Keras' `ExportArchive` (its variables frozen into constants: the
Task Library never runs initialisers, and a file with resource variables gives NaN or fails
there) and converted with built-in ops only (no Flex delegate). With a tokenizer the file
carries TFLite Model Metadata where a Task Library client exists (`BertNLClassifier` for
classifiers, `BertQuestionAnswerer` for SQuAD v1.1 at length 384), with a SentencePiece model
that does Google's preprocessing itself (`spm_normalizer`). `text_input=True` writes a file
that takes strings and tokenizes on the device (`text_input`).

Each kind's inputs and outputs (names as in the Keras model):

| kind | inputs | outputs |
|---|---|---|
| classifier, multi_label | input_ids, input_mask, segment_ids [1, L] | probabilities [1, labels] |
| regression | the same | predictions [1, 1] |
| token_classifier | the same | logits, probabilities [1, L, labels] |
| multiple_choice | the three [1, choices, L] | logits, probabilities [1, choices] |
| squad_v1 | the three [1, L] | start_logits, end_logits [1, L] |
| squad_v2 | the three and p_mask [1, L] | start_ / end_top_log_probs, _top_index, cls_logits |
| encoder | the three [1, L] | sequence_output [1, L, H], pooled_output [1, H] |
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Optional

from absl import logging
import keras
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.environment import check_backend_runs
from albert_tf.core.native_stderr import quiet_native_stderr
from albert_tf.deploy import quantization
from albert_tf.deploy.export_formats import LITERT_MIN_LENGTH
from albert_tf.deploy.spm_normalizer import preprocessing_model
from albert_tf.deploy.task_library import (
    CLASSIFIER,
    QA_SEQ_LENGTH,
    QUESTION_ANSWERER,
    add_bert_metadata,
)
from albert_tf.deploy.text_input import text_serving
from albert_tf.deploy.tflite_model import model_io, operators
from albert_tf.modeling.model_kinds import KINDS, find_kind
from albert_tf.modeling.padding_free import set_padding_free
from albert_tf.modeling.transformer import traced_mask_adder
from albert_tf.text.vocab_files import load_sentencepiece

FEATURES = ("input_ids", "input_mask", "segment_ids")


def model_kind(model) -> str:
    """What `export_litert` exports a model as: "classifier", "multi_label", "regression",
    "token_classifier", "multiple_choice", "squad_v1", "squad_v2" or "encoder" (the Keras
    text models count as the task model they extend; `modeling.model_kinds` holds the kinds).

    Raises:
        ValueError: A model of no kind, or of a kind with no LiteRT file (the pretrainer).
    """
    kind = find_kind(model)
    if kind is None or kind.litert_outputs is None:
        raise ValueError(
            f"model: a {type(model).__name__} has no LiteRT export; export_litert takes the "
            "classifiers, AlbertTokenClassifier, AlbertMultipleChoice, AlbertSquadV1/V2, "
            "AlbertModel and the Keras text models"
        )
    return kind.name


@dataclasses.dataclass
class LiteRTExport:
    """What `export_litert` wrote.

    Attributes:
        path: The file.
        kind: The model kind (`model_kind`).
        size: Its size in bytes.
        quantize: The quantize mode.
        inputs: {input name: [shape, dtype]}.
        outputs: {output name: [shape, dtype]}.
        task_library: The Task Library client its metadata is for, or None.
        note: Why it has no Task Library metadata, or why the Task Library cannot load it.
        text_input: Whether it takes strings (tokenizing with tf-text's ops on the device).
        operators: {operator: versions} in the file.
    """

    path: str
    kind: str
    size: int
    quantize: str
    inputs: dict
    outputs: dict
    task_library: Optional[str] = None
    note: str = ""
    text_input: bool = False
    operators: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Tokenizer:
    """The tokenizer a file is for: "sentencepiece" (model bytes) or "wordpiece" (vocabulary
    bytes), lowercasing or not."""

    kind: str
    contents: bytes
    lower: bool = True


def find_tokenizer(model, spm_model_file=None, vocab_file=None, do_lower_case=None):
    """The Tokenizer of the given files, else of a Keras text model's preprocessor, else None."""
    if spm_model_file and vocab_file:
        raise ValueError("spm_model_file, vocab_file: give one tokenizer, not both")
    preprocessor = getattr(model, "preprocessor", None)
    graph = getattr(getattr(preprocessor, "tokenizer", None), "tokenizer", None)
    lower = do_lower_case
    if lower is None:
        lower = getattr(graph, "do_lower_case", True)
    if spm_model_file:
        return Tokenizer("sentencepiece", fileio.read_bytes(spm_model_file), bool(lower))
    if vocab_file:
        return Tokenizer("wordpiece", fileio.read_bytes(vocab_file), bool(lower))
    if getattr(graph, "model_proto", None) is not None:
        return Tokenizer("sentencepiece", bytes(graph.model_proto), bool(lower))
    if getattr(graph, "vocab_text", None) is not None:
        return Tokenizer("wordpiece", graph.vocab_text.encode("utf-8"), bool(lower))
    return None


def feature_specs(model, kind: str, max_seq_length: int) -> dict:
    """{input name: tf.TensorSpec} of a kind's fixed-shape int32 inputs."""
    names = FEATURES + KINDS[kind].extra_inputs
    shape = [1, max_seq_length]
    if kind == "multiple_choice":
        shape = [1, model.num_choices, max_seq_length]
    return {name: tf.TensorSpec(shape, tf.int32, name=name) for name in names}


def select_outputs(kind: str, outputs: dict) -> dict:
    """The outputs a kind's file has, from the Keras model's output dict."""
    chosen = {name: outputs[name] for name in KINDS[kind].litert_outputs}
    if kind == "regression":
        chosen["predictions"] = tf.reshape(chosen["predictions"], [-1, 1])
    return {k: tf.cast(v, tf.int32) if v.dtype.is_integer else v for k, v in chosen.items()}


def feature_serving(model, kind: str, max_seq_length: int):
    """(serve function on a feature dict, {name: spec}) of a kind's feature-input file."""
    specs = feature_specs(model, kind, max_seq_length)

    def serve(features):
        return select_outputs(kind, model(dict(features), training=False))

    return serve, specs


@contextlib.contextmanager
def padded(model):
    """Padding-free encoding off while the model is traced at a fixed length (it gathers the
    real tokens into rows of a data-dependent count: slower in LiteRT, no gain at batch 1)."""
    encoders = [layer for layer in model._flatten_layers() if hasattr(layer, "padding_free")]
    before = [layer.padding_free for layer in encoders]
    set_padding_free(model, False, strict=False)
    try:
        yield model
    finally:
        for layer, value in zip(encoders, before):
            layer.padding_free = value


def convert(model, serve, specs: dict, quantize="none", examples=None, tracked=()) -> bytes:
    """LiteRT bytes of `serve` (a function of one dict of `specs`) over `model`'s weights (and
    `tracked` modules'), frozen through Keras' ExportArchive; built-in ops, and tf-text's
    custom ops when the graph has them (a string-input file)."""
    archive = keras.export.ExportArchive()
    # the model's variables, not the model: a text model's preprocessor (lookup tables the
    # file does not use, and LiteRT cannot hold) stays out
    weights = tf.Module(name="weights")
    weights.variables_list = list(model.variables)
    archive.track(weights)
    for module in tracked:
        archive.track(module)
    archive.add_endpoint("serving_default", serve, input_signature=[specs])
    strings = any(spec.dtype == tf.string for spec in specs.values())
    with fileio.scratch_folder() as folder:
        archive.write_out(fileio.join(folder, "saved_model"), verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(fileio.join(folder, "saved_model"))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = strings  # tf-text's ops, registered by the runtime
        with quiet_native_stderr():  # the converter's C++ lines ("fully_quantize: 0, ...")
            return quantization.convert_quantized(converter, quantize, examples)


def _keras_quantized(model) -> bool:
    return any(getattr(layer, "quantization_mode", None) for layer in model._flatten_layers())


def _check_arguments(model, max_seq_length, quantize, representative_dataset, text_input):
    """The model's kind, after checking every argument (each error names its argument)."""
    check_backend_runs("export_litert")
    kind = model_kind(model)
    if _keras_quantized(model):
        raise ValueError(
            "model: it was quantized with Keras (model.quantize), whose int8 x int8 matmuls "
            "the LiteRT converter refuses; export the float model with quantize='int8' or "
            "'dynamic_int8' instead"
        )
    limit = model.config.max_position_embeddings
    if not isinstance(max_seq_length, int) or not LITERT_MIN_LENGTH <= max_seq_length <= limit:
        raise ValueError(
            f"max_seq_length={max_seq_length!r}: an int in [{LITERT_MIN_LENGTH}, {limit}]"
        )
    quantization.check_quantize(quantize, representative_dataset)
    if text_input and quantize == "int8":
        raise ValueError(
            "quantize='int8' with text_input: calibration runs the file in TensorFlow's "
            "converter, which cannot run tf-text's tokenizer ops; use 'dynamic_int8' or "
            "'float16', or quantize the feature-input file"
        )
    return kind


def _check_files(path, spm_model_file):
    """The file to write is no folder; spm_model_file is a SentencePiece model."""
    if fileio.isdir(path):
        raise ValueError(
            f"path: {path} is a folder; give the .tflite file to write, e.g. "
            f"{fileio.join(path, 'model.tflite')}"
        )
    if spm_model_file:
        try:
            load_sentencepiece(spm_model_file)
        except (ValueError, OSError) as e:
            raise ValueError(
                f"spm_model_file: {e}; give the SentencePiece model of the pretrained model "
                "(e.g. 30k-clean.model), or vocab_file for a WordPiece one"
            ) from None


def _takes_pairs(model, kind, text_pair, task_library, text_input) -> bool:
    """A classifier of pairs (text_pair=True, or a Keras text model made with text_pair), which
    BertNLClassifier cannot feed: task_library=True is refused for its feature-input file."""
    pair = bool(getattr(model, "text_pair", False) if text_pair is None else text_pair)
    pair = pair and KINDS[kind].task_library is not None
    if task_library_arg_requires(task_library) and pair and not text_input:
        raise ValueError(
            "task_library=True: BertNLClassifier feeds one text, and this model takes pairs "
            "(text_pair); use task_library='auto' or False, or run the file with load_litert"
        )
    return pair


def _task_library_metadata(data, kind, tokenizer, labels, task_library, max_seq_length):
    """(file bytes, client or None, note): Task Library metadata added where it applies."""
    client = KINDS[kind].task_library
    why = None
    if task_library is False:
        return data, None, "no Task Library metadata: task_library=False"
    if tokenizer is None:
        why = "no tokenizer given (spm_model_file or vocab_file)"
    elif client is None:
        why = f"the Task Library has no client for a {kind} model"
    elif kind == "squad_v1" and max_seq_length != QA_SEQ_LENGTH:
        why = f"BertQuestionAnswerer fills exactly 384 positions; max_seq_length={max_seq_length}"
    if why is not None:
        if task_library_arg_requires(task_library):
            raise ValueError(f"task_library=True: no Task Library metadata possible: {why}")
        return data, None, f"no Task Library metadata: {why}"
    contents = tokenizer.contents
    if tokenizer.kind == "sentencepiece":
        contents = preprocessing_model(contents, tokenizer.lower)
    which = CLASSIFIER if client == "BertNLClassifier" else QUESTION_ANSWERER
    data = add_bert_metadata(
        data, which, (tokenizer.kind, contents), labels=labels if "Classifier" in client else None
    )
    return data, client, ""


def task_library_arg_requires(value) -> bool:
    """task_library=True insists on metadata; "auto" adds it where it applies; False never."""
    if value not in (True, False, "auto"):
        raise ValueError(f"task_library={value!r}: True, False or 'auto'")
    return value is True


def _serving(model, kind, tokenizer, max_seq_length, text_input, text_pair):
    """(serve, specs, modules to track) of the file asked for."""
    if not text_input:
        return (*feature_serving(model, kind, max_seq_length), ())
    pair = bool(getattr(model, "text_pair", False) if text_pair is None else text_pair)
    serve, specs, module = text_serving(
        model, kind, tokenizer, max_seq_length, pair, select_outputs
    )
    return serve, specs, (module,)


def _check_labels(model, kind, labels):
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if kind not in ("classifier", "multi_label", "regression"):
        raise ValueError(
            f"labels: a {kind} file has no label output (only classifiers take labels)"
        )
    if len(labels) != model.num_labels:
        raise ValueError(f"labels: {len(labels)} names for the model's {model.num_labels} labels")
    return labels


def export_litert(
    model,
    path,
    *,
    max_seq_length,
    spm_model_file=None,
    vocab_file=None,
    labels=None,
    quantize="none",
    representative_dataset=None,
    text_input=False,
    text_pair=None,
    do_lower_case=None,
    task_library="auto",
) -> LiteRTExport:
    """Write a task model as a LiteRT file (.tflite) with fixed [1, max_seq_length] inputs.

    Built-in ops only, variables frozen into constants; see the module docstring for each
    kind's inputs and outputs. With a tokenizer (the files, or a Keras text model's own) a
    classifier's file carries the metadata of the Task Library's `BertNLClassifier` (raw text
    in, label scores out) and a SQuAD v1.1 model's at length 384 that of
    `BertQuestionAnswerer`; the SentencePiece model inside does Google's preprocessing itself.

    Args:
        model: A classifier (single-label, multi-label, regression), AlbertTokenClassifier,
            AlbertMultipleChoice, AlbertSquadV1 / V2, AlbertModel, or a Keras text model.
        path: The file to write (any filesystem: local, gs://, ram://), atomically.
        max_seq_length: The input length L (≤ the model's max_position_embeddings).
        spm_model_file: The SentencePiece model of the inputs (`30k-clean.model`).
        vocab_file: Or the WordPiece vocabulary (Google's Chinese releases).
        labels: A classifier's label names, for the Task Library's label file.
        quantize: "none" (float32), "float16", "dynamic_int8" (int8 weights) or "int8" (int8
            weights and calibrated int8 activations for the matmuls, float outputs; needs
            representative_dataset).
        representative_dataset: int8 calibration inputs: an iterable of feature dicts
            (input_ids, input_mask, segment_ids, p_mask for SQuAD v2; one example or a batch
            each), at most 1000 examples used.
        text_input: Take strings ("text", or "text_a" / "text_b") and tokenize in the file
            with tf-text's LiteRT ops (see `text_input`); run it with `load_litert`.
        text_pair: With text_input, two texts (default: the text model's `text_pair`).
        do_lower_case: Lowercase the text (default: the text model's, else True).
        task_library: "auto" adds Task Library metadata where a client exists, True insists
            (an error otherwise), False never.

    Returns:
        A LiteRTExport: path, kind, size, inputs, outputs, operators, Task Library client.

    Raises:
        ValueError: A model kind or an argument it does not support, naming the argument; on
            KERAS_BACKEND=torch, which runs the models' forward pass only.

    >>> import albert_tf
    >>> model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_json_file(
    ...     "tests/data/fixtures/albert_tiny/albert_config.json"), num_labels=2)
    >>> out = albert_tf.export_litert(model, "ram://doc/model.tflite", max_seq_length=16,
    ...     spm_model_file="tests/data/fixtures/spm.model", labels=["neg", "pos"])
    >>> out.task_library, out.outputs["probabilities"]
    ('BertNLClassifier', [[1, 2], 'FLOAT32'])
    >>> runner = albert_tf.load_litert("ram://doc/model.tflite")
    >>> sorted(runner.input_names)
    ['input_ids', 'input_mask', 'segment_ids']
    """
    kind = _check_arguments(model, max_seq_length, quantize, representative_dataset, text_input)
    _check_files(path, spm_model_file)
    pair = _takes_pairs(model, kind, text_pair, task_library, text_input)
    labels = _check_labels(model, kind, labels)
    tokenizer = find_tokenizer(model, spm_model_file, vocab_file, do_lower_case)
    with padded(model):
        serve, specs, tracked = _serving(
            model, kind, tokenizer, max_seq_length, text_input, text_pair
        )
        examples, adder = None, contextlib.nullcontext()
        if quantize == "int8":
            examples = quantization.representative_examples(
                representative_dataset, specs, 1000, vocab_size=model.config.vocab_size
            )
            adder = traced_mask_adder(quantization.INT8_MASK_ADDER)
        with adder:
            data = convert(model, serve, specs, quantize, examples, tracked)
    client, note = None, "takes strings: no Task Library client reads it" if text_input else ""
    if not text_input:
        data, client, note = _task_library_metadata(
            data, kind, tokenizer, labels, False if pair else task_library, max_seq_length
        )
        note = "no Task Library metadata: BertNLClassifier feeds one text" if pair else note
    if client and quantize in quantization.TASK_LIBRARY_CANNOT_LOAD:
        note = (
            f"the Task Library cannot load this {quantize} file: "
            f"{quantization.TASK_LIBRARY_CANNOT_LOAD[quantize]}; ai-edge-litert runs it"
        )
        logging.warning("export_litert: %s", note)
    fileio.write_bytes(path, data)
    inputs, outputs = model_io(data)
    describe = lambda infos: {i.signature_name: [list(i.shape), i.dtype] for i in infos}
    return LiteRTExport(
        str(path),
        kind,
        len(data),
        quantize,
        describe(inputs),
        describe(outputs),
        client,
        note,
        bool(text_input),
        operators(data),
    )
