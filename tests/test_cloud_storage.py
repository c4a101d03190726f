"""Every entry point with every path on a bucket: TensorFlow's in-memory ram:// filesystem
stands in for gs:// (docs/cloud_tpu.md). ram:// lives in one process, so each absl driver runs
its command lines in ONE subprocess (tests/scripts/ram_runner.py) whose working folder must stay
empty; the argparse CLIs and the Keras API run in this process. A second training run with more
steps resumes from the bucket."""

import hashlib
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest
import python_processes
import ramfs
import tensorflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "scripts" / "ram_runner.py"
B = "ram://bucket"  # each runner process has its own ram://, so one name serves every test


def run_on_bucket(tmp_path, driver, uploads, cases, trees=(), texts=(), sha256=()):
    """Run `cases` (argv lists) through `driver` in one process on ram://; the results JSON
    (codes, stderr, trees, texts). The working folder must stay empty."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    plan, results = tmp_path / "plan.json", tmp_path / "results.json"
    plan.write_text(
        json.dumps(
            {
                "driver": str(ROOT / driver),
                "uploads": uploads,
                "cases": cases,
                "trees": list(trees),
                "texts": list(texts),
                "sha256": list(sha256),
            }
        )
    )
    proc = python_processes.run(
        [sys.executable, str(RUNNER), str(plan), str(results)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert os.listdir(cwd) == [], "written under the working folder"
    return json.loads(results.read_text())


def _ok(case):
    assert case["code"] == 0, case["stderr"][-3000:]


def _model_uploads(fixtures_dir):
    tiny = fixtures_dir / "albert_tiny"
    return [[str(tiny), f"{B}/albert_tiny"], [str(fixtures_dir / "spm.model"), f"{B}/spm.model"]]


def _model_flags():
    return [
        f"--albert_config_file={B}/albert_tiny/albert_config.json",
        f"--init_checkpoint={B}/albert_tiny/model.ckpt-best",
        f"--spm_model_file={B}/spm.model",
    ]


def _steps(text):
    return [h["global_step"] for h in json.loads(text)]


def _latest(tree):
    return sorted(int(f[5:-6]) for f in tree if f.startswith("ckpt-") and f.endswith(".index"))


MISSING = [
    ("albert_config_file", "albert_config.json"),
    ("data_dir", "MRPC"),
    ("init_checkpoint", "model.ckpt-best"),
    ("spm_model_file", "spm.model"),
]


def test_run_classifier_on_a_bucket(fixtures_dir, data_dir, tmp_path):
    common = [
        "--task_name=MRPC",
        f"--data_dir={B}/glue/MRPC",
        *_model_flags(),
        f"--output_dir={B}/mrpc",
        f"--cached_dir={B}/cache",
        "--max_seq_length=64",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--predict_batch_size=8",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
    ]
    r = run_on_bucket(
        tmp_path,
        "run_classifier.py",
        [[str(data_dir / "MRPC"), f"{B}/glue/MRPC"]] + _model_uploads(fixtures_dir),
        [
            common
            + [
                "--train_step=4",
                "--do_train",
                "--do_eval",
                "--do_predict",
                f"--export_dir={B}/export",
            ],
            common + ["--train_step=6", "--do_train", "--do_eval"],
            *[
                [*common, f"--{flag}={B}/missing/{name}", "--train_step=6", "--do_train"]
                for flag, name in MISSING
            ],
        ],
        trees=[f"{B}/mrpc", f"{B}/export", f"{B}/cache"],
        texts=[f"{B}/mrpc/eval_history.json", f"{B}/mrpc/eval_results.txt"],
    )
    first, second, *missing = r["cases"]
    _ok(first)
    _ok(second)
    out = r["trees"][f"{B}/mrpc"]
    assert {
        "checkpoint",
        "eval_results.txt",
        "MRPC.tsv",
        "test_results.tsv",
        "model.ckpt-best.index",
        "model.ckpt-best.data-00000-of-00001",
    } <= set(out)
    assert _latest(out) == [2, 4, 6] and "albert_tf.lock" not in out
    assert any(f.startswith("train/events.out.tfevents") for f in out)
    # the second run resumed at step 4: steps 2 and 4 were not trained or evaluated again
    assert _steps(r["texts"][f"{B}/mrpc/eval_history.json"]) == [2, 4, 6]
    assert r["texts"][f"{B}/mrpc/eval_results.txt"].count("global_step = ") == 3
    (version,) = {f.split("/")[0] for f in r["trees"][f"{B}/export"]}  # export_dir/<unix seconds>/
    assert version.isdigit()
    assert {f"{version}/saved_model.pb", f"{version}/variables/variables.index"} <= set(
        r["trees"][f"{B}/export"]
    )
    assert sum(f.endswith(".tf_record") for f in r["trees"][f"{B}/cache"]) == 3
    # a missing bucket object: one line naming the flag and the path, exit 2
    for case, (flag, name) in zip(missing, MISSING):
        last = case["stderr"].strip().splitlines()[-1]
        assert case["code"] == 2 and last.startswith(f"error: --{flag}"), last
        assert f"{B}/missing/{name}" in last, last


def test_run_squad_on_a_bucket(fixtures_dir, data_dir, tmp_path):
    data = f"{B}/squad/dev-v1.1.json"
    common = [
        f"--train_file={data}",
        f"--predict_file={data}",
        *_model_flags(),
        f"--output_dir={B}/squad",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--max_query_length=16",
        "--train_batch_size=8",
        "--predict_batch_size=8",
        "--eval_batch_size=8",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
    ]
    r = run_on_bucket(
        tmp_path,
        "run_squad.py",
        [[str(data_dir / "squad" / "v1.1" / "squad.json"), data]] + _model_uploads(fixtures_dir),
        [
            common
            + [
                "--train_step=2",
                "--do_train",
                "--do_eval",
                "--do_predict",
                f"--export_dir={B}/export",
            ],
            common + ["--train_step=4", "--do_train", "--do_eval"],
        ],
        trees=[f"{B}/squad", f"{B}/export"],
        texts=[f"{B}/squad/eval_history.json", f"{B}/squad/predictions.json"],
    )
    for case in r["cases"]:
        _ok(case)
    out = r["trees"][f"{B}/squad"]
    assert _latest(out) == [2, 4] and "model.ckpt-best.index" in out
    assert _steps(r["texts"][f"{B}/squad/eval_history.json"]) == [2, 4]
    assert len(json.loads(r["texts"][f"{B}/squad/predictions.json"])) > 0
    assert any(f.endswith("/saved_model.pb") for f in r["trees"][f"{B}/export"])


def test_run_race_on_a_bucket(fixtures_dir, data_dir, tmp_path):
    race = data_dir / "RACE"
    common = [
        f"--data_dir={B}/data",
        *_model_flags(),
        f"--output_dir={B}/race",
        "--max_seq_length=64",
        "--max_qa_length=16",
        "--train_batch_size=4",
        "--eval_batch_size=4",
        "--predict_batch_size=4",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--learning_rate=1e-4",
    ]
    r = run_on_bucket(
        tmp_path,
        "run_race.py",
        [
            [str(race / "train"), f"{B}/data/RACE/train"],
            [str(race / "train"), f"{B}/data/RACE/dev"],
            [str(race / "test"), f"{B}/data/RACE/test"],
        ]
        + _model_uploads(fixtures_dir),
        [
            common
            + [
                "--train_step=2",
                "--do_train",
                "--do_eval",
                "--do_predict",
                f"--export_dir={B}/export",
            ],
            common + ["--train_step=4", "--do_train", "--do_eval"],
        ],
        trees=[f"{B}/race", f"{B}/export"],
        texts=[f"{B}/race/eval_history.json"],
    )
    for case in r["cases"]:
        _ok(case)
    out = r["trees"][f"{B}/race"]
    assert _latest(out) == [2, 4] and "model.ckpt-best.index" in out
    assert _steps(r["texts"][f"{B}/race/eval_history.json"]) == [2, 4]
    assert any(f.endswith("/saved_model.pb") for f in r["trees"][f"{B}/export"])


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
        + _model_uploads(fixtures_dir),
        [
            common + ["--num_train_steps=2", "--do_train"],
            common + ["--num_train_steps=4", "--do_train"],
        ],
        trees=[f"{B}/pretrain"],
        texts=[f"{B}/pretrain/eval_results.txt"],
    )
    for case in r["cases"]:
        _ok(case)
    out = r["trees"][f"{B}/pretrain"]
    assert _latest(out) == [2, 4] and "checkpoint" in out and "albert_tf.lock" not in out
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
    _ok(remote)
    _ok(local_case)
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


def test_run_ner_on_a_bucket(fixtures_dir, data_dir, tmp_path):
    ner = data_dir / "ner" / "conll2003_bio.txt"
    common = [
        f"--train_file={B}/ner/train.txt",
        f"--dev_file={B}/ner/dev.txt",
        f"--test_file={B}/ner/test.txt",
        *_model_flags(),
        f"--output_dir={B}/ner-out",
        "--max_seq_length=32",
        "--train_batch_size=2",
        "--eval_batch_size=2",
        "--predict_batch_size=2",
        "--warmup_step=0",
        "--save_checkpoints_steps=2",
    ]
    r = run_on_bucket(
        tmp_path,
        "run_ner.py",
        [[str(ner), f"{B}/ner/{name}.txt"] for name in ("train", "dev", "test")]
        + _model_uploads(fixtures_dir),
        [
            common
            + [
                "--train_step=2",
                "--do_train",
                "--do_eval",
                "--do_predict",
                f"--export_dir={B}/export",
            ],
            common + ["--train_step=4", "--do_train", "--do_eval"],
        ],
        trees=[f"{B}/ner-out", f"{B}/export"],
        texts=[f"{B}/ner-out/eval_history.json"],
    )
    for case in r["cases"]:
        _ok(case)
    out = r["trees"][f"{B}/ner-out"]
    assert _latest(out) == [2, 4] and {
        "labels.json",
        "test_predictions.txt",
        "model.ckpt-best.index",
    } <= set(out)
    assert _steps(r["texts"][f"{B}/ner-out/eval_history.json"]) == [2, 4]
    assert any(f.endswith("/saved_model.pb") for f in r["trees"][f"{B}/export"])
