import sys

import keras
import numpy as np
import pytest
import python_processes
import tensorflow as tf

from albert_tf import (
    AlbertConfig,
    AlbertModel,
    AlbertPretrainer,
    convert,
    load_original_checkpoint,
    save_original_checkpoint,
)
from albert_tf.formats.tf1 import read_original_checkpoint
from albert_tf.modeling.names import original_variable_map

pytestmark = pytest.mark.backends  # CI runs these on TensorFlow and on JAX


@pytest.fixture(scope="module")
def tiny_dir(fixtures_dir):
    return fixtures_dir / "albert_tiny"


@pytest.fixture(scope="module")
def tiny_config(tiny_dir):
    return AlbertConfig.from_json_file(tiny_dir / "albert_config.json")


def test_report_lists_ignored_slots_and_nothing_missing(tiny_dir, tiny_config):
    report = load_original_checkpoint(AlbertPretrainer(tiny_config), tiny_dir / "model.ckpt-best")
    assert report.missing == [] and report.unused == []
    assert len(report.loaded) == 32
    assert "global_step" in report.ignored
    assert "bert/embeddings/word_embeddings/adam_m" in report.ignored
    assert "loaded 32 variables" in str(report)


def test_encoder_only_reports_heads_unused(tiny_dir, tiny_config):
    report = load_original_checkpoint(AlbertModel(tiny_config), tiny_dir)  # a directory works too
    assert report.missing == []
    assert set(report.unused) == {
        "cls/predictions/output_bias",
        "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma",
        "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel",
        "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights",
    }


def test_round_trip_is_bit_exact(tmp_path, tiny_dir, tiny_config):
    model = AlbertPretrainer(tiny_config)
    load_original_checkpoint(model, tiny_dir / "model.ckpt-best")
    out = save_original_checkpoint(model, tmp_path / "model.ckpt-7", global_step=7)
    original = read_original_checkpoint(tiny_dir / "model.ckpt-best")
    written = read_original_checkpoint(out)
    assert sorted(original) == sorted(written)
    for name, value in original.items():
        assert written[name].dtype == value.dtype and written[name].tobytes() == value.tobytes(), (
            name
        )
    assert tf.train.load_checkpoint(out).get_tensor("global_step") == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.ckpt-7.data-00000-of-00001",
        "model.ckpt-7.index",
    ]
    again = AlbertPretrainer(tiny_config)
    load_original_checkpoint(again, out)
    for a, b in zip(model.weights, again.weights):
        assert np.array_equal(a, b)


def test_hub_module_prefix(tmp_path, tiny_dir, tiny_config):
    values = read_original_checkpoint(tiny_dir / "model.ckpt-best")
    prefix = str(tmp_path / "hub")
    names = sorted(values)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=["module/" + n for n in names],
        shape_and_slices=[""] * len(names),
        tensors=[values[n] for n in names],
    )
    model = AlbertPretrainer(tiny_config)
    report = load_original_checkpoint(model, prefix)
    assert report.missing == [] and len(report.loaded) == 32
    np.testing.assert_array_equal(
        model.albert.word_embeddings.embeddings, values["bert/embeddings/word_embeddings"]
    )


def test_shape_mismatch_names_variable_and_shapes(tiny_dir, tiny_config):
    model = AlbertModel(tiny_config.replace(intermediate_size=48))
    before = [np.array(w) for w in model.weights]
    with pytest.raises(ValueError) as e:
        load_original_checkpoint(model, tiny_dir / "model.ckpt-best")
    msg = str(e.value)
    assert "ffn_1/intermediate/dense/kernel" in msg and "[32, 64]" in msg and "[32, 48]" in msg
    assert all(np.array_equal(a, b) for a, b in zip(before, model.weights))  # nothing half-loaded


def test_config_with_more_groups_is_refused_or_uses_group0(tiny_dir, tiny_config):
    config = tiny_config.replace(num_hidden_groups=2)
    with pytest.raises(ValueError, match="lacks .* encoder variables.*group_1"):
        load_original_checkpoint(AlbertModel(config), tiny_dir / "model.ckpt-best")
    model = AlbertModel(config)
    report = load_original_checkpoint(model, tiny_dir / "model.ckpt-best", group0_fallback=True)
    assert report.missing == [] and len(report.fallbacks) == 16
    names = original_variable_map(model)
    g0 = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"
    np.testing.assert_array_equal(names[g0], names[g0.replace("group_0/inner", "group_1/inner")])


