"""Token classification (NER) on the shared fine-tuning machinery.

CoNLL files become records with a label on the first piece of each word (as Google's BERT NER
recipes do); evaluation reports entity-level precision / recall / F1 as seqeval computes
them; predictions are written one word a line.

A sentence longer than max_seq_length pieces is cut after its last whole word that fits. The
words past the cut (and a word with no pieces) are predicted "O", and count in the metrics as
such: the gold file is always scored whole.
"""

from __future__ import annotations

import dataclasses
import json
from typing import List, Optional, Sequence

from absl import logging
import numpy as np

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.fileio import file_fingerprint
from albert_tf.engine import finetuning
from albert_tf.engine.records import cached_records
from albert_tf.modeling.finetuning_models import AlbertTokenClassifier
from albert_tf.tasks.ner import conll, metrics
from albert_tf.text.encoding import TextEncoder

LABELS_FILE = "labels.json"  # the label list and tag scheme of a run, beside its checkpoints
PREDICTIONS_FILE = "test_predictions.txt"
SPLIT_FILES = {"train": ("train.txt",), "dev": ("dev.txt", "valid.txt"), "test": ("test.txt",)}
TOKEN_OUTPUTS = ("logits", "probabilities")


def ner_feature_spec(max_seq_length: int) -> dict:
    """The feature layout of NER records.

    Args:
        max_seq_length: int. The length L of every record's token features.

    Returns:
        dict. Feature name -> (dtype name, length): `input_ids`, `input_mask`,
        `segment_ids`, `label_ids` (the label of each word's first piece) and
        `label_weights` (1 at each word's first piece, 0 elsewhere), all (int64, L), and
        `is_real_example` (int64, 1).

    Example:

    >>> from albert_tf.tasks.ner.task import ner_feature_spec
    >>> ner_feature_spec(16)["label_weights"]
    ('int64', 16)
    """
    L = max_seq_length
    return {
        "input_ids": ("int64", L),
        "input_mask": ("int64", L),
        "segment_ids": ("int64", L),
        "label_ids": ("int64", L),
        "label_weights": ("int64", L),
        "is_real_example": ("int64", 1),
    }


def encode_sentence(
    words: Sequence[str],
    labels: Optional[Sequence[str]],
    label_map: dict,
    encoder: TextEncoder,
    max_seq_length: int,
):
    """Encodes one sentence as an NER record: `[CLS]`, the pieces of each word, `[SEP]`.

    Each word is tokenized on its own; its label goes on its first piece (weight 1), the
    other pieces get label 0 and weight 0. When the pieces do not fit in `max_seq_length`,
    the sentence is cut after the last whole word that fits.

    Args:
        words: sequence of str. The sentence's words.
        labels: sequence of str, or None. A label per word; None for an unlabeled sentence
            (every label id is then 0).
        label_map: dict. Label name -> id.
        encoder: TextEncoder. The tokenizer (anything with `ids(text)`, `cls_id`, `sep_id`,
            `pad_id`).
        max_seq_length: int. The length of the padded features.

    Returns:
        tuple. `(record, positions)`: the record's features (lists of `max_seq_length` ints,
        and `is_real_example` 1), and per word the index of its first piece, -1 for a word
        with no pieces or past the cut.

    Raises:
        KeyError: when a label is not in `label_map`.

    Example:

    >>> from albert_tf.tasks.ner.task import encode_sentence
    >>> class Pieces:  # a stand-in tokenizer: one piece per letter
    ...     cls_id, sep_id, pad_id = 2, 3, 0
    ...     def ids(self, word): return [10 + ord(c) - ord("a") for c in word]
    >>> record, positions = encode_sentence(["ab", "c"], ["B-X", "O"], {"O": 0, "B-X": 1},
    ...                                     Pieces(), 6)
    >>> record["input_ids"], record["label_ids"], record["label_weights"], positions
    ([2, 10, 11, 12, 3, 0], [0, 1, 0, 0, 0, 0], [0, 1, 0, 1, 0, 0], [1, 3])
    """
    ids, label_ids, weights, positions = [encoder.cls_id], [0], [0], []
    cut = False  # a word did not fit: it and every word after it are cut
    for i, word in enumerate(words):
        pieces = [] if cut else encoder.ids(word)
        cut = cut or len(ids) + len(pieces) > max_seq_length - 1
        if cut or not pieces:
            positions.append(-1)
            continue
        positions.append(len(ids))
        ids += pieces
        label_ids += [label_map[labels[i]] if labels is not None else 0] + [0] * (len(pieces) - 1)
        weights += [1] + [0] * (len(pieces) - 1)
    ids.append(encoder.sep_id)
    label_ids.append(0)
    weights.append(0)
    pad = max_seq_length - len(ids)
    record = {
        "input_ids": ids + [encoder.pad_id] * pad,
        "input_mask": [1] * len(ids) + [0] * pad,
        "segment_ids": [0] * max_seq_length,
        "label_ids": label_ids + [0] * pad,
        "label_weights": weights + [0] * pad,
        "is_real_example": 1,
    }
    return record, positions


