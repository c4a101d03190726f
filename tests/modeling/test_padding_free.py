"""Padding-free encoding (albert_tf/modeling/padding_free.py): the row-wise work on real tokens
only gives the padded computation's outputs and gradients at real positions, for every sharing
mode, with recompute_grad and under mixed_bfloat16; zeros at padding; the padded computation
under XLA; rows with no real token."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.engine.finetuning import padding_free_model_fn
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.modeling.albert_model import AlbertModel
from albert_tf.modeling.finetuning_models import AlbertClassifier
from albert_tf.modeling.padding_free import TokenRows, set_padding_free

LENGTHS = [16, 9, 1, 12]


def _features(lengths=LENGTHS, seq=16):
    rng = np.random.default_rng(0)
    mask = (np.arange(seq)[None] < np.asarray(lengths)[:, None]).astype(np.int32)
    return {
        "input_ids": tf.constant(rng.integers(5, 900, (len(lengths), seq)), tf.int32),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.constant((np.arange(seq)[None] >= 5) * mask, tf.int32),
    }


def _config(fixtures_dir, **kw):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    return config.replace(**{"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, **kw})


def _both(model, fn):
    set_padding_free(model, False)
    padded = fn()
    set_padding_free(model, True)
    return padded, fn()


@pytest.mark.parametrize(
    "sharing,groups,inner",
    [("all", 1, 1), ("all", 2, 2), ("attention", 2, 1), ("ffn", 1, 2), ("none", 1, 1)],
)
def test_outputs_equal_padded_at_real_positions(fixtures_dir, sharing, groups, inner):
    config = _config(fixtures_dir, sharing=sharing, num_hidden_groups=groups, inner_group_num=inner)
    keras.utils.set_random_seed(3)
    model = AlbertModel(config)
    x = _features()
    real = x["input_mask"].numpy().astype(bool)
    padded, free = _both(model, lambda: model(x))
    assert len(free["encoder_outputs"]) == config.num_hidden_layers * inner
    for a, b in zip(
        padded["encoder_outputs"] + [padded["sequence_output"]],
        free["encoder_outputs"] + [free["sequence_output"]],
    ):
        assert b.shape == a.shape
        np.testing.assert_allclose(b.numpy()[real], a.numpy()[real], atol=2e-5)
        assert np.all(b.numpy()[~real] == 0) and np.any(a.numpy()[~real] != 0)
    np.testing.assert_allclose(free["pooled_output"], padded["pooled_output"], atol=2e-5)


def _step(model, x, labels):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            loss = tf.reduce_sum(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, out["logits"])
            )
            seq = model.albert(x, training=True)["sequence_output"]
            loss += (
                tf.reduce_sum((seq * tf.cast(x["input_mask"], seq.dtype)[..., None]) ** 2) * 1e-3
            )
        return loss, tape.gradient(loss, model.trainable_variables)

    return step()


@pytest.mark.parametrize("recompute", [False, True])
def test_gradients_equal_padded(fixtures_dir, recompute):
    keras.utils.set_random_seed(4)
    model = AlbertClassifier(
        _config(fixtures_dir, recompute_grad=recompute, num_hidden_groups=2), 3, dropout_prob=0.0
    )
    x, labels = _features(), tf.constant([0, 1, 2, 1])
    (la, ga), (lb, gb) = _both(model, lambda: _step(model, x, labels))
    np.testing.assert_allclose(lb.numpy(), la.numpy(), rtol=1e-5)
    for a, b, v in zip(ga, gb, model.trainable_variables):
        a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
        np.testing.assert_allclose(b, a, atol=1e-5 * max(1.0, np.abs(a).max()), err_msg=v.path)


def test_mixed_bfloat16_close_to_padded(fixtures_dir):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        keras.utils.set_random_seed(5)
        model = AlbertModel(_config(fixtures_dir))
        x = _features()
        real = x["input_mask"].numpy().astype(bool)
        padded, free = _both(model, lambda: model(x)["sequence_output"])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert free.dtype == padded.dtype
    a, b = (tf.cast(t, tf.float32).numpy()[real] for t in (padded, free))
    np.testing.assert_allclose(b, a, atol=5e-2)


def test_xla_traces_the_padded_computation(fixtures_dir):
    """Under jit_compile the number of real tokens cannot be a shape: the encoder stays padded
    (padded positions then hold the padded computation's values, not zeros)."""
    model = set_padding_free(AlbertModel(_config(fixtures_dir)), True)
    x = _features()
    eager = model(x)["sequence_output"].numpy()
    xla = tf.function(lambda f: model(f)["sequence_output"], jit_compile=True)(x).numpy()
    set_padding_free(model, False)
    padded = model(x)["sequence_output"].numpy()
    pad = ~x["input_mask"].numpy().astype(bool)
    assert np.all(eager[pad] == 0)
    np.testing.assert_allclose(xla, padded, atol=2e-5)  # padding included


@pytest.mark.backends
@pytest.mark.skipif(keras.backend.backend() == "tensorflow", reason="the JAX backend's path")
def test_jax_keeps_the_padded_computation(fixtures_dir):
    """On JAX every computation is XLA's, with static shapes: padding-free switched on (as the
    drivers and text models do by default) leaves the padded computation, padding included."""
    model = AlbertModel(_config(fixtures_dir))
    x = {k: v.numpy() for k, v in _features().items()}
    padded = np.asarray(model(x)["sequence_output"])
    set_padding_free(model, True)
    np.testing.assert_array_equal(np.asarray(model(x)["sequence_output"]), padded)
    assert np.abs(padded[~x["input_mask"].astype(bool)]).max() > 0  # not zeroed


def test_rows_and_batches_without_real_tokens(fixtures_dir):
    model = set_padding_free(AlbertClassifier(_config(fixtures_dir), 2), True)
    some = model(_features([16, 0, 3, 0]))["logits"].numpy()
    none = model(_features([0, 0]))["logits"].numpy()  # a batch of fake (padding) records
    assert some.shape == (4, 2) and none.shape == (2, 2)
    assert np.isfinite(some).all() and np.isfinite(none).all()


def test_pack_and_unpack_are_adjoint_and_each_others_gradient():
    mask = tf.constant([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]])
    rows = TokenRows(mask)
    flat = tf.random.normal([12, 3], seed=1)
    packed = rows.pack(flat)
    np.testing.assert_array_equal(packed.numpy(), flat.numpy()[[0, 1, 4, 6]])
    r = tf.random.normal([4, 3], seed=2)
    spread = rows.unpack(r).numpy()
    np.testing.assert_array_equal(spread[[0, 1, 4, 6]], r.numpy())
    assert np.all(spread[[2, 3, 5, 7, 8, 9, 10, 11]] == 0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([flat, r])
        a = tf.reduce_sum(rows.pack(flat) * r)
        b = tf.reduce_sum(rows.unpack(r) * flat)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(a, flat), tape.gradient(b, flat), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(a, r), tape.gradient(b, r), rtol=1e-6)


