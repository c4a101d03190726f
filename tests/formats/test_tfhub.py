"""Google's TF2 releases in and out: the TF Hub / Kaggle SavedModels and Model Garden TF2
checkpoints made by Model Garden's own tools (tests/data/fixtures/tfhub, README there) read into
albert_tf models with their recorded outputs, `export_tfhub` called the way code written for
Google's release calls it, the converter, the drivers' --init_checkpoint, from_pretrained, the
preprocessing model as the tokenizer, and bad inputs as one clear error."""

import json
import shutil
import sys

import keras
import numpy as np
import pytest
import python_processes
from repo_paths import FIXTURES
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertModel, AlbertPretrainer, export_tfhub, load_tfhub
from albert_tf.convert import main
from albert_tf.core.errors import InputError
from albert_tf.formats import model_garden as mg
from albert_tf.formats.common import rename
from albert_tf.formats.tf1 import read_original_checkpoint
from albert_tf.interop.model_files import detect_format
from albert_tf.modeling.names import original_variable_map
from albert_tf.text.vocab_files import read_spm_model

pytestmark = pytest.mark.backends  # CI runs these on TensorFlow and on JAX

TFHUB = FIXTURES / "tfhub"
TINY = FIXTURES / "albert_tiny"
SOP = ["cls/seq_relationship/output_bias", "cls/seq_relationship/output_weights"]
TOL = dict(rtol=0, atol=1e-5)
ROOT = FIXTURES.parents[2]


@pytest.fixture(scope="module")
def recorded():
    """What Google's SavedModels returned on the reference inputs (tf.saved_model.load)."""
    return dict(np.load(TFHUB / "tfhub_outputs.npz"))


def _inputs(o):
    return {
        "input_ids": o["input_ids"],
        "input_mask": o["input_mask"],
        "segment_ids": o["segment_ids"],
    }


def _hub_inputs(o):
    return {
        "input_word_ids": tf.constant(o["input_ids"], tf.int32),
        "input_mask": tf.constant(o["input_mask"], tf.int32),
        "input_type_ids": tf.constant(o["segment_ids"], tf.int32),
    }


def _check_outputs(model, recorded):
    """The model's outputs against the SavedModel's own (every layer, and the MLM logits)."""
    mlm = isinstance(model, AlbertPretrainer)
    features = _inputs(recorded)
    if mlm:
        features["masked_lm_positions"] = recorded["masked_lm_positions"]
    out = model(features, training=False)
    np.testing.assert_allclose(out["sequence_output"], recorded["sequence_output"], **TOL)
    np.testing.assert_allclose(out["pooled_output"], recorded["pooled_output"], **TOL)
    np.testing.assert_allclose(np.stack(out["encoder_outputs"]), recorded["encoder_outputs"], **TOL)
    if mlm:
        np.testing.assert_allclose(out["mlm_logits"], recorded["mlm_logits"], **TOL)


@pytest.mark.parametrize("folder", ["albert_tiny_model", "albert_tiny_model_with_mlm"])
def test_savedmodels_give_their_recorded_outputs(folder, recorded):
    model, report = load_tfhub(TFHUB / folder)
    mlm = folder.endswith("mlm")
    assert type(model) is (AlbertPretrainer if mlm else AlbertModel)
    assert model.config == AlbertConfig.from_json_file(TINY / "albert_config.json")
    assert len(report.loaded) == (30 if mlm else 25) and report.unused == []
    assert report.missing == (SOP if mlm else [])
    assert "4 layers (len(encoder_outputs)), 4 heads (per-head kernels)" in report.notes[0]
    # the missing sentence-order head is said once, by the report's `missing` line
    said = [line for line in str(report).splitlines() if "seq_relationship" in line]
    assert len(said) == (1 if mlm else 0)
    _check_outputs(model, recorded)
    assert detect_format(TFHUB / folder) == "tfhub"


