"""Pretraining through the engine: it learns, it resumes, it writes Google-format results."""

import os
import pathlib
import sys

import numpy as np
import pytest
import python_processes
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertPretrainer, load_original_checkpoint
from albert_tf.engine.compiling import compile_for_training
from albert_tf.engine.run_config import RunConfig
from albert_tf.pretraining.pretrain import PretrainingOptions, make_evaluate_fn, pretrain

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])


@pytest.fixture(scope="module")
def tiny_config(fixtures_dir):
    return AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")


def options(fixtures_dir, out, **kw):
    base = dict(
        input_file=str(fixtures_dir / "pretraining.tfrecord"),
        output_dir=str(out),
        max_seq_length=64,
        max_predictions_per_seq=10,
        train_batch_size=16,
        eval_batch_size=16,
        num_train_steps=20,
        num_warmup_steps=2,
        save_checkpoints_steps=10,
        iterations_per_loop=5,
        max_eval_steps=2,
        learning_rate=5e-3,
        seed=1,
        verbose=0,
        log_every_steps=10,
    )
    base.update(kw)
    return PretrainingOptions(**base)


def test_resumes_from_last_checkpoint(fixtures_dir, tiny_config, tmp_path):
    pretrain(tiny_config, options(fixtures_dir, tmp_path, num_train_steps=20))
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-20")
    from albert_tf.engine.optimizers import create_optimizer

    model, opt = AlbertPretrainer(tiny_config), create_optimizer(1e-3, 20, 2, optimizer="lamb")
    opt.build(model.trainable_variables)
    tf.train.Checkpoint(model=model, optimizer=opt).restore(
        str(tmp_path / "ckpt-20")
    ).assert_existing_objects_matched()
    assert int(opt.iterations.numpy()) == 20
    result = pretrain(tiny_config, options(fixtures_dir, tmp_path, num_train_steps=30))
    assert result["global_step"] == 30
    names = sorted(os.listdir(tmp_path))
    assert "ckpt-30.index" in names and "ckpt-20.index" in names
    # A finished run started again does nothing more.
    assert (
        pretrain(tiny_config, options(fixtures_dir, tmp_path, num_train_steps=30))["global_step"]
        == 30
    )


def test_gradient_accumulation_keeps_global_batch(fixtures_dir, tiny_config, tmp_path):
    result = pretrain(
        tiny_config,
        options(
            fixtures_dir,
            tmp_path,
            num_train_steps=4,
            gradient_accumulation_steps=2,
            save_checkpoints_steps=4,
            iterations_per_loop=1,
        ),
    )
    assert result["global_step"] == 4
    with pytest.raises(ValueError, match="not divisible by gradient_accumulation_steps 3"):
        pretrain(tiny_config, options(fixtures_dir, tmp_path / "b", gradient_accumulation_steps=3))


def test_bad_flags_fail_clearly(fixtures_dir, tiny_config, tmp_path):
    with pytest.raises(ValueError, match="max_seq_length 128 exceeds max_position_embeddings 64"):
        pretrain(tiny_config, options(fixtures_dir, tmp_path, max_seq_length=128))
    with pytest.raises(FileNotFoundError, match="no file matches"):
        pretrain(
            tiny_config, options(fixtures_dir, tmp_path, input_file=str(tmp_path / "*.tfrecord"))
        )


@pytest.mark.backends
def test_eval_batch_beyond_the_records_is_refused_before_training(
    fixtures_dir, tiny_config, tmp_path
):
    """Eval batches are whole (static shapes): 32 records and eval_batch_size 64 evaluated no
    batch, and only after all the training (a StopIteration from Keras, or empty metrics)."""
    opts = options(fixtures_dir, tmp_path / "run", do_eval=True, eval_batch_size=64)
    with pytest.raises(ValueError, match="eval_batch_size 64 is more than the 32 records"):
        pretrain(tiny_config, opts)
    assert not (tmp_path / "run").exists()  # checked before any work
    eval_only = options(fixtures_dir, tmp_path / "e", do_train=False, do_eval=True)
    eval_only.eval_input_file, eval_only.eval_batch_size = opts.input_file, 33
    with pytest.raises(ValueError, match="eval_batch_size 33 is more than the 32 records"):
        pretrain(tiny_config, eval_only)


def last_eval_block(path):
    """{name: value} of the last block of a run's eval_results.txt (`name = value` lines)."""
    block = path.read_text().strip().split("\n\n")[-1]
    pairs = [line.split(" = ") for line in block.splitlines() if " = " in line]
    return {k.strip(): float(v) for k, v in pairs}


