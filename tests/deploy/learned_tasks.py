"""Tiny task models that have learned something, one per kind the LiteRT export writes: the
fixture model fitted (Adam on the whole set each step) until it gives every answer of a few
sample examples. Random weights attend almost uniformly and hide what int8 quantization does
to attention; a model that memorised its examples has confident attention to lose (the SQuAD
model's spans rest on the tokens themselves more than on attention:
test_quantized_learned_kinds.py).

Each `LearnedTask` holds the features, what they should decide (`targets`, in the form of
`quantization.decisions`) and the loss; `deploy_helpers.fit_model` fits its model.

    token_classifier   the NER sample's sentences, a label on every real piece (a word's
                       later pieces carry its label, [CLS] and [SEP] "O")
    squad_v1           the SQuAD samples' answerable questions (v1.1, v2.0 dev), each
                       paragraph cut to the words around its answer
    multiple_choice    the RACE sample's first 8 questions, [article's first sentence,
                       question + option] x 4
    wordpiece          a classifier on Google's Chinese layout and its WordPiece vocabulary
                       (the albert_zh fixtures): texts of the WordPiece cases, labels by turn
"""

import dataclasses
import json
from typing import Callable

from deploy_helpers import CONFIG, FEATURE_NAMES, WORDPIECE_VOCAB
import numpy as np
from repo_paths import DATA, FIXTURES

from albert_tf import AlbertConfig, TextEncoder

TINY_CHECKPOINT = FIXTURES / "albert_tiny" / "model.ckpt-best"
ZH_RELEASE = FIXTURES / "albert_zh" / "albert_zh_tiny_google"
SPM_MODEL = FIXTURES / "albert_tiny" / "30k-clean.model"


@dataclasses.dataclass
class LearnedTask:
    """A kind's sample set: `build()` makes the model, `loss(outputs, feats)` its loss."""

    kind: str  # quantization's kind name
    length: int
    build: Callable
    feats: dict
    targets: np.ndarray
    loss: Callable
    checkpoint: str
    labels: list = None  # a classifier's label names


def _stack(records) -> dict:
    return {name: np.array([r[name] for r in records], np.int32) for name in FEATURE_NAMES}


def _mean_ce(targets, probabilities, weights=None):
    import tensorflow as tf

    p = tf.gather(probabilities, targets, axis=-1, batch_dims=len(targets.shape))
    ce = -tf.math.log(tf.maximum(p, 1e-12))
    if weights is None:
        return tf.reduce_mean(ce)
    weights = tf.cast(weights, ce.dtype)
    return tf.reduce_sum(ce * weights) / tf.reduce_sum(weights)


def token_classifier(length=32) -> LearnedTask:
    from albert_tf import AlbertTokenClassifier
    from albert_tf.tasks.ner.conll import label_list, read_conll
    from albert_tf.tasks.ner.task import encode_sentence

    encoder = TextEncoder.from_files(spm_model_file=SPM_MODEL)
    sentences = read_conll(DATA / "ner" / "conll2003_bio.txt")
    labels = label_list(sentences)
    ids = {label: i for i, label in enumerate(labels)}
    records, targets = [], []
    for s in sentences:
        record, starts = encode_sentence(s.words, s.labels, ids, encoder, length)
        tags = [ids["O"]] * length
        kept = [(p, label) for p, label in zip(starts, s.labels) if p >= 0]
        ends = [p for p, _ in kept[1:]] + [sum(record["input_mask"]) - 1]
        for (start, label), end in zip(kept, ends):
            tags[start:end] = [ids[label]] * (end - start)
        records.append(record)
        targets.append(tags)
    feats = _stack(records)
    targets = np.array(targets)
    return LearnedTask(
        "token_classifier",
        length,
        lambda: AlbertTokenClassifier(CONFIG, len(labels), dropout_prob=0.0),
        feats,
        targets[feats["input_mask"] > 0][:, None],
        lambda outputs, f: _mean_ce(targets, outputs["probabilities"], f["input_mask"]),
        str(TINY_CHECKPOINT),
    )


def _around_answer(example, chars=20):
    """The example's paragraph cut to the words within `chars` of its answer (a short
    paragraph: one window with padding, as most of SQuAD's paragraphs fit one window of 384)."""
    text, start, end = example.paragraph_text, example.start_char, example.end_char
    first = text.rfind(" ", 0, max(start - chars, 0)) + 1
    last = text.find(" ", end + chars)
    cut = text[first : len(text) if last < 0 else last]
    return dataclasses.replace(example, paragraph_text=cut, start_char=start - first)


