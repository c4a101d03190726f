"""keras-hub presets both ways: keras-hub's own AlbertBackbone/AlbertTokenizer load an export and
reproduce Google's reference outputs; presets and live backbones import back."""

import sys

import keras_hub
import numpy as np
import pytest
import sentencepiece as spm

from albert_tf import (
    AlbertConfig,
    AlbertModel,
    AlbertPretrainer,
    export_keras_hub_preset,
    load_keras_hub,
)
from albert_tf.formats.keras_hub import backbone_kwargs, import_keras_hub, to_backbone
from albert_tf.modeling.names import original_variable_map

pytestmark = pytest.mark.backends  # CI runs these on TensorFlow and on JAX

TOL = dict(rtol=0, atol=1e-5)


def _kh_inputs(ref):
    return {
        "token_ids": ref["input_ids"],
        "segment_ids": ref["segment_ids"],
        "padding_mask": ref["input_mask"],
    }


def _our_inputs(ref):
    return {
        "input_ids": ref["input_ids"],
        "segment_ids": ref["segment_ids"],
        "input_mask": ref["input_mask"],
    }


@pytest.fixture(scope="module")
def preset(tmp_path_factory, tiny_pretrainer, fixtures_dir):
    folder = tmp_path_factory.mktemp("preset")
    report = export_keras_hub_preset(tiny_pretrainer, folder, fixtures_dir / "spm.model")
    return folder, report


def test_keras_hub_loads_export_and_matches_reference(preset, reference, fixtures_dir):
    folder, report = preset
    assert len(report.written) == 30 and report.left_out == [
        "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights",
    ]
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(folder))
    out = backbone(_kh_inputs(reference))
    np.testing.assert_allclose(out["sequence_output"], reference["sequence_output"], **TOL)
    np.testing.assert_allclose(out["pooled_output"], reference["pooled_output"], **TOL)
    tokenizer = keras_hub.models.AlbertTokenizer.from_preset(str(folder))
    text = "the quick brown fox jumps over the lazy dog."
    expected = spm.SentencePieceProcessor(model_file=str(fixtures_dir / "spm.model")).encode(text)
    assert np.asarray(tokenizer(text)).tolist() == expected


def test_masked_lm_task_differs_only_by_its_layer_norm_epsilon(preset, reference):
    task = keras_hub.models.AlbertMaskedLM.from_preset(str(preset[0]))
    inputs = {**_kh_inputs(reference), "mask_positions": reference["masked_lm_positions"]}
    diff = np.abs(np.asarray(task(inputs)) - reference["masked_lm_logits"]).max()
    assert 1e-5 < diff < 1e-3  # keras-hub's MaskedLMHead LayerNorm: epsilon 1e-5, Google's 1e-12
    task.masked_lm_head._intermediate_layer_norm.epsilon = 1e-12
    np.testing.assert_allclose(task(inputs), reference["masked_lm_logits"], **TOL)


def test_preset_imports_back(preset, reference, tiny_pretrainer):
    model, report = load_keras_hub(preset[0])
    assert isinstance(model, AlbertPretrainer) and model.config == tiny_pretrainer.config.replace(
        attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0
    )
    assert len(report.loaded) == 30 and report.unused == []
    assert report.missing == [
        "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights",
    ]
    out = model({**_our_inputs(reference), "masked_lm_positions": reference["masked_lm_positions"]})
    np.testing.assert_allclose(out["sequence_output"], reference["sequence_output"], **TOL)
    np.testing.assert_allclose(out["mlm_logits"], reference["masked_lm_logits"], **TOL)
    for name, variable in original_variable_map(model).items():
        if not name.startswith("cls/seq_relationship"):  # the reshapes are lossless
            np.testing.assert_array_equal(variable, original_variable_map(tiny_pretrainer)[name])


def test_encoder_preset_has_no_task(tmp_path, tiny_pretrainer):
    report = export_keras_hub_preset(tiny_pretrainer.albert, tmp_path)
    assert len(report.written) == 25 and report.left_out == []
    assert not (tmp_path / "task.json").exists()
    model, report = load_keras_hub(tmp_path)
    assert isinstance(model, AlbertModel) and report.missing == []


def test_live_backbone_into_pretrainer_reports_heads_missing(tiny_pretrainer, reference):
    backbone = to_backbone(tiny_pretrainer)
    target = AlbertPretrainer(tiny_pretrainer.config)
    model, report = load_keras_hub(backbone, model=target)
    assert model is target and len(report.loaded) == 25
    assert report.missing and all(n.startswith("cls/") for n in report.missing)
    np.testing.assert_allclose(
        model.albert(_our_inputs(reference))["pooled_output"], reference["pooled_output"], **TOL
    )


def test_groups_inner_groups_and_no_projection_cross_load(reference):
    config = AlbertConfig(
        vocab_size=1000,
        embedding_size=32,
        hidden_size=32,
        num_hidden_layers=4,
        num_hidden_groups=2,
        inner_group_num=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=64,
        initializer_range=0.3,
    )
    ours = AlbertModel(config)
    assert ours.embedding.projection is None  # E == H: exported as an exact identity
    backbone = to_backbone(ours)
    expected = ours(_our_inputs(reference))["sequence_output"]
    np.testing.assert_allclose(backbone(_kh_inputs(reference))["sequence_output"], expected, **TOL)
    back, report = load_keras_hub(backbone)
    assert report.missing == [] and len(report.loaded) == len(original_variable_map(ours))
    np.testing.assert_allclose(back(_our_inputs(reference))["sequence_output"], expected, **TOL)
    projection = next(v for v in backbone.weights if v.path == "embedding_projection/kernel")
    projection.assign(2 * np.eye(32, dtype="float32"))
    with pytest.raises(ValueError, match="not the identity"):
        load_keras_hub(backbone)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(sharing="ffn"), "sharing='ffn'"),
        (dict(num_hidden_groups=3), "divisible by num_hidden_groups"),
        (dict(hidden_act="relu"), "hidden_act='relu'"),
    ],
)
def test_refuses_what_keras_hub_cannot_compute(change, message):
    config = AlbertConfig(
        vocab_size=10,
        embedding_size=4,
        hidden_size=4,
        num_hidden_layers=4,
        num_attention_heads=1,
        intermediate_size=4,
        **change,
    )
    with pytest.raises(ValueError, match=message):
        backbone_kwargs(config)


def test_without_keras_hub_a_conversion_says_how_to_install_it(
    monkeypatch, tmp_path, capsys, fixtures_dir
):
    """Without the [keras_hub] extra, a keras-hub conversion ends in one `error:` line with
    the pip command (not "No module named 'keras_hub'"), and writes nothing."""
    from albert_tf.convert import main

    monkeypatch.setitem(sys.modules, "keras_hub", None)  # `import keras_hub` now fails
    with pytest.raises(ImportError, match=r'pip install "albert_tf\[keras_hub\]"'):
        import_keras_hub()
    out = tmp_path / "kh"
    tiny = fixtures_dir / "albert_tiny"
    code = main(["--input", str(tiny), "--output_format", "keras_hub", "--output", str(out)])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("error: ")
    assert 'pip install "albert_tf[keras_hub]"' in last
    assert not out.exists()
