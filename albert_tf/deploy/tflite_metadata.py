"""TFLite Model Metadata (tflite-support's `metadata_schema.fbs`) as Python values, written with
nothing but the `flatbuffers` package (`tflite_model` reads it back).

The TFLite Task Library learns from this metadata how to tokenize raw text for a model: a
flatbuffer with root `tflite.ModelMetadata` and file identifier "M001", stored as one more data
buffer of the model (`tflite_model.populate_metadata` puts it there). tflite-support's own
writer needs protobuf<4 and numpy<2, which cannot share an environment with TensorFlow 2.21, so
the fields the BERT clients read are written and read here. Written from the schema's field
order (each table field is a vtable slot; a union takes two: its type tag, then its value).
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Tuple, Union

import flatbuffers

METADATA_FILE_IDENTIFIER = b"M001"  # the metadata flatbuffer's file identifier


class AssociatedFileType:
    """`tflite.AssociatedFileType` (a byte enum)."""

    UNKNOWN = 0
    DESCRIPTIONS = 1
    TENSOR_AXIS_LABELS = 2
    TENSOR_VALUE_LABELS = 3
    TENSOR_AXIS_SCORE_CALIBRATION = 4
    VOCABULARY = 5  # schema 1.0.1


class ContentPropertiesType:
    """Type tags of the `tflite.ContentProperties` union."""

    NONE = 0
    FEATURE_PROPERTIES = 1
    IMAGE_PROPERTIES = 2
    BOUNDING_BOX_PROPERTIES = 3
    AUDIO_PROPERTIES = 4  # schema 1.3.0


class ProcessUnitOptionsType:
    """Type tags of the `tflite.ProcessUnitOptions` union."""

    NONE = 0
    NORMALIZATION_OPTIONS = 1
    SCORE_CALIBRATION_OPTIONS = 2
    SCORE_THRESHOLDING_OPTIONS = 3
    BERT_TOKENIZER_OPTIONS = 4  # schema 1.1.0
    SENTENCE_PIECE_TOKENIZER_OPTIONS = 5  # schema 1.1.0
    REGEX_TOKENIZER_OPTIONS = 6  # schema 1.2.1


# vtable slots of the schema's tables, in field order
FILE_SLOTS = dict(name=0, description=1, type=2, locale=3)
CONTENT_SLOTS = dict(properties_type=0, properties=1, range=2)
UNIT_SLOTS = dict(options_type=0, options=1)
BERT_TOKENIZER_SLOTS = dict(vocab_file=0)
SENTENCEPIECE_SLOTS = dict(sentencepiece_model=0, vocab_file=1)
TENSOR_SLOTS = dict(
    name=0,
    description=1,
    dimension_names=2,
    content=3,
    process_units=4,
    stats=5,
    associated_files=6,
)
SUBGRAPH_SLOTS = dict(
    name=0,
    description=1,
    input_tensor_metadata=2,
    output_tensor_metadata=3,
    associated_files=4,
    input_process_units=5,
    output_process_units=6,
)
METADATA_SLOTS = dict(
    name=0,
    description=1,
    version=2,
    subgraph_metadata=3,
    author=4,
    license=5,
    associated_files=6,
    min_parser_version=7,
)
TABLE_SIZES = dict(file=4, content=3, unit=2, tensor=7, subgraph=10, model=8)


@dataclasses.dataclass(frozen=True)
class AssociatedFile:
    """A file packed into the model's zip archive and named by the metadata.

    Attributes:
        name: Its member name in the archive.
        description: What it is.
        type: An `AssociatedFileType` value.
        locale: A language tag, e.g. "en".
    """

    name: str
    description: Optional[str] = None
    type: int = AssociatedFileType.UNKNOWN
    locale: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class BertTokenizerOptions:
    """A WordPiece tokenizer; its vocabulary is the first of `vocab_file`."""

    vocab_file: Tuple[AssociatedFile, ...]


@dataclasses.dataclass(frozen=True)
class SentencePieceTokenizerOptions:
    """A SentencePiece tokenizer; its model is the first of `sentencepiece_model`."""

    sentencepiece_model: Tuple[AssociatedFile, ...]
    vocab_file: Tuple[AssociatedFile, ...] = ()


@dataclasses.dataclass(frozen=True)
class OtherProcessUnitOptions:
    """A process unit of a kind not modelled here, kept by the reader as its type tag."""

    options_type: int


ProcessUnit = Union[BertTokenizerOptions, SentencePieceTokenizerOptions, OtherProcessUnitOptions]


@dataclasses.dataclass(frozen=True)
class TensorMetadata:
    """Metadata of one input or output tensor.

    Attributes:
        name: The name a client finds the tensor by (e.g. "ids", "end_logits").
        description: Free text.
        content_type: A `ContentPropertiesType`; BERT tensors are FEATURE_PROPERTIES, and
            NONE writes no content.
        process_units: Per-tensor process units.
        associated_files: Files of this tensor, e.g. the label file of a classifier's scores.
    """

    name: Optional[str] = None
    description: Optional[str] = None
    content_type: int = ContentPropertiesType.FEATURE_PROPERTIES
    process_units: Tuple[ProcessUnit, ...] = ()
    associated_files: Tuple[AssociatedFile, ...] = ()


@dataclasses.dataclass(frozen=True)
class SubGraphMetadata:
    """Metadata of one subgraph: tensor metadata in the subgraph's input / output order."""

    name: Optional[str] = None
    description: Optional[str] = None
    input_tensor_metadata: Tuple[TensorMetadata, ...] = ()
    output_tensor_metadata: Tuple[TensorMetadata, ...] = ()
    associated_files: Tuple[AssociatedFile, ...] = ()
    input_process_units: Tuple[ProcessUnit, ...] = ()
    output_process_units: Tuple[ProcessUnit, ...] = ()


