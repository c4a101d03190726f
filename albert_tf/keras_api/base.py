"""The Keras text-task API shared by every task: a task model with its preprocessor inside.

With the preprocessor inside, `fit`/`evaluate`/`predict` take raw strings, `compile()` defaults
to Google's fine-tuning recipe, `.keras` files carry the tokenizer, and `from_pretrained` loads
a Google release folder in one line.
"""

from __future__ import annotations

import dataclasses
import inspect
import os

from absl import logging
import keras
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.environment import check_backend_runs
from albert_tf.core.errors import InputError
from albert_tf.engine import optimizers  # noqa: F401  (a compiled .keras file names its optimizer and schedule classes)
from albert_tf.engine.init_checkpoint import init_from_checkpoint
from albert_tf.engine.optimizers import create_optimizer
from albert_tf.formats.release_folder import release_checkpoint, release_config, tokenizer_files
from albert_tf.formats.tf1 import group_names
from albert_tf.keras_api import data
from albert_tf.modeling.padding_free import set_padding_free


def _find_tokenizer(folder, spm_model_file, vocab_file):
    """Returns (spm_model_file, vocab_file): those given, else the release folder's
    (`release_folder.tokenizer_files`)."""
    for name, given in (("spm_model_file", spm_model_file), ("vocab_file", vocab_file)):
        if given is not None and not fileio.exists(given):  # an spm model may be a TF Hub folder
            raise InputError(f"{name} {given}: no such file")
    try:
        spm, vocab = tokenizer_files(folder, spm_model_file, vocab_file)
    except ValueError as e:
        raise InputError(f"from_pretrained: {e}") from None
    return (os.fspath(spm) if spm else None), (os.fspath(vocab) if vocab else None)


def _checkpoint_in(folder):
    """The weights of a release folder (`release_folder.release_checkpoint`)."""
    try:
        return release_checkpoint(folder)
    except FileNotFoundError as e:
        raise InputError(f"from_pretrained: {e}") from None


@dataclasses.dataclass(frozen=True)
class _AutoOptimizer:
    """What compile() without an optimizer asked for; fit builds the optimizer from it."""

    init_lr: float
    warmup_proportion: float
    compile_kwargs: dict


