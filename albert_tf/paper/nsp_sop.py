"""Table 5 at small scale: tiny ALBERTs pretrained on the same corpus with NSP data (Google's
builder with random_next_sentence) or with SOP data, each evaluated on held-out NSP and SOP sets."""

from __future__ import annotations

from albert_tf.core import fileio
from albert_tf.paper.report import markdown_table, mean_spread, publish
from albert_tf.paper.small_scale import describe, get_setting, prepare_corpus, pretrain_and_evaluate

# Lan et al. (2019), Table 5 (ALBERT-base, intrinsic accuracies in %): MLM, NSP, SOP.
PAPER_TABLE5 = {"none": (54.9, 52.4, 53.3), "nsp": (54.5, 90.5, 52.0), "sop": (54.0, 78.9, 86.5)}


def run_table5(output_dir: str, setting: str) -> dict:
    """{trained_on: {seed: {"nsp": metrics, "sop": metrics}}} plus the held-out set sizes."""
    s = get_setting(setting)
    data = prepare_corpus(fileio.join(output_dir, "data"), s, kinds=("nsp", "sop"))
    evals = {k: (data[f"{k}_eval"], data[f"{k}_eval_instances"]) for k in ("nsp", "sop")}
    runs = {}
    for trained_on in ("nsp", "sop"):
        ordered = {trained_on: evals[trained_on], **evals}  # evaluate on its own task first
        runs[trained_on] = {
            seed: pretrain_and_evaluate(
                s,
                fileio.join(output_dir, f"{trained_on}_seed{seed}"),
                data[f"{trained_on}_train"],
                ordered,
                seed,
            )
            for seed in s.seeds
        }
    return {
        "runs": runs,
        "eval_instances": {k: v[1] for k, v in evals.items()},
        "setting": s,
        "baselines": {k: data[f"{k}_eval_baselines"] for k in ("nsp", "sop")},
    }


def table5_rows(result: dict) -> list:
    """(trained on, MLM acc, NSP acc, SOP acc) as mean ± spread over seeds, beside the paper's."""
    rows = []
    for trained_on, by_seed in result["runs"].items():
        seeds = list(by_seed.values())
        mlm = mean_spread([r[trained_on]["masked_lm_accuracy"] for r in seeds])
        nsp = mean_spread([r["nsp"]["sentence_order_accuracy"] for r in seeds])
        sop = mean_spread([r["sop"]["sentence_order_accuracy"] for r in seeds])
        paper = PAPER_TABLE5[trained_on]
        rows.append((trained_on.upper(), mlm, nsp, sop, f"{paper[0]} / {paper[1]} / {paper[2]}"))
    base = result["baselines"]
    majority = {k: max(b["label_1_share"], 1 - b["label_1_share"]) for k, b in base.items()}
    rows.append(
        (
            "majority class / most frequent piece",
            f"{base['sop']['masked_lm_accuracy']:.3f}",
            f"{majority['nsp']:.3f}",
            f"{majority['sop']:.3f}",
            "50 / 50 (balanced)",
        )
    )
    rows.append(("None (paper only)", "", "", "", " / ".join(map(str, PAPER_TABLE5["none"]))))
    return rows


def table5(output_dir: str, setting: str = "full", **_) -> str:
    result = run_table5(output_dir, setting)
    s = result["setting"]
    notes = (
        f"{describe(setting, s, s.seeds)} Held-out sets (documents never trained on): "
        f"NSP {result['eval_instances']['nsp']}, SOP "
        f"{result['eval_instances']['sop']} examples. Accuracy is the model's binary head on "
        "each set (label 1 = random B for NSP, swapped for SOP); values are mean ± half-range "
        "over seeds. Google's builder takes B from another document whenever a chunk holds one "
        "sentence, in SOP data too (label 1), so label 1 is the majority of both sets: compare "
        "each accuracy with the majority-class row, not with 0.5. The MLM column is measured "
        "on the set of the task trained on. The paper's "
        "\"None\" row (MLM only) needs an MLM-only loss, which the engine does not offer."
    )
    return publish(
        output_dir,
        "table5",
        "Table 5: NSP vs SOP (small scale)",
        markdown_table(
            ["trained on", "MLM acc", "NSP acc", "SOP acc", "paper MLM / NSP / SOP (%)"],
            table5_rows(result),
        ),
        notes,
    )
