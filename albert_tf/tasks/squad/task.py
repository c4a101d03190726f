"""SQuAD v1.1 / v2.0 span extraction on the shared fine-tuning machinery.

Cached features, prediction with Google's post-processing, and the official SQuAD metrics at
every checkpoint.
"""

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
    """The SQuAD settings that change the features or the post-processing.

    The defaults are those of Google's run_squad flags.

    Args:
        version_2_with_negative: bool. SQuAD v2.0: questions may have no answer (the model
            has an answer-class head and a beam over start and end). Default False (v1.1).
        max_seq_length: int. The length of each window's features, in pieces. Default 384.
        doc_stride: int. How far apart, in pieces, the windows of a long context start.
            Default 128.
        max_query_length: int. The most pieces kept of a question. Default 64.
        n_best_size: int. The number of best start and end positions considered (v1.1) and
            of answers kept in the n-best file. Default 20.
        max_answer_length: int. The longest answer, in pieces. Default 30.
        start_n_top: int. The start positions of v2.0's beam. Default 5.
        end_n_top: int. The end positions of v2.0's beam, per start. Default 5.
        do_lower_case: bool. Lowercase the text before tokenizing. Default True.

    Example:

    >>> from albert_tf.tasks.squad.task import SquadSettings
    >>> settings = SquadSettings(version_2_with_negative=True, max_seq_length=128)
    >>> settings.doc_stride, settings.n_best_size
    (128, 20)
    """

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
    """A SQuAD dataset for the fine-tuning engine: records, predictions and metrics.

    Gives what `run_squad.py` and the engine's `run_finetuning` need: the cached training
    records of `train_file`; and for evaluation, the predictions of `predict_file` with
    Google's post-processing, scored with the official SQuAD definitions (exact match and
    F1; for v2.0 also the best no-answer threshold). As in Google's run_squad, F1 picks the
    best checkpoint.

    Args:
        settings: SquadSettings. The feature and post-processing settings.
        tokenizer: FullTokenizer. The Python tokenizer of the model's vocabulary.
        spm_model_file: str or None. The SentencePiece model the tokenizer reads (keys the
            cache and makes the export's in-graph tokenizer).
        cache_dir: str. The folder for the cached TFRecord files.
        train_file: str or None. The SQuAD JSON to train on. Default None.
        predict_file: str or None. The SQuAD JSON to evaluate or predict. Default None.
        vocab_file: str or None. A WordPiece vocabulary used instead of `spm_model_file`.
            Default None.

    Example:

    >>> import tempfile, albert_tf
    >>> from albert_tf.tasks.squad.task import SquadSettings, SquadTask
    >>> spm, squad = "tests/data/fixtures/spm.model", "tests/data/samples/squad/v1.1/squad.json"
    >>> settings = SquadSettings(max_seq_length=64, doc_stride=24, max_query_length=16)
    >>> task = SquadTask(settings, albert_tf.FullTokenizer(spm_model_file=spm), spm,
    ...                  tempfile.mkdtemp(), predict_file=squad)
    >>> examples, features, path, count = task.predict_data()
    >>> len(examples), count
    (5, 61)
    """

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
        """The records' length (training and prediction batches are bucketed below it).

        Returns:
            int. `settings.max_seq_length`.
        """
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
        """The cached training records of `train_file`, written on first use.

        Args:
            split: str. Must be "train": only training records are cached this way (see
                `predict_data` for the prediction features).

        Returns:
            tuple. `(path, count)`: the TFRecord file and its number of records (windows).

        Raises:
            ValueError: when `split` is not "train", or there is no `train_file`.
        """
        if split != "train":
            raise ValueError(f"SquadTask.records: only 'train' records are cached, got {split!r}")
        if not self.train_file:
            raise ValueError("train_file is required for do_train")
        return self._cached(self.train_file, True)

    def predict_data(self):
        """The examples, features and cached records of `predict_file`, built once.

        Returns:
            tuple. `(examples, features, path, count)`: the SQuAD examples, their window
            features, and the TFRecord file of the features and its number of records.

        Raises:
            ValueError: when there is no `predict_file`.
        """
        if self._predict is None:
            if not self.predict_file:
                raise ValueError("predict_file is required for do_eval / do_predict")
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
        """Predicts the answers of `predict_file` with Google's post-processing.

        Args:
            model: keras.Model. An `AlbertSquadV1` or `AlbertSquadV2`.
            batch_size: int. The prediction batch size.

        Returns:
            tuple. `(predictions, nbest, null_odds, examples)`: question id -> answer text,
            question id -> the n-best answers, question id -> no-answer score minus the best
            answer's score (v2.0; None for v1.1), and the examples.
        """
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
        """Computes the official SQuAD metrics of a model on `predict_file`.

        Args:
            model: keras.Model. An `AlbertSquadV1` or `AlbertSquadV2`.
            batch_size: int. The prediction batch size.

        Returns:
            dict. The numeric metrics: "exact", "f1" (percentages) and "total"; v1.1 also
            "exact_match" (= "exact") and "missing"; v2.0 the official v2.0 script's
            (HasAns_* and NoAns_* scores, best_exact, best_f1, ...) at the no-answer
            threshold that maximises F1, and that threshold as "null_score_diff_threshold".
        """
        preds, _, null_odds, examples = self.predict(model, batch_size)
        metrics, _ = self._score(preds, null_odds, examples)
        return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}

    def write_predictions(self, model, output_dir, batch_size) -> list:
        """Writes the predictions of `predict_file`, and its metrics when it has answers.

        Writes predictions.json, nbest_predictions.json, null_odds.json (v2.0 only) and,
        when the file has gold answers, eval_results.txt. For v2.0 with gold answers the
        predictions apply the no-answer threshold chosen on the same file.

        Args:
            model: keras.Model. An `AlbertSquadV1` or `AlbertSquadV2`.
            output_dir: str. The folder to write to.
            batch_size: int. The prediction batch size.

        Returns:
            list of str. The paths written.
        """
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
    """Returns a function that builds the SQuAD model (what the engine calls).

    Args:
        config: AlbertConfig. The encoder's configuration.
        settings: SquadSettings. v1.1 or v2.0, and v2.0's beam sizes.
        dropout_prob: float. The dropout of v2.0's answer-class head; v1.1's span head has
            none, as Google's. Default 0.1.

    Returns:
        callable. A function of no arguments that returns a new `AlbertSquadV1` (v1.1) or
        `AlbertSquadV2` (v2.0).
    """
    if settings.version_2_with_negative:
        return lambda: AlbertSquadV2(config, settings.start_n_top, settings.end_n_top, dropout_prob)
    return lambda: AlbertSquadV1(config)
