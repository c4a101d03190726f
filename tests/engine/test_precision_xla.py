"""Every driver's train step (the task models behind run_classifier, run_squad, run_race) compiles
under XLA on CPU, and bfloat16 / float16 losses stay close to float32 after a few steps.

One XLA compile per task model: in bfloat16, as a TPU runs it (the float32 graph is the same
ops without the casts; the classifier's float32 step is also compiled under XLA by
tests/tasks/glue/test_classifier.py and test_tpu_buckets.py). The float32 reference losses come
from the graph-mode step, which gives the XLA step's float32 losses to ~2e-7 relative, far inside
the 5% tolerance."""

import keras
import numpy as np
import pytest

from albert_tf import (
    AlbertClassifier,
    AlbertConfig,
    AlbertMultipleChoice,
    AlbertSquadV1,
    AlbertSquadV2,
    load_original_checkpoint,
)
from albert_tf.engine.compiling import compile_for_training
from albert_tf.engine.distribute import set_precision
from albert_tf.engine.optimizers import create_optimizer
from albert_tf.engine.run_config import RunConfig

TOLERANCE = 0.05  # relative difference of the training loss after 3 steps, low vs full precision
B, T = 8, 24


def batch(kind, rng):
    ids = rng.integers(5, 1000, (B, T)).astype(np.int32)
    x = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    if kind == "multiple_choice":  # four different choices, flattened as Google's records
        ids = rng.integers(5, 1000, (B, 4 * T)).astype(np.int32)
        x = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
        x["label_ids"] = rng.integers(0, 4, (B, 1)).astype(np.int32)
    elif kind.startswith("squad"):
        p_mask = np.zeros((B, T), np.int32)
        p_mask[:, 1:6] = 1
        x.update(
            p_mask=p_mask,
            start_positions=rng.integers(6, 12, (B, 1)).astype(np.int32),
            end_positions=rng.integers(12, 18, (B, 1)).astype(np.int32),
            is_impossible=rng.integers(0, 2, (B, 1)).astype(np.int32),
        )
    else:
        x["label_ids"] = rng.integers(0, 2, (B, 1)).astype(np.int32)
    return x


MODELS = {
    "classifier": lambda c: AlbertClassifier(c, 2, dropout_prob=0.0),
    "multiple_choice": lambda c: AlbertMultipleChoice(c, 4, dropout_prob=0.0),
    "squad_v1": AlbertSquadV1,
    "squad_v2": lambda c: AlbertSquadV2(c, dropout_prob=0.0),
}


def train_losses(kind, dtype, fixtures_dir, jit=True):
    set_precision(dtype)
    try:
        config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
        model = MODELS[kind](config)
        load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
        rng = np.random.default_rng(0)
        for v in model.weights:  # the fresh heads: same values in every precision
            if (
                "output_weights" in v.path
                or "start_logits" in v.path
                or "end_logits" in v.path
                or "answer_class" in v.path
            ):
                v.assign(np.random.default_rng(1).normal(0, 0.02, v.shape).astype("float32"))
        compile_for_training(
            model,
            create_optimizer(1e-3, 10, 1),
            RunConfig("unused", 3, jit_compile=jit),
            strategy=None,
        )
        history = model.fit(batch(kind, rng), epochs=3, batch_size=B, verbose=0)
        return history.history["loss"]
    finally:
        set_precision("float32")


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_train_step_compiles_with_xla_and_bfloat16_is_close(kind, fixtures_dir):
    full = train_losses(kind, "float32", fixtures_dir, jit=False)
    low = train_losses(kind, "bfloat16", fixtures_dir, jit=True)
    assert np.all(np.isfinite(full)) and full[-1] < full[0]
    assert abs(low[-1] - full[-1]) <= TOLERANCE * abs(full[-1]), (low, full)
    assert keras.mixed_precision.global_policy().name == "float32"


def test_float16_uses_dynamic_loss_scaling(fixtures_dir):
    set_precision("float16")
    try:
        config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
        model = AlbertClassifier(config, 2)
        compile_for_training(model, create_optimizer(1e-3, 10, 1), RunConfig("unused", 3), None)
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        assert model.albert.encoder.attention_sublayers[0].layer_norm.compute_dtype == "float32"
        history = model.fit(
            batch("classifier", np.random.default_rng(0)), epochs=2, batch_size=B, verbose=0
        )
        assert np.all(np.isfinite(history.history["loss"]))
    finally:
        set_precision("float32")
