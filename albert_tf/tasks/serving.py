"""What every task's raw-text SavedModel export shares: the in-graph tokenizer from the run's
SentencePiece model, the atomic write (local: scratch folder, then rename; remote: saved_model.pb uploaded last) with a README beside the
model, the --export_dir checks, and `load_saved_model`, which registers tf-text's ops first."""
from __future__ import annotations

import os

from albert_tf import fileio

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

NEEDS_SPM = ("--export_dir needs --spm_model_file: the exported model tokenizes raw text in the "
             "graph with SentencePiece")


def check_export_flags(FLAGS):
    """--export_dir: a writable folder, and --spm_model_file (the in-graph tokenizer is
    SentencePiece; a WordPiece --vocab_file has no in-graph tokenizer here)."""
    from albert_tf.engine import validation as v
    from albert_tf.errors import InputError
    if not v.flag_value(FLAGS, "export_dir"):
        return
    v.check_output_dir("export_dir", FLAGS.export_dir)
    if not FLAGS.spm_model_file:
        raise InputError(NEEDS_SPM)


def graph_tokenizer(spm_model_file, do_lower_case=True):
    """The in-graph tokenizer of the run's SentencePiece model (the Python path's ids)."""
    if not spm_model_file:
        raise ValueError(NEEDS_SPM)
    from albert_tf.text.graph_tokenizer import GraphTokenizer
    return GraphTokenizer(os.fspath(spm_model_file), do_lower_case=do_lower_case)


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
    """Saves `module` with `signature` as serving_default into export_dir (any filesystem), with
    a README.md on how to load it. Local: written to a scratch folder beside it, then renamed
    into place. Remote: an old export there is removed first, then the files are uploaded with
    saved_model.pb last, so a loader never finds one beside another export's variables."""
    export_dir = fileio.abspath(os.fspath(export_dir))
    readme = README.format(what=what, name=fileio.basename(export_dir),
                           example=_example_call(signature), inputs=inputs, outputs=outputs)
    if fileio.is_remote(export_dir):
        if fileio.exists(export_dir):
            fileio.rmtree(export_dir)
        with fileio.output_folder(export_dir, last=("saved_model.pb",)) as local:
            _save(module, signature, local, readme)
        return export_dir
    with fileio.scratch_folder(beside=export_dir, prefix=".export-tmp-") as scratch:
        tmp, old = fileio.join(scratch, "new"), fileio.join(scratch, "old")
        _save(module, signature, tmp, readme)
        if fileio.exists(export_dir):  # a previous export: moved aside, dropped once replaced
            fileio.rename(export_dir, old)
        fileio.rename(tmp, export_dir)
    return export_dir


def _save(module, signature, folder, readme):
    import tensorflow as tf
    tf.saved_model.save(module, folder, signatures={"serving_default": signature})
    fileio.write_text(fileio.join(folder, "README.md"), readme)


def load_saved_model(path):
    """tf.saved_model.load of an albert_tf raw-text export, tf-text's ops registered first."""
    try:
        import tensorflow_text  # noqa: F401  registers the SentencePiece ops the graph uses
    except ImportError as e:
        raise ImportError("albert_tf.load_saved_model needs tensorflow_text (pip install "
                          "tensorflow-text): the SavedModel tokenizes with its ops") from e
    import tensorflow as tf
    return tf.saved_model.load(os.fspath(path))


def exporter(export, task, export_dir):
    """The engine's export_fn: model → export(model, task, export_dir), or None without a
    folder (run_finetuning then exports nothing)."""
    if not export_dir:
        return None
    return lambda model: export(model, task, export_dir)
