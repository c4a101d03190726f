import keras
import numpy as np
from numpy_albert import forward as numpy_forward
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer, load_original_checkpoint
from albert_tf.modeling.losses import masked_lm_loss, sentence_order_loss
from albert_tf.modeling.names import original_variable_map

TOL = 1e-5


@pytest.fixture(scope="module")
def tiny(fixtures_dir):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = AlbertPretrainer(config)
    load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    ref = dict(np.load(fixtures_dir / "albert_tiny_reference.npz"))
    inputs = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
    return model, ref, model(inputs, training=False)


def maxdiff(a, b):
    """Largest |a - b|; `convert_to_numpy` takes any backend's outputs (torch's carry grads)."""
    a, b = (keras.ops.convert_to_numpy(x).astype(np.float64) for x in (a, b))
    return float(np.max(np.abs(a - b)))


@pytest.mark.backends
@pytest.mark.torch
@pytest.mark.parametrize(
    "ours,theirs",
    [
        ("sequence_output", "sequence_output"),
        ("pooled_output", "pooled_output"),
        ("embedding_output", "embedding_output"),
        ("sop_logits", "sentence_order_logits"),
        ("mlm_logits", "masked_lm_logits"),
    ],
)
def test_fixture_parity(tiny, ours, theirs):
    _, ref, out = tiny
    assert out[ours].shape == ref[theirs].shape
    assert maxdiff(out[ours], ref[theirs]) < TOL


@pytest.mark.backends
@pytest.mark.torch
def test_fixture_parity_every_layer_and_log_probs(tiny):
    _, ref, out = tiny
    assert len(out["encoder_outputs"]) == ref["all_encoder_layers"].shape[0] == 4
    for mine, theirs in zip(out["encoder_outputs"], ref["all_encoder_layers"]):
        assert maxdiff(mine, theirs) < TOL
    log_probs = keras.ops.log_softmax(out["mlm_logits"], axis=-1)
    assert maxdiff(log_probs, ref["masked_lm_log_probs"]) < TOL
    assert (
        maxdiff(keras.ops.log_softmax(out["sop_logits"], -1), ref["sentence_order_log_probs"]) < TOL
    )


@pytest.mark.backends
@pytest.mark.torch
def test_fixture_losses(tiny):
    _, ref, out = tiny
    mlm = masked_lm_loss(out["mlm_logits"], ref["masked_lm_ids"], ref["masked_lm_weights"])
    sop = sentence_order_loss(out["sop_logits"], ref["sentence_order_labels"])
    assert abs(float(mlm) - float(ref["masked_lm_loss"])) < TOL
    assert abs(float(sop) - float(ref["sentence_order_loss"])) < TOL


@pytest.fixture
def values_not_drawn(monkeypatch):
    """Weights filled with zeros, not drawn from the truncated normal: a count does not depend on
    the values, and the releases' half a billion draws were most of these tests' CPU time."""
    monkeypatch.setattr(
        keras.initializers.TruncatedNormal,
        "__call__",
        lambda self, shape, dtype=None: keras.ops.zeros(shape, dtype=dtype),
    )


@pytest.mark.parametrize(
    "preset,count",
    [
        ("albert_base_v2", 11_683_584),
        ("albert_large_v2", 17_683_968),
        ("albert_xlarge_v2", 58_724_864),
        ("albert_xxlarge_v2", 222_595_584),
    ],
)
def test_parameter_counts_of_releases(preset, count, values_not_drawn):
    model = AlbertModel(AlbertConfig.from_preset(preset))
    assert model.count_params() == count
    keras.backend.clear_session()


@pytest.mark.parametrize(
    "sharing,count",
    [("all", 11_683_584), ("attention", 63_647_232), ("ffn", 37_686_528), ("none", 89_650_176)],
)
def test_parameter_counts_of_sharing_ablation(sharing, count, values_not_drawn):
    model = AlbertModel(AlbertConfig.from_preset("albert_base_v2", sharing=sharing))
    assert model.count_params() == count
    keras.backend.clear_session()


