"""Shared pieces of the small-scale pretraining tables (5 and sharing): settings, the corpus
(the demo's: pydoc topics + stdlib docstrings, held out by whole topic/module), SOP and NSP
TFRecords from Google's builder, and one seeded pretraining run."""

from __future__ import annotations

import dataclasses
import dataclasses as dc

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.engine.save_points import BEST_CHECKPOINT
from albert_tf.pretraining.builder import build_pretraining_data
from albert_tf.pretraining.demo import (
    DEMO_MODEL,
    demo_documents,
    held_out_baselines,
    pydoc_named,
    split_documents,
    write_corpus,
)
from albert_tf.pretraining.pretrain import PretrainingOptions, pretrain
from albert_tf.text.spm_train import train_sentencepiece


@dataclasses.dataclass(frozen=True)
class Setting:
    """Corpus, model and schedule of one scale of the small-scale tables."""

    corpus: str  # "demo" (pydoc + stdlib docstrings) or "pydoc" (topics only)
    vocab_size: int
    max_seq_length: int
    max_predictions_per_seq: int
    dupe_factor: int
    model: dict
    train_batch_size: int
    num_train_steps: int
    learning_rate: float
    seeds: tuple
    held_out_percent: int = 17
    eval_batch_size: int = 64
    sharing_seeds: tuple = (1,)
    sharing_train_steps: int | None = None  # the sharing table's steps (None: num_train_steps)
    jit_compile: bool = True  # XLA: ~1.6x the steps/s of this tiny model on CPU (op overhead)


# the tables' model is the demo's before it moved to E=128: E=64 as docs/paper.md reports them
_TABLE_MODEL = dict(DEMO_MODEL, embedding_size=64)

SETTINGS = {
    "full": Setting(
        "demo",
        2000,
        64,
        10,
        4,
        dict(_TABLE_MODEL),
        32,
        1500,
        1e-2,
        (1, 2, 3),
        sharing_seeds=(1, 2, 3),
    ),
    "quick": Setting(
        "demo",
        2000,
        64,
        10,
        2,
        dict(_TABLE_MODEL),
        32,
        200,
        1e-2,
        (1, 2, 3),
        sharing_train_steps=500,
    ),
    "tiny": Setting(
        "pydoc",
        400,
        32,
        5,
        1,
        dict(
            DEMO_MODEL,
            embedding_size=16,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=32,
        ),
        8,
        6,
        1e-2,
        (1,),
        held_out_percent=30,
        eval_batch_size=16,
        jit_compile=False,
    ),
}


def describe(name: str, s: Setting, seeds) -> str:
    """One sentence naming a setting's seeds, schedule and model shape (for the table notes)."""
    return (
        f"Setting `{name}`: seeds {list(seeds)} (weights and input order), {s.num_train_steps} "
        f"steps of {s.train_batch_size} × {s.max_seq_length} tokens, H={s.model['hidden_size']}, "
        f"E={s.model['embedding_size']}, L={s.model['num_hidden_layers']}, vocabulary "
        f"{s.vocab_size}."
    )


def get_setting(name: str) -> Setting:
    if name not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}; use one of {sorted(SETTINGS)}")
    return SETTINGS[name]


def prepare_corpus(output_dir: str, s: Setting, kinds=("sop",)) -> dict:
    """SentencePiece on the training documents and, per kind ("sop" / "nsp"), training and
    held-out TFRecords. Returns {"spm", "<kind>_train", "<kind>_eval", "<kind>_eval_instances",
    "<kind>_eval_baselines"} (baselines: held_out_baselines of the held-out set)."""
    named = demo_documents() if s.corpus == "demo" else pydoc_named()
    train_docs, held_docs = split_documents(named, s.held_out_percent)
    fileio.makedirs(output_dir)
    train_txt = write_corpus(
        [d for _, d in train_docs], fileio.join(output_dir, "corpus_train.txt")
    )
    eval_txt = write_corpus([d for _, d in held_docs], fileio.join(output_dir, "corpus_eval.txt"))
    out = {"spm": train_sentencepiece([train_txt], fileio.join(output_dir, "spm"), s.vocab_size)}
    common = dict(
        spm_model_file=out["spm"],
        max_seq_length=s.max_seq_length,
        max_predictions_per_seq=s.max_predictions_per_seq,
        random_seed=12345,
    )
    for kind in kinds:
        nsp = dict(random_next_sentence=(kind == "nsp"))
        out[f"{kind}_train"] = fileio.join(output_dir, f"{kind}_train.tfrecord")
        out[f"{kind}_eval"] = fileio.join(output_dir, f"{kind}_eval.tfrecord")
        build_pretraining_data(
            [train_txt], [out[f"{kind}_train"]], dupe_factor=s.dupe_factor, **common, **nsp
        )
        stats = build_pretraining_data(
            [eval_txt], [out[f"{kind}_eval"]], dupe_factor=1, **common, **nsp
        )
        out[f"{kind}_eval_instances"] = stats.get("instances", 0)
        out[f"{kind}_eval_baselines"] = held_out_baselines(
            out[f"{kind}_eval"], s.max_seq_length, s.max_predictions_per_seq
        )
    return out


def _options(
    s: Setting, train_file: str, eval_file: str, model_dir: str, seed: int, eval_steps: int
):
    return PretrainingOptions(
        input_file=train_file,
        eval_input_file=eval_file,
        output_dir=model_dir,
        do_eval=True,
        max_seq_length=s.max_seq_length,
        max_predictions_per_seq=s.max_predictions_per_seq,
        train_batch_size=s.train_batch_size,
        eval_batch_size=s.eval_batch_size,
        optimizer="lamb",
        learning_rate=s.learning_rate,
        num_train_steps=s.num_train_steps,
        num_warmup_steps=max(1, s.num_train_steps // 10),
        save_checkpoints_steps=s.num_train_steps,
        iterations_per_loop=min(50, s.num_train_steps),
        max_eval_steps=eval_steps,
        log_every_steps=max(1, s.num_train_steps),
        seed=seed,
        keep_checkpoint_max=1,
        verbose=0,
        jit_compile=s.jit_compile,
    )


def eval_steps(instances: int, s: Setting) -> int:
    """Batches that cover every held-out example (less the last partial batch)."""
    return max(1, instances // s.eval_batch_size)


def pretrain_and_evaluate(
    s: Setting, model_dir: str, train_file: str, evals: dict, seed: int, **model_changes
) -> dict:
    """Pretrain a model of setting s (seeded weights and input order), then evaluate its final
    checkpoint on each held-out set of evals {name: (file, instances)}; returns {name: metrics}."""
    # deferred: keeps TensorFlow off this module's import
    import keras

    keras.utils.set_random_seed(seed)
    config = AlbertConfig(vocab_size=s.vocab_size, **{**s.model, **model_changes})
    first, *rest = evals
    opts = _options(s, train_file, evals[first][0], model_dir, seed, eval_steps(evals[first][1], s))
    results = {first: pretrain(config, opts)}
    for name in rest:
        file, instances = evals[name]
        # From the exported Google-format checkpoint (the only eval, so the final weights): the
        # eval-only path cannot restore our own training checkpoints (optimizer slots).
        only_eval = dc.replace(
            opts,
            do_train=False,
            eval_input_file=file,
            output_dir=fileio.join(model_dir, f"eval_{name}"),
            init_checkpoint=fileio.join(model_dir, BEST_CHECKPOINT),
            max_eval_steps=eval_steps(instances, s),
        )
        results[name] = pretrain(config, only_eval)
    keras.backend.clear_session()
    return results
