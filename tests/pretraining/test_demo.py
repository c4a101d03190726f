"""The demo (run_pretraining.py with no flags), shrunk: every stage runs and leaves its output."""

import json
import os

from albert_tf.pretraining.demo import (
    DEMO,
    build_demo_data,
    pydoc_documents,
    run_demo,
    split_documents,
)


def test_pydoc_corpus_is_real_english_documents():
    docs = pydoc_documents()
    assert len(docs) > 50
    assert all(len(d) >= 2 for d in docs)
    assert sum(len(s.split()) for d in docs for s in d) > 50_000


def test_demo_end_to_end_small(tmp_path):
    out = tmp_path / "demo"
    summary = run_demo(
        str(out),
        num_train_steps=20,
        num_warmup_steps=2,
        save_checkpoints_steps=10,
        dupe_factor=1,
        vocab_size=1000,
        hidden_size=32,
        intermediate_size=64,
        embedding_size=16,
        num_hidden_layers=2,
    )
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


def test_demo_held_out_set_is_large_and_never_trained_on(tmp_path):
    """The demo's held-out SOP set: ≥1,000 evaluated examples from whole topics/modules that no
    training document comes from (and no held-out document's text is a training document)."""
    opts = {**DEMO, "dupe_factor": 1}  # training-set size does not change the held-out set
    data = build_demo_data(str(tmp_path), opts)
    evaluated = data["eval_instances"] // DEMO["eval_batch_size"] * DEMO["eval_batch_size"]
    assert evaluated >= 1000
    assert data["sources"]["held_out"] and data["sources"]["train"]
    assert not set(data["sources"]["held_out"]) & set(data["sources"]["train"])
    train_docs = (tmp_path / "corpus_train.txt").read_text().split("\n\n")
    held_docs = (tmp_path / "corpus_eval.txt").read_text().split("\n\n")
    assert not {d.strip() for d in held_docs} & {d.strip() for d in train_docs}


def test_held_out_split_is_by_source_and_drops_copies():
    named = [(f"stdlib:m{i}", [f"Sentence {i} one.", f"Sentence {i} two."]) for i in range(200)]
    named.append(("stdlib:copy", named[0][1]))
    train, held = split_documents(named, 30)
    assert 20 < len(held) < 100
    assert {s for s, _ in train}.isdisjoint({s for s, _ in held})
    assert not {tuple(d) for _, d in held} & {tuple(d) for _, d in train}
    assert split_documents(named, 30) == (train, held)  # deterministic
