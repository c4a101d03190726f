"""The LiteRT (.tflite) model flatbuffer: its inputs, outputs and operators read off the file,
and the TFLite Model Metadata written into it with the files the metadata names, and read back.

Where the metadata goes (tflite-support's layout, which the Task Library reads): the metadata
flatbuffer is one more data buffer of the model, named by an entry `Metadata{name:
"TFLITE_METADATA", buffer: index}` of the model's `metadata` vector; the associated files
(tokenizer model, label file) are a zip archive of *stored* (uncompressed) members appended
after the flatbuffer, found by its end-of-central-directory record and read in place.

The model is unpacked and packed again with the schema module LiteRT ships
(`ai_edge_litert.schema_py_generated`, a superset of TensorFlow's: no field the converter wrote
is dropped), its buffers aligned to 16 bytes as the converter aligns them.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Mapping, Optional, Tuple
import zipfile

import flatbuffers
from flatbuffers import number_types
from flatbuffers import table as fb_table

from albert_tf.deploy.tflite_metadata import (
    BERT_TOKENIZER_SLOTS,
    CONTENT_SLOTS,
    FILE_SLOTS,
    METADATA_FILE_IDENTIFIER,
    METADATA_SLOTS,
    SENTENCEPIECE_SLOTS,
    SUBGRAPH_SLOTS,
    TENSOR_SLOTS,
    UNIT_SLOTS,
    AssociatedFile,
    BertTokenizerOptions,
    ContentPropertiesType,
    ModelMetadata,
    OtherProcessUnitOptions,
    ProcessUnitOptionsType,
    SentencePieceTokenizerOptions,
    SubGraphMetadata,
    TensorMetadata,
    associated_file_names,
    serialize_metadata,
)

METADATA_NAME = "TFLITE_METADATA"  # the model's metadata entry that names the buffer
MODEL_FILE_IDENTIFIER = b"TFL3"
BUFFER_ALIGNMENT = 16  # the model schema's force_align of buffer data
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)  # fixed member dates: the same input, the same bytes
# slots of the model schema's tables that the metadata reader follows
MODEL_SLOTS = dict(buffers=4, metadata=6)
BUFFER_SLOTS = dict(data=0, offset=1, size=2)
ENTRY_SLOTS = dict(name=0, buffer=1)


def schema():
    """The TFLite model schema module (flatbuffers object API): LiteRT's, else TensorFlow's."""
    try:
        # deferred: an optional package (the deploy extra); TensorFlow's copy otherwise
        from ai_edge_litert import schema_py_generated as module
    except ImportError:
        # deferred: importing TensorFlow only when LiteRT is missing
        from tensorflow.lite.python import schema_py_generated as module
    return module


def _as_str(value) -> Optional[str]:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One input or output tensor of subgraph 0.

    Attributes:
        position: Its position among the subgraph's inputs (or outputs).
        tensor_name: The TFLite tensor name, e.g. "serving_default_input_ids:0".
        signature_name: Its name in the model's first signature (e.g. "input_ids"), if any.
        shape: The static shape.
        shape_signature: The shape with -1 for dynamic dimensions (the shape if none is).
        dtype: The TFLite TensorType name, e.g. "INT32".
    """

    position: int
    tensor_name: str
    signature_name: Optional[str]
    shape: Tuple[int, ...]
    shape_signature: Tuple[int, ...]
    dtype: str


def _signature_names(model) -> tuple:
    """{tensor index: name} of the inputs and of the outputs of subgraph 0's first signature."""
    sig_in, sig_out = {}, {}
    for i in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(i)
        if sig.SubgraphIndex() != 0:
            continue
        for j in range(sig.InputsLength()):
            sig_in[sig.Inputs(j).TensorIndex()] = _as_str(sig.Inputs(j).Name())
        for j in range(sig.OutputsLength()):
            sig_out[sig.Outputs(j).TensorIndex()] = _as_str(sig.Outputs(j).Name())
        break
    return sig_in, sig_out


