"""The pretraining demo (`python run_pretraining.py` with no flags): the whole path from raw text
to a pretrained ALBERT on text that ships with every Python (`pydoc_data.topics`).

corpus → SentencePiece (ALBERT recipe) → MLM + SOP TFRecords → pretraining (LAMB, MLM + SOP)
→ evaluation on held-out documents → checkpoint, plot, summary.
"""
from __future__ import annotations

import json
import os
import re
import time

from absl import logging

from albert_tf.fileio import write_text_atomic

DEMO = dict(vocab_size=3000, max_seq_length=128, max_predictions_per_seq=20, dupe_factor=8,
            train_batch_size=16, eval_batch_size=32, num_train_steps=1000, num_warmup_steps=100,
            save_checkpoints_steps=100, learning_rate=1e-2, optimizer="lamb", held_out_docs=8)
DEMO_MODEL = dict(embedding_size=64, hidden_size=128, num_hidden_layers=4, num_hidden_groups=1,
                  num_attention_heads=4, intermediate_size=512, inner_group_num=1,
                  hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  max_position_embeddings=128, type_vocab_size=2, initializer_range=0.02)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def pydoc_documents() -> list:
    """One document per pydoc topic, one sentence per line (Google's input format)."""
    import pydoc_data.topics as topics
    documents = []
    for name in sorted(topics.topics):
        sentences = []
        for paragraph in re.split(r"\n\s*\n", topics.topics[name]):
            text = " ".join(paragraph.split())
            if len(text) < 20 or text.startswith(("*", "|", ">>>", "---")):
                continue
            sentences.extend(s for s in _SENTENCE_END.split(text) if len(s) > 10)
        if len(sentences) >= 2:
            documents.append(sentences)
    return documents


def write_corpus(documents, path) -> str:
    return write_text_atomic(path, "\n\n".join("\n".join(d) for d in documents) + "\n")


def plot_curves(history: list, path: str) -> str:
    """PNG with the held-out MLM and SOP loss and accuracy at every checkpoint."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    steps = [h["global_step"] for h in history]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].plot(steps, [h["masked_lm_loss"] for h in history], "o-", label="MLM loss (held out)")
    axes[0].plot(steps, [h["sentence_order_loss"] for h in history], "s-", label="SOP loss (held out)")
    axes[0].set_xlabel("step"), axes[0].set_ylabel("held-out loss"), axes[0].legend()
    axes[1].plot(steps, [h["masked_lm_accuracy"] for h in history], "o-", label="MLM accuracy")
    axes[1].plot(steps, [h["sentence_order_accuracy"] for h in history], "s-", label="SOP accuracy")
    axes[1].set_xlabel("step"), axes[1].set_ylabel("held-out accuracy"), axes[1].set_ylim(0, 1)
    axes[1].legend()
    fig.suptitle("ALBERT pretraining demo (pydoc_data.topics)")
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def run_demo(output_dir="demo_output", **overrides) -> dict:
    """Run the whole demo into output_dir and return its final held-out metrics."""
    from albert_tf.config import AlbertConfig
    from albert_tf.data.pretraining import build_pretraining_data
    from albert_tf.pretraining import PretrainingOptions, pretrain
    from albert_tf.tokenization import train_sentencepiece
    opts = {**DEMO, **{k: v for k, v in overrides.items() if k in DEMO}}
    model_overrides = {k: v for k, v in overrides.items() if k in DEMO_MODEL}
    os.makedirs(output_dir, exist_ok=True)
    started = time.time()
    docs = pydoc_documents()
    held = opts["held_out_docs"]
    train_txt = write_corpus(docs[held:], os.path.join(output_dir, "corpus_train.txt"))
    eval_txt = write_corpus(docs[:held], os.path.join(output_dir, "corpus_eval.txt"))
    print(f"[1/5] corpus: {len(docs) - held} training and {held} held-out documents from pydoc_data.topics")
    spm = train_sentencepiece([train_txt], os.path.join(output_dir, "30k-clean"), opts["vocab_size"])
    print(f"[2/5] SentencePiece model (ALBERT recipe, {opts['vocab_size']} pieces): {spm}")
    common = dict(spm_model_file=spm, max_seq_length=opts["max_seq_length"],
                  max_predictions_per_seq=opts["max_predictions_per_seq"], random_seed=12345)
    train_rec = os.path.join(output_dir, "train.tfrecord")
    eval_rec = os.path.join(output_dir, "eval.tfrecord")
    stats = build_pretraining_data([train_txt], [train_rec], dupe_factor=opts["dupe_factor"], **common)
    eval_stats = build_pretraining_data([eval_txt], [eval_rec], dupe_factor=2, **common)
    print(f"[3/5] TFRecords: {stats.get('instances')} training and {eval_stats.get('instances')} "
          "held-out MLM + SOP examples")
    config = AlbertConfig(vocab_size=opts["vocab_size"], **{**DEMO_MODEL, **model_overrides})
    config.to_json_file(os.path.join(output_dir, "albert_config.json"))
    model_dir = os.path.join(output_dir, "model")
    max_eval_steps = max(1, eval_stats.get("instances", 64) // opts["eval_batch_size"])
    popts = PretrainingOptions(
        input_file=train_rec, eval_input_file=eval_rec, output_dir=model_dir, do_eval=True,
        max_seq_length=opts["max_seq_length"], max_predictions_per_seq=opts["max_predictions_per_seq"],
        train_batch_size=opts["train_batch_size"], eval_batch_size=opts["eval_batch_size"],
        optimizer=opts["optimizer"], learning_rate=opts["learning_rate"],
        num_train_steps=opts["num_train_steps"], num_warmup_steps=opts["num_warmup_steps"],
        save_checkpoints_steps=opts["save_checkpoints_steps"], iterations_per_loop=50,
        max_eval_steps=max_eval_steps, log_every_steps=50, seed=1, keep_checkpoint_max=2)
    print(f"[4/5] pretraining a {config.num_hidden_layers}-layer shared ALBERT "
          f"(E={config.embedding_size}, H={config.hidden_size}) for {opts['num_train_steps']} steps")
    from albert_tf import training
    final = pretrain(config, popts)
    with open(os.path.join(model_dir, training.EVAL_HISTORY), encoding="utf-8") as f:
        history = json.load(f)
    png = plot_curves(history, os.path.join(output_dir, "pretraining_curves.png"))
    summary = {"held_out": final, "first_eval": history[0] if history else None,
               "minutes": round((time.time() - started) / 60, 1), "output_dir": output_dir,
               "config": os.path.join(output_dir, "albert_config.json"),
               "spm_model": spm, "best_checkpoint": os.path.join(model_dir, training.BEST_CHECKPOINT),
               "plot": png, "tensorboard": model_dir}
    write_text_atomic(os.path.join(output_dir, "demo_summary.json"), json.dumps(summary, indent=1))
    print(f"[5/5] held-out MLM accuracy {final['masked_lm_accuracy']:.3f}, "
          f"SOP accuracy {final['sentence_order_accuracy']:.3f} after {final['global_step']} steps "
          f"({summary['minutes']} min)")
    for key in ("config", "spm_model", "best_checkpoint", "plot", "tensorboard"):
        print(f"  {key:16s} {summary[key]}")
    logging.info("demo summary: %s", summary)
    return summary
