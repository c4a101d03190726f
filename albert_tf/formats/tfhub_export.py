"""albert_tf models → SavedModels in the layout of Google's TF Hub / Kaggle ALBERT releases
(`albert_en_base/3`), for code written for those: `obj = tf.saved_model.load(folder)`, then
`obj(dict(input_word_ids=..., input_mask=..., input_type_ids=...), training=False)` returns
`pooled_output` [B,H], `default` (= pooled_output), `sequence_output` [B,T,H] and
`encoder_outputs` (one [B,T,H] per layer); a model with its masked-LM head also gets `.mlm`,
whose `__call__` takes `masked_lm_positions` [B,P] too and adds `mlm_logits` [B,P,V]. Inputs are
int32 [batch, seq] with both dimensions free, as Google's; concrete functions exist for
training=True and False. `sp_model_file` is the SentencePiece model, an asset as Google's.

Unlike Google's export (a tf_keras model), the variables are albert_tf's, also held under their
Google names in the attribute `albert_variables`, and the config travels as the asset
`albert_config.json`, so `load_tfhub` reads the export back exactly. `variables` and
`trainable_variables` list them all. The `serving_default` signature returns `pooled_output`,
`default`, `sequence_output` and `encoder_outputs_<i>` by name.
"""

from __future__ import annotations

import json
import os

import keras
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE
from albert_tf.formats.common import ExportReport
from albert_tf.formats.tensorflow_handoff import call_in_tensorflow
from albert_tf.formats.tfhub import OWN_VARIABLES
from albert_tf.modeling.names import (
    encoder_variable_map,
    mlm_head_variable_map,
    original_variable_map,
)
from albert_tf.text.vocab_files import read_spm_model

INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
SPM_ASSET = "30k-clean.model"  # the name of Google's releases' asset


def _features(inputs):
    """TF Hub input names → albert_tf's."""
    return {
        "input_ids": inputs["input_word_ids"],
        "input_mask": inputs["input_mask"],
        "segment_ids": inputs["input_type_ids"],
    }


def _encoder_outputs(out) -> dict:
    return {
        "pooled_output": out["pooled_output"],
        "default": out["pooled_output"],
        "sequence_output": out["sequence_output"],
        "encoder_outputs": list(out["encoder_outputs"]),
    }


class MaskedLMModule(tf.Module):
    """`.mlm`: the encoder's outputs plus `mlm_logits` at `masked_lm_positions`."""

    def __init__(self, albert, mlm_head):
        super().__init__(name="mlm")
        self.albert, self.mlm_head = albert, mlm_head

    @tf.function
    def __call__(self, inputs, training=False):
        """Google's `.mlm(dict(input_word_ids, input_mask, input_type_ids,
        masked_lm_positions), training=False)`."""
        out = self.albert(_features(inputs), training=training)
        outputs = _encoder_outputs(out)
        del outputs["default"]  # Google's .mlm returns no `default`
        outputs["mlm_logits"] = self.mlm_head(out["sequence_output"], inputs["masked_lm_positions"])
        return outputs


class TfHubEncoder(tf.Module):
    """The exported root object (see the module docstring)."""

    variables = None  # plain attributes here, saved as lists (tf.Module computes them)
    trainable_variables = None

    def __init__(self, albert, mlm_head=None, assets=None):
        super().__init__(name="albert_encoder")
        self.albert = albert
        names = dict(encoder_variable_map(albert))
        if mlm_head is not None:
            names.update(mlm_head_variable_map(mlm_head))
            self.mlm = MaskedLMModule(albert, mlm_head)
        setattr(self, OWN_VARIABLES, {n: v.value for n, v in names.items()})
        self.variables = [v.value for v in names.values()]
        self.trainable_variables = [v.value for v in names.values() if v.trainable]
        for attribute, path in (assets or {}).items():
            setattr(self, attribute, tf.saved_model.Asset(path))

    @tf.function
    def __call__(self, inputs, training=False):
        """Google's `obj(dict(input_word_ids, input_mask, input_type_ids), training=False)`."""
        return _encoder_outputs(self.albert(_features(inputs), training=training))

    def trace(self):
        """Concrete functions for training=False and True (as Google's export), and the
        serving signature."""
        spec = {k: tf.TensorSpec([None, None], tf.int32, name=k) for k in INPUTS}
        for training in (False, True):
            self.__call__.get_concrete_function(spec, training)
            if hasattr(self, "mlm"):
                positions = tf.TensorSpec([None, None], tf.int32, name="masked_lm_positions")
                self.mlm.__call__.get_concrete_function(
                    {**spec, "masked_lm_positions": positions}, training
                )

        @tf.function(input_signature=[spec])
        def serve(inputs):
            out = self.__call__(inputs, training=False)
            flat = {k: out[k] for k in ("pooled_output", "default", "sequence_output")}
            flat.update({f"encoder_outputs_{i}": t for i, t in enumerate(out["encoder_outputs"])})
            return flat

        return serve.get_concrete_function()


