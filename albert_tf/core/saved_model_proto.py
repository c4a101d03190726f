"""TensorFlow's own files read without loading a model: checkpoints (`checkpoint_reader`, on any
filesystem) and SavedModel folders from their protocol buffers: the variables by name (shape,
checkpoint key, value), the output structure of the root `__call__`, the child objects of the root,
the op types of the graph and the attributes of chosen ops.

Nothing is restored or run, so a read takes milliseconds, needs no op library (tf-text's
SentencePiece ops), and works on SavedModels written by tf_keras (TF Hub / Kaggle releases). A
variable's name is its `tf.Variable.name` (Keras: the layer path, e.g.
`transformer/self_attention/query/kernel`); its value is read from `variables/variables` under the
key the checkpoint's object graph gives the same node.

It sits in `core/` because no ALBERT knowledge is in it and both the tokenizer files
(`text.vocab_files`: the SentencePiece model of a TF Hub preprocessing SavedModel) and the weight
formats (`formats/`) read SavedModels.
"""

from __future__ import annotations

import dataclasses
import os

from google.protobuf.message import DecodeError
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2

from albert_tf.core import fileio
from albert_tf.core.errors import InputError

SAVED_MODEL_FILE = "saved_model.pb"
VARIABLES_PREFIX = "variables/variables"
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def checkpoint_reader(path):
    """Open a TF1 or object-based checkpoint for reading, on any filesystem.

    Unlike `tf.train.load_checkpoint`, this reader needs no `checkpoint` file on ram://.

    Args:
        path: str or path-like. The checkpoint prefix.

    Returns:
        A `CheckpointReader` with `get_variable_to_shape_map()` and `get_tensor(name)`.
    """
    return tf.compat.v1.train.NewCheckpointReader(os.fspath(path))


def is_saved_model(path) -> bool:
    """A folder holding `saved_model.pb`."""
    path = os.fspath(path)
    return fileio.is_folder(path) and fileio.isfile(fileio.join(path, SAVED_MODEL_FILE))


@dataclasses.dataclass
class SavedModelProto:
    """The parsed `saved_model.pb` of a SavedModel folder (its first meta graph)."""

    path: str
    meta_graph: object

    @property
    def objects(self):
        return self.meta_graph.object_graph_def

    def root_children(self) -> dict:
        """Child name → node id of the root object (`__call__`, `mlm`, `signatures`, ...)."""
        return {c.local_name: c.node_id for c in self.objects.nodes[0].children}

    def call_outputs(self, child=None) -> dict:
        """Output structure of the root's (or a child's) `__call__`: key → None for a tensor,
        or the length of a list (e.g. `encoder_outputs`); {} when there is no such function."""
        node_id = 0 if child is None else self.root_children().get(child)
        if node_id is None:
            return {}
        children = {c.local_name: c.node_id for c in self.objects.nodes[node_id].children}
        if "__call__" not in children:
            return {}
        function = self.objects.nodes[children["__call__"]].function
        for name in function.concrete_functions:
            out = self.objects.concrete_functions[name].output_signature
            if out.WhichOneof("kind") == "dict_value":
                return {
                    k: len(v.list_value.values) if v.WhichOneof("kind") == "list_value" else None
                    for k, v in out.dict_value.fields.items()
                }
        return {}

    def op_types(self) -> set:
        """Every op type in the graph and its function library."""
        graph = self.meta_graph.graph_def
        ops = {n.op for n in graph.node}
        for function in graph.library.function:
            ops.update(n.op for n in function.node_def)
        return ops

    def op_attrs(self, op_type, attr) -> list:
        """The `attr` values (bytes) of every op of `op_type`, in the graph and its functions,
        without repeats, in order of appearance."""
        graph = self.meta_graph.graph_def
        nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
        found = []
        for node in nodes:
            if node.op == op_type and attr in node.attr and node.attr[attr].s not in found:
                found.append(node.attr[attr].s)
        return found


def read_saved_model(path) -> SavedModelProto:
    """The parsed saved_model.pb of the SavedModel folder `path`; an unreadable or truncated
    file is an InputError naming it."""
    path = os.fspath(path)
    pb = fileio.join(path, SAVED_MODEL_FILE)
    if not fileio.isfile(pb):
        raise InputError(f"{path}: not a SavedModel folder (no {SAVED_MODEL_FILE})")
    try:
        saved = saved_model_pb2.SavedModel.FromString(fileio.read_bytes(pb))
    except DecodeError as e:
        raise InputError(f"{pb} is not a SavedModel protocol buffer (truncated?): {e}") from None
    if not saved.meta_graphs:
        raise InputError(f"{pb} holds no meta graph: not a usable SavedModel")
    return SavedModelProto(path, saved.meta_graphs[0])


@dataclasses.dataclass
class SavedVariables:
    """The variables of a SavedModel: name → shape and a `read(name)` of the value."""

    shapes: dict
    keys: dict
    reader: object

    def read(self, name):
        return self.reader.get_tensor(self.keys[name])


def saved_variables(saved: SavedModelProto, named_by=None) -> SavedVariables:
    """The variables of a SavedModel by `tf.Variable` name (the first of repeated names), or,
    with `named_by`, by the keys of the dict of variables the root holds under that name. A
    folder without its `variables/` files is an InputError naming what is missing."""
    prefix = fileio.join(saved.path, VARIABLES_PREFIX)
    if not fileio.isfile(prefix + ".index"):
        raise InputError(
            f"SavedModel {saved.path} is incomplete: no {VARIABLES_PREFIX}.index (copy the "
            "whole folder, variables/ included)"
        )
    try:
        reader = checkpoint_reader(prefix)
        graph = trackable_object_graph_pb2.TrackableObjectGraph.FromString(
            reader.get_tensor(OBJECT_GRAPH_KEY)
        )
    except Exception as e:  # noqa: BLE001  TF raises several error types for a broken file
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"SavedModel {saved.path}: cannot read its variables ({first})") from None
    nodes = saved.objects.nodes
    if named_by is None:
        named = [(n.variable.name, i) for i, n in enumerate(nodes)]
    else:
        holder = saved.root_children()[named_by]
        named = [(c.local_name, c.node_id) for c in nodes[holder].children]
    shapes, keys = {}, {}
    for name, node_id in named:
        node = nodes[node_id]
        if node.WhichOneof("kind") != "variable" or name in shapes:
            continue
        attributes = graph.nodes[node_id].attributes if node_id < len(graph.nodes) else []
        if attributes:
            shapes[name] = tuple(int(d.size) for d in node.variable.shape.dim)
            keys[name] = attributes[0].checkpoint_key
    return SavedVariables(shapes, keys, reader)