@pytest.mark.parametrize("name", ["albert_tiny_encoder-1", "albert_tiny_pretrainer-1"])
def test_model_garden_checkpoints_give_the_recorded_outputs(name, recorded):
    path = TFHUB / "tf2_checkpoints" / name
    assert detect_format(path) == "model_garden"
    with pytest.raises(InputError, match="does not store its number of layers"):
        load_tfhub(path)
    model, report = load_tfhub(path, albert_config_file=TINY / "albert_config.json")
    pretrainer = "pretrainer" in name
    assert type(model) is (AlbertPretrainer if pretrainer else AlbertModel)
    assert report.missing == (SOP if pretrainer else []) and report.unused == []
    _check_outputs(model, recorded)
    # the weights are Google's TF1 ones, bit for bit (per-head reshapes are lossless)
    tf1 = read_original_checkpoint(TINY / "model.ckpt-best")
    for google, variable in original_variable_map(model).items():
        if google not in SOP:
            np.testing.assert_array_equal(variable.numpy(), tf1[google])


def _table(path):
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {r[0]: r[3] for r in rows if r[3] != "-"}


def test_name_tables_match_model_gardens_converter():
    """Our renaming of the TF2 checkpoint keys gives the TF1 name Model Garden's converter
    took each tensor from (recorded in the *_variables.txt files), and every SavedModel
    variable has a Google name."""
    for kind in ("encoder", "pretrainer"):
        for key, tf1_name in _table(TFHUB / f"tf2_{kind}_checkpoint_variables.txt").items():
            assert rename(key, mg.checkpoint_rules(5)) == tf1_name, key
    names = [
        line.split("\t")[1][: -len(":0")]
        for line in (TFHUB / "albert_tiny_model_with_mlm_variables.txt")
        .read_text()
        .splitlines()[1:]
    ]
    google = [rename(n, mg.SAVED_MODEL_RULES) for n in names]
    tiny = AlbertPretrainer(AlbertConfig.from_json_file(TINY / "albert_config.json"))
    assert sorted(google) == sorted(set(original_variable_map(tiny)) - set(SOP))


def _model_garden_key(google, block):
    """Model Garden's TF2 checkpoint key of a Google name (written out independently of the
    rules under test)."""
    b = "bert/encoder/transformer/group_0/inner_group_0/"
    table = {
        "bert/embeddings/word_embeddings": "0/embeddings",
        "bert/embeddings/position_embeddings": "1/embeddings",
        "bert/embeddings/token_type_embeddings": "2/embeddings",
        "bert/embeddings/LayerNorm/gamma": "3/gamma",
        "bert/embeddings/LayerNorm/beta": "3/beta",
        "bert/pooler/dense/kernel": f"{block + 1}/kernel",
        "bert/pooler/dense/bias": f"{block + 1}/bias",
    }
    for part in ("query", "key", "value"):
        for leaf in ("kernel", "bias"):
            table[f"{b}attention_1/self/{part}/{leaf}"] = (
                f"{block}/_attention_layer/_{part}_dense/{leaf}"
            )
    for google_part, theirs in (
        ("attention_1/output/dense", "_attention_layer/_output_dense"),
        ("ffn_1/intermediate/dense", "_intermediate_dense"),
        ("ffn_1/intermediate/output/dense", "_output_dense"),
    ):
        for leaf in ("kernel", "bias"):
            table[f"{b}{google_part}/{leaf}"] = f"{block}/{theirs}/{leaf}"
    for google_part, theirs in (
        ("LayerNorm", "_attention_layer_norm"),
        ("LayerNorm_1", "_output_layer_norm"),
    ):
        for leaf in ("gamma", "beta"):
            table[f"{b}{google_part}/{leaf}"] = f"{block}/{theirs}/{leaf}"
    return "layer_with_weights-" + table[google]


def _write_model_garden_checkpoint(path, model, heads):
    """A TF2 object checkpoint with Model Garden's AlbertEncoder keys for a model with E == H
    (no projection: the block is layer_with_weights-4), per-head kernels as theirs."""
    root = tf.Module()
    for google, variable in original_variable_map(model).items():
        value = variable.numpy()
        if "/self/" in google:
            value = value.reshape(value.shape[:-1] + (heads, -1))
        elif google.endswith("attention_1/output/dense/kernel"):
            value = value.reshape(heads, -1, value.shape[-1])
        node = root
        for part in _model_garden_key(google, 4).split("/")[:-1]:
            if not hasattr(node, part):
                setattr(node, part, tf.Module())
            node = getattr(node, part)
        setattr(node, _model_garden_key(google, 4).split("/")[-1], tf.Variable(value))
    return tf.train.Checkpoint(encoder=root).write(str(path))