@dataclasses.dataclass(frozen=True)
class ModelMetadata:
    """The root, `tflite.ModelMetadata`; a None `min_parser_version` is computed on writing."""

    name: Optional[str] = None
    description: Optional[str] = None
    version: Optional[str] = None
    subgraph_metadata: Tuple[SubGraphMetadata, ...] = ()
    author: Optional[str] = None
    license: Optional[str] = None
    associated_files: Tuple[AssociatedFile, ...] = ()
    min_parser_version: Optional[str] = None


def _unit_files(unit) -> tuple:
    if isinstance(unit, BertTokenizerOptions):
        return unit.vocab_file
    if isinstance(unit, SentencePieceTokenizerOptions):
        return unit.sentencepiece_model + unit.vocab_file
    return ()


def _walk(metadata: ModelMetadata):
    """(files, units, tensors) of the whole metadata, each in document order."""
    files, units, tensors = [], [], []
    for sg in metadata.subgraph_metadata:
        for t in sg.input_tensor_metadata + sg.output_tensor_metadata:
            tensors.append(t)
            files += t.associated_files
            units += t.process_units
        files += sg.associated_files
        units += sg.input_process_units + sg.output_process_units
    files += metadata.associated_files
    for unit in units:
        files += _unit_files(unit)
    return files, units, tensors


def min_parser_version(metadata: ModelMetadata) -> str:
    """The oldest metadata parser that understands every field used (the schema's history: a
    VOCABULARY file needs 1.0.1; process units on a subgraph and the BERT / SentencePiece
    tokenizers 1.1.0; the regex tokenizer 1.2.1; audio content 1.3.0)."""
    files, units, tensors = _walk(metadata)
    version = (1, 0, 0)
    if any(f.type == AssociatedFileType.VOCABULARY for f in files):
        version = (1, 0, 1)
    subgraph_units = any(
        sg.input_process_units or sg.output_process_units for sg in metadata.subgraph_metadata
    )
    tokenizers = (BertTokenizerOptions, SentencePieceTokenizerOptions)
    if subgraph_units or any(isinstance(u, tokenizers) for u in units):
        version = max(version, (1, 1, 0))
    regex = ProcessUnitOptionsType.REGEX_TOKENIZER_OPTIONS
    if any(getattr(u, "options_type", None) == regex for u in units):
        version = max(version, (1, 2, 1))
    if any(t.content_type == ContentPropertiesType.AUDIO_PROPERTIES for t in tensors):
        version = max(version, (1, 3, 0))
    return ".".join(str(v) for v in version)


def associated_file_names(metadata: ModelMetadata) -> list:
    """The names of every file the metadata refers to, unique, in document order."""
    files, _, _ = _walk(metadata)
    return list(dict.fromkeys(f.name for f in files))


