import json

import pytest

from albert_tf import AlbertConfig

GOOGLE_BASE_V2 = {  # a released albert_config.json, unused keys included
    "attention_probs_dropout_prob": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "embedding_size": 128,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "type_vocab_size": 2,
    "vocab_size": 30000,
    "layers_to_keep": [],
}


def test_round_trip_keeps_unused_keys(tmp_path):
    config = AlbertConfig.from_dict(GOOGLE_BASE_V2)
    assert config.extra["net_structure_type"] == 0 and config.extra["layers_to_keep"] == []
    assert config.to_dict() == GOOGLE_BASE_V2
    path = tmp_path / "albert_config.json"
    config.to_json_file(path)
    assert json.loads(path.read_text()) == GOOGLE_BASE_V2
    assert AlbertConfig.from_json_file(path) == config
    assert [p.name for p in tmp_path.iterdir()] == ["albert_config.json"]


def test_fixture_config(fixtures_dir):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    assert (config.vocab_size, config.embedding_size, config.hidden_size) == (1000, 16, 32)
    assert config.head_size == 8


@pytest.mark.parametrize(
    "size,h,l,n,i",
    [
        ("base", 768, 12, 12, 3072),
        ("large", 1024, 24, 16, 4096),
        ("xlarge", 2048, 24, 16, 8192),
        ("xxlarge", 4096, 12, 64, 16384),
    ],
)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_presets(size, h, l, n, i, version):
    c = AlbertConfig.from_preset(f"albert_{size}_{version}")
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size) == (
        h,
        l,
        n,
        i,
    )
    assert (c.embedding_size, c.vocab_size, c.max_position_embeddings) == (128, 30000, 512)
    dropout = 0.1 if version == "v1" and size != "xxlarge" else 0.0
    assert c.hidden_dropout_prob == dropout and c.attention_probs_dropout_prob == dropout
    assert c.hidden_act == "gelu" and c.num_hidden_groups == 1


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"hidden_size": 100, "num_attention_heads": 12}, "not divisible by num_attention_heads"),
        ({"num_hidden_groups": 13}, "num_hidden_groups (13) is larger than num_hidden_layers"),
        ({"hidden_act": "swishy"}, "hidden_act 'swishy' is unknown"),
        ({"sharing": "some"}, "sharing 'some' is unknown"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob must be in [0, 1)"),
        ({"vocab_size": 0}, "vocab_size must be a positive integer"),
    ],
)
def test_validation_errors(changes, message):
    with pytest.raises(ValueError) as e:
        AlbertConfig.from_dict({**GOOGLE_BASE_V2, **changes})
    assert message in str(e.value)


def test_bad_json_names_file(tmp_path):
    bad = tmp_path / "albert_config.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="albert_config.json is not valid JSON"):
        AlbertConfig.from_json_file(bad)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        AlbertConfig.from_json_file(tmp_path / "missing.json")
    bad.write_text(json.dumps({**GOOGLE_BASE_V2, "num_hidden_groups": 20}))
    with pytest.raises(ValueError, match=r"albert_config.json: .*num_hidden_groups"):
        AlbertConfig.from_json_file(bad)


def test_unknown_preset():
    with pytest.raises(ValueError, match="albert_base_v2"):
        AlbertConfig.from_preset("albert_huge_v9")


def test_sharing_none_is_one_group_per_layer():
    c = AlbertConfig.from_preset("albert_base_v2", sharing="none")
    assert c.num_hidden_groups == 12
    assert AlbertConfig.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="sharing='none'"):
        AlbertConfig.from_preset("albert_base_v2", sharing="none", num_hidden_groups=3)


def test_group_of_layer_is_googles_contiguous_map():
    c = AlbertConfig.from_preset("albert_base_v2", num_hidden_groups=3)
    assert [c.group_of_layer(i) for i in range(12)] == [0] * 4 + [1] * 4 + [2] * 4
    c = AlbertConfig.from_preset("albert_base_v2", num_hidden_groups=5)
    assert [c.group_of_layer(i) for i in range(12)] == [int(i / 12 * 5) for i in range(12)]
