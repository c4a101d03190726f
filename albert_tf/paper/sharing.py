"""Table 4's trend at small scale: held-out MLM (and SOP) accuracy of all-shared, shared-attention,
shared-FFN and not-shared models after the same pretraining steps on the same data."""

from __future__ import annotations

import dataclasses

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.paper.params import SHARING_NAMES, count_parameters
from albert_tf.paper.report import markdown_table, mean_spread, publish
from albert_tf.paper.small_scale import describe, get_setting, prepare_corpus, pretrain_and_evaluate

# Lan et al. (2019), Table 4, ALBERT-base E=128: downstream average of the four strategies.
PAPER_AVG_E128 = {"all": 80.1, "attention": 81.7, "ffn": 80.2, "none": 81.6}


def run_sharing(output_dir: str, setting: str) -> dict:
    """{sharing: {seed: metrics on the held-out SOP set}} plus the setting and set size."""
    s = get_setting(setting)
    s = dataclasses.replace(s, num_train_steps=s.sharing_train_steps or s.num_train_steps)
    data = prepare_corpus(fileio.join(output_dir, "data"), s, kinds=("sop",))
    evals = {"sop": (data["sop_eval"], data["sop_eval_instances"])}
    runs = {
        sharing: {
            seed: pretrain_and_evaluate(
                s,
                fileio.join(output_dir, f"{sharing}_seed{seed}"),
                data["sop_train"],
                evals,
                seed,
                sharing=sharing,
            )["sop"]
            for seed in s.sharing_seeds
        }
        for sharing in SHARING_NAMES
    }
    return {
        "runs": runs,
        "setting": s,
        "eval_instances": data["sop_eval_instances"],
        "baselines": data["sop_eval_baselines"],
    }


def sharing_rows(result: dict) -> list:
    s = result["setting"]
    rows = []
    for sharing, by_seed in result["runs"].items():
        config = AlbertConfig(vocab_size=s.vocab_size, **{**s.model, "sharing": sharing})
        seeds = list(by_seed.values())
        rows.append(
            (
                SHARING_NAMES[sharing],
                f"{count_parameters(config):,}",
                mean_spread([r["masked_lm_accuracy"] for r in seeds]),
                mean_spread([r["masked_lm_loss"] for r in seeds]),
                mean_spread([r["sentence_order_accuracy"] for r in seeds]),
                PAPER_AVG_E128[sharing],
            )
        )
    return rows


def sharing(output_dir: str, setting: str = "full", **_) -> str:
    result = run_sharing(output_dir, setting)
    s = result["setting"]
    notes = (
        f"{describe(setting, s, s.sharing_seeds)} Held-out set {result['eval_instances']} "
        "examples from documents never trained on (most frequent "
        f"piece: MLM {result['baselines']['masked_lm_accuracy']:.3f}; SOP label-1 share "
        f"{result['baselines']['label_1_share']:.3f}). The paper "
        "reports downstream averages (SQuAD, MNLI, SST-2, RACE), not MLM accuracy, so only "
        "the ordering can be compared."
    )
    return publish(
        output_dir,
        "sharing",
        "Sharing ablation (Table 4 trend, small scale)",
        markdown_table(
            ["sharing", "params", "MLM acc", "MLM loss", "SOP acc", "paper avg (E=128)"],
            sharing_rows(result),
        ),
        notes,
    )
