"""RACE multiple-choice reading comprehension on the shared fine-tuning machinery.

Cached records in Google's flattened layout, accuracy overall and per level (middle / high
school), and per-question prediction files.
"""

from __future__ import annotations

import numpy as np

from albert_tf.core import fileio
from albert_tf.core.fileio import write_text_atomic
from albert_tf.engine import finetuning
from albert_tf.engine.records import cached_records
from albert_tf.modeling.finetuning_models import AlbertMultipleChoice
from albert_tf.tasks.race import data as race
from albert_tf.tasks.race.metrics import race_metrics
from albert_tf.text.encoding import TextEncoder

LETTERS = race.ANSWER_LETTERS


def race_feature_spec(max_seq_length: int, num_choices: int = race.NUM_CHOICES) -> dict:
    """The feature layout of RACE records, as Google's run_race writes them.

    The choices are flattened: each token feature holds the `num_choices` packed sequences
    one after another (choice-major).

    Args:
        max_seq_length: int. The length L of each choice's packed sequence.
        num_choices: int. The number of answer options. Default 4.

    Returns:
        dict. Feature name -> (dtype name, length): `input_ids`, `input_mask`,
        `segment_ids` (int64, num_choices * L), `label_ids` and `is_real_example`
        (int64, 1).

    Example:

    >>> from albert_tf.tasks.race.task import race_feature_spec
    >>> race_feature_spec(64)["input_ids"]
    ('int64', 256)
    """
    n = num_choices * max_seq_length
    return {
        "input_ids": ("int64", n),
        "input_mask": ("int64", n),
        "segment_ids": ("int64", n),
        "label_ids": ("int64", 1),
        "is_real_example": ("int64", 1),
    }