def _fitting_lengths(cls, given: dict, max_positions: int) -> dict:
    """Returns the preprocessor's lengths: those given, else its defaults. A default
    sequence_length is cut to the model's max_position_embeddings (a release with 64 positions
    gets 64, not 128), and the other default lengths (query, qa) are cut in the same ratio."""
    params = inspect.signature(cls.preprocessor_class).parameters
    default = params["sequence_length"].default
    out = dict(given)
    out.setdefault("sequence_length", min(default, max_positions))
    for name in cls.preprocessor_args:
        if name not in out:
            out[name] = max(1, params[name].default * out["sequence_length"] // default)
    return out


class TextTaskMixin:
    """Mixin that gives a task model (AlbertClassifier, ...) a preprocessor, for raw text.

    It is listed before the task model class. It adds the `preprocessor` attribute, raw-string
    `fit`/`evaluate`/`predict`, a default `compile()`, raw-text `export` and
    `from_pretrained`. Subclasses set `preprocessor_class` and `default_learning_rate`, and
    may post-process `predict`'s outputs in `_postprocess(x, outputs)`.
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
        """Returns the constructor arguments, the serialised preprocessor included.

        Returns:
            The task model's config with `preprocessor` (or `None`).
        """
        config = super().get_config()
        config["preprocessor"] = (
            None
            if self.preprocessor is None
            else keras.saving.serialize_keras_object(self.preprocessor)
        )
        return config

    def __call__(self, inputs, *args, **kwargs):
        """Calls the model; on a backend other than TensorFlow, raw strings are tokenized first
        (TensorFlow's work, eagerly on the host): the backend's graph takes only the features.

        Args:
            inputs: A feature dict (with `input_ids`) or raw texts in the task's structure.
            *args: Other `keras.Model.__call__` arguments.
            **kwargs: Other `keras.Model.__call__` arguments (`training`, ...).

        Returns:
            The task model's output dict.
        """
        if keras.backend.backend() != "tensorflow" and not data.is_features(inputs):
            inputs = self._require_preprocessor()(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None):
        """Runs the model on feature dicts, or on raw strings through the preprocessor first.

        Args:
            inputs: A feature dict (with `input_ids`) or raw texts in the task's structure.
            training: Whether dropout is on. Defaults to `None` (Keras decides).

        Returns:
            The task model's output dict.
        """
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
        """Configures the model for training; by default with Google's fine-tuning optimizer.

        With `optimizer="auto"` (or `None`) the optimizer is Google's AdamW (weight decay
        0.01, gradient clip norm 1) with a linear warmup over `warmup_proportion` of the
        training steps, then a linear decay to 0. It is built at the first `fit`, which knows
        how many steps there are. Without a `loss`, the task model's own loss and metrics are
        used.

        Args:
            optimizer: `"auto"`/`None` for Google's recipe, or any Keras optimizer (or its
                name). Defaults to `"auto"`.
            learning_rate: Peak learning rate of the "auto" optimizer. Defaults to `None`: the
                task's `default_learning_rate` (2e-5 classification, 1e-5 multiple choice,
                3e-5 span extraction).
            warmup_proportion: Fraction of the steps spent warming up ("auto" only).
                Defaults to `None`: 0.1.
            **kwargs: Other `keras.Model.compile` arguments (`loss`, `metrics`,
                `jit_compile`, ...).
        """
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
        """Recompiles a loaded `.keras` model with its saved optimizer (its state loads after).

        Args:
            config: The compile config Keras saved.
        """
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
        """Trains the model on raw strings (or feature dicts), as `keras.Model.fit`.

        In-memory x is sliced, shuffled, batched and mapped through the preprocessor in a
        `tf.data` pipeline; a `tf.data.Dataset` x is mapped as it is. An uncompiled model is
        compiled with the defaults first; an "auto" optimizer gets its schedule from this
        fit's number of steps.

        Args:
            x: Raw texts in the task's structure (lists, NumPy arrays, pandas columns, a tuple
                or dict of them), feature dicts, or a `tf.data.Dataset` of either (with its
                labels).
            y: Labels for in-memory x, or `None` with a dataset. Defaults to `None`.
            batch_size: int. Batch size of in-memory x (and of an unbatched dataset).
                Defaults to `None`: 32.
            epochs: int. Number of epochs. Defaults to `1`.
            sample_weight: Per-example weights for in-memory x, or `None`. Defaults to `None`.
            validation_data: `(x, y)` or `(x, y, sample_weight)` in the same forms as x and y,
                or a `tf.data.Dataset`, or `None`. Defaults to `None`.
            shuffle: Whether in-memory x is reshuffled every epoch. Defaults to `True`.
            steps_per_epoch: int or `None`. Steps per epoch; needed with a dataset of unknown
                length and the "auto" optimizer. Defaults to `None`.
            **kwargs: Other `keras.Model.fit` arguments (`verbose`, `callbacks`, ...).

        Returns:
            A `keras.callbacks.History`.

        Raises:
            ValueError: when the "auto" optimizer needs a number of steps that the dataset's
                length does not give (pass `steps_per_epoch`), when raw text comes without a
                preprocessor, or when y is given with a dataset x.
        """
        y = self.encode_labels(y)  # checked here, before any tracing
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
        return data.make_dataset(self.preprocessor, vx, self.encode_labels(vy), vw, batch_size)

    def encode_labels(self, y):
        """The labels as the model trains on them; a task model checks and maps them here,
        before any tracing, so a wrong label is one clear error (default: as given).

        Args:
            y: The labels given to `fit` / `evaluate` (None for none).

        Returns:
            The labels to train on.
        """
        return y

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """Evaluates the model on raw strings (or feature dicts), as `keras.Model.evaluate`.

        Args:
            x: Raw texts, feature dicts or a `tf.data.Dataset`, as for `fit`.
            y: Labels for in-memory x. Defaults to `None`.
            batch_size: int. Batch size of in-memory x. Defaults to `None`: 32.
            sample_weight: Per-example weights for in-memory x. Defaults to `None`.
            **kwargs: Other `keras.Model.evaluate` arguments (`verbose`, `return_dict`, ...).

        Returns:
            The loss and metrics, as `keras.Model.evaluate` returns them.
        """
        if not self.compiled:
            self.compile()
        ds = data.make_dataset(
            self.preprocessor, x, self.encode_labels(y), sample_weight, batch_size
        )
        return super().evaluate(ds, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """Runs the model on raw strings (or feature dicts), as `keras.Model.predict`.

        Args:
            x: Raw texts, feature dicts or a `tf.data.Dataset`, as for `fit` (without labels).
            batch_size: int. Batch size of in-memory x. Defaults to `None`: 32.
            **kwargs: Other `keras.Model.predict` arguments (`verbose`, ...).

        Returns:
            The model's output dict of NumPy arrays, plus what the task reads from them (e.g.
            `label_ids` for a classifier; see the task class).
        """
        ds = data.make_dataset(self.preprocessor, x, batch_size=batch_size)
        return self._postprocess(x, super().predict(ds, **kwargs))

    def _postprocess(self, x, outputs):
        return outputs

    # ----- export and loading

    def text_input_signature(self):
        """Returns the raw-text input signature that `export` serves; defined per task.

        Returns:
            A list with the `tf.TensorSpec` structure of the raw inputs.
        """
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
        """Exports a SavedModel whose `serve` endpoint takes raw strings or feature dicts.

        With `raw_text` (the default) `serve` takes string tensors in the task's structure and
        tokenizes them in the graph, so serving needs no Python tokenizer.

        Args:
            filepath: Output folder of the SavedModel.
            format: Export format, as `keras.Model.export`. Defaults to `"tf_saved_model"`.
            verbose: Whether Keras prints what it exported. Defaults to `None`.
            input_signature: The serving signature; `None` uses the raw-text one (with
                `raw_text`) or Keras' default. Defaults to `None`.
            raw_text: Whether `serve` takes raw strings (`True`) or feature dicts (`False`).
                Defaults to `True`.
            **kwargs: Other `keras.Model.export` arguments.

        Raises:
            ValueError: when `raw_text` is asked of a model without a preprocessor, or on a
                backend other than TensorFlow (JAX's export cannot hold the tokenizer's
                string ops: export with `raw_text=False`, or from a TensorFlow process); on
                KERAS_BACKEND=torch, any export.
        """
        check_backend_runs(f"export(format={format!r})")
        if input_signature is None and raw_text:
            self._require_preprocessor()
            if keras.backend.backend() != "tensorflow":
                raise ValueError(
                    f"export(raw_text=True) needs KERAS_BACKEND=tensorflow (this is "
                    f"{keras.backend.backend()}): pass raw_text=False for a SavedModel on "
                    "token ids, or save a .keras file and export it from a TensorFlow process"
                )
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
        """Builds the task model and its preprocessor from pretrained files.

        `path` may be a Google release folder (`albert_config.json`, `model.ckpt-best`,
        `30k-clean.model`; or `vocab_chinese.txt` / `vocab.txt` for the WordPiece releases), a
        training run's `output_dir` (its `model.ckpt-best`, else its latest checkpoint; pass
        `albert_config_file`, `spm_model_file` or `vocab_file` where it has none), or a
        `.keras` file saved from this class. A TF Hub / Kaggle SavedModel folder
        (`albert_en_base/3`) works too: its config is read off it, its tokenizer is its
        `assets/30k-clean.model`, and `spm_model_file` may be a TF Hub preprocessing folder
        (`albert_en_preprocess/3`). From a folder, the encoder loads from the
        checkpoint and a task head the checkpoint lacks starts from random values. A default
        `sequence_length` is cut to the model's `max_position_embeddings`.

        Args:
            path: A release folder, a run's output folder, or a `.keras` file (any filesystem
                TensorFlow reads).
            spm_model_file: Path of the SentencePiece model when the folder has none.
                Defaults to `None`.
            albert_config_file: Path of the model config when the folder has no
                `albert_config.json`. Defaults to `None`.
            do_lower_case: Whether the preprocessor lowercases. Defaults to `True`.
            preprocessor_args: dict of further preprocessor constructor arguments.
                Defaults to `None`.
            vocab_file: Path of a WordPiece vocabulary when the folder has none.
                Defaults to `None`.
            **model_args: The task model's constructor arguments (e.g. `num_labels`); the
                preprocessor's lengths (`sequence_length`, and `max_query_length` or
                `max_qa_length` where the task has them) go to the preprocessor.

        Returns:
            An instance of this class, its encoder weights loaded.

        Raises:
            InputError: (a `ValueError`) when `path` is neither a folder nor a `.keras` file,
                when the config, tokenizer or checkpoint is missing, or when a `.keras` file
                holds another class.
        """
        path = os.fspath(path)
        if path.endswith(".keras"):
            return cls._load_keras(path)
        if not fileio.isdir(path):
            raise InputError(f"from_pretrained: {path} is not a folder or a .keras file")
        config = release_config(path, albert_config_file)
        spm, vocab = _find_tokenizer(path, spm_model_file, vocab_file)
        split = {k: model_args.pop(k) for k in cls.preprocessor_args if k in model_args}
        split = _fitting_lengths(cls, split, config.max_position_embeddings)
        preprocessor = cls.preprocessor_class(
            spm, do_lower_case=do_lower_case, vocab_file=vocab, **split, **(preprocessor_args or {})
        )
        model = cls(config, preprocessor=preprocessor, **model_args)
        ckpt = _checkpoint_in(path)
        report = init_from_checkpoint(model, ckpt)
        if report is not None and report.missing:
            # a warning, not INFO: notebooks show warnings, and a head that starts random
            # needs fine-tuning before its predictions mean anything
            logging.warning(
                "%s.from_pretrained(%s): loaded %d variables from %s; %d are new and start "
                "random (%s): fine-tune before predicting",
                cls.__name__,
                path,
                len(report.loaded),
                ckpt,
                len(report.missing),
                group_names(report.missing),
            )
        return model

    @classmethod
    def _load_keras(cls, path):
        """The model of a `.keras` file, checked to be an instance of cls."""
        if not fileio.isfile(path):
            raise InputError(f"from_pretrained: no such file {path}")
        with fileio.local_copy(path) as local:  # any filesystem: Keras reads a local copy
            model = keras.saving.load_model(local)
        if not isinstance(model, cls):
            raise InputError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model
