"""The converter: every format in and out, input format detected, the load report printed, and
the same through Python (`albert_tf.convert_model`)."""

import shutil
import sys

import numpy as np
import pytest
import python_processes

from albert_tf import AlbertModel, AlbertPretrainer, convert_model
from albert_tf.convert import main
from albert_tf.formats.tf1 import read_original_checkpoint
from albert_tf.interop.model_files import detect_format


def _cli(*args):
    return python_processes.run(
        [sys.executable, "-m", "albert_tf.convert", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_tf1_to_huggingface_and_back_is_bit_exact(tmp_path, fixtures_dir, capsys):
    tiny = fixtures_dir / "albert_tiny"
    r = _cli(
        "--input", str(tiny), "--output", str(tmp_path / "hf"), "--output_format", "huggingface"
    )
    assert r.returncode == 0, r.stderr
    assert "loaded 32 variables" in r.stdout and "wrote " + str(tmp_path / "hf") in r.stdout
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == (
        tiny / "30k-clean.model"
    ).read_bytes()
    assert (
        main(["--input", str(tmp_path / "hf"), "--output", str(tmp_path / "back" / "model.ckpt-1")])
        == 0
    )
    assert "loaded 32 variables" in capsys.readouterr().out
    original = read_original_checkpoint(tiny / "model.ckpt-best")
    back = read_original_checkpoint(tmp_path / "back" / "model.ckpt-1")
    assert sorted(back) == sorted(original)
    assert all(back[n].tobytes() == v.tobytes() for n, v in original.items())
    assert (tmp_path / "back" / "albert_config.json").is_file()  # the TF1 output gets its config


def test_python_api_chain_through_every_format(tmp_path, fixtures_dir, reference):
    tiny = fixtures_dir / "albert_tiny"
    lines = []
    report = convert_model(tiny / "model.ckpt-best", tmp_path / "kh", "keras_hub", log=lines.append)
    assert len(report.loaded) == 32 and "left out" in lines[0]
    assert detect_format(tmp_path / "kh") == "keras_hub"
    assert (tmp_path / "kh" / "assets" / "tokenizer" / "vocabulary.spm").is_file()
    report = convert_model(tmp_path / "kh", tmp_path / "enc.weights.h5", model_kind="encoder")
    assert len(report.loaded) == 30 and (tmp_path / "albert_config.json").is_file()  # + MLM head
    report = convert_model(
        tmp_path / "enc.weights.h5",
        tmp_path / "enc.keras",
        model_kind="encoder",
        albert_config_file=tmp_path / "albert_config.json",
    )
    assert len(report.loaded) == 25
    report = convert_model(tmp_path / "enc.keras", tmp_path / "hf", "huggingface")
    from albert_tf import load_huggingface

    model, _ = load_huggingface(tmp_path / "hf")
    assert isinstance(model, AlbertModel)
    out = model({k: reference[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(
        out["sequence_output"], reference["sequence_output"], rtol=0, atol=1e-5
    )


def test_undetectable_input_and_missing_config_are_clear_errors(tmp_path, fixtures_dir, capsys):
    assert (
        main(
            [
                "--input",
                str(tmp_path),
                "--output",
                str(tmp_path / "x"),
                "--output_format",
                "keras_hub",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "keras-hub preset" in err
    assert not (tmp_path / "x").exists()
    missing = tmp_path / "does" / "not" / "exist"
    assert main(["--input", str(missing), "--output", str(tmp_path / "x.keras")]) == 2
    assert capsys.readouterr().err == f"error: --input {missing}: no such file or folder\n"
    assert not (tmp_path / "x.keras").exists()
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for f in (fixtures_dir / "albert_tiny").glob("model.ckpt-best.*"):
        shutil.copy(f, ckpt)
    # the library names its arguments; the command says its flags
    with pytest.raises(
        ValueError, match="input_path .* carries no config: pass albert_config_file"
    ):
        convert_model(ckpt, tmp_path / "y.weights.h5")
    assert main(["--input", str(ckpt), "--output", str(tmp_path / "y.weights.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("error: --input ") and "carries no config: pass --albert_config_file" in err
    )
    with pytest.raises(ValueError, match="needs a name ending in .weights.h5 or .keras"):
        convert_model(
            ckpt,
            tmp_path / "y",
            "keras",
            albert_config_file=fixtures_dir / "albert_tiny" / "albert_config.json",
        )
    with pytest.raises(ValueError, match="output_format 'pytorch' is unknown"):
        convert_model(ckpt, tmp_path / "y", "pytorch")


def test_pretrainer_kind_and_detection(tmp_path, tiny_pretrainer):
    tiny_pretrainer.save(tmp_path / "p.keras")
    assert detect_format(tmp_path / "p.keras") == "keras"
    from albert_tf.interop.model_files import read_model

    model, report = read_model(tmp_path / "p.keras")
    assert isinstance(model, AlbertPretrainer) and len(report.loaded) == 32
    encoder, _ = read_model(tmp_path / "p.keras", model_kind="encoder")
    assert isinstance(encoder, AlbertModel)
