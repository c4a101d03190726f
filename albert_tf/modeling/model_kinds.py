"""The one registry of model kinds: every albert_tf model a converter builds, a deployment
exports or another library names, with what each place needs to know about it.

A kind is a model class (plus the constructor arguments that pick it: a regression classifier
is an `AlbertClassifier` with `is_regression=True`), the Google names of its head variables in a
checkpoint, its names in Hugging Face transformers and keras-hub, the outputs of its LiteRT
file and the TFLite Task Library client that runs it. Every other module asks this one:
`python -m albert_tf.convert --model` (its choices), `interop.task_heads` (which head a
checkpoint holds), `formats.huggingface_config` (`architectures`), `formats.keras_hub`,
`deploy.litert` and `deploy.onnx` (what a model is exported as). A new head is one entry in
`KINDS`; a model of no kind is a ValueError naming its class, never an `AlbertModel` by default.

The model classes are imported on first use, so the command line's choices need no TensorFlow.
"""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class ModelKind:
    """One kind of albert_tf model and its names everywhere.

    Attributes:
        name: The kind's name (`--model`, `LiteRTExport.kind`).
        class_name: The albert_tf model class (in `albert_tf.modeling`).
        arguments: The constructor's keyword arguments that make the class this kind.
        head_variables: Google names (or name prefixes ending in "/") of the head's variables
            in a checkpoint; empty for the bare encoder.
        pooled: The head is a root `output_weights` [outputs, hidden] that several kinds store
            alike, so a checkpoint alone cannot tell which.
        sized_by_head: The constructor takes the head's output count after the config.
        huggingface: transformers' `architectures` entry, or None (written as `AlbertModel`,
            the head left out).
        huggingface_problem_type: transformers' `problem_type` of the kind, or None.
        keras_hub: The keras-hub class that holds the kind, or None (the head left out).
        litert_outputs: The outputs of its LiteRT file, or None (no LiteRT export).
        task_library: The TFLite Task Library client its LiteRT file is for, or None.
        extra_inputs: Its serving inputs (LiteRT, ONNX) beyond input_ids, input_mask and
            segment_ids.
    """

    name: str
    class_name: str
    arguments: tuple = ()
    head_variables: tuple = ()
    pooled: bool = False
    sized_by_head: bool = False
    huggingface: Optional[str] = None
    huggingface_problem_type: Optional[str] = None
    keras_hub: Optional[str] = None
    litert_outputs: Optional[tuple] = None
    task_library: Optional[str] = None
    extra_inputs: tuple = ()

    def model_class(self):
        """The Keras model class of this kind.

        Returns:
            The class.
        """
        return model_classes()[self.class_name]

    def matches(self, model) -> bool:
        """Whether `model` is of this kind (a subclass counts: the Keras text models are the
        task model they extend).

        Args:
            model: A Keras model.

        Returns:
            bool.
        """
        return isinstance(model, self.model_class()) and all(
            bool(getattr(model, key, False)) == bool(value) for key, value in self.arguments
        )

    def build(self, config, head_size: Optional[int] = None, **kwargs):
        """A fresh (randomly initialised) model of this kind.

        Args:
            config: The AlbertConfig.
            head_size: The head's output count, for kinds `sized_by_head`.
            **kwargs: More constructor arguments (dropout_prob, label_names, ...).

        Returns:
            The Keras model.

        Raises:
            ValueError: A kind sized by its head without `head_size`.
        """
        cls = self.model_class()
        kwargs = {**dict(self.arguments), **kwargs}
        if not self.sized_by_head:
            return cls(config, **kwargs)
        if head_size is None:
            raise ValueError(f"model kind {self.name!r}: the head's size is needed to build it")
        return cls(config, head_size, **kwargs)


