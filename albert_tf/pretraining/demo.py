"""The pretraining demo (`python run_pretraining.py` with no flags): the whole path from raw text
to a pretrained ALBERT on English text that ships with every CPython 3.11 (`pydoc_data.topics`
and the docstrings of the standard library's own modules).

corpus → SentencePiece (ALBERT recipe) → MLM + SOP TFRecords → pretraining (LAMB, MLM + SOP)
→ evaluation on held-out documents (whole modules / topics never trained on) → checkpoint,
plot, summary.
"""

from __future__ import annotations

import ast
import collections
import json
import math
import os
import re
import sysconfig
import time
import zlib

from absl import logging

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE, AlbertConfig
from albert_tf.core.fileio import write_text_atomic
from albert_tf.engine.compiling import compile_for_inference
from albert_tf.engine.save_points import BEST_CHECKPOINT, EVAL_HISTORY
from albert_tf.modeling.albert_model import AlbertPretrainer
from albert_tf.pretraining.builder import build_pretraining_data
from albert_tf.pretraining.input import pretraining_dataset
from albert_tf.pretraining.pretrain import PretrainingOptions, make_evaluate_fn, pretrain
from albert_tf.text.spm_train import train_sentencepiece

# jit_compile: XLA, ~1.6x the steps/s of this small model on CPU (per-op overhead dominates)
DEMO = dict(
    vocab_size=2000,
    max_seq_length=64,
    max_predictions_per_seq=10,
    dupe_factor=4,
    train_batch_size=32,
    eval_batch_size=64,
    num_train_steps=3000,
    num_warmup_steps=300,
    save_checkpoints_steps=150,
    learning_rate=1e-2,
    optimizer="lamb",
    held_out_percent=17,
    eval_dupe_factor=1,
    jit_compile=True,
)
DEMO_MODEL = dict(
    embedding_size=128,
    hidden_size=128,
    num_hidden_layers=4,
    num_hidden_groups=1,
    num_attention_heads=4,
    intermediate_size=512,
    inner_group_num=1,
    hidden_act="gelu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=64,
    type_vocab_size=2,
    initializer_range=0.02,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
# stdlib folders that hold tests, GUI demos or vendored code rather than library docstrings
_SKIP_DIRS = frozenset(
    {
        "test",
        "tests",
        "site-packages",
        "idlelib",
        "__pycache__",
        "turtledemo",
        "lib2to3",
        "ensurepip",
        "tkinter",
    }
)


def text_sentences(text: str) -> list:
    """The prose sentences of a text, for the demo's corpus.

    Paragraphs (separated by blank lines) shorter than 20 characters or that start like code,
    a table or a list (`*`, `|`, `>>>`, `---`, `$`, `%`) are skipped; the others are split
    at sentence ends, and sentences of 10 characters or fewer are dropped.

    Args:
        text: str. A docstring or a pydoc topic.

    Returns:
        list of str: the sentences, in order.

    Example:

    >>> from albert_tf.pretraining.demo import text_sentences
    >>> text_sentences("ALBERT shares its layers. It is small. Ok.")
    ['ALBERT shares its layers.', 'It is small.']
    """
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        if len(flat) < 20 or flat.startswith(("*", "|", ">>>", "---", "$", "%")):
            continue
        sentences.extend(s for s in _SENTENCE_END.split(flat) if len(s) > 10)
    return sentences


def pydoc_documents() -> list:
    """One document per pydoc topic, one sentence per line (Google's input format)."""
    return [d for _, d in pydoc_named()]


def pydoc_named() -> list:
    # deferred: only this path needs it
    import pydoc_data.topics as topics

    named = [
        (f"pydoc:{name}", text_sentences(topics.topics[name])) for name in sorted(topics.topics)
    ]
    return [(key, d) for key, d in named if len(d) >= 2]


def stdlib_files(root: str | None = None) -> list:
    """The standard library's .py files (no tests, GUI demos or site-packages), sorted."""
    root = root or sysconfig.get_paths()["stdlib"]
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if d not in _SKIP_DIRS and not d.startswith(("test", "config-"))
        )
        files += [
            os.path.join(folder, n)
            for n in sorted(names)
            if n.endswith(".py") and not n.startswith("test")
        ]
    return files


def docstring_documents(path: str, module: str) -> list:
    """(module, sentences) for every module/class/function docstring of one file with ≥2 sentences:
    each docstring is one document, its sentences in the author's order."""
    try:
        tree = ast.parse(fileio.read_text(path))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []  # a stdlib file written for another Python (e.g. a vendored py2 script)
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = []
    for node in ast.walk(tree):
        text = ast.get_docstring(node) if isinstance(node, kinds) else None
        sentences = text_sentences(text) if text else []
        if len(sentences) >= 2:
            docs.append((module, sentences))
    return docs


