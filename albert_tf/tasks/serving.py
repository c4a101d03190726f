"""What every task's raw-text SavedModel export shares.

The in-graph tokenizer from the run's SentencePiece model (or WordPiece vocabulary);
versioned exports (`export_dir/<unix seconds>/`, the layout TF Serving reads as a model base
path, as Google's Estimator exported) with a README beside the model; and `load_saved_model`,
which registers TensorFlow Text's ops first and finds the newest version.
"""

from __future__ import annotations

import os
import time

from albert_tf.core import fileio

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
    "export_dir needs spm_model_file or vocab_file: the exported model "
    "tokenizes raw text in the graph"
)


def graph_tokenizer(spm_model_file=None, do_lower_case=True, vocab_file=None):
    """Makes the in-graph tokenizer of a SentencePiece model or WordPiece vocabulary.

    It gives the same ids as the Python tokenizer (`TextEncoder`) of the same files.

    Args:
        spm_model_file: str or None. The SentencePiece model. Default None.
        do_lower_case: bool. Lowercase (and strip accents) before tokenizing. Default True.
        vocab_file: str or None. A WordPiece vocabulary, used when there is no
            SentencePiece model. Default None.

    Returns:
        GraphTokenizer. The tokenizer (tokenize, pack, and the special ids).

    Raises:
        ValueError: when neither file is given.

    Example:

    >>> from albert_tf.tasks.serving import graph_tokenizer
    >>> tokenizer = graph_tokenizer("tests/data/fixtures/spm.model")
    >>> tokenizer.tokenize(["the list"]).to_list()
    [[14, 90]]
    """
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.text.graph_tokenizer import make_graph_tokenizer

    if not (spm_model_file or vocab_file):
        raise ValueError(NEEDS_TOKENIZER)
    return make_graph_tokenizer(spm_model_file, vocab_file, do_lower_case)


def encoder_tokenizer(encoder):
    """Makes the in-graph tokenizer of a task's TextEncoder (same files, same casing).

    The GLUE, RACE and NER exports tokenize with it.

    Args:
        encoder: TextEncoder. The task's Python tokenizer.

    Returns:
        GraphTokenizer. The in-graph tokenizer giving the same ids.
    """
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
    """Saves a module as a new version of a SavedModel export, with a README on loading it.

    The version folder is `export_dir/<version>`, the version being the current unix time in
    seconds, or one more than the newest version already there (see `write_version`, which
    also says how no export is ever seen half-written). Works on any filesystem albert_tf
    writes.

    Args:
        module: tf.Module. What to save.
        signature: tf.types.experimental.ConcreteFunction. The `serving_default` signature.
        export_dir: str or path-like. The export folder (created if needed).
        what: str. What the model is, for the README's title (e.g. "GLUE mrpc").
        inputs: str. The README's description of the signature's inputs.
        outputs: str. The README's description of its outputs.
        also: Writers of the other export formats of the same version (LiteRT, ONNX), each
            as `write_version` takes them. Defaults to none.

    Returns:
        str. The version folder written.
    """
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
    """Writes a new version folder of an export, filled by one writer per format.

    The version is the current unix time in seconds, above every numbered folder already in
    `export_dir`. No export is ever renamed over or overwritten, so a server watching
    `export_dir` never sees half of one: on a local disk everything is written to a hidden
    scratch folder in `export_dir`, then renamed to its version; on a bucket (no atomic
    rename) it is uploaded straight to its version, README.md and then saved_model.pb last.

    Args:
        export_dir: str or path-like. The export folder (created if needed).
        writers: Callables `writer(folder, version_folder) -> str`: each writes its files into
            `folder` (where to write now) and returns its section of the README, naming
            `version_folder` (where the files will be read).

    Returns:
        str. The version folder written.
    """
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
    created = not fileio.exists(export_dir)
    fileio.makedirs(export_dir)
    try:
        with fileio.scratch_folder(beside=target, prefix=".export-tmp-") as scratch:
            tmp = fileio.join(scratch, "new")
            fill(tmp)
            fileio.rename(tmp, target)
    except BaseException:
        if created and not fileio.listdir(export_dir):  # a failed export leaves no folder
            fileio.rmtree(export_dir)
        raise
    return target