def _spm_name(spm_model_file) -> str:
    name = fileio.basename(os.fspath(spm_model_file).rstrip("/"))
    return name if name.endswith(".model") else SPM_ASSET


def export_tfhub(model, folder, spm_model_file=None, *, exclude=()) -> ExportReport:
    """Write an albert_tf model as a SavedModel in the layout of Google's TF Hub ALBERT
    releases, which code written for them loads with `tf.saved_model.load`. On a Keras
    backend other than TensorFlow (JAX) a TensorFlow process writes the same folder
    (`formats.tensorflow_handoff`).

    Args:
        model: An albert_tf model: its encoder is exported, and an AlbertPretrainer's
            masked-LM head as `.mlm`. Other heads (sentence order, task heads) have no place
            there and are reported as left out.
        folder: The SavedModel folder to write (local, gs://, any TensorFlow filesystem);
            `saved_model.pb` is written last.
        spm_model_file: The SentencePiece model (a file, or a TF Hub model or preprocessing
            folder) to carry as the `sp_model_file` asset; None writes none.
        exclude: Google names not to export (e.g. heads that were never trained); a masked-LM
            head named here is left out with its `.mlm`.

    Returns:
        ExportReport: the Google names written and those left out.

    Example:

    >>> import albert_tf, tensorflow as tf
    >>> model, _ = albert_tf.load_tfhub("tests/data/fixtures/tfhub/albert_tiny_model")
    >>> print(albert_tf.export_tfhub(model, "ram://docs/tfhub_export"))
    wrote ram://docs/tfhub_export: 25 variables, 0 left out
    >>> obj = tf.saved_model.load("ram://docs/tfhub_export")
    >>> ids = tf.constant([[2, 10, 11, 3]])
    >>> out = obj(dict(input_word_ids=ids, input_mask=tf.ones_like(ids),
    ...                input_type_ids=tf.zeros_like(ids)), training=False)
    >>> out["pooled_output"].shape, len(out["encoder_outputs"])
    (TensorShape([1, 32]), 4)
    """
    folder = os.fspath(folder)
    albert = model if hasattr(model, "embedding") else model.albert
    head = getattr(model, "mlm_head", None)
    if head is not None and set(mlm_head_variable_map(head)) & set(exclude):
        head = None
    if keras.backend.backend() != "tensorflow":  # the SavedModel's graphs are TensorFlow's
        spm = None if spm_model_file is None else os.fspath(spm_model_file)
        exported = model if head is not None else albert
        fileio.remove(fileio.join(folder, "saved_model.pb"))  # no old graph over new variables
        with fileio.output_folder(folder, last=("saved_model.pb",)) as local:
            function = f"{__name__}:export_tfhub"
            written = call_in_tensorflow(exported, function, local, spm)["written"]
        return ExportReport(
            folder, written, sorted(set(original_variable_map(model)) - set(written))
        )
    blobs = {CONFIG_FILE: json.dumps(albert.config.to_dict(), indent=2) + "\n"}
    spm_name = None
    if spm_model_file is not None:
        spm_name = _spm_name(spm_model_file)
        blobs[spm_name] = read_spm_model(spm_model_file)
    fileio.remove(fileio.join(folder, "saved_model.pb"))  # no old graph over new variables
    with (
        fileio.scratch_folder() as scratch,
        fileio.output_folder(folder, last=("saved_model.pb",)) as local,
    ):
        assets = {}
        for name, data in blobs.items():
            path = fileio.join(scratch, name)
            fileio.write_bytes(path, data.encode() if isinstance(data, str) else data)
            assets["sp_model_file" if name == spm_name else "albert_config_file"] = path
        module = TfHubEncoder(albert, head, assets)
        tf.saved_model.save(module, local, signatures={"serving_default": module.trace()})
    written = set(getattr(module, OWN_VARIABLES))
    names = set(original_variable_map(model))
    return ExportReport(folder, sorted(written), sorted(names - written))
