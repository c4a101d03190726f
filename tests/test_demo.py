"""The demo (run_pretraining.py with no flags), shrunk: every stage runs and leaves its output."""
import json
import os

from albert_tf.demo import pydoc_documents, run_demo


def test_pydoc_corpus_is_real_english_documents():
    docs = pydoc_documents()
    assert len(docs) > 50
    assert all(len(d) >= 2 for d in docs)
    assert sum(len(s.split()) for d in docs for s in d) > 50_000


def test_demo_end_to_end_small(tmp_path):
    out = tmp_path / "demo"
    summary = run_demo(str(out), num_train_steps=20, num_warmup_steps=2, save_checkpoints_steps=10,
                       dupe_factor=1, vocab_size=1000, hidden_size=32, intermediate_size=64,
                       embedding_size=16, num_hidden_layers=2)
    assert summary["held_out"]["global_step"] == 20
    for key in ("config", "spm_model", "plot"):
        assert os.path.exists(summary[key]), key
    assert os.path.exists(summary["best_checkpoint"] + ".index")
    with open(summary["plot"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    history = json.loads((out / "model" / "eval_history.json").read_text())
    assert [h["global_step"] for h in history] == [10, 20]
    assert json.loads((out / "demo_summary.json").read_text())["held_out"]["global_step"] == 20
