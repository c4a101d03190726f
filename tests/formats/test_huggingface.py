"""Hugging Face folders both ways, through safetensors' NumPy API: the export holds exactly
transformers' ALBERT tensor names and shapes, imports back to the reference outputs, and (when
transformers and torch are installed) transformers itself loads it and gives the same outputs."""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from albert_tf import (
    AlbertClassifier,
    AlbertConfig,
    AlbertModel,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertSquadV1,
    AlbertSquadV2,
    AlbertTokenClassifier,
    export_huggingface,
    load_huggingface,
)

pytestmark = pytest.mark.backends  # CI runs these on TensorFlow and on JAX

TOL = dict(rtol=0, atol=1e-5)


def transformers_albert_table(V, E, H, I, P, T, groups=1, inner=1):
    """transformers' ALBERT state dict (AlbertForPreTraining, as save_pretrained writes it: the
    tied decoder weight and bias left out), written from modeling_albert.py: name → shape, torch
    Linear weights [out, in]."""
    table = {
        "albert.embeddings.word_embeddings.weight": (V, E),
        "albert.embeddings.position_embeddings.weight": (P, E),
        "albert.embeddings.token_type_embeddings.weight": (T, E),
        "albert.embeddings.LayerNorm.weight": (E,),
        "albert.embeddings.LayerNorm.bias": (E,),
        "albert.encoder.embedding_hidden_mapping_in.weight": (H, E),
        "albert.encoder.embedding_hidden_mapping_in.bias": (H,),
        "albert.pooler.weight": (H, H),
        "albert.pooler.bias": (H,),
        "predictions.bias": (V,),
        "predictions.dense.weight": (E, H),
        "predictions.dense.bias": (E,),
        "predictions.LayerNorm.weight": (E,),
        "predictions.LayerNorm.bias": (E,),
        "sop_classifier.classifier.weight": (2, H),
        "sop_classifier.classifier.bias": (2,),
    }
    for g in range(groups):
        for i in range(inner):
            p = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{i}."
            for lin in ("query", "key", "value", "dense"):
                table[p + f"attention.{lin}.weight"] = (H, H)
                table[p + f"attention.{lin}.bias"] = (H,)
            table.update(
                {
                    p + "attention.LayerNorm.weight": (H,),
                    p + "attention.LayerNorm.bias": (H,),
                    p + "ffn.weight": (I, H),
                    p + "ffn.bias": (I,),
                    p + "ffn_output.weight": (H, I),
                    p + "ffn_output.bias": (H,),
                    p + "full_layer_layer_norm.weight": (H,),
                    p + "full_layer_layer_norm.bias": (H,),
                }
            )
    return table


def _inputs(ref, mlm=True):
    keys = ("input_ids", "input_mask", "segment_ids") + (("masked_lm_positions",) if mlm else ())
    return {k: ref[k] for k in keys}


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_pretrainer, fixtures_dir):
    folder = tmp_path_factory.mktemp("hf")
    report = export_huggingface(tiny_pretrainer, folder, fixtures_dir / "spm.model")
    return folder, report


def test_export_has_transformers_names_shapes_and_config(exported, fixtures_dir):
    folder, report = exported
    tensors = load_file(str(folder / "model.safetensors"))
    assert {n: tuple(t.shape) for n, t in tensors.items()} == transformers_albert_table(
        V=1000, E=16, H=32, I=64, P=64, T=2
    )
    assert all(t.dtype == np.float32 for t in tensors.values())
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "albert" and config["architectures"] == ["AlbertForPreTraining"]
    assert config["hidden_act"] == "gelu_new" and config["layer_norm_eps"] == 1e-12
    assert (config["embedding_size"], config["hidden_size"], config["num_hidden_layers"]) == (
        16,
        32,
        4,
    )
    assert (folder / "spiece.model").read_bytes() == (fixtures_dir / "spm.model").read_bytes()
    assert json.loads((folder / "tokenizer_config.json").read_text())["do_lower_case"] is True
    assert len(report.written) == 32 and report.left_out == []


def test_import_matches_reference_and_is_lossless(exported, reference, tiny_pretrainer):
    model, report = load_huggingface(exported[0])
    assert isinstance(model, AlbertPretrainer) and model.config == tiny_pretrainer.config
    assert len(report.loaded) == 32 and report.missing == [] and report.unused == []
    out = model(_inputs(reference))
    np.testing.assert_allclose(out["mlm_logits"], reference["masked_lm_logits"], **TOL)
    np.testing.assert_allclose(out["sop_logits"], reference["sentence_order_logits"], **TOL)
    for a, b in zip(model.weights, tiny_pretrainer.weights):
        np.testing.assert_array_equal(a, b)


