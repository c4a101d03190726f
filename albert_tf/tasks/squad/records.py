"""SQuAD v1.1 / v2.0 TFRecords in Google's record layout, and the pipeline that makes them.

Pure Python plus SentencePiece (TensorFlow only for the records). The pipeline:

1. :func:`read_squad_examples` (``examples``) reads the official JSON into :class:`SquadExample`.
2. :func:`tokenize_paragraph` (``alignment``) tokenizes a paragraph as Google does
   (``encode_pieces(preprocess_text(p, lower=do_lower_case))``) and gives every piece the
   character span it came from in the ORIGINAL paragraph, exactly (see ``alignment``).
3. :func:`convert_examples_to_features` (``features``) cuts ``[CLS] question [SEP] paragraph
   window [SEP]`` features with a sliding window (``doc_stride``), max-context flags,
   ``p_mask`` and, in training, the gold token positions (windows without the answer:
   start = end = 0, ``is_impossible`` = 1, kept, as Google keeps them). A paragraph aligned
   by ``difflib`` is counted in ``stats["inexact_alignments"]``; if fewer than 80% of the
   piece characters match (Google's drop rule) the paragraph's examples are dropped and
   counted in ``stats["alignment_failures"]``.
4. :func:`squad_feature_spec` / :func:`feature_to_record` / :func:`cached_squad_records`
   write Google's record layout through :mod:`albert_tf.engine.records`.

p_mask: 1 for the question, both [SEP]s and padding, 0 for the paragraph and for [CLS]:
[CLS] (position 0) is the null-answer position of v2.0 (impossible training windows point
there, and the v2 start log-softmax must not mask it), as in Google's code. Post-processing
only proposes spans inside the paragraph (``token_to_orig_map``), never [CLS].
"""

from __future__ import annotations

from albert_tf.tasks.squad.examples import read_squad_examples
from albert_tf.tasks.squad.features import (
    SquadFeature,
    convert_examples_to_features,
)
from albert_tf.text.vocab_files import tokenizer_fingerprint


def squad_feature_spec(max_seq_length: int, is_training: bool) -> dict:
    """Google's record layout: unique_ids, input_ids, input_mask, segment_ids, p_mask
    (+ start_positions, end_positions, is_impossible in training), all int64."""
    spec = {
        "unique_ids": ("int64", 1),
        "input_ids": ("int64", max_seq_length),
        "input_mask": ("int64", max_seq_length),
        "segment_ids": ("int64", max_seq_length),
        "p_mask": ("int64", max_seq_length),
    }
    if is_training:
        spec.update(
            start_positions=("int64", 1), end_positions=("int64", 1), is_impossible=("int64", 1)
        )
    return spec


def feature_to_record(feature: SquadFeature, is_training: bool) -> dict:
    """The record dict of one feature, matching :func:`squad_feature_spec`."""
    record = {
        "unique_ids": feature.unique_id,
        "input_ids": feature.input_ids,
        "input_mask": feature.input_mask,
        "segment_ids": feature.segment_ids,
        "p_mask": feature.p_mask,
    }
    if is_training:
        record.update(
            start_positions=feature.start_position,
            end_positions=feature.end_position,
            is_impossible=int(feature.is_impossible),
        )
    return record


def cached_squad_records(
    cache_dir,
    input_file,
    spm_model_file,
    tokenizer,
    *,
    is_training: bool,
    version_2_with_negative: bool,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    do_lower_case: bool = True,
    features=None,
):
    """(path, count) of a TFRecord file of the input file's features, built once per setting.

    The cache key holds the input file's and the tokenizer file's (SentencePiece model or
    WordPiece vocabulary, `spm_model_file` either way) SHA-256 and every
    parameter above. ``features`` (built by the caller with the same settings) skips
    re-reading and re-converting when the file must be written.
    """
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.engine import records

    params = {
        "task": "squad",
        "input_file": records.file_fingerprint(input_file),
        "tokenizer_file": tokenizer_fingerprint(spm_model_file),
        "is_training": bool(is_training),
        "version_2": bool(version_2_with_negative),
        "max_seq_length": max_seq_length,
        "doc_stride": doc_stride,
        "max_query_length": max_query_length,
        "do_lower_case": bool(do_lower_case),
    }
    spec = squad_feature_spec(max_seq_length, is_training)

    def make_records():
        feats = features
        if feats is None:
            examples = read_squad_examples(input_file, is_training, version_2_with_negative)
            feats = convert_examples_to_features(
                examples,
                tokenizer,
                max_seq_length,
                doc_stride,
                max_query_length,
                is_training,
                do_lower_case,
            )
        return (feature_to_record(f, is_training) for f in feats)

    name = "squad-" + ("train" if is_training else "predict")
    return records.cached_records(cache_dir, name, params, spec, make_records)


__all__ = ["squad_feature_spec", "feature_to_record", "cached_squad_records"]
