"""The metadata the TFLite Task Library's BERT clients need, so that `BertNLClassifier` takes
raw text and `BertQuestionAnswerer` answers (question, context) with no code of ours on the
device (tflite-support 0.4.4, its last release; what its C++ reads, `cc/task/text`):

* `input_tensor_metadata` in the model's input order, named "ids", "mask" and "segment_ids"
  (the clients find the tensors by these names); int32 [1, length] inputs;
* the tokenizer as `SubGraphMetadata.input_process_units[0]`: a SentencePiece model or a
  WordPiece vocabulary, an associated file;
* `BertNLClassifier`: one float output [1, labels], reported as the scores as they are; the
  label names an associated file of type TENSOR_AXIS_LABELS on that output;
* `BertQuestionAnswerer`: outputs found by the metadata names "start_logits" and "end_logits"
  (both must be there: without one `answer()` dereferences a null tensor and crashes); inputs
  fixed at [1, 384].

The Task Library lowercases ASCII letters only and runs the tokenizer on the raw text: what it
feeds a model is emulated in the tests' `tests/deploy/task_library_inputs.py`.
"""

from __future__ import annotations

from typing import Optional, Sequence

from albert_tf.deploy.tflite_metadata import (
    AssociatedFile,
    AssociatedFileType,
    BertTokenizerOptions,
    ModelMetadata,
    SentencePieceTokenizerOptions,
    SubGraphMetadata,
    TensorMetadata,
)
from albert_tf.deploy.tflite_model import model_io, populate_metadata

CLASSIFIER = "classifier"  # BertNLClassifier
QUESTION_ANSWERER = "question_answerer"  # BertQuestionAnswerer
QA_SEQ_LENGTH = 384  # the positions BertQuestionAnswerer fills, exactly
INPUT_ROLES = ("ids", "mask", "segment_ids")
INPUT_DESCRIPTIONS = {
    "ids": "Token ids: [CLS], the text's pieces, [SEP], zero padding.",
    "mask": "1 for real tokens, 0 for padding.",
    "segment_ids": "0 for the first segment, 1 for the second.",
}
SENTENCEPIECE_FILE = "sentencepiece.model"
VOCAB_FILE = "vocab.txt"
LABELS_FILE = "labels.txt"


def tokenizer_unit(kind: str, contents: bytes):
    """(process unit, {file name: contents}) of a "sentencepiece" model or "wordpiece"
    vocabulary given as bytes."""
    if kind == "sentencepiece":
        file = AssociatedFile(
            SENTENCEPIECE_FILE, "The SentencePiece model that tokenizes the input text."
        )
        return SentencePieceTokenizerOptions((file,)), {SENTENCEPIECE_FILE: contents}
    if kind == "wordpiece":
        file = AssociatedFile(
            VOCAB_FILE, "The WordPiece vocabulary, one token a line.", AssociatedFileType.VOCABULARY
        )
        return BertTokenizerOptions((file,)), {VOCAB_FILE: contents}
    raise ValueError(f"tokenizer kind {kind!r}: 'sentencepiece' or 'wordpiece'")


def _by_name(infos, name, what):
    for info in infos:
        if name in (info.signature_name, info.tensor_name, f"serving_default_{name}:0"):
            return info
    raise ValueError(f"no {what} named {name!r}; the model has {[i.signature_name for i in infos]}")


def _check_inputs(inputs, client: str) -> int:
    """The inputs' length, after checking they are what the Task Library fills."""
    lengths = set()
    for i in inputs:
        if i.dtype != "INT32" or len(i.shape_signature) != 2 or i.shape_signature[0] != 1:
            raise ValueError(
                f"input {i.signature_name} is {i.dtype} {list(i.shape_signature)}; the Task "
                "Library fills int32 [1, length] tensors"
            )
        lengths.add(i.shape_signature[1])
    if len(inputs) != 3 or len(lengths) != 1:
        raise ValueError("the Task Library's BERT clients fill three inputs of one length")
    length = lengths.pop()
    if client == QUESTION_ANSWERER and length != QA_SEQ_LENGTH:
        raise ValueError(
            f"BertQuestionAnswerer fills exactly {QA_SEQ_LENGTH} positions, not {length}"
        )
    return length


