"""The demo (run_pretraining.py with no flags), shrunk: every stage runs and leaves its output."""

import json
import os

import pytest
from shared_runs import once_per_test_run

from albert_tf.pretraining.demo import (
    DEMO,
    demo_documents,
    pydoc_documents,
    run_demo,
    split_documents,
)


def test_pydoc_corpus_is_real_english_documents():
    docs = pydoc_documents()
    assert len(docs) > 50
    assert all(len(d) >= 2 for d in docs)
    assert sum(len(s.split()) for d in docs for s in d) > 50_000


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """(summary, output folder) of one shrunk demo run: the demo's data (its vocabulary and
    held-out set; one dupe round of the training documents), a small model, 20 steps. Made
    once per test run (the xdist workers share it)."""

    def make(folder):
        return run_demo(
            str(folder / "demo"),
            num_train_steps=20,
            num_warmup_steps=2,
            save_checkpoints_steps=10,
            dupe_factor=1,  # training-set size does not change the held-out set
            hidden_size=32,
            intermediate_size=64,
            embedding_size=16,
            num_hidden_layers=2,
        )

    summary, folder = once_per_test_run(tmp_path_factory, "demo_run", make)
    return summary, folder / "demo"


def test_demo_end_to_end_small(demo_run):
    summary, out = demo_run
    assert summary["held_out"]["global_step"] == 20
    for key in ("config", "spm_model", "plot"):
        assert os.path.exists(summary[key]), key
    assert os.path.exists(summary["best_checkpoint"] + ".index")
    with open(summary["plot"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    history = json.loads((out / "model" / "eval_history.json").read_text())
    assert [h["global_step"] for h in history] == [10, 20]
    written = json.loads((out / "demo_summary.json").read_text())
    assert written["held_out"]["global_step"] == 20
    assert written["jit_compile"] is DEMO["jit_compile"]  # the demo's default: XLA
    assert written["initial_eval"]["global_step"] == 0  # the untrained model, drawn at step 0
    assert written["held_out"]["masked_lm_accuracy"] == history[-1]["masked_lm_accuracy"]
    assert {"wall_minutes", "cpu_minutes", "load_average"} <= set(written)


def test_demo_held_out_set_is_large_and_never_trained_on(demo_run):
    """The demo's held-out SOP set: ≥1,000 evaluated examples from whole topics/modules that no
    training document comes from (and no held-out document's text is a training document)."""
    summary, out = demo_run
    assert summary["held_out_examples"] >= 1000  # whole eval batches of the demo's size
    assert summary["held_out_examples"] % DEMO["eval_batch_size"] == 0
    assert summary["held_out_instances"] >= summary["held_out_examples"]
    # the demo's split of its documents (build_demo_data's), the same the run held out
    train, held = split_documents(demo_documents(), DEMO["held_out_percent"])
    sources = {"train": {s for s, _ in train}, "held_out": {s for s, _ in held}}
    assert sources["held_out"] and sources["train"]
    assert len(sources["held_out"]) == summary["held_out_sources"]
    assert not sources["held_out"] & sources["train"]
    train_docs = (out / "corpus_train.txt").read_text().split("\n\n")
    held_docs = (out / "corpus_eval.txt").read_text().split("\n\n")
    assert not {d.strip() for d in held_docs} & {d.strip() for d in train_docs}


def test_held_out_split_is_by_source_and_drops_copies():
    named = [(f"stdlib:m{i}", [f"Sentence {i} one.", f"Sentence {i} two."]) for i in range(200)]
    named.append(("stdlib:copy", named[0][1]))
    train, held = split_documents(named, 30)
    assert 20 < len(held) < 100
    assert {s for s, _ in train}.isdisjoint({s for s, _ in held})
    assert not {tuple(d) for _, d in held} & {tuple(d) for _, d in train}
    assert split_documents(named, 30) == (train, held)  # deterministic