def squad_v1(length=64) -> LearnedTask:
    import tensorflow as tf

    from albert_tf import AlbertSquadV1
    from albert_tf.tasks.squad.examples import read_squad_examples
    from albert_tf.tasks.squad.features import convert_examples_to_features

    encoder = TextEncoder.from_files(spm_model_file=SPM_MODEL)
    examples = [
        _around_answer(e)
        for path, v2 in (("v1.1/squad.json", False), ("v2.0/dev-v2.0.json", True))
        for e in read_squad_examples(DATA / "squad" / path, True, v2)
        if not e.is_impossible
    ]
    windows = convert_examples_to_features(
        examples, encoder.tokenizer, length, length, 16, is_training=True
    )
    windows = [w for w in windows if w.start_position > 0]  # the window holding the answer
    feats = {n: np.array([getattr(w, n) for w in windows], np.int32) for n in FEATURE_NAMES}
    targets = np.array([[w.start_position, w.end_position] for w in windows])

    def loss(outputs, f):
        real = tf.cast(f["input_mask"], tf.float32)
        ends = [outputs[k] + (real - 1.0) * 1e4 for k in ("start_logits", "end_logits")]
        return sum(_mean_ce(targets[:, i], tf.nn.softmax(e)) for i, e in enumerate(ends))

    return LearnedTask(
        "squad_v1",
        length,
        lambda: AlbertSquadV1(CONFIG),
        feats,
        targets,
        loss,
        str(TINY_CHECKPOINT),
    )


def multiple_choice(length=48) -> LearnedTask:
    from albert_tf import AlbertMultipleChoice
    from albert_tf.tasks.race.data import encode_race_example, read_race_examples

    encoder = TextEncoder.from_files(spm_model_file=SPM_MODEL)
    examples = [e for split in ("train", "test") for e in read_race_examples(str(DATA), split)][:8]
    # the article's first sentence: four short choices, padded (a full window has no padding
    # for the mask to act on)
    examples = [dataclasses.replace(e, article=e.article.split(". ")[0] + ".") for e in examples]
    records = [encode_race_example(e, encoder, length, max_qa_length=length // 2) for e in examples]
    feats = {k: v.reshape(len(records), 4, length) for k, v in _stack(records).items()}
    targets = np.array([r["label"] for r in records])
    return LearnedTask(
        "multiple_choice",
        length,
        lambda: AlbertMultipleChoice(CONFIG, num_choices=4, dropout_prob=0.0),
        feats,
        targets[:, None],
        lambda outputs, f: _mean_ce(targets, outputs["probabilities"]),
        str(TINY_CHECKPOINT),
    )


def wordpiece_classifier(length=32) -> LearnedTask:
    from albert_tf import AlbertClassifier

    config = AlbertConfig.from_json_file(ZH_RELEASE / "albert_config.json")
    encoder = TextEncoder.from_files(vocab_file=WORDPIECE_VOCAB)
    lines = (FIXTURES / "albert_zh" / "wordpiece_tokenization.jsonl").read_text("utf-8")
    texts = list(dict.fromkeys(json.loads(line)["text"] for line in lines.splitlines()))[:16]
    feats = {name: np.zeros((len(texts), length), np.int32) for name in FEATURE_NAMES}
    for i, text in enumerate(texts):
        ids = [encoder.cls_id, *encoder.ids(text)[: length - 2], encoder.sep_id]
        feats["input_ids"][i, : len(ids)] = ids
        feats["input_mask"][i, : len(ids)] = 1
    targets = np.arange(len(texts)) % 2
    return LearnedTask(
        "classifier",
        length,
        lambda: AlbertClassifier(config, 2, dropout_prob=0.0),
        feats,
        targets[:, None],
        lambda outputs, f: _mean_ce(targets, outputs["probabilities"]),
        str(ZH_RELEASE / "model.ckpt"),
        labels=["even", "odd"],
    )


TASKS = {
    "token_classifier": token_classifier,
    "squad_v1": squad_v1,
    "multiple_choice": multiple_choice,
    "wordpiece": wordpiece_classifier,
}