def model_io(tflite: bytes) -> Tuple[list, list]:
    """(inputs, outputs): TensorInfo lists of the model's subgraph 0, in subgraph order."""
    module = schema()
    model = module.Model.GetRootAs(bytearray(tflite), 0)
    sg = model.Subgraphs(0)
    type_names = {v: k for k, v in vars(module.TensorType).items() if not k.startswith("_")}
    sig_in, sig_out = _signature_names(model)

    def info(position, index, names):
        t = sg.Tensors(index)
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        signature = (
            tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if t.ShapeSignatureLength() else shape
        )
        return TensorInfo(
            position, _as_str(t.Name()), names.get(index), shape, signature, type_names[t.Type()]
        )

    inputs = [info(p, sg.Inputs(p), sig_in) for p in range(sg.InputsLength())]
    outputs = [info(p, sg.Outputs(p), sig_out) for p in range(sg.OutputsLength())]
    return inputs, outputs


def operators(tflite: bytes) -> dict:
    """{operator name: sorted versions} of a model: builtin ops by their BuiltinOperator name,
    custom ops (e.g. tf-text's) as "CUSTOM:<code>", TensorFlow ops kept by the Flex delegate as
    "CUSTOM:Flex<op>"."""
    module = schema()
    model = module.Model.GetRootAs(bytearray(tflite), 0)
    names = {v: k for k, v in vars(module.BuiltinOperator).items() if not k.startswith("_")}
    ops = {}
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        name = names.get(builtin, str(builtin))
        if name == "CUSTOM":
            name = f"CUSTOM:{_as_str(code.CustomCode())}"
        ops.setdefault(name, set()).add(code.Version())
    return {name: sorted(v) for name, v in sorted(ops.items())}