class RaceTask:
    """The RACE dataset for the fine-tuning engine: records, accuracy and answer files.

    Gives what `run_race.py` and the engine's `run_finetuning` need: the questions and
    cached TFRecord features of each split, the accuracy overall and for middle / high
    school, and the per-question prediction file. Each of the four options is packed as
    `[CLS] article [SEP] question-with-option [SEP]`: the question-and-option text keeps its
    last `max_qa_length` pieces and the article is cut to fit. The best checkpoint is the
    one with the best dev accuracy.

    Args:
        data_dir: str. The RACE folder (or a folder holding `RACE/`), laid out as the
            release: `<split>/{middle,high}/*.txt` for split "train", "dev", "test".
        encoder: TextEncoder. The tokenizer.
        max_seq_length: int. The length of each option's packed sequence, in pieces.
        cache_dir: str. The folder for the cached TFRecord files.
        max_qa_length: int. The most pieces kept of the question-and-option text (its
            last ones). Default 128.
        high_only: bool. Read the high-school questions only. Default False.
        middle_only: bool. Read the middle-school questions only (not together with
            `high_only`: reading examples then raises ValueError). Default False.

    Example:

    >>> import tempfile, albert_tf
    >>> from albert_tf.tasks.race.task import RaceTask
    >>> encoder = albert_tf.TextEncoder.from_files(spm_model_file="tests/data/fixtures/spm.model")
    >>> task = RaceTask("tests/data/samples/RACE", encoder, 64, tempfile.mkdtemp())
    >>> question = task.examples("train")[0]
    >>> question.level, len(question.options), question.label
    ('middle', 4, 2)
    >>> task.records("train")[1]
    6
    """

    best_metric = "accuracy"

    def __init__(
        self,
        data_dir,
        encoder: TextEncoder,
        max_seq_length,
        cache_dir,
        max_qa_length=128,
        high_only=False,
        middle_only=False,
    ):
        self.data_dir, self.encoder = data_dir, encoder
        self.max_seq_length, self.max_qa_length = max_seq_length, max_qa_length
        self.cache_dir, self.high_only, self.middle_only = cache_dir, high_only, middle_only
        self.spec = race_feature_spec(max_seq_length)
        self._examples = {}

    def examples(self, split):
        """The questions of a split (middle school, then high school), read once.

        Args:
            split: str. "train", "dev" or "test".

        Returns:
            list of RaceExample. One per question (article, question, options, label,
            level).

        Raises:
            FileNotFoundError: when a level folder of the split is missing.
            ValueError: when both `high_only` and `middle_only` are set.
        """
        if split not in self._examples:
            self._examples[split] = race.read_race_examples(
                self.data_dir, split, high_only=self.high_only, middle_only=self.middle_only
            )
        return self._examples[split]

    def _record(self, example):
        rec = race.encode_race_example(
            example, self.encoder, self.max_seq_length, self.max_qa_length
        )
        return {
            "input_ids": rec["input_ids"],
            "input_mask": rec["input_mask"],
            "segment_ids": rec["segment_ids"],
            "label_ids": rec["label"],
            "is_real_example": 1,
        }

    def records(self, split):
        """The cached TFRecord file of a split, written on first use.

        Args:
            split: str. "train", "dev" or "test".

        Returns:
            tuple. `(path, count)`: the TFRecord file and its number of records.
        """
        examples = self.examples(split)
        params = {
            "task": "race",
            "split": split,
            "max_seq_length": self.max_seq_length,
            "max_qa_length": self.max_qa_length,
            "high_only": self.high_only,
            "middle_only": self.middle_only,
            "num_examples": len(examples),
            "data": fileio.abspath(self.data_dir),
            **self.encoder.fingerprint(),
        }
        return cached_records(
            self.cache_dir,
            f"race_{split}",
            params,
            self.spec,
            lambda: (self._record(e) for e in examples),
        )

    def _probabilities(self, model, split, batch_size):
        path, n = self.records(split)
        return finetuning.predict_records(
            model, path, self.spec, n, batch_size, seq_length=self.max_seq_length
        )["probabilities"]

    def evaluate(self, model, batch_size, split="dev") -> dict:
        """Computes the accuracy of a model on a labeled split.

        Args:
            model: keras.Model. The multiple-choice model (`AlbertMultipleChoice`).
            batch_size: int. The evaluation batch size.
            split: str. The split to score. Default "dev".

        Returns:
            dict. "accuracy", "middle_accuracy" and "high_accuracy" (for the levels the
            split has), and "loss" (the mean cross-entropy).
        """
        examples = self.examples(split)
        probs = self._probabilities(model, split, batch_size)
        labels = np.array([e.label for e in examples])
        results = race_metrics(np.argmax(probs, -1), labels, [e.level for e in examples])
        results["loss"] = float(
            -np.mean(np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-12)))
        )
        return results

    def write_predictions(self, model, output_dir, batch_size, split="test") -> list:
        """Writes the predicted answer of every question of a split.

        `race_predictions.tsv` has a header and a row per question: id, question index,
        level, the predicted letter and the four probabilities. When the split is labeled,
        `predict_results.txt` holds the accuracies too.

        Args:
            model: keras.Model. The multiple-choice model.
            output_dir: str. The folder to write to.
            batch_size: int. The prediction batch size.
            split: str. The split to predict. Default "test".

        Returns:
            list of str. The paths written.
        """
        examples = self.examples(split)
        probs = self._probabilities(model, split, batch_size)
        lines = ["id\tquestion_index\tlevel\tprediction\t" + "\t".join(f"p_{c}" for c in LETTERS)]
        for e, p in zip(examples, probs):
            lines.append(
                f"{e.example_id}\t{e.question_index}\t{e.level}\t{LETTERS[int(np.argmax(p))]}\t"
                + "\t".join(f"{v:.6f}" for v in p)
            )
        written = [
            write_text_atomic(
                fileio.join(output_dir, "race_predictions.tsv"), "\n".join(lines) + "\n"
            )
        ]
        if all(e.label is not None for e in examples):
            labels = np.array([e.label for e in examples])
            metrics = race_metrics(np.argmax(probs, -1), labels, [e.level for e in examples])
            text = "".join(f"{k} = {v}\n" for k, v in sorted(metrics.items()))
            written.append(write_text_atomic(fileio.join(output_dir, "predict_results.txt"), text))
        return written


def race_model_fn(config, dropout_prob=0.1):
    """Returns a function that builds the RACE model (what the engine calls).

    Args:
        config: AlbertConfig. The encoder's configuration.
        dropout_prob: float. The dropout before the classifier layer. Default 0.1.

    Returns:
        callable. A function of no arguments that returns a new four-choice
        `AlbertMultipleChoice`.
    """
    return lambda: AlbertMultipleChoice(config, race.NUM_CHOICES, dropout_prob)
