"""SQuAD v1.1 / v2.0 JSON files read into SquadExample objects (one per question), with errors
that name the file and the place a field is missing."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import List, Tuple

from albert_tf.core import fileio
from albert_tf.core.errors import InputError


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question: the raw texts, the (first) gold answer and every gold text for eval.

    ``start_char`` indexes ``paragraph_text`` (-1 when there is no training answer);
    ``answers`` holds all gold answer texts ([] for an unanswerable v2.0 question).
    """

    qas_id: str
    question_text: str
    paragraph_text: str
    orig_answer_text: str
    start_char: int
    is_impossible: bool
    answers: Tuple[str, ...] = ()

    @property
    def end_char(self) -> int:
        """Exclusive end of the gold answer in ``paragraph_text``."""
        return self.start_char + len(self.orig_answer_text)


def _field(obj, name, path, where):
    """obj[name], or an InputError naming the file and the place it is missing."""
    if not isinstance(obj, dict) or name not in obj:
        raise InputError(f"{path}: {where}: missing field {name!r}")
    return obj[name]


def _load_json(path):
    """The parsed JSON file, or an InputError that names it (truncated, not UTF-8)."""
    try:
        return fileio.read_json(path)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: not valid JSON ({err}); is the file complete?") from None
    except UnicodeDecodeError as err:
        raise InputError(
            f"{path}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start})"
        ) from None


def _example_from_qa(qa, context, path, where, is_training, v2):
    """A SquadExample from one "qas" entry."""
    qid = _field(qa, "id", path, where)
    where = f"question {qid!r}"
    question = _field(qa, "question", path, where)
    is_impossible = bool(qa.get("is_impossible", False)) if v2 else False
    answers = qa.get("answers", [])
    if is_training and not is_impossible:
        answers = _field(qa, "answers", path, where)
    golds = tuple(_field(a, "text", path, where + " answer") for a in answers)
    text, start = "", -1
    if is_training and not is_impossible:
        if not answers:
            raise InputError(
                f"{path}: {where}: a training question needs an answer "
                "(or is_impossible=true with version_2_with_negative)"
            )
        text = golds[0]
        start = int(_field(answers[0], "answer_start", path, where + " answer"))
    return SquadExample(qid, question, context, text, start, is_impossible, golds)


def read_squad_examples(
    path, is_training: bool, version_2_with_negative: bool
) -> List[SquadExample]:
    """SquadExamples from an official SQuAD JSON file, in file order.

    Training uses each question's first answer (Google's v1 reader insists on exactly one;
    dev-style files with several are accepted). ``is_impossible`` is read only for v2.0.
    Raises ValueError naming the file for bad JSON or a missing field.
    """
    path = os.fspath(path)
    dataset = _load_json(path)
    examples = []
    for a, article in enumerate(_field(dataset, "data", path, "top level")):
        for p, paragraph in enumerate(_field(article, "paragraphs", path, f"article {a}")):
            where = f"article {a} paragraph {p}"
            context = _field(paragraph, "context", path, where)
            for qa in _field(paragraph, "qas", path, where):
                examples.append(
                    _example_from_qa(qa, context, path, where, is_training, version_2_with_negative)
                )
    return examples
