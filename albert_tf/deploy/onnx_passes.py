"""Small rewrites of a converted ONNX graph (an `onnx.ModelProto`, changed in place): what
tf2onnx and ONNX Runtime's transformer optimizer leave that export_onnx wants otherwise.

- tf2onnx's global-pool optimizer turns a ReduceMean over the last axis of a rank-3 tensor into
  GlobalAveragePool (the same numbers), which hides every LayerNorm from the optimizer's
  pattern: `restore_reduce_means` turns them back.
- The optimizer's Attention node stacks the q, k, v weights into one new initializer per node:
  ALBERT's twelve layers share one set of weights, so the file would hold twelve equal copies;
  `share_equal_initializers` keeps one.
- tf2onnx names the dynamic input axes `unk__N`; `name_input_axes` gives them names.
"""

import hashlib

import onnx
from onnx import helper, shape_inference


def _ranks(model):
    """Rank of every tensor whose shape ONNX shape inference knows."""
    inferred = shape_inference.infer_shapes(model)
    graph = inferred.graph
    ranks = {}
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        if info.type.tensor_type.HasField("shape"):
            ranks[info.name] = len(info.type.tensor_type.shape.dim)
    return ranks


def restore_reduce_means(model, opset) -> int:
    """Every GlobalAveragePool of a rank-3 tensor [B, T, H] becomes ReduceMean over axis 2 with
    kept dims (axes an attribute before opset 18, an input from 18 on); returns how many."""
    ranks = _ranks(model)
    axes = "albert_tf_reduce_axes"
    count = 0
    for node in model.graph.node:
        if node.op_type == "GlobalAveragePool" and ranks.get(node.input[0]) == 3:
            node.op_type = "ReduceMean"
            node.attribute.append(helper.make_attribute("keepdims", 1))
            if opset < 18:
                node.attribute.append(helper.make_attribute("axes", [2]))
            else:
                node.input.append(axes)
            count += 1
    if count and opset >= 18:
        model.graph.initializer.append(helper.make_tensor(axes, onnx.TensorProto.INT64, [1], [2]))
    return count


def _key(tensor):
    data = tensor.raw_data or onnx.numpy_helper.to_array(tensor).tobytes()
    return tensor.data_type, tuple(tensor.dims), hashlib.sha256(data).hexdigest()


def share_equal_initializers(model) -> int:
    """Initializers with equal type, shape and bytes are kept once, their users renamed to the
    first; returns how many were dropped."""
    graph = model.graph
    first, rename, keep = {}, {}, []
    for tensor in graph.initializer:
        name = first.setdefault(_key(tensor), tensor.name)
        if name == tensor.name:
            keep.append(tensor)
        else:
            rename[tensor.name] = name
    if not rename:
        return 0
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    return len(rename)


def name_input_axes(model, names=("batch", "sequence"), by_input=None) -> None:
    """The dynamic axes of every graph input get `names` (first axis, second axis, ...), or
    the names `by_input` gives for that input."""
    for graph_input in model.graph.input:
        axes = (by_input or {}).get(graph_input.name, names)
        for dim, name in zip(graph_input.type.tensor_type.shape.dim, axes):
            if not dim.HasField("dim_value"):
                dim.dim_param = name
