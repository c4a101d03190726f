"""The one registry of model kinds: each kind builds a model that is of that kind again, its head
variables are the model's own, a checkpoint's head names tell its kind, transformers' names
read back to the kind, and a model of no kind is an error naming it."""

import keras
import pytest

from albert_tf import AlbertTextClassifier
from albert_tf.core.config import AlbertConfig
from albert_tf.modeling.model_kinds import (
    KINDS,
    MODEL_KINDS,
    POOLED_KINDS,
    find_kind,
    get_kind,
    kind_for_huggingface,
    kind_of,
    kinds_holding,
)
from albert_tf.modeling.names import original_variable_map

CONFIG = AlbertConfig(
    vocab_size=50,
    embedding_size=8,
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=16,
    max_position_embeddings=16,
)


def _build(name):
    kind = get_kind(name)
    return kind.build(CONFIG, 1 if name == "regression" else 3 if kind.sized_by_head else None)


@pytest.mark.parametrize("name", MODEL_KINDS)
def test_each_kind_builds_a_model_of_that_kind(name):
    assert kind_of(_build(name)).name == name


@pytest.mark.parametrize("name", MODEL_KINDS)
def test_head_variables_are_the_models_own_and_tell_the_kind(name):
    names = list(original_variable_map(_build(name)))
    heads = [n for n in names if not n.startswith("bert/")]
    spec = get_kind(name)
    covered = [
        n
        for n in heads
        if any(n == v or (v.endswith("/") and n.startswith(v)) for v in spec.head_variables)
    ]
    assert covered == heads  # every head variable is named by the kind, nothing else
    assert kinds_holding(names) == (POOLED_KINDS if spec.pooled else (name,))


def test_a_subclass_is_its_task_models_kind():
    model = AlbertTextClassifier(CONFIG, num_labels=2, multi_label=True)
    assert kind_of(model).name == "multi_label"


def test_a_model_of_no_kind_is_an_error_naming_it():
    inputs = keras.Input((4,))
    other = keras.Model(inputs, keras.layers.Dense(2)(inputs), name="other")
    assert find_kind(other) is None
    with pytest.raises(ValueError, match=r"^model: a Functional is no albert_tf model kind"):
        kind_of(other)
    with pytest.raises(ValueError, match=r"model kind 'classifer' is unknown; use one of"):
        get_kind("classifer")


@pytest.mark.parametrize("name", [n for n in MODEL_KINDS if KINDS[n].huggingface])
def test_huggingface_names_read_back_to_the_kind(name):
    spec = get_kind(name)
    labels = 1 if name == "regression" else 2
    assert kind_for_huggingface(spec.huggingface, spec.huggingface_problem_type, labels) is spec


def test_huggingface_heads_albert_tf_lacks_are_none():
    assert kind_for_huggingface("AlbertForSomethingNew") is None
    assert kind_for_huggingface("AlbertForQuestionAnswering", None, 3) is None
    assert kind_for_huggingface("AlbertForMaskedLM").name == "pretrainer"
