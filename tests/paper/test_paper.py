"""python -m albert_tf.paper: exact parameter counts of Tables 1/3/4, and the small-scale
tables (5, sharing) end to end on the tiny setting."""

import keras
import pytest

from albert_tf.core.config import AlbertConfig
from albert_tf.modeling.albert_model import AlbertModel
from albert_tf.paper import params, throughput
from albert_tf.paper.__main__ import main, parse_args


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"sharing": "attention"},
        {"sharing": "ffn"},
        {"sharing": "none"},
        {"embedding_size": 32},  # E == H: no embedding projection
        {"num_hidden_groups": 3, "inner_group_num": 2},
        {"sharing": "attention", "inner_group_num": 2},
    ],
)
def test_count_parameters_is_the_keras_model_count(changes):
    config = AlbertConfig(
        **{
            **dict(
                vocab_size=57,
                embedding_size=8,
                hidden_size=32,
                num_hidden_layers=6,
                num_attention_heads=4,
                intermediate_size=40,
                max_position_embeddings=24,
            ),
            **changes,
        }
    )
    assert params.count_parameters(config) == AlbertModel(config).count_params()
    keras.backend.clear_session()


def test_table1_exact_counts():
    counts = {row[0]: row[5] for row in params.table1_rows()}
    assert counts == {
        "bert_base": 109_081_344,
        "bert_large": 334_607_360,
        "albert_base": 11_683_584,
        "albert_large": 17_683_968,
        "albert_xlarge": 58_724_864,
        "albert_xxlarge": 222_595_584,
    }


def test_table3_exact_counts():
    counts = {(s, e): c for s, e, c, _ in params.table3_rows()}
    assert counts[("all", 128)] == 11_683_584 and counts[("none", 128)] == 89_650_176
    assert counts[("all", 64)] == 9_681_408 and counts[("all", 768)] == 31_114_752
    assert counts[("none", 64)] == 87_648_000 and counts[("none", 768)] == 109_081_344
    assert counts[("all", 256)] == 15_687_936 and counts[("none", 256)] == 93_654_528


def test_table4_exact_counts():
    counts = {(e, s): c for e, s, c, _ in params.table4_rows()}
    assert [counts[(128, s)] for s in ("all", "attention", "ffn", "none")] == [
        11_683_584,
        63_647_232,
        37_686_528,
        89_650_176,
    ]
    assert [counts[(768, s)] for s in ("all", "attention", "ffn", "none")] == [
        31_114_752,
        83_078_400,
        57_117_696,
        109_081_344,
    ]


def test_match_column_names_rounded_truncated_and_differing_counts():
    assert params._match(11_683_584, 12) == "yes"
    assert params._match(87_648_000, 87) == "truncated"
    assert params._match(222_595_584, 235).startswith("no (+5.6%")


def test_table1_markdown_is_written_with_the_paper_column(tmp_path):
    assert main(["table1", "--output_dir", str(tmp_path)]) == 0
    text = (tmp_path / "table1.md").read_text()
    assert (
        "| albert_xxlarge | 12 | 4096 | 128 | yes | 222,595,584 | 222.6M | 235M | no (+5.6%) |"
        in text
    )


def test_table2_depth_divisor_keeps_shape_and_sharing():
    bert = throughput.model_config("bert_large", 4)
    albert = throughput.model_config("albert_xlarge", 4)
    assert (bert.num_hidden_layers, bert.num_hidden_groups, bert.embedding_size) == (6, 6, 1024)
    assert (albert.num_hidden_layers, albert.num_hidden_groups, albert.hidden_size) == (6, 1, 2048)


def test_unknown_table_is_one_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        parse_args(["table9"])
    assert e.value.code == 2 and "table9" in capsys.readouterr().err


@pytest.mark.parametrize(
    "table,rows",
    [
        ("table5", ("| NSP |", "| SOP |", "| majority class")),
        ("sharing", ("| all-shared |", "| not-shared |", "| shared-FFN |", "| shared-attention |")),
    ],
)
def test_small_scale_tables_end_to_end_tiny(tmp_path, table, rows):
    assert main([table, "--setting", "tiny", "--output_dir", str(tmp_path)]) == 0
    text = (tmp_path / f"{table}.md").read_text()
    for row in rows:
        assert row in text, row
    assert "± 0.000" in text  # one seed in the tiny setting: no spread
    lines = text.splitlines()
    header = [c.strip() for c in next(l for l in lines if l.startswith("| ")).split("|")]
    row = [c.strip() for c in next(l for l in lines if l.startswith(rows[0])).split("|")]
    accuracy = float(row[header.index("MLM acc")].split("±")[0])
    assert 0.0 < accuracy < 1.0
