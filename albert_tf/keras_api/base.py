"""The Keras-native text task API shared by every task: a task model with a preprocessor inside,
so `fit`/`evaluate`/`predict` take raw strings, `compile()` defaults to Google's recipe, `.keras`
files carry the tokenizer, and `from_pretrained` loads a release folder in one line."""

from __future__ import annotations

import dataclasses
import inspect
import os

import keras
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.core.errors import InputError
from albert_tf.engine import optimizers  # noqa: F401  (a compiled .keras file names its optimizer and schedule classes)
from albert_tf.engine.init_checkpoint import init_from_checkpoint
from albert_tf.engine.optimizers import create_optimizer
from albert_tf.formats.common import find_tokenizer
from albert_tf.formats.tf1 import resolve_checkpoint_path
from albert_tf.formats.tfhub import source_kind, tfhub_config
from albert_tf.keras_api import data
from albert_tf.modeling.padding_free import set_padding_free

CONFIG_NAME = "albert_config.json"


def _find_tokenizer(folder, spm_model_file, vocab_file):
    """(spm_model_file, vocab_file): those given, else the release folder's SentencePiece model
    (30k-clean.model...), else its WordPiece vocabulary (Google's Chinese releases)."""
    for name, given in (("spm_model_file", spm_model_file), ("vocab_file", vocab_file)):
        if given is not None and not fileio.exists(given):  # an spm model may be a TF Hub folder
            raise InputError(f"{name} {given}: no such file")
    try:
        spm, vocab = find_tokenizer(folder, spm_model_file, vocab_file)
    except ValueError as e:
        raise InputError(f"from_pretrained: {e}") from None
    return (os.fspath(spm) if spm else None), (os.fspath(vocab) if vocab else None)


def _find_config(folder, albert_config_file):
    """The config given, else the folder's albert_config.json, else (a TF Hub SavedModel or
    Model Garden checkpoint) the one read off the release."""
    path = albert_config_file or fileio.join(folder, CONFIG_NAME)
    if not fileio.isfile(path) and source_kind(folder) is not None:
        return tfhub_config(folder, albert_config_file)
    if not fileio.isfile(path):
        raise InputError(f"{folder}: no {CONFIG_NAME}; pass albert_config_file")
    return AlbertConfig.from_json_file(path)


def _checkpoint_in(folder):
    """The weights of a release folder: model.ckpt-best, the folder itself when it is a TF Hub
    SavedModel or holds a Model Garden checkpoint, else its checkpoint."""
    best = fileio.join(folder, "model.ckpt-best")
    if fileio.isfile(best + ".index"):
        return best
    if source_kind(folder) is not None:
        return folder
    try:
        return resolve_checkpoint_path(folder)
    except FileNotFoundError as e:
        raise InputError(f"from_pretrained: {e}") from None


@dataclasses.dataclass(frozen=True)
class _AutoOptimizer:
    """What compile() without an optimizer asked for; fit builds the optimizer from it."""

    init_lr: float
    warmup_proportion: float
    compile_kwargs: dict