_SQUAD_V2_OUTPUTS = (
    "start_top_log_probs",
    "start_top_index",
    "end_top_log_probs",
    "end_top_index",
    "cls_logits",
)
_POOLED = dict(head_variables=("output_weights", "output_bias"), pooled=True)
_SEQUENCE = "AlbertForSequenceClassification"
# In the order a model or checkpoint is matched: a subclass and a more specific head first.
KINDS = {
    kind.name: kind
    for kind in (
        ModelKind(
            "pretrainer",
            "AlbertPretrainer",
            head_variables=("cls/predictions/", "cls/seq_relationship/"),
            huggingface="AlbertForPreTraining",
            keras_hub="AlbertMaskedLM",
            extra_inputs=("masked_lm_positions",),
        ),
        ModelKind(
            "encoder",
            "AlbertModel",
            huggingface="AlbertModel",
            keras_hub="AlbertBackbone",
            litert_outputs=("sequence_output", "pooled_output"),
        ),
        ModelKind(
            "classifier",
            "AlbertClassifier",
            arguments=(("is_regression", False), ("multi_label", False)),
            sized_by_head=True,
            huggingface=_SEQUENCE,
            litert_outputs=("probabilities",),
            task_library="BertNLClassifier",
            **_POOLED,
        ),
        ModelKind(
            "regression",
            "AlbertClassifier",
            arguments=(("is_regression", True), ("multi_label", False)),
            sized_by_head=True,
            huggingface=_SEQUENCE,
            huggingface_problem_type="regression",
            litert_outputs=("predictions",),
            task_library="BertNLClassifier",
            **_POOLED,
        ),
        ModelKind(
            "multi_label",
            "AlbertClassifier",
            arguments=(("is_regression", False), ("multi_label", True)),
            sized_by_head=True,
            huggingface=_SEQUENCE,
            huggingface_problem_type="multi_label_classification",
            litert_outputs=("probabilities",),
            task_library="BertNLClassifier",
            **_POOLED,
        ),
        ModelKind(
            "token_classifier",
            "AlbertTokenClassifier",
            sized_by_head=True,
            huggingface="AlbertForTokenClassification",
            litert_outputs=("logits", "probabilities"),
            **_POOLED,
        ),
        ModelKind(
            "multiple_choice",
            "AlbertMultipleChoice",
            huggingface="AlbertForMultipleChoice",
            litert_outputs=("logits", "probabilities"),
            **_POOLED,
        ),
        ModelKind(
            "squad_v1",
            "AlbertSquadV1",
            head_variables=("cls/squad/",),
            huggingface="AlbertForQuestionAnswering",
            litert_outputs=("start_logits", "end_logits"),
            task_library="BertQuestionAnswerer",
        ),
        ModelKind(
            "squad_v2",
            "AlbertSquadV2",
            head_variables=("start_logits/", "end_logits/", "answer_class/"),
            litert_outputs=_SQUAD_V2_OUTPUTS,
            extra_inputs=("p_mask",),
        ),
    )
}
MODEL_KINDS = tuple(KINDS)  # the converter's --model choices
POOLED_KINDS = tuple(name for name, kind in KINDS.items() if kind.pooled)
LITERT_KINDS = tuple(name for name, kind in KINDS.items() if kind.litert_outputs is not None)
# transformers' pretrainer without the sentence-order head: read as a pretrainer, written for
# one whose sentence-order head was never trained
HUGGINGFACE_MASKED_LM = "AlbertForMaskedLM"
# the order in which a checkpoint's head variables are told apart (most specific first)
_HEAD_ORDER = ("squad_v1", "squad_v2", *POOLED_KINDS, "pretrainer")


def model_classes() -> dict:
    """Every albert_tf model class a kind names, by class name.

    Returns:
        {class name: class}.
    """
    # deferred: keeps Keras off this module's import (the converter's --model choices)
    from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer

    # deferred: keeps Keras off this module's import
    from albert_tf.modeling.finetuning_models import (
        AlbertClassifier,
        AlbertMultipleChoice,
        AlbertTokenClassifier,
    )

    # deferred: keeps Keras off this module's import
    from albert_tf.modeling.squad_models import AlbertSquadV1, AlbertSquadV2

    classes = (
        AlbertModel,
        AlbertPretrainer,
        AlbertClassifier,
        AlbertTokenClassifier,
        AlbertMultipleChoice,
        AlbertSquadV1,
        AlbertSquadV2,
    )
    return {cls.__name__: cls for cls in classes}