def test_run_pretraining_cli_drives_mlm_and_sop_losses_down(fixtures_dir, tiny_config, tmp_path):
    """run_pretraining.py, 300 steps on the 32 fixed fixture examples from the tiny release
    (dropout 0): a broken head, loss or optimizer fails this. The run also shows the driver's
    files: an eval per checkpoint in eval_results.txt, TensorBoard events, and the best
    checkpoint in Google's format."""
    config = tiny_config.replace(hidden_dropout_prob=0.0)
    config_file = tmp_path / "albert_config.json"
    config_file.write_text(config.to_json_string())
    out, init = tmp_path / "run", fixtures_dir / "albert_tiny" / "model.ckpt-best"
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_pretraining.py"),
        f"--albert_config_file={config_file}",
        f"--input_file={fixtures_dir / 'pretraining.tfrecord'}",
        f"--output_dir={out}",
        f"--init_checkpoint={init}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--train_batch_size=32",
        "--eval_batch_size=32",
        "--num_train_steps=300",
        "--num_warmup_steps=20",
        "--save_checkpoints_steps=150",
        "--iterations_per_loop=50",
        "--max_eval_steps=1",
        "--do_eval",
        "--optimizer=adamw",
        "--learning_rate=1e-3",
        "--seed=1",
        "--log_every_steps=10",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    # the untrained model on the same eval batch, in this process
    opts = options(fixtures_dir, out, eval_batch_size=32, max_eval_steps=1)
    model = AlbertPretrainer(config)
    load_original_checkpoint(model, init)
    model.compile()
    before = make_evaluate_fn(opts, tf.distribute.get_strategy())(model)
    text = (out / "eval_results.txt").read_text()
    assert text.count("global_step = ") == 2 and "sentence_order_accuracy" in text
    assert "masked_lm_accuracy = " in text and "global_step = 300" in text
    after = last_eval_block(out / "eval_results.txt")
    assert after["global_step"] == 300
    assert after["masked_lm_loss"] < 0.5 * before["masked_lm_loss"], (before, after)
    assert after["sentence_order_loss"] < 0.5 * before["sentence_order_loss"], (before, after)
    assert after["masked_lm_accuracy"] > 0.3 and after["sentence_order_accuracy"] > 0.9
    best = AlbertPretrainer(config)
    report = load_original_checkpoint(best, out / "model.ckpt-best")  # Google's format
    assert report.missing == [] and len(report.loaded) == 32
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(out / "eval"))
    # without --albert_config_file: test_bad_input.py's no_config case (one error line naming
    # it, exit 2), run with the other bad-input cases in one process


def test_eval_of_a_model_compiled_for_training_scores_every_batch(
    fixtures_dir, tiny_config, tmp_path
):
    """With iterations_per_loop > 1 the evaluation during training scored only its first batch
    (Keras called the engine's one-step test_function once per execution); it must equal the
    exact metrics over all max_eval_steps batches."""
    from albert_tf.engine.optimizers import create_optimizer
    from albert_tf.pretraining.input import pretraining_dataset

    opts = options(fixtures_dir, tmp_path, max_eval_steps=2)
    model = AlbertPretrainer(tiny_config)
    load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    run = RunConfig(output_dir=str(tmp_path), num_train_steps=10, iterations_per_loop=5)
    compile_for_training(model, create_optimizer(1e-3, 10, 1), run, tf.distribute.get_strategy())
    assert model.steps_per_execution == 5
    results = make_evaluate_fn(opts, tf.distribute.get_strategy())(model)
    correct = weight = sop = n = 0.0
    for batch in pretraining_dataset(opts.input_file, 16, 64, 10, is_training=False).take(2):
        out = model(batch, training=False)
        w = batch["masked_lm_weights"].numpy()
        hit = np.argmax(out["mlm_logits"].numpy(), -1) == batch["masked_lm_ids"].numpy()
        correct, weight = correct + (hit * w).sum(), weight + w.sum()
        labels = batch["next_sentence_labels"].numpy().reshape(-1)
        sop, n = sop + (np.argmax(out["sop_logits"].numpy(), -1) == labels).sum(), n + len(labels)
    assert n == 32
    np.testing.assert_allclose(results["masked_lm_accuracy"], correct / weight, atol=1e-6)
    np.testing.assert_allclose(results["sentence_order_accuracy"], sop / n, atol=1e-6)
    assert model.steps_per_execution == 5  # restored for training