def demo_documents() -> list:
    """(source, sentences) pairs: pydoc topics, then stdlib docstrings, in a fixed order.
    `source` names the topic or module, the unit that is held out as a whole."""
    root = sysconfig.get_paths()["stdlib"]
    named = pydoc_named()
    for path in stdlib_files(root):
        module = path[len(root) :].lstrip(os.sep)[:-3].replace(os.sep, ".")
        named.extend(docstring_documents(path, f"stdlib:{module}"))
    return named


def is_held_out(source: str, percent: int) -> bool:
    """Deterministic split by source (a topic or a whole module), so no held-out module's text
    is ever trained on."""
    return zlib.crc32(source.encode("utf-8")) % 100 < percent


def split_documents(named: list, percent: int) -> tuple:
    """(training, held-out) lists of (source, sentences), split by is_held_out; a held-out
    document whose text is also a training document (a docstring copied between modules) is
    dropped, so nothing held out was seen in training."""
    train = [d for d in named if not is_held_out(d[0], percent)]
    seen = {tuple(d) for _, d in train}
    held = [d for d in named if is_held_out(d[0], percent) and tuple(d[1]) not in seen]
    return train, held


def write_corpus(documents, path) -> str:
    return write_text_atomic(path, "\n\n".join("\n".join(d) for d in documents) + "\n")


def plot_curves(
    history: list, path: str, mlm_chance: float | None = None, sop_majority: float | None = None
) -> str:
    """PNG with the held-out MLM and SOP loss and accuracy at every evaluation (the untrained
    model at step 0, then every checkpoint), chance dashed."""
    # deferred: plotting only; matplotlib is slow to import
    import matplotlib

    matplotlib.use("Agg")
    # deferred: plotting only; matplotlib is slow to import
    import matplotlib.pyplot as plt

    steps = [h["global_step"] for h in history]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].plot(steps, [h["masked_lm_loss"] for h in history], "o-", label="MLM loss (held out)")
    axes[0].plot(
        steps, [h["sentence_order_loss"] for h in history], "s-", label="SOP loss (held out)"
    )
    axes[0].axhline(math.log(2), color="C1", ls="--", lw=1, label="SOP chance (ln 2)")
    axes[0].set_xlabel("step"), axes[0].set_ylabel("held-out loss"), axes[0].legend()
    axes[1].plot(steps, [h["masked_lm_accuracy"] for h in history], "o-", label="MLM accuracy")
    axes[1].plot(steps, [h["sentence_order_accuracy"] for h in history], "s-", label="SOP accuracy")
    axes[1].axhline(0.5, color="C1", ls="--", lw=1, label="SOP chance (0.5)")
    if sop_majority is not None:
        axes[1].axhline(
            sop_majority, color="C1", ls=":", lw=1, label=f"SOP majority class ({sop_majority:.3f})"
        )
    if mlm_chance is not None:
        axes[1].axhline(
            mlm_chance,
            color="C0",
            ls="--",
            lw=1,
            label=f"MLM chance (most frequent piece, {mlm_chance:.3f})",
        )
    axes[1].set_xlabel("step"), axes[1].set_ylabel("held-out accuracy"), axes[1].set_ylim(0, 1)
    axes[1].legend(fontsize=8, loc="upper right", ncol=2)  # above the curves and chance lines
    fig.suptitle("ALBERT pretraining demo (pydoc_data.topics + stdlib docstrings)")
    fig.tight_layout()
    with fileio.atomic_path_with_suffix(path, ".png", local=True) as tmp:  # matplotlib: local
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return path


def held_out_baselines(record_file: str, max_seq_length: int, max_predictions_per_seq: int) -> dict:
    """Chance levels of a record file: MLM accuracy of always predicting its most frequent masked
    piece, and the share of SOP/NSP label 1 (the majority class when above 0.5)."""
    ds = pretraining_dataset(
        record_file, 256, max_seq_length, max_predictions_per_seq, is_training=False
    )
    counts, labels, n = collections.Counter(), 0, 0
    for batch in ds:
        ids, weights = (
            batch["masked_lm_ids"].numpy().ravel(),
            batch["masked_lm_weights"].numpy().ravel(),
        )
        counts.update(ids[weights > 0].tolist())
        labels += int(batch["next_sentence_labels"].numpy().sum())
        n += len(batch["next_sentence_labels"])
    total = sum(counts.values())
    return {
        "masked_lm_accuracy": counts.most_common(1)[0][1] / total if total else 0.0,
        "label_1_share": labels / n if n else 0.0,
    }


