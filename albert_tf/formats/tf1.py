"""Google's TF1 checkpoint names ⇄ the Keras model's variables, both ways, losslessly.

Every albert_tf model describes its variables in Google's names through
`original_variable_map(model)`; loading reads a TF1 name-based checkpoint (or a TF-Hub export
with its `module/` prefix) into them, saving writes them back under the same names.
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.formats import albert_zh
from albert_tf.modeling.names import (  # noqa: F401  (re-exported: the converters' view)
    encoder_variable_map,
    original_variable_map,
)

# Variables of Google's checkpoints that are not model weights.
_OPTIMIZER_SLOT = re.compile(r"/(adam_m|adam_v|lamb_m|lamb_v|Momentum|Adam|Adam_1)$")
_NOT_WEIGHTS = re.compile(r"(^|/)(global_step|beta1_power|beta2_power|good_steps|loss_scale)$")
_HUB_PREFIX = "module/"


# ---- loading --------------------------------------------------------------------------------
@dataclasses.dataclass
class LoadReport:
    """What a checkpoint load did: names loaded, checkpoint names unused, model names missing."""

    checkpoint: str
    loaded: list
    unused: list
    missing: list
    ignored: list  # optimizer slots and step counters
    fallbacks: dict = dataclasses.field(default_factory=dict)  # model name → checkpoint name
    notes: list = dataclasses.field(default_factory=list)  # what the source could not give

    def __str__(self):
        lines = [
            f"checkpoint {self.checkpoint}: loaded {len(self.loaded)} variables, "
            f"{len(self.missing)} missing, {len(self.unused)} unused, "
            f"{len(self.ignored)} optimizer/step variables ignored"
        ]
        lines += [f"  missing: {n}" for n in self.missing]
        lines += [f"  unused:  {n}" for n in self.unused]
        lines += [f"  {m} <- {c}" for m, c in self.fallbacks.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def resolve_checkpoint_path(path) -> str:
    """Accept a checkpoint prefix, a directory (its latest checkpoint, model.ckpt-best, or its
    only checkpoint: brightmart's releases hold `albert_model.ckpt` beside a `checkpoint` file
    naming another), or a file of the checkpoint (`.index`, `.data-*`), on any filesystem
    (gs://, ram://, local)."""
    path = os.fspath(path)
    prefix = path
    for suffix in (".index", ".meta"):
        if prefix.endswith(suffix):
            prefix = prefix[: -len(suffix)]
    prefix = re.sub(r"\.data-\d{5}-of-\d{5}$", "", prefix)
    if fileio.isfile(prefix + ".index"):  # before isdir: ram:// calls a prefix a folder
        return prefix
    if fileio.is_folder(path):
        latest = tf.train.latest_checkpoint(path)
        if latest and fileio.exists(latest + ".index"):
            return latest
        best = fileio.join(path, "model.ckpt-best")
        if fileio.exists(best + ".index"):
            return best
        only = [n for n in fileio.listdir(path) if n.endswith(".index")]
        if len(only) == 1:
            return fileio.join(path, only[0][: -len(".index")])
        raise FileNotFoundError(
            f"no TF checkpoint found in directory {path}"
            + (f" (it holds {len(only)}: name one)" if only else "")
        )
    raise FileNotFoundError(f"TF checkpoint not found: {prefix} (no {prefix}.index)")


def checkpoint_reader(path):
    """A reader of a TF1 or object checkpoint prefix on any filesystem
    (tf.train.load_checkpoint wants a `checkpoint` file on ram://; this reader does not)."""
    return tf.compat.v1.train.NewCheckpointReader(os.fspath(path))


def _name_prefix(shapes) -> str:
    """'module/' for a TF-Hub export (no bert/ or cls/ names), else ''."""
    if not any(n.startswith(("bert/", "cls/")) for n in shapes) and any(
        n.startswith(_HUB_PREFIX) for n in shapes
    ):
        return _HUB_PREFIX
    return ""


def google_view(path, reader=None):
    """A TF1 checkpoint's weights in Google's names: ({name: shape}, read(name), ignored).
    TF-Hub exports lose their `module/` prefix, brightmart/albert_zh's own layout is renamed
    and its word table folded (formats/albert_zh.py); optimizer slots and step counters are
    `ignored`. A BERT checkpoint (per-layer scopes) is an InputError naming the layout."""
    reader = reader or checkpoint_reader(path)
    shapes = reader.get_variable_to_shape_map()
    prefix = _name_prefix(shapes)
    ignored = sorted(n for n in shapes if _OPTIMIZER_SLOT.search(n) or _NOT_WEIGHTS.search(n))
    available = {n[len(prefix) :]: n for n in shapes if n.startswith(prefix) and n not in ignored}
    view = {n: tuple(shapes[s]) for n, s in available.items()}
    read = lambda n: reader.get_tensor(available[n])  # noqa: E731
    if albert_zh.is_bert(view):
        raise InputError(
            f"checkpoint {path} is in BERT's layout (one scope per layer, e.g. "
            f"{next(n for n in sorted(view) if albert_zh.is_bert([n]))}), neither "
            "Google's ALBERT layout nor brightmart/albert_zh's: it is not an ALBERT"
        )
    if albert_zh.is_brightmart(view):
        view, read = albert_zh.google_view(view, read)
    return view, read, ignored


def expected_encoder_shapes(config) -> dict:
    """Google name → shape of every encoder variable a model of `config` has, computed from
    the config alone (no model is built), for checking a checkpoint before any work."""
    V, E, H, I = (
        config.vocab_size,
        config.embedding_size,
        config.hidden_size,
        config.intermediate_size,
    )
    shapes = {
        "bert/embeddings/word_embeddings": [V, E],
        "bert/embeddings/token_type_embeddings": [config.type_vocab_size, E],
        "bert/embeddings/position_embeddings": [config.max_position_embeddings, E],
        "bert/embeddings/LayerNorm/gamma": [E],
        "bert/embeddings/LayerNorm/beta": [E],
        "bert/pooler/dense/kernel": [H, H],
        "bert/pooler/dense/bias": [H],
    }
    if E != H:
        shapes.update(
            {
                "bert/encoder/embedding_hidden_mapping_in/kernel": [E, H],
                "bert/encoder/embedding_hidden_mapping_in/bias": [H],
            }
        )
    layers = range(config.num_hidden_layers)
    shared = {
        "attention": config.sharing in ("all", "attention"),
        "ffn": config.sharing in ("all", "ffn"),
    }
    blocks = {
        kind: sorted({config.group_of_layer(i) if shared[kind] else i for i in layers})
        for kind in shared
    }
    attention = {
        f"attention_1/{n}/{w}": s
        for n in ("self/query", "self/key", "self/value", "output/dense")
        for w, s in (("kernel", [H, H]), ("bias", [H]))
    }
    attention.update({"LayerNorm/gamma": [H], "LayerNorm/beta": [H]})
    ffn = {
        "ffn_1/intermediate/dense/kernel": [H, I],
        "ffn_1/intermediate/dense/bias": [I],
        "ffn_1/intermediate/output/dense/kernel": [I, H],
        "ffn_1/intermediate/output/dense/bias": [H],
        "LayerNorm_1/gamma": [H],
        "LayerNorm_1/beta": [H],
    }
    for kind, names in (("attention", attention), ("ffn", ffn)):
        for group in blocks[kind]:
            for inner in range(config.inner_group_num):
                p = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
                shapes.update({f"{p}/{n}": s for n, s in names.items()})
    return shapes


def check_checkpoint_fits_config(
    config, ckpt_path, *, group0_fallback=False, config_file="the config"
) -> str:
    """Raise InputError when a Google TF1 checkpoint's encoder variables do not have the names
    and shapes `config` gives them; returns the resolved path. Object checkpoints are checked
    when they are loaded. Reads only the checkpoint's index, not its values."""
    try:
        path = resolve_checkpoint_path(ckpt_path)
        reader = checkpoint_reader(path)
    except (tf.errors.OpError, ValueError) as e:
        raise InputError(f"cannot read TF checkpoint {ckpt_path}: {e}") from None
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in reader.get_variable_to_shape_map():
        return path
    shapes, _, _ = google_view(path, reader)
    check_shapes_fit(config, shapes, path, config_file, group0_fallback=group0_fallback)
    return path


def check_shapes_fit(config, shapes, path, config_file, *, group0_fallback=False):
    """InputError unless `shapes` (Google name → shape, of the source `path`) hold every encoder
    variable `config` needs, with the shape it gives them."""
    missing = []
    for name, shape in expected_encoder_shapes(config).items():
        source = name
        if source not in shapes and group0_fallback:
            source = _group0_name(name)
        if source not in shapes:
            missing.append(name)
        elif list(shapes[source]) != list(shape):
            raise InputError(
                f"{config_file} does not fit checkpoint {path}: {name} is {list(shapes[source])} "
                f"in the checkpoint but {list(shape)} from the config (check vocab_size, "
                "embedding_size, hidden_size, intermediate_size, max_position_embeddings)"
            )
    if missing:
        raise InputError(
            f"{config_file} does not fit checkpoint {path}: it lacks {len(missing)} encoder "
            f"variables the config needs, e.g. {missing[0]} (check num_hidden_groups, "
            "inner_group_num, num_hidden_layers, sharing, embedding_size)"
        )


def _group0_name(name):
    """Google's init_from_group0 fallback: group_N → group_0 for a missing transformer variable."""
    return re.sub(r"/transformer/group_\d+/", "/transformer/group_0/", name)


def load_original_checkpoint(model, ckpt_path, *, require_encoder=True, group0_fallback=False):
    """Load Google's TF1 checkpoint (`bert/...`, `cls/...`, or `module/...` Hub names) into an
    albert_tf model and return a LoadReport.

    A shape mismatch raises ValueError naming the variable and both shapes. With
    `require_encoder`, a missing `bert/` variable raises (the config does not fit the checkpoint);
    missing head variables (a fresh task head) are only reported. `group0_fallback` initialises
    groups absent from the checkpoint from group 0, as Google's `--init_from_group0`.
    """
    path = resolve_checkpoint_path(ckpt_path)
    try:
        reader = checkpoint_reader(path)
    except (tf.errors.OpError, ValueError) as e:
        raise InputError(f"cannot read TF checkpoint {path}: {e}") from None
    shapes, read, ignored = google_view(path, reader)
    return assign_google_named(
        model,
        shapes,
        read,
        path,
        ignored=ignored,
        require_encoder=require_encoder,
        group0_fallback=group0_fallback,
    )


def assign_google_named(
    model,
    shapes,
    read,
    source,
    *,
    ignored=(),
    require_encoder=True,
    group0_fallback=False,
    optional=(),
):
    """Load tensors named in Google's names into an albert_tf model; the shared core of every
    format's loader. `shapes` maps each available name to its shape, `read(name)` gives its
    array; names in `optional` may be missing even with `require_encoder`. Nothing is assigned
    unless every check passes. Returns a LoadReport naming `source`.
    """
    targets = original_variable_map(model)
    loaded, missing, fallbacks, used, values = [], [], {}, set(), {}
    for name, variable in targets.items():
        src = name
        if src not in shapes and group0_fallback and _group0_name(name) in shapes:
            src = _group0_name(name)
            fallbacks[name] = src
        if src not in shapes:
            missing.append(name)
            continue
        if tuple(shapes[src]) != tuple(variable.shape):
            raise InputError(
                f"shape mismatch for {name}: checkpoint {source} has {list(shapes[src])}, the "
                f"model (from its config) has {list(variable.shape)}; the config does not fit "
                "this checkpoint"
            )
        values[name] = np.asarray(read(src))
        used.add(src)
        loaded.append(name)
    if require_encoder:
        encoder_missing = [n for n in missing if n.startswith("bert/") and n not in optional]
        if encoder_missing:
            raise InputError(
                f"checkpoint {source} lacks {len(encoder_missing)} encoder variables the model's "
                f"config needs, e.g. {encoder_missing[0]}; the config does not fit this checkpoint "
                "(check num_hidden_groups, inner_group_num, sharing, embedding_size)"
            )
    for name, value in values.items():  # assign only after every check passed
        variable = targets[name]
        variable.assign(
            value.astype(np.dtype(variable.dtype)) if value.dtype != variable.dtype else value
        )
    unused = sorted(n for n in shapes if n not in used)
    return LoadReport(source, sorted(loaded), unused, sorted(missing), sorted(ignored), fallbacks)


# ---- saving ---------------------------------------------------------------------------------
def save_original_checkpoint(
    model, ckpt_path, *, global_step=None, write_state_file=False, exclude=()
):
    """Write the model's variables to a TF1 name-based checkpoint with Google's names (those in
    `exclude` left out, e.g. heads that were never trained).

    Local: written under a temporary prefix and renamed when complete. Remote (gs://): written
    straight to its prefix, any old `.index` removed first; TensorFlow writes the `.index` last,
    so it marks the checkpoint complete. `write_state_file` also writes the `checkpoint` file
    that `tf.train.latest_checkpoint` reads. Returns the prefix.
    """
    ckpt_path = os.fspath(ckpt_path)
    directory = fileio.dirname(fileio.abspath(ckpt_path))
    fileio.makedirs(directory)
    names = {n: v for n, v in original_variable_map(model).items() if n not in set(exclude)}
    tensors = {
        n: tf.convert_to_tensor(v.value if hasattr(v, "value") else v) for n, v in names.items()
    }
    if global_step is not None:
        tensors["global_step"] = tf.constant(int(global_step), tf.int64)
    ordered = sorted(tensors)

    def save(prefix):
        tf.raw_ops.SaveV2(
            prefix=prefix,
            tensor_names=ordered,
            shape_and_slices=[""] * len(ordered),
            tensors=[tensors[n] for n in ordered],
        )

    if fileio.is_remote(ckpt_path):
        fileio.remove(ckpt_path + ".index")  # no reader pairs an old index with the new data
        save(ckpt_path)
    else:
        _save_then_rename(save, ckpt_path, directory)
    if write_state_file:
        # the name relative to the folder (TF makes remote names relative itself, wrongly)
        state_name = fileio.join(directory, fileio.basename(ckpt_path))
        tf.compat.v1.train.update_checkpoint_state(
            directory, state_name if fileio.is_remote(directory) else fileio.basename(ckpt_path)
        )
    return ckpt_path


def _save_then_rename(save, ckpt_path, directory):
    """A local checkpoint saved under a temporary prefix, then renamed: data files, `.index`
    last."""
    name = fileio.basename(ckpt_path)
    tmp_name = f".tmp-{name}-{os.getpid()}"
    try:
        save(fileio.join(directory, tmp_name))
        for f in fileio.listdir(directory):
            if f.startswith(tmp_name + ".data-"):
                fileio.rename(fileio.join(directory, f), ckpt_path + f[len(tmp_name) :])
        fileio.rename(fileio.join(directory, tmp_name + ".index"), ckpt_path + ".index")
    finally:
        for f in fileio.listdir(directory):
            if f.startswith(tmp_name):
                fileio.remove(fileio.join(directory, f))


def read_original_checkpoint(ckpt_path) -> dict:
    """All weight tensors of a TF1 checkpoint as numpy arrays (optimizer slots and steps left
    out)."""
    path = resolve_checkpoint_path(ckpt_path)
    reader = checkpoint_reader(path)
    return {
        n: reader.get_tensor(n)
        for n in reader.get_variable_to_shape_map()
        if not (_OPTIMIZER_SLOT.search(n) or _NOT_WEIGHTS.search(n))
    }
