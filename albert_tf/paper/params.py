"""Tables 1, 3 and 4: parameter counts of the released configs and of the embedding-size (E)
and cross-layer-sharing variants, counted exactly from the config, beside the paper's."""

from __future__ import annotations

from albert_tf.core.config import AlbertConfig
from albert_tf.paper.report import markdown_table, publish

# Lan et al. (2019), Tables 1, 3, 4: parameters in millions.
PAPER_TABLE1 = {
    "bert_base": 108,
    "bert_large": 334,
    "albert_base": 12,
    "albert_large": 18,
    "albert_xlarge": 60,
    "albert_xxlarge": 235,
}
PAPER_TABLE3 = {
    ("none", 64): 87,
    ("none", 128): 89,
    ("none", 256): 93,
    ("none", 768): 108,
    ("all", 64): 10,
    ("all", 128): 12,
    ("all", 256): 16,
    ("all", 768): 31,
}
PAPER_TABLE4 = {
    (768, "all"): 31,
    (768, "attention"): 83,
    (768, "ffn"): 57,
    (768, "none"): 108,
    (128, "all"): 12,
    (128, "attention"): 64,
    (128, "ffn"): 38,
    (128, "none"): 89,
}
SHARING_NAMES = {
    "all": "all-shared",
    "attention": "shared-attention",
    "ffn": "shared-FFN",
    "none": "not-shared",
}


def count_parameters(config: AlbertConfig) -> int:
    """Weights of AlbertModel(config) (embeddings, encoder, pooler; no pretraining heads)."""
    c = config
    e, h, i = c.embedding_size, c.hidden_size, c.intermediate_size
    embedding = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size + 2) * e
    if e != h:
        embedding += e * h + h  # embedding_hidden_mapping_in
    attention = 4 * (h * h + h) + 2 * h
    ffn = 2 * h * i + i + h + 2 * h
    blocks = c.num_hidden_groups * c.inner_group_num
    per_layer = c.num_hidden_layers * c.inner_group_num
    n_attention = per_layer if c.sharing in ("ffn", "none") else blocks
    n_ffn = per_layer if c.sharing in ("attention", "none") else blocks
    return embedding + n_attention * attention + n_ffn * ffn + h * h + h


def bert_config(size: str) -> AlbertConfig:
    """BERT's shape as an AlbertConfig: E = H and nothing shared (vocabulary 30,000 as ALBERT's)."""
    base = AlbertConfig.from_preset(f"albert_{size}_v2")
    return base.replace(
        embedding_size=base.hidden_size, sharing="none", num_hidden_groups=base.num_hidden_layers
    )


def _millions(n: int) -> str:
    return f"{n / 1e6:.1f}M"


def table1_rows() -> list:
    """(model, L, H, E, shared, exact count, paper M) for BERT base/large and ALBERT releases."""
    rows = []
    for name in PAPER_TABLE1:
        family, size = name.split("_")
        config = (
            bert_config(size) if family == "bert" else AlbertConfig.from_preset(f"albert_{size}_v2")
        )
        rows.append(
            (
                name,
                config.num_hidden_layers,
                config.hidden_size,
                config.embedding_size,
                family == "albert",
                count_parameters(config),
                PAPER_TABLE1[name],
            )
        )
    return rows


def table3_rows() -> list:
    """(sharing, E, exact count, paper M): ALBERT-base shape, E in 64/128/256/768."""
    base = AlbertConfig.from_preset("albert_base_v2")
    return [
        (
            sharing,
            e,
            count_parameters(base.replace(embedding_size=e, sharing=sharing)),
            PAPER_TABLE3[(sharing, e)],
        )
        for (sharing, e) in PAPER_TABLE3
    ]


def table4_rows() -> list:
    """(E, sharing, exact count, paper M): ALBERT-base shape, the four sharing strategies."""
    base = AlbertConfig.from_preset("albert_base_v2")
    return [
        (
            e,
            sharing,
            count_parameters(base.replace(embedding_size=e, sharing=sharing)),
            PAPER_TABLE4[(e, sharing)],
        )
        for (e, sharing) in PAPER_TABLE4
    ]


def _match(count: int, paper_m: int) -> str:
    """'yes' when the paper's millions are the count rounded, 'truncated' when cut, else 'no'."""
    if round(count / 1e6) == paper_m:
        return "yes"
    if count // 1_000_000 == paper_m:
        return "truncated"
    return f"no ({(paper_m * 1e6 - count) / count:+.1%})"


def table1(output_dir: str, **_) -> str:
    rows = [
        (n, l, h, e, "yes" if s else "no", f"{c:,}", _millions(c), f"{p}M", _match(c, p))
        for n, l, h, e, s, c, p in table1_rows()
    ]
    notes = (
        "Counts are AlbertModel's weights (embeddings, encoder, pooler) with vocabulary 30,000; "
        "BERT rows are the same code with E = H and no sharing. The paper's 235M for xxlarge "
        "does not match the released albert_xxlarge config (222,595,584); BERT's 108M/334M "
        "count BERT's own 30,522-piece vocabulary and its pretraining heads differently."
    )
    return publish(
        output_dir,
        "table1",
        "Table 1: parameters of the released configs",
        markdown_table(
            ["model", "L", "H", "E", "shared", "params (exact)", "params", "paper", "matches"], rows
        ),
        notes,
    )


def table3(output_dir: str, **_) -> str:
    rows = [
        (SHARING_NAMES[s], e, f"{c:,}", _millions(c), f"{p}M", _match(c, p))
        for s, e, c, p in table3_rows()
    ]
    return publish(
        output_dir,
        "table3",
        "Table 3: embedding size E (ALBERT-base shape)",
        markdown_table(["sharing", "E", "params (exact)", "params", "paper", "matches"], rows),
    )


def table4(output_dir: str, **_) -> str:
    rows = [
        (e, SHARING_NAMES[s], f"{c:,}", _millions(c), f"{p}M", _match(c, p))
        for e, s, c, p in table4_rows()
    ]
    return publish(
        output_dir,
        "table4",
        "Table 4: cross-layer sharing (ALBERT-base shape)",
        markdown_table(["E", "sharing", "params (exact)", "params", "paper", "matches"], rows),
    )