class _Writer:
    """Packs ModelMetadata with flatbuffers.Builder: children before the table that refers to
    them (a flatbuffer is built back to front, one open object at a time)."""

    def __init__(self):
        self.b = flatbuffers.Builder(1024)

    def string(self, value):
        return None if value is None else self.b.CreateString(value)

    def vector(self, items, write):
        """A vector of tables written by `write`, or None for no items."""
        if not items:
            return None
        offsets = [write(item) for item in items]
        self.b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            self.b.PrependUOffsetTRelative(off)
        return self.b.EndVector()

    def table(self, size, offsets=(), int8=(), uint8=()):
        """A table of `size` slots from (slot, value) pairs; None values are left out."""
        self.b.StartObject(size)
        for slot, value in offsets:
            if value is not None:
                self.b.PrependUOffsetTRelativeSlot(slot, value, 0)
        for slot, value in int8:
            self.b.PrependInt8Slot(slot, value, 0)
        for slot, value in uint8:
            self.b.PrependUint8Slot(slot, value, 0)
        return self.b.EndObject()

    def file(self, f: AssociatedFile):
        s = FILE_SLOTS
        strings = [(s[k], self.string(getattr(f, k))) for k in ("name", "description", "locale")]
        return self.table(TABLE_SIZES["file"], strings, int8=[(s["type"], f.type)])

    def unit(self, unit):
        if isinstance(unit, BertTokenizerOptions):
            vocab = self.vector(unit.vocab_file, self.file)
            options = self.table(1, [(BERT_TOKENIZER_SLOTS["vocab_file"], vocab)])
            tag = ProcessUnitOptionsType.BERT_TOKENIZER_OPTIONS
        elif isinstance(unit, SentencePieceTokenizerOptions):
            s = SENTENCEPIECE_SLOTS
            model = self.vector(unit.sentencepiece_model, self.file)
            vocab = self.vector(unit.vocab_file, self.file)
            options = self.table(2, [(s["sentencepiece_model"], model), (s["vocab_file"], vocab)])
            tag = ProcessUnitOptionsType.SENTENCE_PIECE_TOKENIZER_OPTIONS
        else:
            raise TypeError(f"cannot write process unit options {unit!r}")
        s = UNIT_SLOTS
        return self.table(
            TABLE_SIZES["unit"], [(s["options"], options)], uint8=[(s["options_type"], tag)]
        )

    def tensor(self, t: TensorMetadata):
        content = None
        if t.content_type == ContentPropertiesType.FEATURE_PROPERTIES:
            properties = self.table(0)  # FeatureProperties has no fields
            s = CONTENT_SLOTS
            content = self.table(
                TABLE_SIZES["content"],
                [(s["properties"], properties)],
                uint8=[(s["properties_type"], t.content_type)],
            )
        elif t.content_type != ContentPropertiesType.NONE:
            raise ValueError(f"only feature content is written, got type {t.content_type}")
        units = self.vector(t.process_units, self.unit)
        files = self.vector(t.associated_files, self.file)
        s = TENSOR_SLOTS
        fields = [(s["name"], self.string(t.name)), (s["description"], self.string(t.description))]
        fields += [(s["content"], content), (s["process_units"], units)]
        return self.table(TABLE_SIZES["tensor"], fields + [(s["associated_files"], files)])

    def subgraph(self, sg: SubGraphMetadata):
        s = SUBGRAPH_SLOTS
        fields = [
            (s["name"], self.string(sg.name)),
            (s["description"], self.string(sg.description)),
        ]
        for key in ("input_tensor_metadata", "output_tensor_metadata"):
            fields.append((s[key], self.vector(getattr(sg, key), self.tensor)))
        fields.append((s["associated_files"], self.vector(sg.associated_files, self.file)))
        for key in ("input_process_units", "output_process_units"):
            fields.append((s[key], self.vector(getattr(sg, key), self.unit)))
        return self.table(TABLE_SIZES["subgraph"], fields)

    def model(self, m: ModelMetadata) -> bytes:
        s = METADATA_SLOTS
        fields = [(s[k], self.string(getattr(m, k))) for k in ("name", "description", "version")]
        fields.append((s["subgraph_metadata"], self.vector(m.subgraph_metadata, self.subgraph)))
        fields += [(s[k], self.string(getattr(m, k))) for k in ("author", "license")]
        fields.append((s["associated_files"], self.vector(m.associated_files, self.file)))
        fields.append((s["min_parser_version"], self.string(m.min_parser_version)))
        self.b.Finish(self.table(TABLE_SIZES["model"], fields), METADATA_FILE_IDENTIFIER)
        return bytes(self.b.Output())


def serialize_metadata(metadata: ModelMetadata) -> bytes:
    """The metadata flatbuffer (identifier "M001"); a None `min_parser_version` is computed."""
    if metadata.min_parser_version is None:
        metadata = dataclasses.replace(metadata, min_parser_version=min_parser_version(metadata))
    return _Writer().model(metadata)
