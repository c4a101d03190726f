"""Every task model on the tiny TF1 checkpoint equals its head applied, in NumPy, to Google's own
encoder outputs (albert_tiny_reference.npz, written by Google's code): the heads' math as Google's
run_classifier.py, run_squad_v1/v2.py, run_race.py and the BERT NER recipes state it, at 1e-5.

Marked `backends`: CI runs it on TensorFlow and again under KERAS_BACKEND=jax; marked `torch`:
it passes under KERAS_BACKEND=torch too (docs/backends.md)."""

import keras
import numpy as np
import pytest

from albert_tf import (
    AlbertClassifier,
    AlbertConfig,
    AlbertMultipleChoice,
    AlbertSquadV1,
    AlbertSquadV2,
    AlbertTokenClassifier,
    load_original_checkpoint,
)

pytestmark = [pytest.mark.backends, pytest.mark.torch]
TOL = 1e-5
FEATURES = ("input_ids", "input_mask", "segment_ids")


@pytest.fixture(scope="module")
def tiny(fixtures_dir):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    return config, fixtures_dir / "albert_tiny" / "model.ckpt-best"


@pytest.fixture(scope="module")
def google(fixtures_dir):
    return dict(np.load(fixtures_dir / "albert_tiny_reference.npz"))


def loaded(model, checkpoint, seed=0):
    """`model` with the checkpoint's encoder and random head weights; returns the model and
    its head weights by Google's names, in float64."""
    report = load_original_checkpoint(model, checkpoint)
    rng = np.random.default_rng(seed)
    heads = model.original_head_variables()
    assert sorted(report.missing) == sorted(heads)
    for variable in heads.values():
        variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32"))
    return model, {n: np.asarray(v, np.float64) for n, v in heads.items()}


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def log_softmax(x, axis=-1):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def close(ours, theirs, tol=TOL):
    ours = keras.ops.convert_to_numpy(ours).astype(np.float64)  # torch's outputs carry grads
    assert ours.shape == np.shape(theirs)
    np.testing.assert_allclose(ours, theirs, atol=tol, rtol=0)


@pytest.mark.parametrize("kind", ["single", "multi_label", "regression"])
def test_classifier(tiny, google, kind):
    config, checkpoint = tiny
    num_labels = {"single": 3, "multi_label": 4, "regression": 1}[kind]
    model, w = loaded(
        AlbertClassifier(
            config,
            num_labels,
            is_regression=kind == "regression",
            multi_label=kind == "multi_label",
        ),
        checkpoint,
    )
    out = model({k: google[k] for k in FEATURES}, training=False)
    logits = google["pooled_output"] @ w["output_weights"].T + w["output_bias"]
    close(out["logits"], logits)
    if kind == "single":
        close(out["probabilities"], softmax(logits))
    elif kind == "multi_label":
        close(out["probabilities"], 1 / (1 + np.exp(-logits)))
    else:
        close(out["predictions"], logits[:, 0])


def test_token_classifier(tiny, google):
    config, checkpoint = tiny
    model, w = loaded(AlbertTokenClassifier(config, 5), checkpoint)
    out = model({k: google[k] for k in FEATURES}, training=False)
    logits = google["sequence_output"] @ w["output_weights"].T + w["output_bias"]
    close(out["logits"], logits)
    close(out["probabilities"], softmax(logits))


@pytest.mark.parametrize("layout", ["flat", "choices"])
def test_multiple_choice(tiny, google, layout):
    """The reference's four examples as the four choices of one question: Google's flattened
    [B, C·L] records, or [B, C, L]."""
    config, checkpoint = tiny
    model, w = loaded(AlbertMultipleChoice(config, num_choices=4), checkpoint)
    shape = (1, -1) if layout == "flat" else (1, 4, 48)
    out = model({k: google[k].reshape(shape) for k in FEATURES}, training=False)
    logits = (google["pooled_output"] @ w["output_weights"].T + w["output_bias"]).reshape(1, 4)
    close(out["logits"], logits)
    close(out["probabilities"], softmax(logits))


