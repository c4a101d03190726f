"""Twelve training steps from Google's tiny checkpoint equal Google's own code, on every backend.

The reference, tests/data/trajectories/google_trajectories.npz, is made by Google's ALBERT code
(albert-tensorflow 1.1 under the TF1 shim; see make_google_trajectories.py there): twelve steps
of its `optimization.create_optimizer` on the fixed batch of albert_tiny_reference.npz, with
dropout 0 —

* LAMB pretraining: `modeling.AlbertModel` + run_pretraining's MLM and sentence-order heads;
* AdamW fine-tuning: run_classifier's classifier (3 labels) on the tiny config with
  `num_hidden_groups=2`, both groups filled from the checkpoint's group 0, the head starting
  from the fixed values saved beside the trajectory.

Here the same steps run through `fit` (one batch per epoch, no shuffling) with the project's
models and `create_optimizer` at the same rate, warmup and step count. Each step's loss and the
final weights must equal Google's to the tolerances of the model and optimizer tests.
"""

import json

import keras
import numpy as np
import pytest
from repo_paths import FIXTURES, TEST_DATA

from albert_tf import (
    AlbertClassifier,
    AlbertConfig,
    AlbertPretrainer,
    create_optimizer,
    load_original_checkpoint,
)
from albert_tf.modeling.names import original_variable_map

GOOGLE = np.load(TEST_DATA / "trajectories" / "google_trajectories.npz")
STEPS, WARMUP = 12, 3
RATES = {"lamb": 1e-2, "adamw": 1e-3}
CLASSIFIER_LABELS = np.array([0, 2, 1, 2], "int32")
LOSS_RTOL = 1e-5  # the model tests' 1e-5, relative (measured: under 2e-7 on both backends)
WEIGHT_ATOL = 1e-5  # the model tests' 1e-5 (measured: under 5e-7 on both backends)


def tiny_config(groups):
    with open(FIXTURES / "albert_tiny" / "albert_config.json") as f:
        config = json.load(f)
    config["num_hidden_groups"] = groups
    return AlbertConfig.from_dict(config)


def reference_batch():
    ref = np.load(FIXTURES / "albert_tiny_reference.npz")
    return {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")}, ref


def train(kind):
    """Twelve steps of our model and optimizer; returns (losses, Google name -> weight)."""
    features, ref = reference_batch()
    if kind == "lamb":
        model = AlbertPretrainer(tiny_config(1))
        load_original_checkpoint(model, FIXTURES / "albert_tiny" / "model.ckpt-best")
        features.update(
            masked_lm_positions=ref["masked_lm_positions"],
            masked_lm_ids=ref["masked_lm_ids"],
            masked_lm_weights=ref["masked_lm_weights"],
            next_sentence_labels=ref["sentence_order_labels"][:, None],
        )
        labels = None
    else:
        model = AlbertClassifier(tiny_config(2), num_labels=3, dropout_prob=0.0)
        load_original_checkpoint(
            model, FIXTURES / "albert_tiny" / "model.ckpt-best", group0_fallback=True
        )
        for name, variable in model.original_head_variables().items():
            variable.assign(GOOGLE[f"adamw/init/{name}"])
        labels = CLASSIFIER_LABELS
    model.compile(optimizer=create_optimizer(RATES[kind], STEPS, WARMUP, optimizer=kind))
    history = model.fit(
        features, labels, batch_size=4, epochs=STEPS, shuffle=False, verbose=0
    ).history
    names = original_variable_map(model)
    prefix = f"{kind}/final/"
    kept = [key.removeprefix(prefix) for key in GOOGLE.files if key.startswith(prefix)]
    weights = {name: keras.ops.convert_to_numpy(names[name]) for name in kept}
    return np.array(history["loss"]), weights


@pytest.fixture(scope="module", params=["lamb", "adamw"])
def trajectory(request):
    return request.param, *train(request.param)


@pytest.mark.backends
def test_losses_step_by_step_equal_googles(trajectory):
    kind, losses, _ = trajectory
    want = GOOGLE[f"{kind}/loss"]
    assert losses.shape == (STEPS,)
    np.testing.assert_allclose(losses, want, rtol=LOSS_RTOL, atol=0)
    assert want[-1] < want[0] - 0.05  # the run learns: the comparison is not of a still model


@pytest.mark.backends
def test_final_weights_equal_googles(trajectory):
    kind, _, weights = trajectory
    assert len(weights) == 6
    for name, got in weights.items():
        want = GOOGLE[f"{kind}/final/{name}"]
        np.testing.assert_allclose(got, want, rtol=0, atol=WEIGHT_ATOL, err_msg=name)
    if kind == "adamw":  # the two groups start equal (both from group 0) and train apart
        group = "bert/encoder/transformer/group_{}/inner_group_0/ffn_1/intermediate/dense/kernel"
        assert np.max(np.abs(weights[group.format(0)] - weights[group.format(1)])) > 1e-4
