"""What every task's raw-text SavedModel export shares: the in-graph tokenizer from the run's
SentencePiece model, versioned exports (`export_dir/<unix seconds>/`, TF Serving's model base
path, as Google's Estimator exported) with a README beside the model, the --export_dir checks,
and `load_saved_model`, which registers tf-text's ops first and finds the newest version."""

from __future__ import annotations

import os
import time

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.engine import validation as v

README = """# ALBERT SavedModel ({what})

Its `serving_default` signature takes raw strings and tokenizes them in the graph with
TensorFlow Text's SentencePiece ops, which TensorFlow itself does not register. Load it with

    import tensorflow_text  # registers the SentencePiece ops; import it before loading
    import tensorflow as tf
    model = tf.saved_model.load("{name}")  # this folder
    outputs = model.signatures["serving_default"]({example})

or with `albert_tf.load_saved_model("{name}")`, which imports tensorflow_text first.
Without it `tf.saved_model.load` fails with "Op type not registered".

Inputs: {inputs}
Outputs: {outputs}
"""

NEEDS_TOKENIZER = (
    "--export_dir needs --spm_model_file or --vocab_file: the exported model "
    "tokenizes raw text in the graph"
)


def check_export_flags(FLAGS):
    """--export_dir: a writable folder, and the tokenizer the graph will run
    (--spm_model_file, or a WordPiece --vocab_file)."""
    if not v.flag_value(FLAGS, "export_dir"):
        return
    v.check_output_dir("export_dir", FLAGS.export_dir)
    if not (FLAGS.spm_model_file or v.flag_value(FLAGS, "vocab_file")):
        raise InputError(NEEDS_TOKENIZER)


def graph_tokenizer(spm_model_file=None, do_lower_case=True, vocab_file=None):
    """The in-graph tokenizer of the run's SentencePiece model or WordPiece vocabulary (the
    Python path's ids)."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.text.graph_tokenizer import make_graph_tokenizer

    if not (spm_model_file or vocab_file):
        raise ValueError(NEEDS_TOKENIZER)
    return make_graph_tokenizer(spm_model_file, vocab_file, do_lower_case)


def encoder_tokenizer(encoder):
    """The in-graph tokenizer of a task's TextEncoder (its SentencePiece model or WordPiece
    vocabulary, its casing): what the GLUE, RACE and NER exports tokenize with."""
    return graph_tokenizer(encoder.spm_model_file, encoder.do_lower_case, encoder.vocab_file)


def _example_call(signature) -> str:
    """`name=tf.constant(...)` for each string input of a concrete function, for the README."""
    args = []
    for spec in signature.structured_input_signature[0]:
        if spec is None:  # an optional argument left out of the signature (GLUE's text_b)
            continue
        value = '["..."]' if spec.shape.rank == 1 else '[["...", "...", "...", "..."]]'
        args.append(f"{spec.name}=tf.constant({value})")
    return ", ".join(args)


def save_module(module, signature, export_dir, what, inputs, outputs) -> str:
    """Saves `module` with `signature` as serving_default into a fresh version folder
    `export_dir/<version>` (any filesystem; version: unix seconds, above every version there),
    with a README.md on how to load it; returns that folder. No export is ever renamed or
    overwritten, so a server watching export_dir never sees half of one. Local: written to a
    hidden scratch folder in export_dir, then renamed to its version. Remote (no atomic rename
    on a bucket): uploaded straight to its version with saved_model.pb last."""
    export_dir = fileio.abspath(os.fspath(export_dir))
    target = fileio.join(
        export_dir, str(max([int(time.time())] + [v + 1 for v in export_versions(export_dir)]))
    )
    readme = README.format(
        what=what, name=target, example=_example_call(signature), inputs=inputs, outputs=outputs
    )
    if fileio.is_remote(target):
        with fileio.output_folder(target, last=("saved_model.pb",)) as local:
            _save(module, signature, local, readme)
        return target
    fileio.makedirs(export_dir)
    with fileio.scratch_folder(beside=target, prefix=".export-tmp-") as scratch:
        tmp = fileio.join(scratch, "new")
        _save(module, signature, tmp, readme)
        fileio.rename(tmp, target)
    return target


def export_versions(export_dir) -> list:
    """The complete versions (numbered folders holding saved_model.pb) in export_dir, ascending."""
    if not fileio.isdir(export_dir):
        return []
    return sorted(
        int(n)
        for n in fileio.listdir(export_dir)
        if n.isdigit() and fileio.exists(fileio.join(export_dir, n, "saved_model.pb"))
    )


def latest_export(path) -> str:
    """`path` itself if it is a SavedModel folder, else its newest complete version.

    >>> latest_export("exports/")  # doctest: +SKIP
    'exports/1796604111'
    """
    path = os.fspath(path)
    if fileio.exists(fileio.join(path, "saved_model.pb")):
        return path
    versions = export_versions(path)
    if not versions:
        raise FileNotFoundError(
            f"{path}: neither a SavedModel (saved_model.pb) nor a folder of versioned exports"
        )
    return fileio.join(path, str(versions[-1]))


def _save(module, signature, folder, readme):
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    tf.saved_model.save(module, folder, signatures={"serving_default": signature})
    fileio.write_text(fileio.join(folder, "README.md"), readme)


def load_saved_model(path):
    """tf.saved_model.load of an albert_tf raw-text export (a SavedModel folder, or an
    --export_dir whose newest version is loaded), tf-text's ops registered first."""
    try:
        # deferred: an optional package
        import tensorflow_text  # noqa: F401  registers the SentencePiece ops the graph uses
    except ImportError as e:
        raise ImportError(
            "albert_tf.load_saved_model needs tensorflow_text (pip install "
            "tensorflow-text): the SavedModel tokenizes with its ops"
        ) from e
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    return tf.saved_model.load(latest_export(path))


def exporter(export, task, export_dir):
    """The engine's export_fn: model → export(model, task, export_dir), or None without a
    folder (run_finetuning then exports nothing)."""
    if not export_dir:
        return None
    return lambda model: export(model, task, export_dir)