def test_switching_resets_traced_functions_and_needs_an_encoder(fixtures_dir):
    model = AlbertClassifier(_config(fixtures_dir), 2)
    model.compile()
    x = _features()
    model.predict(x, verbose=0)
    assert model.predict_function is not None
    set_padding_free(model, True)
    assert model.predict_function is None and model.albert.encoder.padding_free
    with pytest.raises(ValueError, match="Sequential has no ALBERT encoder"):
        set_padding_free(keras.Sequential([keras.layers.Dense(2)]), True)
    assert set_padding_free(keras.Sequential([keras.layers.Dense(2)]), True, strict=False)


def test_finetuning_engine_builds_padding_free_models_unless_told_not(fixtures_dir):
    config = _config(fixtures_dir)
    build = lambda: AlbertClassifier(config, 2)  # noqa: E731
    assert padding_free_model_fn(build, FineTuningOptions("o"))().albert.encoder.padding_free
    off = FineTuningOptions("o", padding_free=False)
    assert not padding_free_model_fn(build, off)().albert.encoder.padding_free
    assert not build().albert.encoder.padding_free  # the model alone: Google's padded computation


def test_recompute_with_dropout_gives_the_same_gradients_padding_free(fixtures_dir):
    """recompute_grad's backward pass redraws each block's dropout masks on the rows [N, H]."""
    config = _config(  # 2 layers: the one group's block recomputed twice, quick
        fixtures_dir, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, num_hidden_layers=2
    )
    x, labels = _features(), tf.constant([0, 1, 2, 1])
    results = []
    for recompute in (False, True):
        keras.utils.set_random_seed(6)
        model = AlbertClassifier(config.replace(recompute_grad=recompute), 3, dropout_prob=0.0)
        set_padding_free(model, True)
        results.append((model, _step(model, x, labels)))
    (ma, (la, ga)), (mb, (lb, gb)) = results
    np.testing.assert_allclose(lb.numpy(), la.numpy(), rtol=1e-5)
    for a, b, v in zip(ga, gb, ma.trainable_variables):
        a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
        np.testing.assert_allclose(b, a, atol=1e-5 * max(1.0, np.abs(a).max()), err_msg=v.path)