def build_demo_data(output_dir: str, opts: dict) -> dict:
    """Corpus split by module/topic, SentencePiece, and the training and held-out TFRecords."""
    train_docs, held_docs = split_documents(demo_documents(), opts["held_out_percent"])
    train_txt = write_corpus(
        [d for _, d in train_docs], fileio.join(output_dir, "corpus_train.txt")
    )
    eval_txt = write_corpus([d for _, d in held_docs], fileio.join(output_dir, "corpus_eval.txt"))
    sources = {
        "train": sorted({s for s, _ in train_docs}),
        "held_out": sorted({s for s, _ in held_docs}),
    }
    print(
        f"[1/5] corpus: {len(train_docs)} training and {len(held_docs)} held-out documents "
        f"({len(sources['held_out'])} whole topics/modules held out)"
    )
    spm = train_sentencepiece([train_txt], fileio.join(output_dir, "30k-clean"), opts["vocab_size"])
    print(f"[2/5] SentencePiece model (ALBERT recipe, {opts['vocab_size']} pieces): {spm}")
    common = dict(
        spm_model_file=spm,
        max_seq_length=opts["max_seq_length"],
        max_predictions_per_seq=opts["max_predictions_per_seq"],
        random_seed=12345,
    )
    train_rec = fileio.join(output_dir, "train.tfrecord")
    eval_rec = fileio.join(output_dir, "eval.tfrecord")
    stats = build_pretraining_data(
        [train_txt], [train_rec], dupe_factor=opts["dupe_factor"], **common
    )
    eval_stats = build_pretraining_data(
        [eval_txt], [eval_rec], dupe_factor=opts["eval_dupe_factor"], **common
    )
    print(
        f"[3/5] TFRecords: {stats.get('instances')} training and {eval_stats.get('instances')} "
        "held-out MLM + SOP examples"
    )
    return {
        "spm": spm,
        "train_record": train_rec,
        "eval_record": eval_rec,
        "sources": sources,
        "train_instances": stats.get("instances", 0),
        "eval_instances": eval_stats.get("instances", 0),
    }


def initial_eval(config, popts) -> dict:
    """The held-out metrics of the untrained model (step 0): the same seed as the training, so
    the same initial weights; evaluated like every checkpoint (all held-out batches)."""
    # deferred: keeps TensorFlow off this module's import
    import keras

    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    keras.utils.set_random_seed(popts.seed)
    model = compile_for_inference(AlbertPretrainer(config), jit_compile=popts.jit_compile)
    results = make_evaluate_fn(popts, tf.distribute.get_strategy())(model)
    return {"global_step": 0, **{k: float(v) for k, v in results.items()}}