def small_config(**kw):
    base = dict(
        vocab_size=50,
        embedding_size=8,
        hidden_size=16,
        num_hidden_layers=5,
        num_hidden_groups=1,
        num_attention_heads=2,
        intermediate_size=24,
        inner_group_num=1,
        max_position_embeddings=16,
    )
    base.update(kw)
    return AlbertConfig(**base)


def random_batch(config, batch=3, seq=10, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config.vocab_size, (batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1:, 6:] = 0
    mask[2:, 3:] = 0
    segs = np.zeros_like(ids)
    segs[:, 4:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segs}


def randomize(model, seed=1):
    """Give every variable (LayerNorm and biases too) non-trivial values."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.normal(0, 0.3, v.shape).astype("float32"))


def check_against_numpy(model, config, **groups):
    batch = random_batch(config)
    out = model(batch, training=False)
    w = {n: np.asarray(v, np.float64) for n, v in original_variable_map(model).items()}
    ref_outs, ref_pooled = numpy_forward(
        w, config.to_dict(), batch["input_ids"], batch["input_mask"], batch["segment_ids"], **groups
    )
    assert len(out["encoder_outputs"]) == len(ref_outs)
    for mine, theirs in zip(out["encoder_outputs"], ref_outs):
        assert maxdiff(mine, theirs) < 1e-4
    assert maxdiff(out["pooled_output"], ref_pooled) < 1e-4
    return out


@pytest.mark.backends
@pytest.mark.torch
@pytest.mark.parametrize("groups,inner", [(1, 2), (2, 1), (2, 3), (3, 2), (5, 1)])
def test_groups_and_inner_groups_follow_googles_layout(groups, inner):
    config = small_config(num_hidden_groups=groups, inner_group_num=inner)
    model = AlbertModel(config)
    randomize(model)
    names = original_variable_map(model)
    for g in range(groups):
        for k in range(inner):
            assert (
                f"bert/encoder/transformer/group_{g}/inner_group_{k}/attention_1/self/query/kernel"
                in names
            )
    assert not any(f"/group_{groups}/" in n for n in names)
    out = check_against_numpy(model, config)  # its outputs on random_batch(config)
    assert len(out["encoder_outputs"]) == 5 * inner


@pytest.mark.backends
@pytest.mark.torch
@pytest.mark.parametrize("sharing", ["attention", "ffn", "none"])
def test_sharing_ablations_layout(sharing):
    config = small_config(sharing=sharing, inner_group_num=2)
    model = AlbertModel(config)
    randomize(model)
    shared = lambda i: 0
    own = lambda i: i
    groups = {
        "attention": dict(attention_group=shared, ffn_group=own),
        "ffn": dict(attention_group=own, ffn_group=shared),
        "none": dict(attention_group=own, ffn_group=own),
    }[sharing]
    check_against_numpy(model, config, **groups)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="tf.train.Checkpoint tracks the TensorFlow backend's layers only",
)
@pytest.mark.parametrize("sharing,groups", [("all", 1), ("all", 2), ("none", 1)])
def test_object_checkpoint_holds_every_weight(sharing, groups, tmp_path):
    """tf.train.Checkpoint (what training resumes from) saves and restores every weight, the
    shared Transformer sublayers included (Keras' tracked lists are no checkpoint dependency)."""
    config = small_config(sharing=sharing, num_hidden_groups=groups, inner_group_num=2)
    model = AlbertPretrainer(config)
    randomize(model)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    saved = [n for n, _ in tf.train.list_variables(path) if n.endswith("VARIABLE_VALUE")]
    assert len(saved) >= len(model.weights)
    fresh = AlbertPretrainer(config)
    tf.train.Checkpoint(model=fresh).restore(path).assert_existing_objects_matched()
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=a.path)


@pytest.mark.backends
@pytest.mark.torch
def test_embedding_projection_only_when_sizes_differ():
    same = AlbertModel(small_config(embedding_size=16))
    assert same.embedding.projection is None
    assert "bert/encoder/embedding_hidden_mapping_in/kernel" not in original_variable_map(same)
    out = same(random_batch(same.config))
    assert out["embedding_output"].shape == (3, 10, 16)


@pytest.mark.backends
@pytest.mark.torch
def test_default_mask_and_segments_and_bare_ids():
    model = AlbertModel(small_config())
    ids = random_batch(model.config)["input_ids"]
    full = model(
        {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    )
    assert maxdiff(model({"input_ids": ids})["sequence_output"], full["sequence_output"]) == 0
    assert maxdiff(model(ids)["pooled_output"], full["pooled_output"]) == 0


@pytest.mark.backends
@pytest.mark.torch
def test_padding_does_not_change_real_tokens():
    model = AlbertModel(small_config())
    randomize(model)
    batch = random_batch(model.config, batch=1)
    batch["input_mask"][0, 7:] = 0
    a = model(batch)["sequence_output"][0, :7]
    batch["input_ids"][0, 7:] = 3  # change only padded ids
    b = model(batch)["sequence_output"][0, :7]
    assert maxdiff(a, b) < 1e-5


@pytest.mark.backends
@pytest.mark.torch
def test_sequence_longer_than_positions_fails():
    model = AlbertModel(small_config())
    with pytest.raises(ValueError, match="exceeds max_position_embeddings 16"):
        model({"input_ids": np.zeros((1, 17), np.int32)})


@pytest.mark.backends
@pytest.mark.torch
def test_dropout_only_in_training():
    model = AlbertModel(small_config(hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3))
    batch = random_batch(model.config)
    a = model(batch, training=False)["sequence_output"]
    b = model(batch, training=False)["sequence_output"]
    c = model(batch, training=True)["sequence_output"]
    assert maxdiff(a, b) == 0 and maxdiff(a, c) > 1e-3


@pytest.mark.backends
@pytest.mark.torch
@pytest.mark.parametrize("act", ["gelu", "gelu_new", "gelu_exact", "relu", "tanh", "linear"])
def test_activations(act):
    from albert_tf.modeling.activations import get_activation

    x = np.linspace(-3, 3, 13).astype("float32")
    y = np.asarray(get_activation(act)(x))
    from math import erf, pi, sqrt, tanh

    expect = {
        "gelu": [0.5 * v * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 * v**3))) for v in x],
        "gelu_exact": [0.5 * v * (1 + erf(v / sqrt(2))) for v in x],
        "relu": np.maximum(x, 0),
        "tanh": np.tanh(x),
        "linear": x,
    }
    expect["gelu_new"] = expect["gelu"]
    assert maxdiff(y, expect[act]) < 1e-6