def test_without_projection_the_layer_index_shifts(tmp_path):
    config = AlbertConfig(
        vocab_size=50,
        embedding_size=16,
        hidden_size=16,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=24,
        max_position_embeddings=20,
        type_vocab_size=16,  # Model Garden's default: kept, not cut
    )
    source = AlbertModel(config)
    prefix = _write_model_garden_checkpoint(tmp_path / "mg", source, heads=2)
    (tmp_path / "albert_config.json").write_text(json.dumps(config.to_dict()))
    model, report = load_tfhub(prefix)  # the albert_config.json beside it
    assert model.embedding.projection is None and report.unused == [] and report.missing == []
    assert any("type_vocab_size is 16" in n for n in report.notes)
    ids = np.array([[2, 7, 9, 3]])
    feats = {"input_ids": ids, "segment_ids": np.array([[0, 5, 15, 1]])}
    np.testing.assert_array_equal(model(feats)["sequence_output"], source(feats)["sequence_output"])
    wrong = config.to_dict() | {"num_attention_heads": 4}
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    with pytest.raises(
        InputError, match="num_attention_heads is 4, but its per-head kernels have 2"
    ):
        load_tfhub(prefix, albert_config_file=tmp_path / "wrong.json")


def test_config_beside_a_savedmodel_wins_and_must_fit(tmp_path, recorded):
    folder = tmp_path / "albert_en_tiny"
    shutil.copytree(TFHUB / "albert_tiny_model", folder)
    config = json.loads((TINY / "albert_config.json").read_text())
    (folder / "albert_config.json").write_text(json.dumps(config | {"hidden_dropout_prob": 0.1}))
    model, report = load_tfhub(folder)
    assert model.config.hidden_dropout_prob == 0.1 and "config from" in report.notes[0]
    _check_outputs(model, recorded)
    (folder / "albert_config.json").write_text(json.dumps(config | {"num_hidden_groups": 2}))
    with pytest.raises(InputError, match="one shared block"):
        load_tfhub(folder)
    (folder / "albert_config.json").write_text(json.dumps(config | {"intermediate_size": 48}))
    with pytest.raises(InputError, match="shape mismatch"):
        load_tfhub(folder)


def test_export_is_called_like_googles_release(ram_bucket, tiny_pretrainer, reference):
    """Code written for albert_en_base/3 runs on the export unchanged; our reader reads it back."""
    path = f"{ram_bucket}/albert_en_tiny"
    report = export_tfhub(tiny_pretrainer, path, TFHUB / "albert_tiny_preprocess")
    assert report.left_out == SOP and len(report.written) == 30
    obj = tf.saved_model.load(path)
    out = obj(_hub_inputs(reference), training=False)
    assert sorted(out) == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
    np.testing.assert_allclose(out["sequence_output"], reference["sequence_output"], **TOL)
    np.testing.assert_array_equal(out["default"], out["pooled_output"])
    np.testing.assert_allclose(out["pooled_output"], reference["pooled_output"], **TOL)
    np.testing.assert_allclose(
        np.stack(out["encoder_outputs"]), reference["all_encoder_layers"], **TOL
    )
    positions = tf.constant(reference["masked_lm_positions"], tf.int32)
    mlm = obj.mlm(dict(_hub_inputs(reference), masked_lm_positions=positions), training=False)
    np.testing.assert_allclose(mlm["mlm_logits"], reference["masked_lm_logits"], **TOL)
    served = obj.signatures["serving_default"](**_hub_inputs(reference))
    np.testing.assert_array_equal(served["encoder_outputs_3"], out["sequence_output"])
    assert len(obj.trainable_variables) == 30
    assert tf.io.gfile.GFile(obj.sp_model_file.asset_path.numpy()).size() > 0
    back, report = load_tfhub(path)
    assert isinstance(back, AlbertPretrainer) and report.missing == SOP
    assert "albert_config.json" in report.notes[0]
    ours = original_variable_map(tiny_pretrainer)
    for google, variable in original_variable_map(back).items():
        if google not in SOP:
            np.testing.assert_array_equal(variable.numpy(), ours[google].numpy())


