"""RACE multiple-choice reading comprehension on the shared fine-tuning machinery."""

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
    """Google's flattened records: ids/mask/segments [choices·L], label_ids, is_real_example."""
    n = num_choices * max_seq_length
    return {
        "input_ids": ("int64", n),
        "input_mask": ("int64", n),
        "segment_ids": ("int64", n),
        "label_ids": ("int64", 1),
        "is_real_example": ("int64", 1),
    }


class RaceTask:
    """RACE splits as cached records, accuracy overall / middle / high, per-question answers."""

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
        """Accuracy overall and for middle / high, and the mean cross-entropy."""
        examples = self.examples(split)
        probs = self._probabilities(model, split, batch_size)
        labels = np.array([e.label for e in examples])
        results = race_metrics(np.argmax(probs, -1), labels, [e.level for e in examples])
        results["loss"] = float(
            -np.mean(np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-12)))
        )
        return results

    def write_predictions(self, model, output_dir, batch_size, split="test") -> list:
        """race_predictions.tsv: id, question index, level, predicted letter, the four
        probabilities; plus predict_results.txt with the accuracies when the split is labeled."""
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
    return lambda: AlbertMultipleChoice(config, race.NUM_CHOICES, dropout_prob)
