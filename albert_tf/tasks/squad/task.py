"""SQuAD v1.1 / v2.0 span extraction on the shared fine-tuning machinery: cached features,
prediction with Google's post-processing, and the official metrics at every checkpoint."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

from albert_tf.engine import finetuning
from albert_tf.modeling.squad_models import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.squad import evaluate as squad_eval
from albert_tf.tasks.squad import postprocess as squad_postprocess
from albert_tf.tasks.squad.examples import read_squad_examples
from albert_tf.tasks.squad.features import convert_examples_to_features
from albert_tf.tasks.squad.records import cached_squad_records, squad_feature_spec

# Outputs with one value per window position: put back at max_seq_length after bucketing.
TOKEN_OUTPUTS = ("start_logits", "end_logits", "start_log_probs", "end_log_probs")


@dataclasses.dataclass
class SquadSettings:
    """The SQuAD flags that change features or post-processing (Google's defaults)."""

    version_2_with_negative: bool = False
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    start_n_top: int = 5
    end_n_top: int = 5
    do_lower_case: bool = True


class SquadTask:
    """Training records from train_file; evaluation = predict predict_file, post-process,
    score with the official definitions (F1 picks the best checkpoint, as Google's)."""

    best_metric = "f1"

    def __init__(
        self,
        settings: SquadSettings,
        tokenizer,
        spm_model_file,
        cache_dir,
        train_file: Optional[str] = None,
        predict_file: Optional[str] = None,
        vocab_file: Optional[str] = None,
    ):
        self.s, self.tokenizer, self.spm_model_file = settings, tokenizer, spm_model_file
        self.vocab_file = vocab_file  # a WordPiece vocabulary instead of spm_model_file
        self.cache_dir, self.train_file, self.predict_file = cache_dir, train_file, predict_file
        self.spec = squad_feature_spec(settings.max_seq_length, is_training=True)
        self.predict_spec = squad_feature_spec(settings.max_seq_length, is_training=False)
        self._predict = None

    @property
    def max_seq_length(self):
        """The records' length: training and prediction batches are bucketed below it."""
        return self.s.max_seq_length

    def _cached(self, path, is_training, features=None):
        s = self.s
        return cached_squad_records(
            self.cache_dir,
            path,
            self.spm_model_file or self.vocab_file,
            self.tokenizer,
            is_training=is_training,
            version_2_with_negative=s.version_2_with_negative,
            max_seq_length=s.max_seq_length,
            doc_stride=s.doc_stride,
            max_query_length=s.max_query_length,
            do_lower_case=s.do_lower_case,
            features=features,
        )

    def records(self, split):
        if split != "train":
            raise ValueError(f"SquadTask.records: only 'train' records are cached, got {split!r}")
        if not self.train_file:
            raise ValueError("--train_file is required for --do_train")
        return self._cached(self.train_file, True)

    def predict_data(self):
        """(examples, features, records path, count) of predict_file, built once."""
        if self._predict is None:
            if not self.predict_file:
                raise ValueError("--predict_file is required for --do_eval / --do_predict")
            s = self.s
            examples = read_squad_examples(self.predict_file, False, s.version_2_with_negative)
            features = convert_examples_to_features(
                examples,
                self.tokenizer,
                s.max_seq_length,
                s.doc_stride,
                s.max_query_length,
                False,
                s.do_lower_case,
            )
            path, n = self._cached(self.predict_file, False, features)
            self._predict = (examples, features, path, n)
        return self._predict

    def predict(self, model, batch_size):
        """(predictions, nbest, null_odds or None, examples) with Google's post-processing."""
        examples, features, path, n = self.predict_data()
        outputs = finetuning.predict_records(
            model,
            path,
            self.predict_spec,
            n,
            batch_size,
            seq_length=self.max_seq_length,
            token_outputs=TOKEN_OUTPUTS,
        )
        results = squad_postprocess.collect_results([outputs])
        s = self.s
        if s.version_2_with_negative:
            preds, nbest, null_odds = squad_postprocess.predict_v2(
                examples,
                features,
                results,
                s.n_best_size,
                s.max_answer_length,
                s.start_n_top,
                s.end_n_top,
            )
            return preds, nbest, null_odds, examples
        preds, nbest = squad_postprocess.predict_v1(
            examples, features, results, s.n_best_size, s.max_answer_length
        )
        return preds, nbest, None, examples

    def _score(self, preds, null_odds, examples):
        gold = squad_eval.gold_from_examples(examples)
        if not self.s.version_2_with_negative:
            metrics = squad_eval.evaluate_v1(gold, preds)
            return dict(metrics, exact=metrics["exact_match"]), preds
        threshold, metrics = squad_postprocess.find_best_null_threshold(gold, preds, null_odds)
        return dict(metrics), squad_postprocess.apply_null_threshold(preds, null_odds, threshold)

    def evaluate(self, model, batch_size) -> dict:
        preds, _, null_odds, examples = self.predict(model, batch_size)
        metrics, _ = self._score(preds, null_odds, examples)
        return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}

    def write_predictions(self, model, output_dir, batch_size) -> list:
        """predictions.json, nbest_predictions.json, null_odds.json (v2; predictions use the
        dev-chosen null threshold when gold answers are present) and eval_results.txt."""
        preds, nbest, null_odds, examples = self.predict(model, batch_size)
        has_gold = any(e.answers for e in examples)
        written = []
        if has_gold:
            metrics, preds = self._score(preds, null_odds, examples)
            written.append(
                squad_eval.write_eval_results(os.path.join(output_dir, "eval_results.txt"), metrics)
            )
        paths = squad_postprocess.write_predictions(output_dir, preds, nbest, null_odds)
        return written + sorted(paths.values())


def squad_model_fn(config, settings: SquadSettings, dropout_prob=0.1):
    if settings.version_2_with_negative:
        return lambda: AlbertSquadV2(config, settings.start_n_top, settings.end_n_top, dropout_prob)
    return lambda: AlbertSquadV1(config)