def _fitting_lengths(cls, given: dict, max_positions: int) -> dict:
    """The preprocessor's lengths: those given, else its defaults, with a default
    sequence_length cut to the model's max_position_embeddings (a release with 64 positions
    gets 64, not 128) and the other default lengths (query, qa) cut in the same ratio."""
    params = inspect.signature(cls.preprocessor_class).parameters
    default = params["sequence_length"].default
    out = dict(given)
    out.setdefault("sequence_length", min(default, max_positions))
    for name in cls.preprocessor_args:
        if name not in out:
            out[name] = max(1, params[name].default * out["sequence_length"] // default)
    return out


class TextTaskMixin:
    """Mixed in before a task model class (AlbertClassifier, ...): adds `preprocessor`.

    Subclasses set `preprocessor_class` and `default_learning_rate`, and may post-process
    `predict`'s outputs in `_postprocess(x, outputs)`.
    """

    preprocessor_class = None
    preprocessor_args = ("sequence_length",)  # from_pretrained passes these to the preprocessor
    default_learning_rate = 2e-5
    warmup_proportion = 0.1

    def _set_preprocessor(self, preprocessor):
        if isinstance(preprocessor, dict):
            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        limit = self.albert.config.max_position_embeddings
        if preprocessor is not None and preprocessor.sequence_length > limit:
            raise InputError(
                f"{type(self).__name__}: the preprocessor's sequence_length "
                f"{preprocessor.sequence_length} exceeds the model's "
                f"max_position_embeddings {limit}; use sequence_length <= {limit}"
            )
        self.preprocessor = preprocessor
        self._auto_optimizer = None
        # the preprocessor pads every text to sequence_length: encode the real tokens only
        # (albert_tf/modeling/padding_free.py; padded under XLA); set_padding_free(m, False) undoes
        set_padding_free(self, True)

    def get_config(self):
        config = super().get_config()
        config["preprocessor"] = (
            None
            if self.preprocessor is None
            else keras.saving.serialize_keras_object(self.preprocessor)
        )
        return config

    def call(self, inputs, training=None):
        """Feature dicts as the task model; raw strings through the preprocessor first."""
        if not data.is_features(inputs):
            inputs = self._require_preprocessor()(inputs)
        return super().call(inputs, training=training)

    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(
                f"{type(self).__name__} has no preprocessor: pass feature dicts "
                "(input_ids, input_mask, segment_ids), or build it with one"
            )
        return self.preprocessor

    # ----- compile defaults

    def compile(self, optimizer="auto", *, learning_rate=None, warmup_proportion=None, **kwargs):
        """keras compile; optimizer "auto" (or None) is Google's AdamW (weight decay 0.01,
        clip norm 1) with linear warmup over `warmup_proportion` of the steps then linear
        decay, built when `fit` knows how many steps it takes."""
        self._auto_optimizer = None
        if optimizer in (None, "auto"):
            self._auto_optimizer = _AutoOptimizer(
                learning_rate or self.default_learning_rate,
                self.warmup_proportion if warmup_proportion is None else warmup_proportion,
                dict(kwargs),
            )
            optimizer = create_optimizer(self._auto_optimizer.init_lr, 1, 0)  # until fit
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config):
        """Recompiles a loaded `.keras` model with its saved optimizer (state loads after)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _schedule_optimizer(self, ds, epochs, steps_per_epoch):
        """Before the first fit of an "auto" compile: the schedule over this fit's steps."""
        auto = self._auto_optimizer
        if not self.compiled:
            self.compile()
            auto = self._auto_optimizer
        if auto is None or int(self.optimizer.iterations.numpy()) > 0:
            return
        steps = data.num_steps(ds, epochs, steps_per_epoch)
        if steps is None:
            raise ValueError(
                "fit: the dataset's length is unknown, so the default learning-rate "
                "schedule cannot be built; pass steps_per_epoch, or compile with "
                "an optimizer"
            )
        optimizer = create_optimizer(
            auto.init_lr, max(steps, 1), int(auto.warmup_proportion * steps)
        )
        super().compile(optimizer=optimizer, **auto.compile_kwargs)
        self._auto_optimizer = auto

    # ----- raw-string fit / evaluate / predict

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        epochs=1,
        sample_weight=None,
        validation_data=None,
        shuffle=True,
        steps_per_epoch=None,
        **kwargs,
    ):
        """keras fit on raw strings (or features): x is mapped through the preprocessor in a
        tf.data pipeline; uncompiled, it compiles with the defaults first."""
        ds = data.make_dataset(self.preprocessor, x, y, sample_weight, batch_size, shuffle)
        if validation_data is not None:
            validation_data = self._eval_data(validation_data, batch_size)
        self._schedule_optimizer(ds, epochs, steps_per_epoch)
        return super().fit(
            ds,
            epochs=epochs,
            validation_data=validation_data,
            shuffle=False,
            steps_per_epoch=steps_per_epoch,
            **kwargs,
        )

    def _eval_data(self, validation_data, batch_size):
        if isinstance(validation_data, tf.data.Dataset):
            return data.make_dataset(self.preprocessor, validation_data, batch_size=batch_size)
        vx, vy, vw = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
        return data.make_dataset(self.preprocessor, vx, vy, vw, batch_size)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """keras evaluate on raw strings (or features)."""
        if not self.compiled:
            self.compile()
        ds = data.make_dataset(self.preprocessor, x, y, sample_weight, batch_size)
        return super().evaluate(ds, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """keras predict on raw strings (or features): the model's output dict of NumPy arrays,
        plus what the task reads from them (see `_postprocess`)."""
        ds = data.make_dataset(self.preprocessor, x, batch_size=batch_size)
        return self._postprocess(x, super().predict(ds, **kwargs))

    def _postprocess(self, x, outputs):
        return outputs

    # ----- export and loading

    def text_input_signature(self):
        """The raw-text serving signature; per task."""
        return [tf.TensorSpec([None], tf.string, name="text")]

    def export(
        self,
        filepath,
        format="tf_saved_model",
        verbose=None,
        input_signature=None,
        raw_text=True,
        **kwargs,
    ):
        """SavedModel whose `serve` takes raw strings (raw_text, the default; tokenized in the
        graph) or feature dicts (raw_text=False)."""
        if input_signature is None and raw_text:
            self._require_preprocessor()
            input_signature = self.text_input_signature()
        return super().export(
            filepath, format=format, verbose=verbose, input_signature=input_signature, **kwargs
        )

    @classmethod
    def from_pretrained(
        cls,
        path,
        *,
        spm_model_file=None,
        albert_config_file=None,
        do_lower_case=True,
        preprocessor_args=None,
        vocab_file=None,
        **model_args,
    ):
        """A task model with its preprocessor from a Google release folder (albert_config.json,
        model.ckpt-best, 30k-clean.model; or vocab_chinese.txt / vocab.txt for the WordPiece
        releases), a TF Hub / Kaggle SavedModel folder (`albert_en_base/3`: its config read
        off it, its `assets/30k-clean.model`), a run's output_dir (its checkpoint; pass
        albert_config_file / spm_model_file / vocab_file where it has none), or a `.keras`
        file. `spm_model_file` may be a TF Hub folder (`albert_en_preprocess/3`)."""
        path = os.fspath(path)
        if path.endswith(".keras"):
            return cls._load_keras(path)
        if not fileio.isdir(path):
            raise InputError(f"from_pretrained: {path} is not a folder or a .keras file")
        config = _find_config(path, albert_config_file)
        spm, vocab = _find_tokenizer(path, spm_model_file, vocab_file)
        split = {k: model_args.pop(k) for k in cls.preprocessor_args if k in model_args}
        split = _fitting_lengths(cls, split, config.max_position_embeddings)
        preprocessor = cls.preprocessor_class(
            spm, do_lower_case=do_lower_case, vocab_file=vocab, **split, **(preprocessor_args or {})
        )
        model = cls(config, preprocessor=preprocessor, **model_args)
        init_from_checkpoint(model, _checkpoint_in(path))
        return model

    @classmethod
    def _load_keras(cls, path):
        if not fileio.isfile(path):
            raise InputError(f"from_pretrained: no such file {path}")
        with fileio.local_copy(path) as local:  # any filesystem: Keras reads a local copy
            model = keras.saving.load_model(local)
        if not isinstance(model, cls):
            raise InputError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model