def _classifier_outputs(outputs, labels, files):
    if len(outputs) != 1:
        raise ValueError(f"BertNLClassifier reads one output; the model has {len(outputs)}")
    out = outputs[0]
    if out.dtype != "FLOAT32" or len(out.shape) != 2 or out.shape[0] != 1:
        raise ValueError(f"BertNLClassifier reads float32 [1, labels], not {list(out.shape)}")
    label_files = ()
    if labels is not None:
        names = [str(n) for n in labels]
        if len(names) != out.shape[1] or any("\n" in n or "\r" in n for n in names):
            raise ValueError(f"labels: {len(names)} one-line names for {out.shape[1]} scores")
        files[LABELS_FILE] = ("\n".join(names) + "\n").encode("utf-8")
        label_files = (
            AssociatedFile(
                LABELS_FILE, "Class names, one per score.", AssociatedFileType.TENSOR_AXIS_LABELS
            ),
        )
    return (TensorMetadata("probability", "Scores of the classes.", associated_files=label_files),)


def _answerer_outputs(outputs):
    named = {
        _by_name(outputs, "start_logits", "output").position: TensorMetadata(
            "start_logits", "Logits of each position starting the answer."
        ),
        _by_name(outputs, "end_logits", "output").position: TensorMetadata(
            "end_logits", "Logits of each position ending the answer."
        ),
    }
    if len(outputs) != 2 or len(named) != 2:
        raise ValueError("BertQuestionAnswerer reads two outputs, start_logits and end_logits")
    for o in outputs:
        if o.dtype != "FLOAT32" or list(o.shape) != [1, QA_SEQ_LENGTH]:
            raise ValueError(f"QA outputs are float32 [1, {QA_SEQ_LENGTH}], not {list(o.shape)}")
    return tuple(named[o.position] for o in outputs)


def add_bert_metadata(
    tflite: bytes,
    client: str,
    tokenizer: tuple,
    *,
    input_names: Sequence[str] = ("input_ids", "input_mask", "segment_ids"),
    labels: Optional[Sequence[str]] = None,
    name: Optional[str] = None,
    description: Optional[str] = None,
) -> bytes:
    """A model with the metadata BertNLClassifier or BertQuestionAnswerer needs.

    Args:
        tflite: The model: three int32 [1, length] inputs; a classifier one float [1, labels]
            output, a question answerer float [1, 384] `start_logits` and `end_logits`.
        client: "classifier" or "question_answerer".
        tokenizer: ("sentencepiece", model bytes) or ("wordpiece", vocabulary bytes).
        input_names: The signature names of the (ids, mask, segment ids) inputs.
        labels: A classifier's label names, one per score (without them the Task Library
            reports indices).
        name: The model's name in the metadata.
        description: Its description.

    Returns:
        The .tflite bytes with metadata and the tokenizer (and label) files.

    Raises:
        ValueError: If the model's inputs or outputs are not what the client reads.
    """
    if client not in (CLASSIFIER, QUESTION_ANSWERER):
        raise ValueError(f"client {client!r}: '{CLASSIFIER}' or '{QUESTION_ANSWERER}'")
    inputs, outputs = model_io(tflite)
    _check_inputs(inputs, client)
    role = {_by_name(inputs, n, "input").position: r for n, r in zip(input_names, INPUT_ROLES)}
    if len(role) != 3:
        raise ValueError(f"input_names {list(input_names)} name the same input twice")
    input_md = tuple(
        TensorMetadata(role[i.position], INPUT_DESCRIPTIONS[role[i.position]]) for i in inputs
    )
    unit, files = tokenizer_unit(*tokenizer)
    if client == CLASSIFIER:
        output_md = _classifier_outputs(outputs, labels, files)
    else:
        output_md = _answerer_outputs(outputs)
    subgraph = SubGraphMetadata(
        input_tensor_metadata=input_md,
        output_tensor_metadata=output_md,
        input_process_units=(unit,),
    )
    default = "ALBERT text classifier" if client == CLASSIFIER else "ALBERT question answerer"
    metadata = ModelMetadata(
        name=name or default, description=description, subgraph_metadata=(subgraph,)
    )
    return populate_metadata(tflite, metadata, files)