class FlatTable:
    """A reader over one flatbuffer table, its fields addressed by vtable slot."""

    def __init__(self, buf, pos):
        self.t = fb_table.Table(buf, pos)

    @classmethod
    def root(cls, buf, identifier=None):
        """The root table of a flatbuffer, its file identifier checked when given."""
        buf = buf if isinstance(buf, (bytearray, memoryview)) else bytearray(buf)
        if identifier is not None and bytes(buf[4:8]) != identifier:
            raise ValueError(f"flatbuffer identifier is {bytes(buf[4:8])!r}, not {identifier!r}")
        return cls(buf, flatbuffers.encode.Get(number_types.UOffsetTFlags.packer_type, buf, 0))

    def _offset(self, slot):
        return self.t.Offset(4 + 2 * slot)

    def string(self, slot):
        o = self._offset(slot)
        return None if o == 0 else self.t.String(o + self.t.Pos).decode("utf-8")

    def scalar(self, slot, number_type, default=0):
        o = self._offset(slot)
        return default if o == 0 else self.t.Get(number_type, o + self.t.Pos)

    def table(self, slot):
        o = self._offset(slot)
        return None if o == 0 else FlatTable(self.t.Bytes, self.t.Indirect(o + self.t.Pos))

    def tables(self, slot):
        o = self._offset(slot)
        if o == 0:
            return []
        start, n = self.t.Vector(o), self.t.VectorLen(o)
        return [FlatTable(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def bytes_vector(self, slot):
        o = self._offset(slot)
        if o == 0:
            return None
        start = self.t.Vector(o)
        return bytes(self.t.Bytes[start : start + self.t.VectorLen(o)])


def _read_file(t: FlatTable) -> AssociatedFile:
    s = FILE_SLOTS
    return AssociatedFile(
        name=t.string(s["name"]),
        description=t.string(s["description"]),
        type=t.scalar(s["type"], number_types.Int8Flags),
        locale=t.string(s["locale"]),
    )


def _read_files(t: FlatTable, slot) -> tuple:
    return tuple(_read_file(f) for f in t.tables(slot))


def _read_unit(t: FlatTable):
    tag = t.scalar(UNIT_SLOTS["options_type"], number_types.Uint8Flags)
    options = t.table(UNIT_SLOTS["options"])
    if tag == ProcessUnitOptionsType.BERT_TOKENIZER_OPTIONS and options is not None:
        return BertTokenizerOptions(_read_files(options, BERT_TOKENIZER_SLOTS["vocab_file"]))
    if tag == ProcessUnitOptionsType.SENTENCE_PIECE_TOKENIZER_OPTIONS and options is not None:
        s = SENTENCEPIECE_SLOTS
        return SentencePieceTokenizerOptions(
            _read_files(options, s["sentencepiece_model"]), _read_files(options, s["vocab_file"])
        )
    return OtherProcessUnitOptions(tag)


def _read_tensor(t: FlatTable) -> TensorMetadata:
    s = TENSOR_SLOTS
    content = t.table(s["content"])
    kind = (
        ContentPropertiesType.NONE
        if content is None
        else content.scalar(CONTENT_SLOTS["properties_type"], number_types.Uint8Flags)
    )
    return TensorMetadata(
        name=t.string(s["name"]),
        description=t.string(s["description"]),
        content_type=kind,
        process_units=tuple(_read_unit(u) for u in t.tables(s["process_units"])),
        associated_files=_read_files(t, s["associated_files"]),
    )


def _read_subgraph(t: FlatTable) -> SubGraphMetadata:
    s = SUBGRAPH_SLOTS
    tensors = lambda key: tuple(_read_tensor(x) for x in t.tables(s[key]))
    units = lambda key: tuple(_read_unit(u) for u in t.tables(s[key]))
    return SubGraphMetadata(
        name=t.string(s["name"]),
        description=t.string(s["description"]),
        input_tensor_metadata=tensors("input_tensor_metadata"),
        output_tensor_metadata=tensors("output_tensor_metadata"),
        associated_files=_read_files(t, s["associated_files"]),
        input_process_units=units("input_process_units"),
        output_process_units=units("output_process_units"),
    )


def parse_metadata(buf: bytes) -> ModelMetadata:
    """A metadata flatbuffer read back into ModelMetadata (stats, dimension names, tensor groups
    and custom metadata are skipped; unknown process units kept as their type tag).

    Raises:
        ValueError: If the buffer's identifier is not "M001".
    """
    t = FlatTable.root(buf, METADATA_FILE_IDENTIFIER)
    s = METADATA_SLOTS
    return ModelMetadata(
        name=t.string(s["name"]),
        description=t.string(s["description"]),
        version=t.string(s["version"]),
        subgraph_metadata=tuple(_read_subgraph(x) for x in t.tables(s["subgraph_metadata"])),
        author=t.string(s["author"]),
        license=t.string(s["license"]),
        associated_files=_read_files(t, s["associated_files"]),
        min_parser_version=t.string(s["min_parser_version"]),
    )


def read_metadata_buffer(tflite: bytes) -> Optional[bytes]:
    """The raw "TFLITE_METADATA" buffer of a model, or None when it has none."""
    buf = bytearray(tflite)
    model = FlatTable.root(buf, MODEL_FILE_IDENTIFIER)
    buffers = model.tables(MODEL_SLOTS["buffers"])
    for entry in model.tables(MODEL_SLOTS["metadata"]):
        if entry.string(ENTRY_SLOTS["name"]) != METADATA_NAME:
            continue
        b = buffers[entry.scalar(ENTRY_SLOTS["buffer"], number_types.Uint32Flags)]
        data = b.bytes_vector(BUFFER_SLOTS["data"])
        if data is None:  # kept outside the flatbuffer (models over 2 GB)
            offset = b.scalar(BUFFER_SLOTS["offset"], number_types.Uint64Flags)
            data = bytes(
                buf[offset : offset + b.scalar(BUFFER_SLOTS["size"], number_types.Uint64Flags)]
            )
        return data
    return None


def read_associated_files(tflite: bytes) -> dict:
    """{name: bytes} of the zip archive appended to a model ({} without one).

    Raises:
        ValueError: If a member is compressed (the Task Library reads stored members only).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(tflite))
    except zipfile.BadZipFile:
        return {}
    files = {}
    with archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"associated file {info.filename!r} is compressed")
            files[info.filename] = archive.read(info)
    return files


def read_metadata(tflite: bytes) -> Tuple[Optional[ModelMetadata], dict]:
    """A model's metadata and associated files.

    Args:
        tflite: The bytes of a .tflite file.

    Returns:
        (metadata, files): the parsed ModelMetadata (None without metadata) and {name: bytes}
        of the packed files.
    """
    raw = read_metadata_buffer(tflite)
    return (None if raw is None else parse_metadata(raw)), read_associated_files(tflite)


class _AlignedBuffer:
    """Packs a BufferT with its data aligned to 16 bytes (the generated object API aligns to
    one byte; the converter to 16, which is kept)."""

    def __init__(self, module, buffer_t):
        self.module, self.buffer = module, buffer_t

    def Pack(self, builder):  # noqa: N802 (the object API's method name)
        module, buf = self.module, self.buffer
        data = None
        if buf.data is not None:
            raw = buf.data.tobytes() if hasattr(buf.data, "tobytes") else bytes(buf.data)
            builder.StartVector(1, len(raw), BUFFER_ALIGNMENT)  # aligns the data's start
            builder.head = builder.head - len(raw)
            builder.Bytes[builder.head : builder.head + len(raw)] = raw
            data = builder.EndVector()
        module.BufferStart(builder)
        if data is not None:
            module.BufferAddData(builder, data)
        module.BufferAddOffset(builder, buf.offset)
        module.BufferAddSize(builder, buf.size)
        return module.BufferEnd(builder)


def _with_metadata_buffer(module, tflite: bytes, metadata_buffer: bytes) -> bytes:
    """The model packed again with `metadata_buffer` as its TFLITE_METADATA buffer (an existing
    one replaced in its slot; an archive appended to the input is dropped)."""
    buf = bytearray(tflite)
    if bytes(buf[4:8]) != MODEL_FILE_IDENTIFIER:
        raise ValueError(f"not a LiteRT model (identifier {bytes(buf[4:8])!r})")
    model = module.ModelT.InitFromObj(module.Model.GetRootAs(buf, 0))
    if any(b.offset and b.offset > 1 for b in model.buffers or []):
        raise ValueError(
            "models whose buffers lie outside the flatbuffer (over 2 GB) are not supported"
        )
    buffer_t = module.BufferT()
    buffer_t.data = metadata_buffer
    model.buffers = list(model.buffers or [])
    model.metadata = list(model.metadata or [])
    entry = next((m for m in model.metadata if _as_str(m.name) == METADATA_NAME), None)
    if entry is not None:
        model.buffers[entry.buffer] = buffer_t
    else:
        model.buffers.append(buffer_t)
        entry = module.MetadataT()
        entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
        model.metadata.append(entry)
    model.buffers = [_AlignedBuffer(module, b) for b in model.buffers]
    builder = flatbuffers.Builder(1024 * 1024)
    builder.Finish(model.Pack(builder), file_identifier=MODEL_FILE_IDENTIFIER)
    return bytes(builder.Output())


def _append_zip(prefix: bytes, files: Mapping[str, bytes]) -> bytes:
    """`prefix` with a stored zip of `files` appended (member offsets count from the start of
    the whole file, which is what the Task Library's unzip reads)."""
    out = io.BytesIO(prefix)
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, mode="a", compression=zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return out.getvalue()


def populate_metadata(tflite: bytes, metadata: ModelMetadata, files: Mapping[str, bytes]) -> bytes:
    """A model with `metadata` and the files it names written into it.

    Args:
        tflite: The model.
        metadata: The metadata.
        files: {name: contents} of every file the metadata names, and no other.

    Returns:
        The new .tflite bytes.

    Raises:
        ValueError: If a named file is missing or an unnamed one given.
    """
    named = associated_file_names(metadata)
    missing = [n for n in named if n not in files]
    extra = [n for n in files if n not in named]
    if missing or extra:
        raise ValueError(
            f"files do not match the metadata: missing {missing}, not named by it {extra}"
        )
    packed = _with_metadata_buffer(schema(), tflite, serialize_metadata(metadata))
    return _append_zip(packed, {n: bytes(files[n]) for n in named})