@dataclasses.dataclass
class NerFiles:
    """The CoNLL files of an NER dataset, one per split.

    Each file has a word per line and its label in the last column ("word label", or
    CoNLL-2003's "word POS chunk label"), a blank line between sentences; a test file may
    have words only.

    Args:
        train: str or None. The training file. Default None.
        dev: str or None. The evaluation file. Default None.
        test: str or None. The file to predict. Default None.

    Example:

    >>> from albert_tf.tasks.ner.task import NerFiles
    >>> NerFiles(train="tests/data/samples/ner/conll2003_bio.txt").test is None
    True
    """

    train: Optional[str] = None
    dev: Optional[str] = None
    test: Optional[str] = None

    @classmethod
    def find(cls, data_dir=None, **given) -> NerFiles:
        """Finds the files of each split: those given, else the ones in a data folder.

        Args:
            data_dir: str or None. A folder holding train.txt, dev.txt (or valid.txt) and
                test.txt; any may be missing. Default None.
            **given: str or None. A file per split (`train=`, `dev=`, `test=`), which wins
                over the folder's.

        Returns:
            NerFiles. The files found (None for a split with none).
        """
        found = {}
        for split, names in SPLIT_FILES.items():
            path = given.get(split)
            if path is None and data_dir:
                path = next(
                    (
                        fileio.join(data_dir, n)
                        for n in names
                        if fileio.isfile(fileio.join(data_dir, n))
                    ),
                    None,
                )
            found[split] = path
        return cls(**found)