def test_squad_v1(tiny, google):
    config, checkpoint = tiny
    model, w = loaded(AlbertSquadV1(config), checkpoint)
    inputs = {k: google[k] for k in FEATURES}
    out = model({**inputs, "unique_ids": np.arange(4)}, training=False)
    logits = google["sequence_output"] @ w["cls/squad/output_weights"].T
    logits = logits + w["cls/squad/output_bias"]
    close(out["start_logits"], logits[..., 0])
    close(out["end_logits"], logits[..., 1])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(out["unique_ids"]), np.arange(4))


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def squad_v2_head(w, seq, p_mask, start_n_top, end_n_top):
    """Google's run_squad_v2 (XLNet) head at inference, in NumPy: masked start log-probs, a beam
    over the top starts, end log-probs conditioned on each start, the answerability logit."""
    dense = lambda x, name, bias=True: x @ w[f"{name}/kernel"] + (w[f"{name}/bias"] if bias else 0)
    start_logits = dense(seq, "start_logits/dense")[..., 0]
    start_logits = start_logits * (1 - p_mask) - 1e30 * p_mask
    start_log_probs = log_softmax(start_logits)
    top = np.argsort(-start_log_probs, axis=-1, kind="stable")[:, :start_n_top]  # [B, K]
    b, t, h = seq.shape
    start_features = seq[np.arange(b)[:, None], top]  # [B, K, H]
    x = np.concatenate(
        [
            np.broadcast_to(seq[:, None], (b, start_n_top, t, h)),
            np.broadcast_to(start_features[:, :, None], (b, start_n_top, t, h)),
        ],
        axis=-1,
    )
    x = np.tanh(dense(x, "end_logits/dense_0"))
    x = layer_norm(x, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
    end_logits = dense(x, "end_logits/dense_1")[..., 0]
    end_logits = end_logits * (1 - p_mask[:, None]) - 1e30 * p_mask[:, None]
    end_log_probs = log_softmax(end_logits)  # [B, K, T]
    end_top = np.argsort(-end_log_probs, axis=-1, kind="stable")[..., :end_n_top]
    start_feature = np.einsum("bt,bth->bh", softmax(start_logits), seq)
    answer = np.tanh(dense(np.concatenate([start_feature, seq[:, 0]], -1), "answer_class/dense_0"))
    return {
        "start_log_probs": start_log_probs,
        "start_top_index": top,
        "start_top_log_probs": np.take_along_axis(start_log_probs, top, -1),
        "end_top_index": end_top.reshape(b, -1),
        "end_top_log_probs": np.take_along_axis(end_log_probs, end_top, -1).reshape(b, -1),
        "cls_logits": dense(answer, "answer_class/dense_1", bias=False)[:, 0],
    }


def test_squad_v2(tiny, google):
    config, checkpoint = tiny
    model, w = loaded(AlbertSquadV2(config, start_n_top=3, end_n_top=2), checkpoint)
    p_mask = np.where(google["segment_ids"] == 0, 1, 0) * (np.arange(48) > 0)
    p_mask = np.maximum(p_mask, 1 - google["input_mask"]).astype(np.int32)
    out = model({**{k: google[k] for k in FEATURES}, "p_mask": p_mask}, training=False)
    theirs = squad_v2_head(w, google["sequence_output"].astype(np.float64), p_mask, 3, 2)
    assert sorted(out) == sorted(theirs)
    for name, value in theirs.items():
        if name.endswith("_index"):
            np.testing.assert_array_equal(
                keras.ops.convert_to_numpy(out[name]), value, err_msg=name
            )
        else:
            masked = value < -1e20  # -1e30 at masked positions: compare the real ones
            ours = keras.ops.convert_to_numpy(out[name])
            close(np.where(masked, 0, ours), np.where(masked, 0, value))