def _randomize(model, seed=0):
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    return model


@pytest.mark.parametrize(
    "kind, arch, head",
    [
        ("classifier", "AlbertForSequenceClassification", {"classifier.weight": (3, 32)}),
        ("regression", "AlbertForSequenceClassification", {"classifier.weight": (1, 32)}),
        ("multi_label", "AlbertForSequenceClassification", {"classifier.weight": (3, 32)}),
        ("multiple_choice", "AlbertForMultipleChoice", {"classifier.weight": (1, 32)}),
        ("squad_v1", "AlbertForQuestionAnswering", {"qa_outputs.weight": (2, 32)}),
        ("token", "AlbertForTokenClassification", {"classifier.weight": (5, 32)}),
    ],
)
def test_task_heads_both_ways(kind, arch, head, tmp_path, tiny_pretrainer):
    c = tiny_pretrainer.config
    model = _randomize(
        {
            "classifier": lambda: AlbertClassifier(c, 3),
            "regression": lambda: AlbertClassifier(c, 1, is_regression=True),
            "multi_label": lambda: AlbertClassifier(c, 3, multi_label=True),
            "multiple_choice": lambda: AlbertMultipleChoice(c, num_choices=4),
            "squad_v1": lambda: AlbertSquadV1(c),
            # NER label names travel as transformers' id2label
            "token": lambda: AlbertTokenClassifier(
                c, 5, label_names=["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
            ),
        }[kind]()
    )
    export_huggingface(model, tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == [arch]
    tensors = load_file(str(tmp_path / "model.safetensors"))
    assert all(tuple(tensors[n].shape) == s for n, s in head.items())
    back, report = load_huggingface(tmp_path)
    assert type(back) is type(model) and report.missing == [] and report.unused == []
    assert getattr(back, "is_regression", None) == getattr(model, "is_regression", None)
    assert getattr(back, "label_names", None) == getattr(model, "label_names", None)
    assert getattr(back, "multi_label", None) == getattr(model, "multi_label", None)
    for a, b in zip(model.weights, back.weights):
        np.testing.assert_array_equal(a, b)


def test_squad_v2_head_is_left_out(tmp_path, tiny_pretrainer):
    report = export_huggingface(AlbertSquadV2(tiny_pretrainer.config), tmp_path)
    assert "start_logits/dense/kernel" in report.left_out
    assert not any(n.startswith("bert/") for n in report.left_out)
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["AlbertModel"]


def test_bare_albert_model_names_and_no_projection(tmp_path, reference):
    """transformers' AlbertModel saves without the `albert.` prefix; E == H still has a
    projection."""
    config = AlbertConfig(
        vocab_size=1000,
        embedding_size=32,
        hidden_size=32,
        num_hidden_layers=2,
        num_hidden_groups=2,
        inner_group_num=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=64,
    )
    ours = _randomize(AlbertModel(config), seed=1)
    export_huggingface(ours, tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    np.testing.assert_array_equal(
        tensors["albert.encoder.embedding_hidden_mapping_in.weight"], np.eye(32)
    )
    assert "albert.encoder.albert_layer_groups.1.albert_layers.1.ffn.weight" in tensors
    save_file(
        {n[len("albert.") :]: t for n, t in tensors.items()}, str(tmp_path / "model.safetensors")
    )
    back, report = load_huggingface(tmp_path)
    assert isinstance(back, AlbertModel) and report.missing == []
    np.testing.assert_array_equal(
        back(_inputs(reference, mlm=False))["sequence_output"],
        ours(_inputs(reference, mlm=False))["sequence_output"],
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "bert"}, "model_type is 'bert'"),
        ({"layer_norm_eps": 1e-5}, "layer_norm_eps"),
        ({"hidden_act": "swish"}, "hidden_act 'swish'"),
    ],
)
def test_bad_config_names_the_file(change, message, exported, tmp_path):
    config = json.loads((exported[0] / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    (tmp_path / "model.safetensors").write_bytes((exported[0] / "model.safetensors").read_bytes())
    with pytest.raises(ValueError, match=message) as e:
        load_huggingface(tmp_path)
    assert str(tmp_path / "config.json") in str(e.value)


def test_transformers_loads_export(exported, reference, fixtures_dir, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = str(exported[0])
    ids = {
        "input_ids": torch.tensor(reference["input_ids"]).long(),
        "attention_mask": torch.tensor(reference["input_mask"]).long(),
        "token_type_ids": torch.tensor(reference["segment_ids"]).long(),
    }
    positions = reference["masked_lm_positions"][:, :, None]
    with torch.no_grad():
        base = transformers.AlbertModel.from_pretrained(folder).eval()(**ids)
        mlm = transformers.AlbertForMaskedLM.from_pretrained(folder).eval()(**ids).logits
        pre = transformers.AlbertForPreTraining.from_pretrained(folder).eval()(**ids)
    np.testing.assert_allclose(base.last_hidden_state.numpy(), reference["sequence_output"], **TOL)
    np.testing.assert_allclose(base.pooler_output.numpy(), reference["pooled_output"], **TOL)
    for logits in (mlm, pre.prediction_logits):
        np.testing.assert_allclose(
            np.take_along_axis(logits.numpy(), positions, axis=1),
            reference["masked_lm_logits"],
            **TOL,
        )
    np.testing.assert_allclose(pre.sop_logits.numpy(), reference["sentence_order_logits"], **TOL)
    # transformers' own state dict has exactly the exported names (less buffers and tied copies)
    theirs = transformers.AlbertForPreTraining(transformers.AlbertConfig.from_pretrained(folder))
    their_names = {n for n in theirs.state_dict() if not n.startswith("predictions.decoder.")}
    assert their_names == set(load_file(folder + "/model.safetensors"))
    tokenizer = transformers.AlbertTokenizer.from_pretrained(folder)
    from albert_tf import FullTokenizer, preprocess_text

    ours = FullTokenizer(None, spm_model_file=str(fixtures_dir / "spm.model"))
    text = "The quick brown fox jumps over the lazy dog."
    assert tokenizer(text, add_special_tokens=False)["input_ids"] == ours.convert_tokens_to_ids(
        ours.tokenize(preprocess_text(text, lower=True))
    )
    # and a folder transformers wrote itself imports
    theirs_cls = transformers.AlbertForSequenceClassification.from_pretrained(folder, num_labels=3)
    theirs_cls.save_pretrained(tmp_path / "theirs")
    model, report = load_huggingface(tmp_path / "theirs")
    assert isinstance(model, AlbertClassifier) and model.num_labels == 3 and report.missing == []
    with torch.no_grad():
        expected = theirs_cls.eval()(**ids).logits.numpy()
    np.testing.assert_allclose(model(_inputs(reference, mlm=False))["logits"], expected, **TOL)


def test_sharded_folder_and_unknown_head(exported, tmp_path):
    """A sharded export (index + shards) imports; a head albert_tf has no class for is unused."""
    tensors = load_file(str(exported[0] / "model.safetensors"))
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[::2],
        "model-00002-of-00002.safetensors": names[1::2],
    }
    for shard, part in shards.items():
        save_file({n: tensors[n] for n in part}, str(tmp_path / shard))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {n: shard for shard, part in shards.items() for n in part}})
    )
    config = json.loads((exported[0] / "config.json").read_text())
    config["architectures"] = ["AlbertForSomethingNew"]  # a head albert_tf has no class for
    (tmp_path / "config.json").write_text(json.dumps(config))
    model, report = load_huggingface(tmp_path)
    assert isinstance(model, AlbertModel) and len(report.loaded) == 25 and report.missing == []
    assert (
        "sop_classifier.classifier.weight" in report.unused and "predictions.bias" in report.unused
    )


@pytest.mark.parametrize(
    "ours, theirs", [("gelu", "gelu_new"), ("gelu_exact", "gelu"), ("relu", "relu")]
)
def test_activation_names_translate_both_ways(ours, theirs, tmp_path):
    """Google's tanh "gelu" is transformers' "gelu_new"; transformers' "gelu" is the erf form."""
    config = AlbertConfig(
        vocab_size=20,
        embedding_size=4,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=8,
        max_position_embeddings=8,
        hidden_act=ours,
    )
    export_huggingface(AlbertModel(config), tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["hidden_act"] == theirs
    model, _ = load_huggingface(tmp_path)
    assert model.config.hidden_act == ours