class NerTask:
    """One NER dataset for the fine-tuning engine: sentences, labels, records and metrics.

    Gives what `run_ner.py` and the engine's `run_finetuning` need: the sentences and cached
    TFRecord features of each split, the dev metrics (entity-level micro precision / recall
    / F1 as seqeval computes them, word accuracy, per-type F1, loss) and the test prediction
    file. The best checkpoint is the one with the best dev F1.

    Args:
        files: NerFiles. The CoNLL file of each split.
        encoder: TextEncoder. The tokenizer.
        max_seq_length: int. The length of the records, in pieces.
        cache_dir: str. The folder for the cached TFRecord files.
        labels: list of str, or None. The label names in id order; None reads them from the
            train file ("O" first, then the entity labels by type). Default None.
        scheme: str or None. The tag scheme, "BIO" (IOB2) or "BIOES"; None infers it from
            the labels. Default None.

    Raises:
        InputError: when `labels` is None and there is no train file.

    Example:

    >>> import tempfile, albert_tf
    >>> from albert_tf.tasks.ner.task import NerFiles, NerTask
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file="tests/data/fixtures/spm.model")
    >>> files = NerFiles(train="tests/data/samples/ner/conll2003_bio.txt",
    ...                  test="tests/data/samples/ner/unlabeled.txt")
    >>> task = NerTask(files, encoder, 32, tempfile.mkdtemp())
    >>> task.labels, task.scheme
    (['O', 'B-LOC', 'B-MISC', 'I-MISC', 'B-ORG', 'I-ORG', 'B-PER', 'I-PER'], 'BIO')
    >>> task.records("train")[1], task.sentences("test")[0].words
    (3, ('Priya', 'Raman', 'joined', 'Orbitale', '.'))
    """

    best_metric = "f1"

    def __init__(
        self,
        files: NerFiles,
        encoder: TextEncoder,
        max_seq_length: int,
        cache_dir,
        labels: Optional[List[str]] = None,
        scheme: Optional[str] = None,
    ):
        self.files, self.encoder = files, encoder
        self.max_seq_length, self.cache_dir = max_seq_length, cache_dir
        self.spec = ner_feature_spec(max_seq_length)
        self._sentences, self._encodings = {}, {}
        if labels is None:
            if files.train is None:
                raise InputError("NER: no train file to read the labels from; pass the label list")
            train = self.sentences("train")
            labels = conll.label_list(train)
            scheme = scheme or conll.label_scheme(labels)
        self.labels = list(labels)
        self.scheme = scheme or conll.label_scheme(self.labels)
        self.label_map = {label: i for i, label in enumerate(self.labels)}

    @property
    def label_names(self):
        """The tags in label-id order."""
        return list(self.labels)

    def sentences(self, split) -> List[conll.Sentence]:
        """The sentences of a split, read once.

        Args:
            split: str. "train", "dev" or "test" (a test file may have no labels).

        Returns:
            list of Sentence. The sentences (`words`, `labels` or None).

        Raises:
            InputError: when the split has no file.
        """
        if split not in self._sentences:
            path = getattr(self.files, split)
            if path is None:
                raise InputError(
                    f"NER: no {split} file (give {split}_file or put "
                    f"{' or '.join(SPLIT_FILES[split])} in data_dir)"
                )
            self._sentences[split] = conll.read_conll(
                path, labeled=True if split != "test" else None
            )
        return self._sentences[split]

    def check_labels(self, split) -> None:
        """Checks a split's tags: well formed in the scheme, and all in the label set.

        Args:
            split: str. "train", "dev" or "test".

        Raises:
            InputError: when a tag breaks the scheme or a label is not in the label set (the
                message names the file and line).
        """
        sentences = self.sentences(split)
        path = getattr(self.files, split)
        conll.check_tags(sentences, self.scheme, path)
        for s in sentences:
            for label, line in zip(s.labels or (), s.lines):
                if label not in self.label_map:
                    raise InputError(
                        f"{path}, line {line}: label {label!r} is not in the label "
                        f"set {self.labels} (from the train file or the run's "
                        f"{LABELS_FILE})"
                    )

    def _encoded(self, split):
        """(record, word positions) of every sentence of a split, tokenized once."""
        if split not in self._encodings:
            self._encodings[split] = [
                encode_sentence(
                    s.words, s.labels, self.label_map, self.encoder, self.max_seq_length
                )
                for s in self.sentences(split)
            ]
        return self._encodings[split]

    def records(self, split):
        """The cached TFRecord file of a split, written on first use.

        The cache is keyed by everything that changes the records: the file's content,
        the length, the labels and the tokenizer.

        Args:
            split: str. "train", "dev" or "test".

        Returns:
            tuple. `(path, count)`: the TFRecord file and its number of records.
        """
        path = getattr(self.files, split)
        params = {
            "task": "ner",
            "split": split,
            "file": file_fingerprint(path),
            "max_seq_length": self.max_seq_length,
            "labels": self.labels,
            **self.encoder.fingerprint(),
        }
        make = lambda: (record for record, _ in self._encoded(split))  # noqa: E731
        return cached_records(self.cache_dir, f"ner_{split}", params, self.spec, make)

    def predict_labels(self, model, split, batch_size):
        """Predicts a label for every word of a split.

        Each word gets the label of its first piece's logits; words past the cut (or
        without pieces) get "O", and a warning counts them.

        Args:
            model: keras.Model. The token classifier (`AlbertTokenClassifier`).
            split: str. "train", "dev" or "test".
            batch_size: int. The prediction batch size.

        Returns:
            tuple. `(predictions, outputs)`: a list of label sequences (one label per word of
            each sentence), and the model's outputs per record (`logits`,
            `probabilities`).
        """
        path, n = self.records(split)
        out = finetuning.predict_records(
            model,
            path,
            self.spec,
            n,
            batch_size,
            seq_length=self.max_seq_length,
            token_outputs=TOKEN_OUTPUTS,
        )
        preds, encoded = [], self._encoded(split)
        for i, (_, positions) in enumerate(encoded):
            best = np.argmax(out["logits"][i], axis=-1)
            preds.append([self.labels[best[p]] if p >= 0 else "O" for p in positions])
        cut = sum(p < 0 for _, pos in encoded for p in pos)
        if cut:
            logging.warning(
                "NER %s: %d words past max_seq_length %d (or without pieces) are predicted O",
                split,
                cut,
                self.max_seq_length,
            )
        return preds, out

    def _scores(self, gold, preds) -> dict:
        scores = metrics.entity_scores(gold, preds, self.scheme)
        words = [(g == p) for gs, ps in zip(gold, preds) for g, p in zip(gs, ps)]
        return {
            "f1": scores["f1"],
            "precision": scores["precision"],
            "recall": scores["recall"],
            "accuracy": float(np.mean(words)),
            "entities": scores["support"],
            **{f"{t}_f1": v["f1"] for t, v in scores["per_type"].items()},
        }

    def evaluate(self, model, batch_size) -> dict:
        """Computes the dev metrics of a model.

        Args:
            model: keras.Model. The token classifier.
            batch_size: int. The evaluation batch size.

        Returns:
            dict. "f1", "precision", "recall" (entity level, micro, as seqeval), "accuracy"
            (per word), "entities" (the gold entity count), "<TYPE>_f1" per entity type,
            and "loss" (the mean cross-entropy of the gold label at each word's first
            piece).
        """
        preds, out = self.predict_labels(model, "dev", batch_size)
        gold = [list(s.labels) for s in self.sentences("dev")]
        results = self._scores(gold, preds)
        nll = [
            -np.log(max(out["probabilities"][i][p][self.label_map[g]], 1e-12))
            for i, ((_, pos), gs) in enumerate(zip(self._encoded("dev"), gold))
            for p, g in zip(pos, gs)
            if p >= 0
        ]
        results["loss"] = float(np.mean(nll)) if nll else 0.0
        return results

    def write_predictions(self, model, output_dir, batch_size) -> list:
        """Writes the test split's predictions.

        `test_predictions.txt` has `word predicted` per line (`word gold predicted`, the
        layout conlleval reads, when the test file has labels) and a blank line between
        sentences. With labels, `test_results.txt` holds the metrics too.

        Args:
            model: keras.Model. The token classifier.
            output_dir: str. The folder to write to.
            batch_size: int. The prediction batch size.

        Returns:
            list of str. The paths written.
        """
        preds, _ = self.predict_labels(model, "test", batch_size)
        sentences = self.sentences("test")
        lines = []
        for s, p in zip(sentences, preds):
            gold = s.labels or [None] * len(s.words)
            lines += [
                " ".join(x for x in (w, g, q) if x is not None) for w, g, q in zip(s.words, gold, p)
            ]
            lines.append("")
        path = fileio.join(output_dir, PREDICTIONS_FILE)
        fileio.write_text(path, "\n".join(lines) + "\n")
        written = [path]
        if all(s.labels is not None for s in sentences):
            results = self._scores([list(s.labels) for s in sentences], preds)
            path = fileio.join(output_dir, "test_results.txt")
            fileio.write_text(path, "".join(f"{k} = {v}\n" for k, v in sorted(results.items())))
            written.append(path)
        return written

    def save_labels(self, output_dir) -> str:
        """Writes `output_dir/labels.json`: the label list and tag scheme of this run.

        Later runs read it back with `read_labels`, so they map labels to the same ids.

        Args:
            output_dir: str. The run's output folder.

        Returns:
            str. The path written.
        """
        return fileio.write_json(
            fileio.join(output_dir, LABELS_FILE),
            {"labels": self.labels, "scheme": self.scheme},
            indent=1,
        )


def read_labels(output_dir):
    """Reads the label list and tag scheme that a training run saved.

    Args:
        output_dir: str. The run's output folder (holding labels.json).

    Returns:
        tuple. `(labels, scheme)`, or `(None, None)` when the folder has no labels.json.

    Example:

    >>> import tempfile
    >>> from albert_tf.tasks.ner.task import read_labels
    >>> read_labels(tempfile.mkdtemp())
    (None, None)
    """
    path = fileio.join(output_dir, LABELS_FILE)
    if not fileio.exists(path):
        return None, None
    saved = json.loads(fileio.read_text(path))
    return saved["labels"], saved["scheme"]


def ner_model_fn(config, task: NerTask, dropout_prob=0.1):
    """Returns a function that builds the task's token classifier (what the engine calls).

    Args:
        config: AlbertConfig. The encoder's configuration.
        task: NerTask. The task: its label names.
        dropout_prob: float. The dropout before the classifier layer. Default 0.1.

    Returns:
        callable. A function of no arguments that returns a new `AlbertTokenClassifier`
        with a label per entry of `task.labels`.
    """
    return lambda: AlbertTokenClassifier(
        config, len(task.labels), dropout_prob, label_names=task.labels
    )
