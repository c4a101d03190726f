"""Every entry point with every path on a bucket: TensorFlow's in-memory ram:// filesystem
stands in for gs:// (docs/cloud_tpu.md). ram:// lives in one process, so each absl driver runs
its command lines in ONE subprocess (tests/bucket_runs.py) whose working folder must stay
empty; the argparse CLIs and the Keras API run in this process. A second training run with more
steps resumes from the bucket. The task drivers' end-to-end tests (tests/tasks/*) run on the
bucket too (tests/tasks/glue/test_classifier.py, squad/test_squad_driver.py,
race/test_race_driver.py, ner/test_ner_driver.py)."""

import hashlib
import json
import subprocess
import sys
import time

from bucket_runs import (
    B,
    assert_ok,
    checkpoint_steps,
    model_uploads,
    run_on_bucket,
)
import numpy as np
import pytest
import ramfs
import tensorflow as tf


def test_run_pretraining_on_a_bucket(fixtures_dir, tmp_path):
    common = [
        f"--albert_config_file={B}/albert_tiny/albert_config.json",
        f"--input_file={B}/data/*.tfrecord",
        f"--output_dir={B}/pretrain",
        f"--init_checkpoint={B}/albert_tiny/model.ckpt-best",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--num_warmup_steps=1",
        "--save_checkpoints_steps=2",
        "--iterations_per_loop=2",
        "--max_eval_steps=1",
        "--do_eval",
        "--optimizer=adamw",
        "--learning_rate=1e-3",
    ]
    r = run_on_bucket(
        tmp_path,
        "run_pretraining.py",
        [[str(fixtures_dir / "pretraining.tfrecord"), f"{B}/data/part-0.tfrecord"]]
        + model_uploads(fixtures_dir),
        [
            common + ["--num_train_steps=2", "--do_train"],
            common + ["--num_train_steps=4", "--do_train"],
        ],
        trees=[f"{B}/pretrain"],
        texts=[f"{B}/pretrain/eval_results.txt"],
    )
    for case in r["cases"]:
        assert_ok(case)
    out = r["trees"][f"{B}/pretrain"]
    assert checkpoint_steps(out) == [2, 4] and "checkpoint" in out and "albert_tf.lock" not in out
    results = r["texts"][f"{B}/pretrain/eval_results.txt"]
    assert "global_step = 2" in results and "global_step = 4" in results
    assert "masked_lm_accuracy" in results


def test_create_pretraining_data_on_a_bucket_equals_a_local_build(fixtures_dir, tmp_path):
    common = [
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--dupe_factor=2",
        "--random_seed=3",
    ]
    local = tmp_path / "local.tfrecord"
    r = run_on_bucket(
        tmp_path,
        "create_pretraining_data.py",
        [
            [str(fixtures_dir / "corpus.txt"), f"{B}/text/corpus.txt"],
            [str(fixtures_dir / "spm.model"), f"{B}/spm.model"],
        ],
        [
            [
                f"--input_file={B}/text/*.txt",
                f"--output_file={B}/out/train.tfrecord",
                f"--spm_model_file={B}/spm.model",
                *common,
            ],
            [
                f"--input_file={fixtures_dir / 'corpus.txt'}",
                f"--output_file={local}",
                f"--spm_model_file={fixtures_dir / 'spm.model'}",
                *common,
            ],
            [
                f"--input_file={B}/text/missing-*.txt",
                f"--output_file={B}/out/bad.tfrecord",
                f"--spm_model_file={B}/spm.model",
                *common,
            ],
        ],
        trees=[f"{B}/out"],
        sha256=[f"{B}/out/train.tfrecord"],
    )
    remote, local_case, missing = r["cases"]
    assert_ok(remote)
    assert_ok(local_case)
    assert r["trees"][f"{B}/out"] == ["train.tfrecord"]  # no scratch or tmp object left
    # seeded: the bucket's file is byte for byte the local build's
    assert r["sha256"][f"{B}/out/train.tfrecord"] == hashlib.sha256(local.read_bytes()).hexdigest()
    assert missing["code"] == 2 and "--input_file" in missing["stderr"].strip().splitlines()[-1]


# --- in this process: the argparse CLIs, the Keras API, the lock ----------------------------
def _tensors_equal(a, b):
    assert sorted(a) == sorted(b)
    assert all(a[n].tobytes() == b[n].tobytes() for n in a)