@pytest.mark.backends
def test_pretrainer_fits_and_jit_compiles():
    """compile/fit work on the Keras model, including under XLA."""
    config = small_config()
    model = AlbertPretrainer(config)
    batch = random_batch(config, batch=4)
    rng = np.random.default_rng(3)
    feats = dict(batch, masked_lm_positions=rng.integers(0, 10, (4, 3)).astype(np.int32))
    labels = rng.integers(0, config.vocab_size, (4, 3)).astype(np.int32)

    class Wrapped(keras.Model):
        def __init__(self):
            super().__init__()
            self.inner = model

        def call(self, x):
            return self.inner(x)["mlm_logits"]

    wrapped = Wrapped()
    wrapped.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        jit_compile=True,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    hist = wrapped.fit(feats, labels, epochs=30, batch_size=4, verbose=0)
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]


@pytest.mark.backends
@pytest.mark.torch
def test_bfloat16_policy_close_to_float32(tiny):
    model, ref, out = tiny
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        low = AlbertPretrainer(model.config)
        for a, b in zip(low.weights, model.weights):
            a.assign(b)
        inputs = {
            k: ref[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
        }
        res = low(inputs)
        assert low.albert.encoder.attention_sublayers[0].layer_norm.compute_dtype == "float32"
        assert keras.backend.standardize_dtype(res["mlm_logits"].dtype) == "float32"
        assert maxdiff(res["sequence_output"], out["sequence_output"]) < 0.1
    finally:
        keras.mixed_precision.set_global_policy("float32")
