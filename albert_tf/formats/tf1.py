"""Read and write Google's TF1 checkpoints for albert_tf models, in both directions, losslessly.

Every albert_tf model lists its variables under Google's names through
`original_variable_map(model)`. Loading reads a TF1 name-based checkpoint (or a TF-Hub export,
whose names start with `module/`) into those variables; saving writes them back under the same
names, so Google's own code can read the result.
"""

from __future__ import annotations

import dataclasses
import os
import re

import keras
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.saved_model_proto import checkpoint_reader
from albert_tf.formats import albert_zh
from albert_tf.modeling.names import (  # noqa: F401  (re-exported: the converters' view)
    encoder_variable_map,
    original_variable_map,
)

# Variables of Google's checkpoints that are not model weights.
_OPTIMIZER_SLOT = re.compile(r"/(adam_m|adam_v|lamb_m|lamb_v|Momentum|Adam|Adam_1)$")
_NOT_WEIGHTS = re.compile(r"(^|/)(global_step|beta1_power|beta2_power|good_steps|loss_scale)$")
_HUB_PREFIX = "module/"
BEST_CHECKPOINT = "model.ckpt-best"  # a release's checkpoint, and a driver run's best


# ---- loading --------------------------------------------------------------------------------
@dataclasses.dataclass
class LoadReport:
    """What a checkpoint load did: which variables were loaded, unused or missing.

    Every loader of albert_tf (`load_original_checkpoint`, `load_huggingface`, `load_keras_hub`,
    `convert_model`) returns one. `str(report)` gives a one-line summary followed by one line per
    missing or unused name and per group-0 fallback.

    Args:
        checkpoint: str. The checkpoint path or model folder that was read.
        loaded: list of str. Google names of the model variables that received a value.
        unused: list of str. Names in the source that no model variable took.
        missing: list of str. Google names of model variables the source did not have (for
            example a fresh task head); they keep their initial values.
        ignored: list of str. Optimizer slots and step counters of the source, skipped on
            purpose.
        fallbacks: dict. Model name -> source name, for each variable filled from group 0
            (Google's `--init_from_group0`). Defaults to `{}`.
    """

    checkpoint: str
    loaded: list
    unused: list
    missing: list
    ignored: list  # optimizer slots and step counters
    fallbacks: dict = dataclasses.field(default_factory=dict)  # model name → checkpoint name
    notes: list = dataclasses.field(default_factory=list)  # what the source could not give

    def __str__(self):
        return self.summary()

    def summary(self, name_missing: bool = True) -> str:
        """`str(report)`, optionally without the line naming the missing variables (where
        another line names them: `convert` says what it left out of its output).

        Args:
            name_missing: Whether a line names the missing variables.

        Returns:
            The report's lines.

        >>> report = LoadReport("ckpt", ["a"], [], ["cls/x"], [])
        >>> print(report.summary(name_missing=False))
        ckpt: loaded 1 variables, 1 missing, 0 unused, 0 optimizer/step variables ignored
        """
        lines = [
            f"{self.checkpoint}: loaded {len(self.loaded)} variables, "
            f"{len(self.missing)} missing, {len(self.unused)} unused, "
            f"{len(self.ignored)} optimizer/step variables ignored"
        ]
        if self.missing and name_missing:
            lines.append(f"  missing (left at their initial values): {group_names(self.missing)}")
        if self.unused:
            lines.append(f"  unused (in the source, not in this model): {group_names(self.unused)}")
        lines += [f"  {m} <- {c}" for m, c in self.fallbacks.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def group_names(names, limit: int = 3) -> str:
    """Variable names shortened for a report: the names under one two-level scope (such as
    `cls/predictions`), when there are more than `limit` of them, become one `scope/* (n)`
    entry.

    Args:
        names: Variable names such as "cls/predictions/output_bias".
        limit: How many names of one scope are listed one by one.

    Returns:
        The names, comma-separated.

    Example:

    >>> group_names(["output_bias", "output_weights", "cls/predictions/a", "cls/predictions/b",
    ...              "cls/predictions/c", "cls/predictions/d"])
    'output_bias, output_weights, cls/predictions/* (4)'
    """
    scopes = {}
    for name in sorted(names):
        parts = name.split("/")
        scopes.setdefault("/".join(parts[:2]) if len(parts) > 2 else "", []).append(name)
    out = []
    for scope, members in sorted(scopes.items()):
        if scope and len(members) > limit:
            out.append(f"{scope}/* ({len(members)})")
        else:
            out.extend(members)
    return ", ".join(out)


def resolve_checkpoint_path(path) -> str:
    """Find the checkpoint prefix that a path names.

    The path may be a checkpoint prefix, one of its files (`.index`, `.meta`, `.data-*`), or a
    folder. In a folder, the checkpoint named by its `checkpoint` file is used, else
    `model.ckpt-best`, else its only checkpoint (brightmart's releases hold `albert_model.ckpt`
    beside a `checkpoint` file that names a missing one). Works on any filesystem TensorFlow
    knows (local, gs://, ram://).

    Args:
        path: str or path-like. A checkpoint prefix, one of its files, or a folder.

    Returns:
        str. The checkpoint prefix (the path without `.index`).

    Raises:
        FileNotFoundError: when no checkpoint is found, or a folder holds several and none is
            marked as the latest.

    Example:

    >>> from albert_tf.formats.tf1 import resolve_checkpoint_path
    >>> resolve_checkpoint_path("tests/data/fixtures/albert_tiny")
    'tests/data/fixtures/albert_tiny/model.ckpt-best'
    """
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
        best = fileio.join(path, BEST_CHECKPOINT)
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


def _name_prefix(shapes) -> str:
    """'module/' for a TF-Hub export (no bert/ or cls/ names), else ''."""
    if not any(n.startswith(("bert/", "cls/")) for n in shapes) and any(
        n.startswith(_HUB_PREFIX) for n in shapes
    ):
        return _HUB_PREFIX
    return ""


def google_view(path, reader=None):
    """List a TF1 checkpoint's weights under Google's names.

    TF-Hub exports lose their `module/` prefix. brightmart/albert_zh's own layout is renamed
    and its two word-embedding factors are multiplied into one table (see
    `albert_tf.formats.albert_zh`). Optimizer slots and step counters are set aside.

    Args:
        path: str. The checkpoint prefix (used in messages, and to open it when `reader` is
            None).
        reader: optional checkpoint reader of `path`, to reuse one already open. Defaults to
            None (open `path`).

    Returns:
        tuple `(shapes, read, ignored)`: `shapes` maps each Google name to its shape,
        `read(name)` returns that tensor as a NumPy array, and `ignored` lists the optimizer
        and step variables.

    Raises:
        InputError: when the checkpoint is a BERT checkpoint (one scope per layer), not an
            ALBERT.
    """
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
        view, read = albert_zh.albert_zh_view(view, read)
    return view, read, ignored


def expected_encoder_shapes(config) -> dict:
    """Compute the name and shape of every encoder variable a config gives, without a model.

    Used to check a checkpoint against a config before any model is built.

    Args:
        config: `AlbertConfig`. The model's configuration.

    Returns:
        dict. Google name (`bert/...`) -> shape as a list of ints.

    Example:

    >>> import albert_tf
    >>> from albert_tf.formats.tf1 import expected_encoder_shapes
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> shapes = expected_encoder_shapes(config)
    >>> len(shapes), shapes["bert/embeddings/word_embeddings"]
    (25, [100, 8])
    """
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
    """Check that a Google TF1 checkpoint holds the encoder variables a config needs.

    Only the checkpoint's index is read, not its values. Object-based (TF2) checkpoints are not
    checked here; they are checked when they are loaded.

    Args:
        config: `AlbertConfig`. The configuration the checkpoint should fit.
        ckpt_path: str or path-like. A checkpoint prefix, file or folder (see
            `resolve_checkpoint_path`).
        group0_fallback: bool. Accept a missing `group_N` variable when `group_0` has it, as
            Google's `--init_from_group0` does. Defaults to False.
        config_file: str. How to name the config in error messages. Defaults to
            "the config".

    Returns:
        str. The resolved checkpoint prefix.

    Raises:
        InputError: when the checkpoint cannot be read, lacks an encoder variable, or holds
            one with another shape.
        FileNotFoundError: when no checkpoint is found at `ckpt_path`.

    Example:

    >>> import albert_tf
    >>> from albert_tf.formats.tf1 import check_checkpoint_fits_config
    >>> folder = "tests/data/fixtures/albert_tiny"
    >>> config = albert_tf.AlbertConfig.from_json_file(folder + "/albert_config.json")
    >>> check_checkpoint_fits_config(config, folder)
    'tests/data/fixtures/albert_tiny/model.ckpt-best'
    """
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


def _refuse_object_checkpoint(path, reader):
    """An object checkpoint (TF2's tf.train.Checkpoint: a driver run's ckpt-N and
    model.ckpt-best, a Model Garden checkpoint) holds no Google names: say what it is."""
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in reader.get_variable_to_shape_map():
        raise InputError(
            f"ckpt_path: {path} is a TF2 object checkpoint (an albert_tf run's ckpt-N / "
            "model.ckpt-best, or Model Garden's), not a Google TF1 one: restore a run's with "
            "tf.train.Checkpoint(model=model).restore(path) or convert its folder (python -m "
            "albert_tf.convert --input <run folder>); load Model Garden's with load_tfhub"
        )


def load_original_checkpoint(model, ckpt_path, *, require_encoder=True, group0_fallback=False):
    """Load a Google TF1 checkpoint into an albert_tf model.

    Reads Google's released checkpoints (names `bert/...` and `cls/...`), TF-Hub exports
    (names `module/...`) and brightmart/albert_zh checkpoints. Nothing is assigned unless every
    check passes. Optimizer slots and `global_step` are skipped. Head variables that the
    checkpoint lacks (for example a fresh task head) keep their initial values and are listed
    in the report's `missing`.

    Args:
        model: an albert_tf model (`AlbertModel`, `AlbertPretrainer` or a task model).
        ckpt_path: str or path-like. A checkpoint prefix, one of its files, or a folder
            holding one (see `resolve_checkpoint_path`).
        require_encoder: bool. Raise when an encoder (`bert/`) variable is missing, which means
            the config does not fit the checkpoint. Defaults to True.
        group0_fallback: bool. Fill each transformer group the checkpoint lacks from group 0,
            as Google's `--init_from_group0` does. Defaults to False.

    Returns:
        `LoadReport`. The names loaded, missing, unused and ignored.

    Raises:
        InputError: when the checkpoint cannot be read, a variable's shape differs from the
            model's (the message names the variable and both shapes), or, with
            `require_encoder`, an encoder variable is missing, or the checkpoint is a TF2
            object checkpoint (an albert_tf run's, Model Garden's). `InputError` is a
            `ValueError`.
        FileNotFoundError: when no checkpoint is found at `ckpt_path`.

    Example:

    >>> import albert_tf
    >>> folder = "tests/data/fixtures/albert_tiny"
    >>> config = albert_tf.AlbertConfig.from_json_file(folder + "/albert_config.json")
    >>> model = albert_tf.AlbertPretrainer(config)
    >>> report = albert_tf.load_original_checkpoint(model, folder + "/model.ckpt-best")
    >>> print(report)
    tests/data/fixtures/albert_tiny/model.ckpt-best: loaded 32 variables,
    0 missing, 0 unused, 7 optimizer/step variables ignored
    >>> report.ignored[0]
    'bert/embeddings/word_embeddings/adam_m'
    """
    path = resolve_checkpoint_path(ckpt_path)
    try:
        reader = checkpoint_reader(path)
    except (tf.errors.OpError, ValueError) as e:
        raise InputError(f"cannot read TF checkpoint {path}: {e}") from None
    _refuse_object_checkpoint(path, reader)
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
    """Assign tensors given under Google's names to an albert_tf model's variables.

    This is the shared core of every format's loader. Nothing is assigned unless every check
    passes; values are cast to each variable's dtype.

    Args:
        model: an albert_tf model.
        shapes: dict. Each available Google name -> its shape.
        read: callable. `read(name)` returns the array of a name in `shapes`.
        source: str. The source's path or label, used in messages and in the report.
        ignored: sequence of str. Source names skipped on purpose, copied into the report.
            Defaults to `()`.
        require_encoder: bool. Raise when an encoder (`bert/`) variable is missing. Defaults to
            True.
        group0_fallback: bool. Fill a missing `group_N` variable from `group_0`. Defaults to
            False.
        optional: sequence of str. Encoder names that may be missing even with
            `require_encoder` (for example the pooler). Defaults to `()`.

    Returns:
        `LoadReport` naming `source`.

    Raises:
        InputError: when a shape differs from the model's, or, with `require_encoder`, an
            encoder variable is missing.
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
    """Save an albert_tf model as a Google TF1 checkpoint, under Google's variable names.

    Google's code (and `load_original_checkpoint`) can read the result. A local checkpoint is
    written under a temporary prefix and renamed when complete, so a reader never sees half a
    checkpoint. A remote one (gs://) is written straight to its prefix after any old `.index`
    is removed; TensorFlow writes the `.index` last, so its presence marks the checkpoint
    complete.

    Args:
        model: an albert_tf model.
        ckpt_path: str or path-like. The checkpoint prefix to write, e.g. `out/model.ckpt`
            (files `model.ckpt.index` and `model.ckpt.data-00000-of-00001`). Its folder is
            created if needed.
        global_step: int or None. When given, also saved as the int64 `global_step` variable.
            Defaults to None.
        write_state_file: bool. Also write the folder's `checkpoint` file, which
            `tf.train.latest_checkpoint` reads. Defaults to False.
        exclude: Google names of variables to leave out (heads that were never trained).
            Defaults to none.

    Returns:
        str. The checkpoint prefix, `ckpt_path`.

    Example:

    >>> import os, tempfile, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> folder = tempfile.mkdtemp()
    >>> prefix = albert_tf.save_original_checkpoint(
    ...     albert_tf.AlbertModel(config), os.path.join(folder, "model.ckpt"))
    >>> sorted(os.listdir(folder))
    ['model.ckpt.data-00000-of-00001', 'model.ckpt.index']
    >>> report = albert_tf.load_original_checkpoint(albert_tf.AlbertModel(config), prefix)
    >>> len(report.loaded), report.missing, report.unused
    (25, [], [])
    """
    ckpt_path = os.fspath(ckpt_path)
    directory = fileio.dirname(fileio.abspath(ckpt_path))
    fileio.makedirs(directory)
    names = {n: v for n, v in original_variable_map(model).items() if n not in set(exclude)}
    # convert_to_numpy: any backend's variables (torch's hold tensors that carry gradients)
    tensors = {n: tf.convert_to_tensor(keras.ops.convert_to_numpy(v)) for n, v in names.items()}
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
    """Save a local checkpoint under a temporary prefix, then rename it: data files first,
    `.index` last."""
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
    """Read every weight of a TF1 checkpoint, under the checkpoint's own names.

    Optimizer slots and step counters are left out; names are not translated (a TF-Hub export
    keeps its `module/` prefix).

    Args:
        ckpt_path: str or path-like. A checkpoint prefix, one of its files, or a folder.

    Returns:
        dict. Variable name -> NumPy array.

    Example:

    >>> from albert_tf.formats.tf1 import read_original_checkpoint
    >>> weights = read_original_checkpoint("tests/data/fixtures/albert_tiny")
    >>> len(weights), weights["bert/embeddings/word_embeddings"].shape
    (32, (1000, 16))
    """
    path = resolve_checkpoint_path(ckpt_path)
    reader = checkpoint_reader(path)
    return {
        n: reader.get_tensor(n)
        for n in reader.get_variable_to_shape_map()
        if not (_OPTIMIZER_SLOT.search(n) or _NOT_WEIGHTS.search(n))
    }