def test_converting_a_model_garden_pretrainer_says_the_missing_head_once(tmp_path, capsys):
    path = TFHUB / "tf2_checkpoints" / "albert_tiny_pretrainer-1"
    argv = ["--input", str(path), "--albert_config_file", str(TINY / "albert_config.json")]
    assert main([*argv, "--output", str(tmp_path / "tf1" / "model.ckpt-1")]) == 0
    printed = capsys.readouterr().out
    said = [line for line in printed.splitlines() if "seq_relationship" in line]
    assert len(said) == 1 and said[0].startswith("left out (not in the input, untrained): cls/")


def test_convert_tfhub_to_every_format_and_back(tmp_path, capsys, recorded):
    hub = str(TFHUB / "albert_tiny_model_with_mlm")
    assert main(["--input", hub, "--output", str(tmp_path / "tf1" / "model.ckpt-1")]) == 0
    printed = capsys.readouterr().out
    # what the input lacks is said once: the line of what was left out of the output (no
    # `missing` line of the load report, no per-name lines, no notes saying it again)
    said = [line for line in printed.splitlines() if "seq_relationship" in line]
    assert len(said) == 1 and said[0].startswith("left out (not in the input, untrained): cls/")
    assert "2 missing" in printed  # the load report's count stays
    assert not any(n.startswith("cls/seq") for n in read_original_checkpoint(tmp_path / "tf1"))
    assert (
        main(["--input", hub, "--output", str(tmp_path / "hf"), "--output_format", "huggingface"])
        == 0
    )
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["architectures"] == ["AlbertForMaskedLM"]  # no SOP head written untrained
    assert (tmp_path / "hf" / "tokenizer.json").is_file()
    capsys.readouterr()
    assert main(["--input", hub, "--output", str(tmp_path / "pre.keras")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "use --model encoder" in err
    assert main(["--input", hub, "--output", str(tmp_path / "e.keras"), "--model", "encoder"]) == 0
    # and back: Hugging Face → tfhub → albert_tf, the recorded outputs
    assert (
        main(
            [
                "--input",
                str(tmp_path / "hf"),
                "--output",
                str(tmp_path / "hub"),
                "--output_format",
                "tfhub",
            ]
        )
        == 0
    )
    assert (tmp_path / "hub" / "assets" / "spiece.model").is_file()
    model, report = load_tfhub(tmp_path / "hub")
    assert report.missing == SOP
    _check_outputs(model, recorded)


def test_preprocessing_savedmodel_is_a_tokenizer():
    """albert_en_preprocess/3's SentencePiece model (an op attribute, no asset) is the
    release's model; with Google's normalization it gives Google's ids; the SavedModel's own
    tokenizer agrees on 37 of the 40 fixture strings (recorded, and rerun here)."""
    import tensorflow_text  # noqa: F401  (the preprocessing model's ops)

    from albert_tf.text.encoding import TextEncoder

    folder = TFHUB / "albert_tiny_preprocess"
    assert (
        read_spm_model(folder)
        == (TFHUB / "albert_tiny_model" / "assets" / "30k-clean.model").read_bytes()
    )
    rows = [
        json.loads(line)
        for line in (TFHUB / "tfhub_preprocess_tokens.jsonl").open(encoding="utf-8")
    ]
    encoder = TextEncoder.from_files(spm_model_file=folder)
    assert [encoder.ids(r["text"]) for r in rows] == [r["ids"] for r in rows]
    same = [r["hub_ids"] == r["ids"] for r in rows]
    assert sum(same) == 37
    assert {r["text"][:5] for r, s in zip(rows, same) if not s} == {"There", "Straß", "Zero\u200b"}
    hub = tf.saved_model.load(str(folder))
    assert hub.tokenize(tf.constant([r["text"] for r in rows])).to_list() == [
        r["hub_ids"] for r in rows
    ]


def test_from_pretrained_and_fill_mask_read_a_tfhub_folder(recorded):
    from albert_tf import AlbertTextClassifier, fill_mask, load_pretrained

    model = AlbertTextClassifier.from_pretrained(
        TFHUB / "albert_tiny_model", num_labels=2, spm_model_file=TFHUB / "albert_tiny_preprocess"
    )
    out = model(_inputs(recorded) | {"input_mask": recorded["input_mask"]})
    assert out["probabilities"].shape == (4, 2)
    np.testing.assert_allclose(
        model.albert(_inputs(recorded))["pooled_output"], recorded["pooled_output"], **TOL
    )
    assert model.predict(["a short text"])["probabilities"].shape == (1, 2)
    pretrainer, encoder = load_pretrained(TFHUB / "albert_tiny_model_with_mlm")
    assert isinstance(pretrainer, AlbertPretrainer) and encoder.ids("the") == [14]
    assert len(fill_mask(pretrainer, "the [MASK] is here.", top_k=3, encoder=encoder)) == 3


def _saved_module(path, **variables):
    module = tf.Module()
    module.vars = [
        tf.Variable(np.zeros(shape, np.float32), name=n) for n, shape in variables.items()
    ]
    tf.saved_model.save(module, str(path))
    return path


def test_bad_inputs_are_one_clear_error(tmp_path, capsys):
    cases = {
        "preprocessing model": TFHUB / "albert_tiny_preprocess",
        "holds no ALBERT encoder": _saved_module(tmp_path / "other", dense_kernel=(2, 2)),
        "holds a BERT encoder": _saved_module(
            tmp_path / "bert", **{"transformer/layer_0/self_attention/query/kernel": (4, 2, 2)}
        ),
    }
    truncated = tmp_path / "truncated"
    shutil.copytree(
        TFHUB / "albert_tiny_model", truncated, ignore=shutil.ignore_patterns("variables")
    )
    cases["is incomplete: no variables/variables.index"] = truncated
    corrupt = tmp_path / "corrupt"
    shutil.copytree(TFHUB / "albert_tiny_model", corrupt)
    (corrupt / "saved_model.pb").write_bytes(
        (TFHUB / "albert_tiny_model" / "saved_model.pb").read_bytes()[:5000]
    )
    cases["not a SavedModel protocol buffer"] = corrupt
    for message, path in cases.items():
        with pytest.raises(InputError, match=message):
            load_tfhub(path)
        assert main(["--input", str(path), "--output", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and err.count("\n") == 0 and message in err
    with pytest.raises(ValueError, match="holds no SentencePiece model"):
        read_spm_model(tmp_path / "other")


def test_validation_checks_a_tfhub_init_checkpoint():
    from albert_tf.drivers.validation import check_checkpoint

    config = AlbertConfig.from_json_file(TINY / "albert_config.json")
    assert check_checkpoint("init_checkpoint", TFHUB / "albert_tiny_model", config)
    with pytest.raises(InputError, match="--init_checkpoint: --albert_config_file does not fit"):
        check_checkpoint(
            "init_checkpoint", TFHUB / "albert_tiny_model", config.replace(intermediate_size=48)
        )


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="a driver run: the engine's JAX path is separate",
)
def test_driver_initialises_from_a_tfhub_folder(tmp_path, data_dir):
    """run_classifier.py --init_checkpoint=<SavedModel folder> --spm_model_file=<preprocessing
    folder>: the encoder loads from the SavedModel (its report logged), two steps train."""
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        str(ROOT / "run_classifier.py"),
        "--task_name=mrpc",
        f"--data_dir={data_dir}",
        f"--albert_config_file={TINY / 'albert_config.json'}",
        f"--init_checkpoint={TFHUB / 'albert_tiny_model'}",
        f"--spm_model_file={TFHUB / 'albert_tiny_preprocess'}",
        f"--output_dir={out}",
        "--max_seq_length=32",
        "--train_batch_size=8",
        "--train_step=2",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--do_train",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{TFHUB / 'albert_tiny_model'}: loaded 25 variables" in r.stderr
    assert (out / "ckpt-2.index").is_file()


def test_activation_is_read_off_the_graph_ops():
    """A SavedModel without a config: an Erf op is exact GELU, a Relu op relu, else Google's
    tanh GELU (what Model Garden's "gelu" computes; the fixtures' graph has Tanh and Pow)."""
    from albert_tf.core.saved_model_proto import read_saved_model
    from albert_tf.formats import tfhub

    class Ops:
        def __init__(self, ops):
            self.ops = ops

        def op_types(self):
            return self.ops

    assert tfhub._activation(Ops({"Erf", "Tanh"}))[0] == "gelu_exact"
    assert tfhub._activation(Ops({"Relu", "Tanh"}))[0] == "relu"
    ops = read_saved_model(TFHUB / "albert_tiny_model").op_types()
    assert {"Tanh", "Pow"} <= ops and tfhub._activation(Ops(ops))[0] == "gelu"
