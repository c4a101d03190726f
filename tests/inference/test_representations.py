"""extract_features (per token and pooled, JSONL and NPZ, chosen layers) equals the model's own
outputs on the tiny release folder; fill_mask is the MLM head's top-k, best first."""

import json
import pathlib

import numpy as np
import pytest

from albert_tf import extract_features, fill_mask, load_pretrained
from albert_tf.inference.representations import encode_texts

TEXTS = [
    "The value is returned by the function.",
    "A module ||| is a file of definitions.",
    "",
    "Every object has an identity, a type and a value that can change over its lifetime.",
]


@pytest.fixture(scope="module")
def tiny(fixtures_dir):
    return load_pretrained(fixtures_dir / "albert_tiny")


@pytest.fixture(scope="module")
def want(tiny):
    """The model's own outputs, one text at a time (no batching, no padding beyond 16)."""
    model, encoder = tiny
    pairs = [tuple(t.split(" ||| ")) if " ||| " in t else (t, None) for t in TEXTS]
    inputs = encode_texts(encoder, pairs, 16)
    outs = [
        model.albert({k: inputs[k][i : i + 1] for k in ("input_ids", "input_mask", "segment_ids")})
        for i in range(len(TEXTS))
    ]
    return inputs, outs


def _run(tmp_path, fixtures_dir, name, *flags):
    (tmp_path / "in.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / name
    argv = [
        f"--input_file={tmp_path / 'in.txt'}",
        f"--output_file={out}",
        f"--model_dir={fixtures_dir / 'albert_tiny'}",
        "--max_seq_length=16",
        "--batch_size=3",
        *flags,
    ]
    assert extract_features.main(argv) == 0
    return out


def test_per_token_jsonl_and_npz_equal_the_model(tmp_path, fixtures_dir, want):
    inputs, outs = want
    jsonl = _run(tmp_path, fixtures_dir, "f.jsonl", "--layers=-1,-3")
    npz = np.load(_run(tmp_path, fixtures_dir, "f.npz", "--layers=-1,-3"))
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["linex_index"] for r in records] == [0, 1, 2, 3]
    np.testing.assert_array_equal(npz["input_ids"], inputs["input_ids"])
    assert list(npz["layers"]) == [-1, -3] and npz["features"].shape == (4, 2, 16, 32)
    for i, (record, out) in enumerate(zip(records, outs)):
        n = int(inputs["input_mask"][i].sum())
        assert (
            [f["token"] for f in record["features"]]
            == inputs["tokens"][i]
            == list(npz["tokens"][i][:n])
        )
        for k, layer in enumerate((-1, -3)):
            expected = out["encoder_outputs"][layer].numpy()[0]
            got = np.array([f["layers"][k]["values"] for f in record["features"]])
            assert all(f["layers"][k]["index"] == layer for f in record["features"])
            np.testing.assert_allclose(got, expected[:n], atol=1e-5)
            np.testing.assert_allclose(npz["features"][i, k], expected, atol=1e-5)
    np.testing.assert_allclose(
        npz["features"][:, 0],
        np.concatenate([o["sequence_output"].numpy() for o in outs]),
        atol=1e-5,
    )
    assert inputs["segment_ids"][1].max() == 1 and inputs["tokens"][2] == ["[CLS]", "[SEP]"]
    assert inputs["input_mask"][3].sum() == 16  # truncated to --max_seq_length


def test_pooled_jsonl_and_npz_equal_the_model(tmp_path, fixtures_dir, want):
    _, outs = want
    expected = np.concatenate([o["pooled_output"].numpy() for o in outs])
    records = [
        json.loads(x)
        for x in _run(tmp_path, fixtures_dir, "p.jsonl", "--pooled").read_text().splitlines()
    ]
    np.testing.assert_allclose(np.array([r["pooled"] for r in records]), expected, atol=1e-5)
    npz = np.load(_run(tmp_path, fixtures_dir, "p.npz", "--pooled"))
    np.testing.assert_allclose(npz["pooled"], expected, atol=1e-5)
    assert "features" not in npz


@pytest.mark.parametrize(
    "flags, error",
    [
        (["--layers=-5"], "--layers=-5: layer -5 is out of range: the model has 4"),
        (["--layers=last"], "--layers='last': give comma-separated integers"),
        (["--max_seq_length=65"], "--max_seq_length=65: must be in 2..64"),
        (["--output_file=OUT.txt"], "must end in .jsonl or .npz"),
        (["--input_file=EMPTY"], "is empty"),
        (["--model_dir=NOWHERE"], "--model_dir: model folder"),
    ],
)
def test_bad_input_is_one_error_line(tmp_path, fixtures_dir, capsys, flags, error):
    (tmp_path / "in.txt").write_text("hello\n")
    (tmp_path / "empty.txt").write_text("")
    base = {
        "--input_file": tmp_path / "in.txt",
        "--output_file": tmp_path / "o.jsonl",
        "--model_dir": fixtures_dir / "albert_tiny",
        "--max_seq_length": 16,
    }
    for flag in flags:
        name, value = flag.split("=", 1)
        base[name] = {
            "OUT.txt": tmp_path / "o.txt",
            "EMPTY": tmp_path / "empty.txt",
            "NOWHERE": tmp_path / "nowhere",
        }.get(value, value)
    assert extract_features.main([f"{k}={v}" for k, v in base.items()]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and error in lines[0], lines
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o.txt").exists()


def test_fill_mask_is_the_mlm_heads_top_k(tiny, fixtures_dir):
    model, encoder = tiny
    text = "The value of the [MASK] is returned."
    top = fill_mask(fixtures_dir / "albert_tiny", text, top_k=5)
    assert len(top) == 5 and [p["score"] for p in top] == sorted(
        (p["score"] for p in top), reverse=True
    )
    from albert_tf.inference.representations import _mask_ids

    ids, positions = _mask_ids(encoder, text)
    assert ids[positions[0]] == encoder.tokenizer.mask_id
    logits = model({"input_ids": np.array([ids]), "masked_lm_positions": np.array([positions])})[
        "mlm_logits"
    ].numpy()[0, 0]
    assert top[0]["id"] == int(np.argmax(logits))
    assert [p["id"] for p in top] == list(np.argsort(-logits, kind="stable")[:5])
    assert [p["token"] for p in top] == encoder.tokenizer.convert_ids_to_tokens(
        [p["id"] for p in top]
    )
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose([p["score"] for p in top], probs[[p["id"] for p in top]], rtol=1e-5)
    two = fill_mask(model, "[MASK] is a [MASK].", top_k=3, encoder=encoder)
    assert len(two) == 2 and all(len(t) == 3 for t in two)
    with pytest.raises(ValueError, match="has no"):
        fill_mask(model, "no mask here", encoder=encoder)
    with pytest.raises(ValueError, match="masked-LM head"):
        fill_mask(model.albert, text, encoder=encoder)


def test_a_real_process_shows_only_its_error_line(tmp_path, fixtures_dir):
    """As a shell runs it: TensorFlow's start-up lines stay off stderr, the error is all."""
    import subprocess
    import sys

    (tmp_path / "in.txt").write_text("hello\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "albert_tf.extract_features",
            f"--input_file={tmp_path / 'in.txt'}",
            f"--output_file={tmp_path / 'o.jsonl'}",
            f"--model_dir={tmp_path / 'nowhere'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=pathlib.Path(__file__).resolve().parents[1],
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: --model_dir: model folder {tmp_path / 'nowhere'} does not exist"
    ], r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