def export_versions(export_dir) -> list:
    """Lists the complete versions of an export folder.

    Args:
        export_dir: str. The export folder.

    Returns:
        list of int. The versions (numbered folders holding a saved_model.pb), ascending;
        empty when the folder does not exist.
    """
    if not fileio.isdir(export_dir):
        return []
    return sorted(
        int(n)
        for n in fileio.listdir(export_dir)
        if n.isdigit() and fileio.exists(fileio.join(export_dir, n, "saved_model.pb"))
    )


def latest_export(path) -> str:
    """Finds the SavedModel to load: `path` itself, or the newest version inside it.

    Args:
        path: str or path-like. A SavedModel folder, or an export folder of versions.

    Returns:
        str. `path` when it holds a saved_model.pb, else its newest complete version folder.

    Raises:
        FileNotFoundError: when `path` is neither a SavedModel nor holds a complete version.

    Example:

    >>> import os, tempfile
    >>> from albert_tf.tasks.serving import latest_export
    >>> exports = tempfile.mkdtemp()
    >>> for version in ("1700000000", "1700000100"):
    ...     os.makedirs(os.path.join(exports, version))
    ...     open(os.path.join(exports, version, "saved_model.pb"), "wb").close()
    >>> os.path.basename(latest_export(exports))
    '1700000100'
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
    """Loads an albert_tf raw-text SavedModel export.

    The exports tokenize text in the graph with TensorFlow Text's SentencePiece ops, which
    TensorFlow itself does not register: a plain `tf.saved_model.load` fails with "Op type
    not registered" unless `tensorflow_text` was imported first. This function imports it,
    then loads the model (the newest version when given an export folder).

    Args:
        path: str or path-like. A SavedModel folder, or an --export_dir folder whose newest
            complete version is loaded.

    Returns:
        The loaded SavedModel object; call `.signatures["serving_default"]` on raw strings.

    Raises:
        ImportError: when tensorflow_text is not installed.
        FileNotFoundError: when `path` holds no SavedModel.

    Example:

    >>> import os, tempfile, albert_tf
    >>> import tensorflow as tf
    >>> from albert_tf.engine.finetuning_options import FineTuningOptions
    >>> tiny = "tests/data/fixtures/albert_tiny"
    >>> config = albert_tf.AlbertConfig.from_json_file(f"{tiny}/albert_config.json")
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file=f"{tiny}/30k-clean.model")
    >>> work = tempfile.mkdtemp()
    >>> task = albert_tf.GlueTask("sst-2", "tests/data/samples", encoder, 32, work)
    >>> opts = FineTuningOptions(output_dir=os.path.join(work, "out"),
    ...                          init_checkpoint=f"{tiny}/model.ckpt-best", verbose=0)
    >>> export_dir = os.path.join(work, "export")
    >>> _ = albert_tf.run_glue(config, task, opts, export_dir=export_dir)  # export only
    >>> model = albert_tf.load_saved_model(export_dir)
    >>> outputs = model.signatures["serving_default"](
    ...     text_a=tf.constant(["a gripping film", "dull"]))
    >>> sorted(outputs), outputs["probabilities"].shape, outputs["labels"].dtype
    (['labels', 'predictions', 'probabilities'], TensorShape([2, 2]), tf.string)
    """
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


def saved_model_exporter(export, task, export_dir):
    """Makes the engine's `export_fn` for a task's export function.

    Args:
        export: callable. `export(model, task, export_dir) -> str`, e.g.
            `export_text_classifier`.
        task: The task object passed on to `export`.
        export_dir: str or None. The export folder; None or "" exports nothing.

    Returns:
        callable or None. `model -> export(model, task, export_dir)`, or None without a
        folder (`run_finetuning` then exports nothing).
    """
    if not export_dir:
        return None
    return lambda model: export(model, task, export_dir)
