"""Smoke test of bench/bench_backends.py's code paths, in this process on a tiny config (the
benchmark itself runs each backend in a child process and prints figures; nothing here
asserts on time): both training modes fit and run their optimizer's update alone, and the
report is one JSON line per (mode, seq) with every backend's columns."""

import argparse
import importlib.util
import json
import pathlib

import keras
import numpy as np
import pytest

from albert_tf import AlbertConfig

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_backends", ROOT / "bench" / "bench_backends.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = AlbertConfig(
    vocab_size=50,
    embedding_size=8,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=32,
)


@pytest.mark.backends
@pytest.mark.parametrize("mode", ["finetune", "pretrain"])
def test_each_mode_trains_and_updates_alone(mode):
    import tensorflow as tf

    bench = _bench()
    # the benchmark's own setting on this backend: TensorFlow's plain graph, JAX's jit
    # (Keras' JAX trainer without jit would run op by op, a path the benchmark never takes)
    model = bench.build(mode, TINY, jit=bench.BACKENDS[keras.backend.backend()][1])
    batch = bench.features(mode, TINY, 2, 16)
    ds = tf.data.Dataset.from_tensors(batch).repeat()
    history = model.fit(ds, steps_per_epoch=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
    assert int(model.optimizer.iterations) == 2
    bench.optimizer_apply(model)()
    if keras.backend.backend() == "tensorflow":  # JAX's stateless update returns new values
        assert int(model.optimizer.iterations) == 3


def test_report_is_one_json_line_per_mode_and_length(capsys):
    bench = _bench()
    a = argparse.Namespace(
        quick=True, shape="base", modes="finetune", seqs="128,512", steps=2, batch=8
    )
    names = ["tensorflow_xla", "jax"]
    first = {n: {"finetune_128": 1.0, "finetune_512": 2.0} for n in names}
    rounds = [
        {"finetune_128": 0.5, "finetune_512": 1.0, "gemm": 100.0}
        | {f"finetune_{s}_optimizer": 0.01 for s in (128, 512)}
    ] * 3
    times = {"tensorflow_xla": rounds, "jax": [dict(r, finetune_128=0.25) for r in rounds]}
    bench.report(a, names, first, times)
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert [(x["mode"], x["seq"]) for x in lines] == [("finetune", 128), ("finetune", 512)]
    assert lines[0]["tensorflow_xla_steps_s"] == 4.0 and lines[0]["jax_steps_s"] == 8.0
    assert lines[0]["jax_vs_tensorflow_xla"] == 2.0 and lines[1]["jax_vs_tensorflow_xla"] == 1.0
    assert lines[0]["jax_optimizer_ms"] == 10.0 and lines[0]["jax_first_call_s"] == 1.0
