"""How far Keras' own `model.quantize("int8")` moves an albert_tf classifier's outputs: the tiny
fixture classifier (encoder from the fixture checkpoint, a random 3-label head) on 32 random
sequences of 32 ids, probabilities before and after. The figure in docs/deployment.md.

Usage: python bench/bench_keras_quantize.py
"""

import pathlib
import sys

import keras
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "deploy"), str(ROOT / "tests")]

from deploy_helpers import CONFIG, random_features  # noqa: E402

import albert_tf  # noqa: E402


def main():
    keras.utils.set_random_seed(0)  # the head's initial values
    model = albert_tf.AlbertClassifier(CONFIG, 3)
    albert_tf.load_original_checkpoint(
        model, str(ROOT / "tests/data/fixtures/albert_tiny/model.ckpt-best")
    )
    shapes = {name: [1, 32] for name in ("input_ids", "input_mask", "segment_ids")}
    rows = [random_features(shapes, seed) for seed in range(32)]
    x = {k: np.concatenate([row[k] for row in rows]) for k in rows[0]}
    before = model(x, training=False)["probabilities"].numpy()
    model.quantize("int8")
    after = model(x, training=False)["probabilities"].numpy()
    modes = [getattr(layer, "quantization_mode", None) for layer in model._flatten_layers()]
    layers = sum(bool(mode) for mode in modes)
    print(
        f"int8 layers {layers}; largest |Δ probability| {np.abs(after - before).max():.2e}; "
        f"labels agreeing {(after.argmax(1) == before.argmax(1)).sum()} of {len(after)}"
    )


if __name__ == "__main__":
    main()