def test_convert_every_format_on_a_bucket(ram_bucket, fixtures_dir, capsys):
    from albert_tf.convert import main
    from albert_tf.formats.tf1 import read_original_checkpoint

    tiny = ramfs.upload(fixtures_dir / "albert_tiny", f"{ram_bucket}/albert_tiny")
    original = read_original_checkpoint(fixtures_dir / "albert_tiny" / "model.ckpt-best")
    outputs = {
        "huggingface": f"{ram_bucket}/hf",
        "keras_hub": f"{ram_bucket}/kh",
        "keras": f"{ram_bucket}/keras/pretrainer.weights.h5",
    }
    for fmt, out in outputs.items():
        assert main(["--input", tiny, "--output", out, "--output_format", fmt]) == 0, fmt
    assert main(["--input", tiny, "--output", f"{ram_bucket}/model.keras"]) == 0
    assert main(["--input", tiny, "--output", f"{ram_bucket}/tf1/model.ckpt-1"]) == 0
    assert {"config.json", "model.safetensors", "spiece.model"} <= set(
        ramfs.tree(outputs["huggingface"])
    )
    assert "assets/tokenizer/vocabulary.spm" in ramfs.tree(outputs["keras_hub"])
    assert "albert_config.json" in tf.io.gfile.listdir(f"{ram_bucket}/keras")  # config beside
    # every output read back from the bucket: the TF1 tensors bit for bit
    _tensors_equal(read_original_checkpoint(f"{ram_bucket}/tf1/model.ckpt-1"), original)
    for name, src in [
        ("hf", outputs["huggingface"]),
        ("h5", outputs["keras"]),
        ("keras", f"{ram_bucket}/model.keras"),
    ]:
        assert main(["--input", src, "--output", f"{ram_bucket}/back-{name}/model.ckpt-1"]) == 0, (
            name
        )
        _tensors_equal(read_original_checkpoint(f"{ram_bucket}/back-{name}/model.ckpt-1"), original)
    assert (
        main(["--input", outputs["keras_hub"], "--output", f"{ram_bucket}/back-kh/model.ckpt-1"])
        == 0
    )
    back = read_original_checkpoint(f"{ram_bucket}/back-kh/model.ckpt-1")
    kept = [n for n in original if not n.startswith("cls/seq_relationship/")]  # no SOP head there
    assert sorted(back) == sorted(kept) and len(kept) == 30  # nor written untrained
    assert all(back[n].tobytes() == original[n].tobytes() for n in kept)
    # a missing bucket object: one line naming it, exit 2, nothing written
    assert (
        main(["--input", f"{ram_bucket}/nothing/model.ckpt-1", "--output", f"{ram_bucket}/x"]) == 2
    )
    assert f"{ram_bucket}/nothing" in capsys.readouterr().err
    assert not tf.io.gfile.exists(f"{ram_bucket}/x")


def test_extract_features_on_a_bucket_equals_local(ram_bucket, fixtures_dir, tmp_path):
    from albert_tf import extract_features

    texts = "the cat sat on the mat\nHello, ALBERT! ||| a second text\n"
    (tmp_path / "in.txt").write_text(texts)
    model_dir = ramfs.upload(fixtures_dir / "albert_tiny", f"{ram_bucket}/albert_tiny")
    ramfs.upload(tmp_path / "in.txt", f"{ram_bucket}/in.txt")
    common = ["--layers=-1,-2", "--max_seq_length=32"]
    for suffix in ("jsonl", "npz"):
        assert (
            extract_features.main(
                [
                    f"--input_file={ram_bucket}/in.txt",
                    f"--model_dir={model_dir}",
                    f"--output_file={ram_bucket}/features.{suffix}",
                    *common,
                ]
            )
            == 0
        )
        assert (
            extract_features.main(
                [
                    f"--input_file={tmp_path / 'in.txt'}",
                    f"--model_dir={fixtures_dir / 'albert_tiny'}",
                    f"--output_file={tmp_path / f'features.{suffix}'}",
                    *common,
                ]
            )
            == 0
        )
    remote = ramfs.download(f"{ram_bucket}/features.npz", tmp_path / "remote.npz")
    with np.load(remote) as got, np.load(tmp_path / "features.npz") as want:
        assert sorted(got.files) == sorted(want.files)
        for k in want.files:
            np.testing.assert_array_equal(got[k], want[k])
    with tf.io.gfile.GFile(f"{ram_bucket}/features.jsonl") as f:
        assert f.read() == (tmp_path / "features.jsonl").read_text()