def test_missing_checkpoint_errors(tmp_path, tiny_config):
    with pytest.raises(FileNotFoundError, match="nothere"):
        load_original_checkpoint(AlbertModel(tiny_config), tmp_path / "nothere")
    with pytest.raises(FileNotFoundError, match="no TF checkpoint found in directory"):
        load_original_checkpoint(AlbertModel(tiny_config), tmp_path)


def test_sharing_ablation_round_trip(tmp_path):
    config = AlbertConfig(
        vocab_size=30,
        embedding_size=8,
        hidden_size=8,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=12,
        sharing="attention",
        max_position_embeddings=8,
    )
    model = AlbertModel(config)
    names = original_variable_map(model)
    assert "bert/encoder/transformer/group_2/inner_group_0/ffn_1/intermediate/dense/kernel" in names
    assert (
        "bert/encoder/transformer/group_1/inner_group_0/attention_1/self/query/kernel" not in names
    )
    save_original_checkpoint(model, tmp_path / "ablation")
    other = AlbertModel(config)
    assert load_original_checkpoint(other, tmp_path / "ablation").missing == []
    for a, b in zip(model.weights, other.weights):
        assert np.array_equal(a, b)


def test_keras_formats_round_trip(tmp_path, tiny_dir, tiny_config, fixtures_dir):
    model = AlbertPretrainer(tiny_config)
    load_original_checkpoint(model, tiny_dir / "model.ckpt-best")
    ref = np.load(fixtures_dir / "albert_tiny_reference.npz")
    inputs = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
    expected = model(inputs)["mlm_logits"]
    model.save_weights(tmp_path / "a.weights.h5")
    fresh = AlbertPretrainer(tiny_config)
    fresh.load_weights(tmp_path / "a.weights.h5")
    np.testing.assert_array_equal(fresh(inputs)["mlm_logits"], expected)
    model.save(tmp_path / "a.keras")
    loaded = keras.models.load_model(tmp_path / "a.keras")
    assert isinstance(loaded, AlbertPretrainer) and loaded.config == tiny_config
    np.testing.assert_array_equal(loaded(inputs)["mlm_logits"], expected)


def test_convert_cli(tmp_path, tiny_dir, capsys):
    """The first conversion in a real process on this backend; the others in this process
    (`convert.main`, what it prints captured), saving a TensorFlow import each."""
    run = lambda *a: python_processes.run(
        [sys.executable, "-m", "albert_tf.convert", *a], capture_output=True, text=True, timeout=300
    )
    cfg = str(tiny_dir / "albert_config.json")
    r = run(
        "--albert_config_file",
        cfg,
        "--input",
        str(tiny_dir / "model.ckpt-best"),
        "--output",
        str(tmp_path / "w.weights.h5"),
    )
    assert r.returncode == 0, r.stderr
    assert "loaded 32 variables" in r.stdout
    code = convert.main(
        [
            "--albert_config_file",
            cfg,
            "--input",
            str(tmp_path / "w.weights.h5"),
            "--output",
            str(tmp_path / "back" / "model.ckpt-1"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    original = read_original_checkpoint(tiny_dir / "model.ckpt-best")
    back = read_original_checkpoint(tmp_path / "back" / "model.ckpt-1")
    assert all(back[n].tobytes() == v.tobytes() for n, v in original.items())
    capsys.readouterr()
    code = convert.main(
        [
            "--albert_config_file",
            cfg,
            "--input",
            str(tmp_path / "missing.weights.h5"),
            "--output",
            str(tmp_path / "x.weights.h5"),
        ]
    )
    assert code == 2 and "missing.weights.h5" in capsys.readouterr().err
    assert not (tmp_path / "x.weights.h5").exists()


@pytest.mark.parametrize(
    "kind", ["classifier", "regression", "multiple_choice", "squad_v1", "squad_v2"]
)
def test_task_models_round_trip_as_keras_files(kind, tmp_path, tiny_config):
    from albert_tf import AlbertClassifier, AlbertMultipleChoice, AlbertSquadV1, AlbertSquadV2

    model = {
        "classifier": lambda: AlbertClassifier(tiny_config, 3, dropout_prob=0.2),
        "regression": lambda: AlbertClassifier(tiny_config, 1, is_regression=True),
        "multiple_choice": lambda: AlbertMultipleChoice(tiny_config, num_choices=3),
        "squad_v1": lambda: AlbertSquadV1(tiny_config),
        "squad_v2": lambda: AlbertSquadV2(tiny_config, start_n_top=2, end_n_top=3),
    }[kind]()
    path = tmp_path / f"{kind}.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
    for a, b in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(a, b)