def _options(data: dict, opts: dict, model_dir: str):
    return PretrainingOptions(
        input_file=data["train_record"],
        eval_input_file=data["eval_record"],
        output_dir=model_dir,
        do_eval=True,
        max_seq_length=opts["max_seq_length"],
        max_predictions_per_seq=opts["max_predictions_per_seq"],
        train_batch_size=opts["train_batch_size"],
        eval_batch_size=opts["eval_batch_size"],
        optimizer=opts["optimizer"],
        learning_rate=opts["learning_rate"],
        num_train_steps=opts["num_train_steps"],
        num_warmup_steps=opts["num_warmup_steps"],
        save_checkpoints_steps=opts["save_checkpoints_steps"],
        iterations_per_loop=50,
        max_eval_steps=max(1, data["eval_instances"] // opts["eval_batch_size"]),
        log_every_steps=100,
        seed=1,
        keep_checkpoint_max=2,
        jit_compile=opts["jit_compile"],
    )


def _check_overrides(overrides):
    """A ValueError naming every override that is no setting of DEMO or DEMO_MODEL."""
    unknown = sorted(k for k in overrides if k not in DEMO and k not in DEMO_MODEL)
    if unknown:
        raise ValueError(
            f"run_demo: unknown setting(s) {unknown}; the settings are "
            f"{sorted(DEMO) + sorted(DEMO_MODEL)}"
        )


def run_demo(output_dir="demo_output", **overrides) -> dict:
    """Runs the whole pretraining demo and returns its summary.

    The steps: build a corpus from text that ships with CPython (pydoc topics and standard
    library docstrings; whole topics and modules held out for evaluation), train a
    SentencePiece model on it, write MLM + SOP TFRecords, pretrain a small ALBERT (`DEMO_MODEL`:
    4 layers, H = 128) with LAMB for `DEMO["num_train_steps"]` steps, evaluating on the
    held-out documents at every checkpoint, then plot the curves. It prints a line for each of
    its five stages and writes everything into `output_dir`, including demo_summary.json. With
    the defaults it takes about 5 minutes on 2 idle CPU cores (docs/paper.md).

    Args:
        output_dir: str. Where the corpus, SentencePiece model, TFRecords, checkpoints,
            plot and summary go. Default "demo_output".
        **overrides: Settings that replace those of `DEMO` (data and training, e.g.
            `num_train_steps=300`) or `DEMO_MODEL` (the model, e.g. `num_hidden_layers=2`),
            by name.

    Raises:
        ValueError: An override names no setting of `DEMO` or `DEMO_MODEL`.

    Returns:
        dict: the summary: `held_out` (the final held-out metrics), `initial_eval` (the
        untrained model's), `first_eval`, the chance levels (`chance`), the numbers of
        examples and held-out sources, wall and CPU minutes, and the paths of the config,
        SentencePiece model, best checkpoint, plot and TensorBoard logs.
    """
    _check_overrides(overrides)
    opts = {**DEMO, **{k: v for k, v in overrides.items() if k in DEMO}}
    model_overrides = {k: v for k, v in overrides.items() if k in DEMO_MODEL}
    fileio.makedirs(output_dir)
    started, cpu_started = time.time(), time.process_time()
    data = build_demo_data(output_dir, opts)
    config = AlbertConfig(vocab_size=opts["vocab_size"], **{**DEMO_MODEL, **model_overrides})
    config.to_json_file(fileio.join(output_dir, CONFIG_FILE))
    model_dir = fileio.join(output_dir, "model")
    popts = _options(data, opts, model_dir)
    print(
        f"[4/5] pretraining a {config.num_hidden_layers}-layer shared ALBERT "
        f"(E={config.embedding_size}, H={config.hidden_size}, seq {opts['max_seq_length']}) "
        f"for {opts['num_train_steps']} steps of {opts['train_batch_size']}"
        f"{' with XLA' if opts['jit_compile'] else ''}, held-out eval every "
        f"{opts['save_checkpoints_steps']} steps"
    )
    initial = initial_eval(config, popts)
    final = pretrain(config, popts)
    history = [initial] + fileio.read_json(fileio.join(model_dir, EVAL_HISTORY))
    base = held_out_baselines(
        data["eval_record"], opts["max_seq_length"], opts["max_predictions_per_seq"]
    )
    chance, majority = (
        base["masked_lm_accuracy"],
        max(base["label_1_share"], 1 - base["label_1_share"]),
    )
    png = plot_curves(history, fileio.join(output_dir, "pretraining_curves.png"), chance, majority)
    summary = {
        "held_out": final,
        "initial_eval": initial,
        "first_eval": history[1] if history[1:] else None,
        "held_out_examples": popts.max_eval_steps * opts["eval_batch_size"],
        "held_out_instances": data["eval_instances"],
        "train_instances": data["train_instances"],
        "held_out_sources": len(data["sources"]["held_out"]),
        "chance": {
            "masked_lm_accuracy": round(chance, 4),
            "sentence_order_accuracy": 0.5,
            "sentence_order_majority_class": round(majority, 4),
        },
        "wall_minutes": round((time.time() - started) / 60, 1),
        "cpu_minutes": round((time.process_time() - cpu_started) / 60, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "jit_compile": opts["jit_compile"],
        "output_dir": output_dir,
        "config": fileio.join(output_dir, CONFIG_FILE),
        "spm_model": data["spm"],
        "plot": png,
        "tensorboard": model_dir,
        "best_checkpoint": fileio.join(model_dir, BEST_CHECKPOINT),
    }
    write_text_atomic(fileio.join(output_dir, "demo_summary.json"), json.dumps(summary, indent=1))
    _report(summary, chance, majority)
    return summary


def _report(summary: dict, chance: float, majority: float):
    final = summary["held_out"]
    print(
        f"[5/5] held-out MLM accuracy {final['masked_lm_accuracy']:.3f} (chance {chance:.3f}), "
        f"SOP accuracy {final['sentence_order_accuracy']:.3f} (chance 0.5, majority class "
        f"{majority:.3f}) on {summary['held_out_examples']} held-out examples after "
        f"{final['global_step']} steps ({summary['wall_minutes']} min wall, "
        f"{summary['cpu_minutes']} CPU min, load average {summary['load_average'][0]})"
    )
    for key in ("config", "spm_model", "best_checkpoint", "plot", "tensorboard"):
        print(f"  {key:16s} {summary[key]}")
    logging.info("demo summary: %s", summary)
