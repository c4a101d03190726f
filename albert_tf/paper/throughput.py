"""Table 2: relative training throughput (sequences/s) of BERT- and ALBERT-shaped models measured
on this machine, as ratios to BERT-large (the paper's "Speedup" column)."""

from __future__ import annotations

import time

import numpy as np

from albert_tf.core.config import AlbertConfig
from albert_tf.paper.params import bert_config, count_parameters
from albert_tf.paper.report import markdown_table, publish

# Lan et al. (2019), Table 2: training speedup relative to BERT-large (same TPU, batch, steps).
PAPER_SPEEDUP = {
    "bert_base": 4.7,
    "bert_large": 1.0,
    "albert_base": 5.6,
    "albert_large": 1.7,
    "albert_xlarge": 0.6,
    "albert_xxlarge": 0.3,
}
SETTINGS = {  # seq length, batch, timed steps, layers divided by
    "full": dict(
        seq=128,
        batch=8,
        steps=3,
        layer_divisor=1,
        models=("bert_base", "bert_large", "albert_base", "albert_large", "albert_xlarge"),
    ),
    "quick": dict(
        seq=64,
        batch=4,
        steps=2,
        layer_divisor=4,
        models=("bert_base", "bert_large", "albert_base", "albert_large", "albert_xlarge"),
    ),
    "tiny": dict(seq=16, batch=2, steps=1, layer_divisor=12, models=("bert_base", "albert_base")),
}


def model_config(name: str, layer_divisor: int = 1) -> AlbertConfig:
    """The config of a Table 2 row, depth divided by layer_divisor (ratios per layer unchanged)."""
    family, size = name.split("_")
    config = (
        bert_config(size) if family == "bert" else AlbertConfig.from_preset(f"albert_{size}_v2")
    )
    layers = max(1, config.num_hidden_layers // layer_divisor)
    groups = layers if config.sharing == "none" else 1
    return config.replace(
        num_hidden_layers=layers,
        num_hidden_groups=groups,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )


def synthetic_batch(
    config: AlbertConfig, batch: int, seq: int, predictions: int, seed: int = 0
) -> dict:
    """A random pretraining batch (only shapes matter for throughput)."""
    rng = np.random.default_rng(seed)
    return {
        "input_ids": rng.integers(5, config.vocab_size, (batch, seq), dtype=np.int32),
        "input_mask": np.ones((batch, seq), np.int32),
        "segment_ids": np.repeat([[0] * (seq // 2) + [1] * (seq - seq // 2)], batch, 0).astype(
            np.int32
        ),
        "masked_lm_positions": rng.integers(1, seq, (batch, predictions), dtype=np.int32),
        "masked_lm_ids": rng.integers(5, config.vocab_size, (batch, predictions), dtype=np.int32),
        "masked_lm_weights": np.ones((batch, predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch, 1), dtype=np.int32),
    }


def measure(config: AlbertConfig, batch: int, seq: int, steps: int) -> float:
    """Training sequences/s of AlbertPretrainer (LAMB) after one untimed compile step."""
    # deferred: keeps TensorFlow off this module's import
    import keras

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.engine.optimizers import create_optimizer

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.modeling.albert_model import AlbertPretrainer

    keras.backend.clear_session()
    model = AlbertPretrainer(config)
    model.compile(optimizer=create_optimizer(1e-4, 1000, 10, optimizer="lamb"), jit_compile=False)
    data = synthetic_batch(config, batch, seq, max(1, seq // 7))
    model.train_on_batch(data)
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(data)
    return batch * steps / (time.perf_counter() - start)


def measure_all(setting: str) -> list:
    """(name, layers, params, seq/s) for every model of a setting."""
    s = SETTINGS[setting]
    rows = []
    for name in s["models"]:
        config = model_config(name, s["layer_divisor"])
        rows.append(
            (
                name,
                config.num_hidden_layers,
                count_parameters(config),
                measure(config, s["batch"], s["seq"], s["steps"]),
            )
        )
    return rows


def table2(output_dir: str, setting: str = "full", **_) -> str:
    s = SETTINGS[setting]
    measured = measure_all(setting)
    reference = dict((n, v) for n, _, _, v in measured).get("bert_large") or measured[0][3]
    ref_name = "bert_large" if "bert_large" in s["models"] else measured[0][0]
    rows = [
        (n, layers, f"{p / 1e6:.1f}M", f"{v:.2f}", f"{v / reference:.2f}x", f"{PAPER_SPEEDUP[n]}x")
        for n, layers, p, v in measured
    ]
    notes = (
        f"Setting `{setting}`: sequence length {s['seq']}, batch {s['batch']}, {s['steps']} timed "
        f"LAMB steps after one compile step, depth divided by {s['layer_divisor']} (a ratio of "
        f"shapes, not of absolute speed); ratios are to {ref_name}. On CPU the step time follows "
        "FLOPs, which are nearly the same for BERT-large and ALBERT-large (E only changes the "
        "embedding), so ALBERT-large's 1.7x on TPU (less memory traffic and communication of "
        "18M instead of 334M parameters) shrinks here; ALBERT-xlarge (H = 2048) is ~4x the "
        "FLOPs of a large layer."
    )
    return publish(
        output_dir,
        "table2",
        "Table 2: relative training throughput on this machine",
        markdown_table(["model", "layers", "params", "seq/s", "vs BERT-large", "paper"], rows),
        notes,
    )
