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
from albert_tf.engine.export_formats import (
    check_available,
    check_quantize,
    parse_export_formats,
)

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
    (--spm_model_file, or a WordPiece --vocab_file); --export_format a list of known formats
    and --quantize a known mode for a LiteRT file (neither without --export_dir)."""
    formats = parse_export_formats(v.flag_value(FLAGS, "export_format") or "saved_model")
    quantize = v.flag_value(FLAGS, "quantize") or "none"
    check_quantize(quantize, formats)
    if not v.flag_value(FLAGS, "export_dir"):
        for name in ("export_format", "quantize"):
            if name in FLAGS and FLAGS[name].present:
                raise InputError(f"--{name} says what --export_dir gets: give --export_dir too")
        return
    check_available(formats, quantize)
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


def save_module(module, signature, export_dir, what, inputs, outputs, *, also=()) -> str:
    """Saves `module` with `signature` as serving_default into a fresh version folder
    `export_dir/<version>` (any filesystem; version: unix seconds, above every version there),
    with a README.md on how to load it; returns that folder. `also`: writers of the other
    export formats of the same version (see `write_version`)."""
    example = _example_call(signature)

    def saved_model(folder, target):
        _save(module, signature, folder)
        return README.format(
            what=what, name=target, example=example, inputs=inputs, outputs=outputs
        )

    return write_version(export_dir, [saved_model, *also])


def _numbered(export_dir) -> list:
    """Every numbered folder in export_dir (complete versions or not)."""
    if not fileio.isdir(export_dir):
        return []
    return [int(n.rstrip("/")) for n in fileio.listdir(export_dir) if n.rstrip("/").isdigit()]


def write_version(export_dir, writers) -> str:
    """A fresh version folder `export_dir/<version>` (unix seconds, above every numbered folder
    there) filled by each `writer(folder, version_folder) -> README text` (`folder`: where to
    write now; `version_folder`: where the files will be read), the texts joined into its
    README.md; returns it. No export is ever renamed or overwritten, so a server watching
    export_dir never sees half of one: locally everything is written to a hidden scratch
    folder in export_dir, then renamed to its version; on a bucket (no atomic rename) uploaded
    straight to its version, README.md then saved_model.pb last."""
    export_dir = fileio.abspath(os.fspath(export_dir))
    version = max([int(time.time())] + [v + 1 for v in _numbered(export_dir)])
    target = fileio.join(export_dir, str(version))

    def fill(folder):
        fileio.makedirs(folder)
        sections = [writer(folder, target) for writer in writers]
        fileio.write_text(fileio.join(folder, "README.md"), "\n".join(sections))

    if fileio.is_remote(target):
        with fileio.output_folder(target, last=("README.md", "saved_model.pb")) as local:
            fill(local)
        return target
    fileio.makedirs(export_dir)
    with fileio.scratch_folder(beside=target, prefix=".export-tmp-") as scratch:
        tmp = fileio.join(scratch, "new")
        fill(tmp)
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


def _save(module, signature, folder):
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    tf.saved_model.save(module, folder, signatures={"serving_default": signature})


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