def get_kind(name: str) -> ModelKind:
    """The kind named `name`.

    Args:
        name: A kind's name (one of `MODEL_KINDS`).

    Returns:
        The `ModelKind`.

    Raises:
        ValueError: An unknown name (the message lists the known ones).

    Example:

    >>> from albert_tf.modeling.model_kinds import get_kind
    >>> get_kind("regression").huggingface_problem_type
    'regression'
    """
    if name not in KINDS:
        raise ValueError(f"model kind {name!r} is unknown; use one of {', '.join(KINDS)}")
    return KINDS[name]


def find_kind(model) -> Optional[ModelKind]:
    """The kind of a model, or None for a model of no kind (see `kind_of`).

    Args:
        model: A Keras model.

    Returns:
        The `ModelKind` or None.
    """
    return next((kind for kind in KINDS.values() if kind.matches(model)), None)


def kind_of(model) -> ModelKind:
    """The kind of a model (the Keras text models count as the task model they extend).

    Args:
        model: An albert_tf model.

    Returns:
        The `ModelKind`.

    Raises:
        ValueError: A model of no kind, named by its class.

    Example:

    >>> import albert_tf
    >>> from albert_tf.modeling.model_kinds import kind_of
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=1, num_attention_heads=2,
    ...                                 intermediate_size=16)
    >>> kind_of(albert_tf.AlbertClassifier(config, 1, is_regression=True)).name
    'regression'
    """
    kind = find_kind(model)
    if kind is not None:
        return kind
    raise ValueError(
        f"model: a {type(model).__name__} is no albert_tf model kind; the kinds are "
        f"{', '.join(sorted({k.class_name for k in KINDS.values()}))} and their subclasses"
    )


def kinds_holding(variable_names) -> tuple:
    """The kinds whose head a checkpoint's variables hold: one kind, the pooled kinds (which
    store the same head), or ("encoder",) for no head.

    Args:
        variable_names: The checkpoint's variable names (Google's).

    Returns:
        A tuple of kind names.

    Example:

    >>> from albert_tf.modeling.model_kinds import kinds_holding
    >>> kinds_holding(["bert/pooler/dense/kernel", "cls/squad/output_weights"])
    ('squad_v1',)
    """
    names = set(variable_names)
    for name in _HEAD_ORDER:
        heads = KINDS[name].head_variables
        if any(
            v in names or (v.endswith("/") and any(n.startswith(v) for n in names)) for v in heads
        ):
            return POOLED_KINDS if KINDS[name].pooled else (name,)
    return ("encoder",)


def kind_for_huggingface(architecture: str, problem_type=None, num_labels=None) -> ModelKind:
    """The kind of a transformers `architectures` entry.

    Args:
        architecture: The entry, e.g. "AlbertForSequenceClassification".
        problem_type: transformers' `problem_type`, or None.
        num_labels: The head's label count, or None (one label is a regression).

    Returns:
        The `ModelKind`, or None: transformers has a head albert_tf has no class for (the
        caller reads the encoder and reports the head's tensors as unused).

    Example:

    >>> from albert_tf.modeling.model_kinds import kind_for_huggingface
    >>> kind_for_huggingface("AlbertForSequenceClassification", None, 1).name
    'regression'
    """
    if architecture == HUGGINGFACE_MASKED_LM:
        return KINDS["pretrainer"]
    found = [k for k in KINDS.values() if k.huggingface == architecture]
    if architecture == "AlbertForQuestionAnswering" and num_labels != 2:
        return None  # a span head of another width: albert_tf's is start / end
    if len(found) > 1:
        if num_labels == 1:
            problem_type = "regression"  # one label is a regression, whatever the type says
        found = [k for k in found if k.huggingface_problem_type == problem_type] or found[:1]
    return found[0] if found else None
