"""Raw text -> ALBERT masked-LM + sentence-order-prediction TFRecords.

Flag names and defaults are those of Google's create_pretraining_data.py, plus
--num_workers (parallel processes), --shuffle_buffer_size and --one_output_per_input.
The work is done by albert_tf.pretraining.builder.build_pretraining_data; see
docs/pretraining_data.md for what differs from Google's script.

    python create_pretraining_data.py --input_file=corpus.txt --output_file=out.tfrecord \
        --spm_model_file=30k-clean.model --max_seq_length=128 --dupe_factor=5
"""

import json

from absl import flags, logging

from albert_tf.drivers import cli
from albert_tf.drivers.pretraining import validate_pretraining_data
from albert_tf.pretraining.builder import build_pretraining_data

FLAGS = flags.FLAGS

flags.DEFINE_string(
    "input_file",
    None,
    "Input text files: comma-separated paths or globs. One sentence per line, "
    "blank lines between documents; WikiExtractor <doc> files also work.",
)
flags.DEFINE_string(
    "output_file", None, "Output TFRecord files, comma-separated; examples go round-robin."
)
flags.DEFINE_string(
    "vocab_file", None, "WordPiece vocabulary (used only when --spm_model_file is not given)."
)
flags.DEFINE_string("spm_model_file", None, "SentencePiece model.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text.")
flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words rather than pieces.")
flags.DEFINE_bool(
    "favor_shorter_ngram",
    True,
    "n-gram lengths with p ∝ 1/n (shorter favoured); False reverses it.",
)
flags.DEFINE_bool(
    "random_next_sentence", False, "NSP ablation: segment B from another document half of the time."
)
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
flags.DEFINE_integer("ngram", 3, "Maximum n-gram length of a masked span (in words).")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked pieces per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Seed; the same seed gives identical output.")
flags.DEFINE_integer("dupe_factor", 40, "Number of maskings of each document.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of pieces to mask.")
flags.DEFINE_float(
    "short_seq_prob", 0.1, "Probability of a shorter random target length for a document."
)
flags.DEFINE_integer("num_workers", 1, "Processes building (file, dupe round) jobs.")
flags.DEFINE_integer(
    "shuffle_buffer_size", 2048, "Instances held for the bounded shuffle of each dupe round."
)
flags.DEFINE_bool(
    "one_output_per_input",
    False,
    "Write every example of input i to output i (needs equal counts).",
)


def _log_progress(p: dict):
    """Logs the running instance count and rate."""
    logging.info(
        "%d instances written (%.0f instances/s), last from %s",
        p["instances"],
        p["instances_per_second"],
        p["input_file"],
    )


USAGE = cli.Usage(
    """Raw text -> ALBERT masked-LM + sentence-order-prediction TFRecords (Google's flags).

usage: python create_pretraining_data.py --input_file=TEXT[,TEXT...] --output_file=TFRECORD
         --spm_model_file=FILE (or --vocab_file=FILE) [--max_seq_length=512] [--dupe_factor=40]
required: --input_file, --output_file, --spm_model_file or --vocab_file

example, Wikipedia text for ALBERT-base:
  python create_pretraining_data.py --input_file='wiki/*.txt' --output_file=data/wiki.tfrecord \\
      --spm_model_file=albert_base/30k-clean.model --max_seq_length=512 --num_workers=8

try it in a clone of albert_tf (text and a SentencePiece model that ship with it):
  python create_pretraining_data.py --input_file=tests/data/fixtures/corpus.txt \\
      --output_file=/tmp/albert_tf_try/corpus.tfrecord \\
      --spm_model_file=tests/data/fixtures/spm.model \\
      --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=2
""",
    required=("input_file", "output_file"),
    one_of=(("spm_model_file", "vocab_file"),),
    builds_models=False,  # text to records: runs whatever KERAS_BACKEND names
)


def main(argv):
    del argv
    inputs = validate_pretraining_data(FLAGS)
    logging.info("*** Reading from %d input files ***", len(inputs))
    for path in inputs:
        logging.info("  %s", path)
    stats = build_pretraining_data(
        inputs,
        FLAGS.output_file,
        spm_model_file=FLAGS.spm_model_file,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        num_workers=FLAGS.num_workers,
        one_output_per_input=FLAGS.one_output_per_input,
        progress=_log_progress,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        dupe_factor=FLAGS.dupe_factor,
        random_seed=FLAGS.random_seed,
        do_whole_word_mask=FLAGS.do_whole_word_mask,
        favor_shorter_ngram=FLAGS.favor_shorter_ngram,
        random_next_sentence=FLAGS.random_next_sentence,
        ngram=FLAGS.ngram,
        shuffle_buffer_size=FLAGS.shuffle_buffer_size,
    )
    logging.info(
        "*** Wrote %d instances to %d output files in %.1f s (%.0f instances/s) ***",
        stats["instances"],
        len(stats["output_files"]),
        stats["seconds"],
        stats["instances_per_second"],
    )
    for path, count in zip(stats["output_files"], stats["records_per_output"]):
        logging.info("  %s: %d records", path, count)
    logging.info("statistics: %s", json.dumps(stats, sort_keys=True))


if __name__ == "__main__":
    cli.run(main, usage=USAGE)
