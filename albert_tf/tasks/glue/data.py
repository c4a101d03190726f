"""GLUE task readers, label sets and submission files, as Google's classifier_utils.

Re-exports the names of ``reader`` (reading a split), ``processors`` (the tasks and their
registry) and ``submission`` (GLUE server files), so callers import them all from here.
Pure Python (no TensorFlow). Each task has a processor that turns the official GLUE
release files into :class:`InputExample` objects; the fine-tuning engine tokenizes
and packs them.

``data_dir`` convention: the folder that *holds the task folders* (the GLUE release
root, e.g. ``/work/shared/data`` with ``CoLA/``, ``MNLI/``, ``diagnostic/`` ...), as
ALBERT's ``classifier_utils`` does (it reads ``data_dir/MNLI/train.tsv``). For
convenience the task folder itself is also accepted: a file is looked up first at
``data_dir/<TaskDir>/<file>``, then at ``data_dir/<file>``.

guids: test examples carry the file's own ``index`` column (or the 0-based data-row
number where the file has none), which is what the GLUE server expects in the
submission; train/dev guids are ``"<split>-<index or row number>"``.
"""
from __future__ import annotations

from albert_tf.tasks.glue.processors import (
    PROCESSORS, AxProcessor, ColaProcessor, MnliMismatchedProcessor, MnliProcessor,
    MrpcProcessor, QnliProcessor, QqpProcessor, RteProcessor, Sst2Processor, StsbProcessor,
    WnliProcessor, best_checkpoint_metric, canonical_task_name, get_processor)
from albert_tf.tasks.glue.reader import (
    DataProcessor, GlueFormatError, InputExample, Label, iter_tsv, resolve_task_file)
from albert_tf.tasks.glue.submission import submission_file_name, write_submission

__all__ = [
    "InputExample", "GlueFormatError", "Label", "iter_tsv", "resolve_task_file",
    "DataProcessor", "ColaProcessor", "Sst2Processor", "MrpcProcessor", "StsbProcessor",
    "QqpProcessor", "MnliProcessor", "MnliMismatchedProcessor", "QnliProcessor",
    "RteProcessor", "WnliProcessor", "AxProcessor", "PROCESSORS", "canonical_task_name",
    "get_processor", "submission_file_name", "best_checkpoint_metric", "write_submission",
]
