"""brightmart/albert_zh checkpoints: its own layout (word table folded, blocks renamed) and its
`*_google` releases load with the format detected, and give brightmart's own code's outputs
(tests/data/fixtures/albert_zh, made by running that code); its configs read as they are; its
pre-LN variant and a BERT checkpoint are refused in one line."""

import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import (
    AlbertConfig,
    AlbertPretrainer,
    convert,
    convert_model,
    load_original_checkpoint,
)
from albert_tf.core.errors import InputError
from albert_tf.formats.tf1 import check_checkpoint_fits_config, read_original_checkpoint

pytestmark = pytest.mark.backends  # CI runs these on TensorFlow and on JAX

LAYOUTS = ["albert_zh_tiny", "albert_zh_tiny_google"]
OUTPUTS = [
    ("sequence_output", "sequence_output"),
    ("pooled_output", "pooled_output"),
    ("embedding_output", "embedding_output"),
    ("sop_logits", "sentence_order_logits"),
    ("mlm_logits", "masked_lm_logits"),
]


def _maxdiff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def _load(folder):
    config = AlbertConfig.from_json_file(folder / "albert_config.json")
    model = AlbertPretrainer(config)
    report = load_original_checkpoint(model, folder)  # the folder: its one checkpoint
    return config, model, report


@pytest.mark.parametrize("name", LAYOUTS)
def test_outputs_equal_brightmarts_own_code(fixtures_dir, name):
    folder = fixtures_dir / "albert_zh"
    config, model, report = _load(folder / name)
    assert report.missing == [] and report.unused == []
    assert (
        any(n.endswith(("lamb_m", "adam_m")) for n in report.ignored)
        and "global_step" in report.ignored
    )
    ref = dict(np.load(folder / f"{name}_reference.npz"))
    inputs = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
    out = model(inputs, training=False)
    for ours, theirs in OUTPUTS:  # float32 reassociation: the folded MLM decoder's logits
        # (values to ~21) differ by up to 1.2e-5 from brightmart's x·W2ᵀ·Embᵀ
        np.testing.assert_allclose(out[ours], ref[theirs], rtol=1e-6, atol=1e-5, err_msg=ours)
    for mine, theirs in zip(out["encoder_outputs"], ref["all_encoder_layers"]):
        assert _maxdiff(mine, theirs) < 1e-5


def test_brightmart_config_reads_as_is_and_folds_the_embedding(fixtures_dir):
    folder = fixtures_dir / "albert_zh"
    raw = json.loads((folder / "albert_zh_tiny" / "albert_config.json").read_text())
    config = AlbertConfig.from_json_file(folder / "albert_zh_tiny" / "albert_config.json")
    assert raw["embedding_size"] == 16 and config.embedding_size == config.hidden_size == 32
    assert (
        config.extra["ln_type"] == "postln"
        and config.extra["pooler_type"] == "first_token_transform"
    )
    google = AlbertConfig.from_json_file(folder / "albert_zh_tiny_google" / "albert_config.json")
    assert google.embedding_size == 16  # Google's layout: factorized as released
    # the brightmart checkpoint against a Google-layout config: one line naming both
    with pytest.raises(InputError, match="does not fit checkpoint"):
        check_checkpoint_fits_config(google, folder / "albert_zh_tiny" / "model.ckpt")
    assert check_checkpoint_fits_config(config, folder / "albert_zh_tiny").endswith("model.ckpt")


def test_pre_ln_and_bert_layouts_are_refused_in_one_line(fixtures_dir, tmp_path):
    folder = fixtures_dir / "albert_zh"
    with pytest.raises(InputError, match="ln_type 'preln'") as err:
        AlbertConfig.from_json_file(folder / "albert_zh_tiny_preln" / "albert_config.json")
    assert "\n" not in str(err.value)
    # a BERT checkpoint (one scope per layer): neither Google's layout nor brightmart's
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        for name in (
            "bert/embeddings/word_embeddings",
            "bert/encoder/layer_0/attention/self/query/kernel",
        ):
            tf.compat.v1.get_variable(name, [4, 4])
        sess.run(tf.compat.v1.global_variables_initializer())
        tf.compat.v1.train.Saver().save(sess, str(tmp_path / "bert.ckpt"))
    config = AlbertConfig.from_json_file(folder / "albert_zh_tiny" / "albert_config.json")
    with pytest.raises(InputError, match="BERT's layout.*bert/encoder/layer_0/"):
        load_original_checkpoint(AlbertPretrainer(config), tmp_path / "bert.ckpt")


def test_converter_writes_googles_layout_and_hugging_face(fixtures_dir, tmp_path, capsys):
    folder = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    convert_model(
        folder,
        tmp_path / "google" / "model.ckpt-1",
        albert_config_file=folder / "albert_config.json",
    )
    written = read_original_checkpoint(tmp_path / "google" / "model.ckpt-1")
    assert "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma" in written
    assert written["bert/embeddings/word_embeddings"].shape == (484, 32)  # folded
    raw = read_original_checkpoint(folder / "model.ckpt")
    np.testing.assert_array_equal(
        written["bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"],
        raw["bert/encoder/layer_shared/attention/self/query/kernel"],
    )
    capsys.readouterr()
    code = convert.main(
        ["--input", str(folder), "--output", str(tmp_path / "hf"), "--output_format", "huggingface"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    assert "loaded 30 variables, 0 missing, 0 unused" in out, out


def test_a_release_folder_with_a_stale_checkpoint_file(fixtures_dir, tmp_path):
    """brightmart's zips hold albert_model.ckpt.* and a `checkpoint` file naming another
    prefix: the folder still resolves to its one checkpoint."""
    import shutil

    from albert_tf.formats.tf1 import resolve_checkpoint_path

    src = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    for f in src.glob("model.ckpt.*"):
        shutil.copy(f, tmp_path / f.name.replace("model.ckpt", "albert_model.ckpt"))
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-0"\n')
    assert resolve_checkpoint_path(tmp_path) == str(tmp_path / "albert_model.ckpt")
    shutil.copy(tmp_path / "albert_model.ckpt.index", tmp_path / "other.ckpt.index")
    with pytest.raises(FileNotFoundError, match="it holds 2: name one"):
        resolve_checkpoint_path(tmp_path)
