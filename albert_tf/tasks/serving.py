"""What every task's raw-text SavedModel export shares: the in-graph tokenizer from the run's
SentencePiece model, the atomic write (temporary folder, then rename) with a README beside the
model, the --export_dir checks, and `load_saved_model`, which registers tf-text's ops first."""
from __future__ import annotations

import os
import shutil

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
    """Saves `module` with `signature` as serving_default into export_dir, atomically: written
    to a temporary folder beside it (with a README.md on how to load it), then renamed."""
    import tensorflow as tf
    export_dir = os.path.abspath(os.fspath(export_dir))
    tmp = f"{export_dir}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tf.saved_model.save(module, tmp, signatures={"serving_default": signature})
        with open(os.path.join(tmp, "README.md"), "w", encoding="utf-8") as f:
            f.write(README.format(what=what, name=os.path.basename(export_dir),
                                  example=_example_call(signature), inputs=inputs,
                                  outputs=outputs))
        old = f"{export_dir}.old-{os.getpid()}"
        if os.path.exists(export_dir):  # a previous export: moved aside, dropped once replaced
            os.replace(export_dir, old)
        os.replace(tmp, export_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return export_dir


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