def test_keras_text_model_from_a_bucket_and_keras_file_round_trip(ram_bucket, fixtures_dir):
    import albert_tf
    from albert_tf import AlbertTextClassifier

    release = ramfs.upload(fixtures_dir / "albert_tiny", f"{ram_bucket}/albert_tiny")
    model = AlbertTextClassifier.from_pretrained(release, num_labels=2, sequence_length=32)
    texts = ["the cat sat on the mat", "a second, longer text about nothing"]
    want = model.predict(texts, verbose=0)["probabilities"]
    path = f"{ram_bucket}/models/classifier.keras"
    model.save(path)
    for loaded in (albert_tf.load_model(path), AlbertTextClassifier.from_pretrained(path)):
        np.testing.assert_allclose(
            loaded.predict(texts, verbose=0)["probabilities"], want, atol=1e-6
        )
    with pytest.raises(albert_tf.core.errors.InputError, match=f"{ram_bucket}/nothing"):
        AlbertTextClassifier.from_pretrained(f"{ram_bucket}/nothing", num_labels=2)


def test_lock_on_a_bucket_refuses_a_live_run_and_takes_over_a_stale_one(ram_bucket, monkeypatch):
    from absl import logging

    from albert_tf.engine import run_lock

    out = f"{ram_bucket}/run"
    lock = f"{out}/{run_lock.LOCK_FILE}"
    other = {"run_id": "0123", "pid": 1, "host": "another-tpu-vm"}
    tf.io.gfile.makedirs(out)
    with tf.io.gfile.GFile(lock, "w") as f:
        f.write(json.dumps({**other, "heartbeat": time.time() - 10}))
    with pytest.raises(run_lock.OutputDirLockedError, match="in use by pid 1 on another-tpu-vm"):
        with run_lock.output_dir_lock(out):
            pass
    stale = time.time() - run_lock.LOCK_TTL_SECONDS - 1
    tf.io.gfile.remove(lock)  # ram:// appends to a file written again
    with tf.io.gfile.GFile(lock, "w") as f:
        f.write(json.dumps({**other, "heartbeat": stale}))
    warnings = []
    monkeypatch.setattr(logging, "warning", lambda msg, *a: warnings.append(msg % a))
    with run_lock.output_dir_lock(out):
        held = json.loads(tf.io.gfile.GFile(lock).read())
        assert held["run_id"] != "0123" and held["host"] != "another-tpu-vm"
    assert any("stale lock" in w and "another-tpu-vm" in w for w in warnings), warnings
    assert not tf.io.gfile.exists(lock)  # released at the end


def test_a_stale_heartbeat_on_this_host_is_taken_over_even_if_its_pid_runs(ram_bucket):
    """A preempted VM recreated under the same host name may give the old run's pid to
    another process: the heartbeat, older than the TTL, still tells the holder is gone."""
    import socket

    from albert_tf.engine import run_lock

    out = f"{ram_bucket}/run"
    lock = f"{out}/{run_lock.LOCK_FILE}"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for age, live in ((10, True), (run_lock.LOCK_TTL_SECONDS + 1, False)):
            tf.io.gfile.makedirs(out)
            if tf.io.gfile.exists(lock):
                tf.io.gfile.remove(lock)
            with tf.io.gfile.GFile(lock, "w") as f:
                f.write(
                    json.dumps(
                        {
                            "run_id": "0123",
                            "pid": holder.pid,
                            "host": socket.gethostname(),
                            "heartbeat": time.time() - age,
                        }
                    )
                )
            if live:
                with pytest.raises(run_lock.OutputDirLockedError, match=f"pid {holder.pid}"):
                    with run_lock.output_dir_lock(out):
                        pass
            else:
                with run_lock.output_dir_lock(out):
                    assert json.loads(tf.io.gfile.GFile(lock).read())["run_id"] != "0123"
    finally:
        holder.kill()
        holder.wait()
