"""RACE reader and Google's multiple-choice encoding (race_utils), pure Python.

``data_dir`` is the folder that holds ``RACE/`` (as in Google's run_race.py); the
``RACE`` folder itself is accepted too. Each ``RACE/<split>/<level>/`` folder is read
in one of two layouts, detected per folder:

* ``all.txt`` present: JSON lines, one passage per line (the file Google's script
  expects). Only all.txt is read, so a folder that also keeps the per-passage files
  is not read twice.
* otherwise every ``*.txt`` file, each one JSON object (the official release;
  pretty-printed JSON is fine), in natural file-name order.

Levels are read middle first, then high, as Google's reader does. Text is kept raw;
the tokenizer normalises it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.text.packing import pack_ids

LEVELS = ("middle", "high")
NUM_CHOICES = 4
ANSWER_LETTERS = "ABCD"
ALL_TXT = "all.txt"


class RaceFormatError(InputError):
    """A RACE file that cannot be read (names the file)."""


@dataclasses.dataclass(frozen=True)
class RaceExample:
    """One RACE question: its passage, question, four options and answer index."""

    example_id: str
    question_index: int
    level: str
    article: str
    question: str
    options: Tuple[str, str, str, str]
    label: Optional[int] = None  # 0..3, None when unlabeled


def race_root(data_dir: str) -> str:
    """The RACE folder: ``data_dir/RACE`` if it exists, else ``data_dir`` itself."""
    nested = fileio.join(data_dir, "RACE")
    return nested if fileio.isdir(nested) else data_dir


def _levels(high_only: bool, middle_only: bool) -> Tuple[str, ...]:
    """Levels to read given Google's high_only / middle_only flags."""
    if high_only and middle_only:
        raise ValueError("high_only and middle_only are mutually exclusive")
    if high_only:
        return ("high",)
    if middle_only:
        return ("middle",)
    return LEVELS


def _natural_key(name: str):
    """Sort key putting 2.txt before 10.txt."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _iter_passages(folder: str) -> Iterator[Tuple[str, dict]]:
    """Yield (source description, passage dict) for one split/level folder."""
    all_txt = fileio.join(folder, ALL_TXT)
    if fileio.isfile(all_txt):
        with fileio.open_binary(all_txt) as f:
            for lineno, line in enumerate(f, start=1):
                where = f"{all_txt}, line {lineno}"
                line = _utf8(line, where)
                if line.strip():
                    yield where, _parse_json(line, where)
        return
    names = sorted((n for n in fileio.listdir(folder) if n.endswith(".txt")), key=_natural_key)
    for name in names:
        path = fileio.join(folder, name)
        yield path, _parse_json(_utf8(fileio.read_bytes(path), path), path)


def _utf8(data: bytes, where: str) -> str:
    """Decoded text, or a RaceFormatError naming the file (and line) that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RaceFormatError(
            f"{where}: not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start})"
        ) from None


def _parse_json(text: str, where: str) -> dict:
    """Parse one passage object, naming its file on failure."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise RaceFormatError(f"{where}: invalid JSON ({err})") from None
    if not isinstance(data, dict):
        raise RaceFormatError(f"{where}: expected a JSON object, got {type(data).__name__}")
    return data


def _passage_examples(data: dict, level: str, where: str) -> List[RaceExample]:
    """Split one passage into per-question examples, validating its fields."""
    for key in ("article", "questions", "options"):
        if key not in data:
            raise RaceFormatError(f"{where}: missing key {key!r}")
    questions, options = data["questions"], data["options"]
    answers = data.get("answers")
    if len(options) != len(questions) or (answers is not None and len(answers) != len(questions)):
        raise RaceFormatError(
            f"{where}: {len(questions)} questions, {len(options)} option lists, "
            f"{'no' if answers is None else len(answers)} answers"
        )
    example_id = str(data.get("id", fileio.basename(where)))
    examples = []
    for i, question in enumerate(questions):
        if len(options[i]) != NUM_CHOICES:
            raise RaceFormatError(
                f"{where}: question {i} has {len(options[i])} options, expected {NUM_CHOICES}"
            )
        label = None if answers is None else _answer_index(answers[i], where, i)
        examples.append(
            RaceExample(
                example_id=example_id,
                question_index=i,
                level=level,
                article=data["article"],
                question=question,
                options=tuple(options[i]),
                label=label,
            )
        )
    return examples


def _answer_index(answer, where: str, i: int) -> Optional[int]:
    """Answer letter A-D as 0-3 (empty or None means unlabeled)."""
    if answer is None or answer == "":
        return None
    if answer not in ANSWER_LETTERS or len(answer) != 1:
        raise RaceFormatError(f"{where}: question {i} has answer {answer!r}, expected A-D")
    return ANSWER_LETTERS.index(answer)


def read_race_examples(
    data_dir: str, split: str, high_only: bool = False, middle_only: bool = False
) -> List[RaceExample]:
    """All questions of ``split`` ("train", "dev" or "test"), middle then high."""
    root = race_root(data_dir)
    examples = []
    for level in _levels(high_only, middle_only):
        folder = fileio.join(root, split, level)
        if not fileio.isdir(folder):
            raise FileNotFoundError(f"RACE folder not found: {folder}")
        for where, data in _iter_passages(folder):
            examples.extend(_passage_examples(data, level, where))
    return examples


class RaceProcessor:
    """GLUE-style front end to :func:`read_race_examples` with Google's level flags."""

    task_name = "race"

    def __init__(self, high_only: bool = False, middle_only: bool = False):
        _levels(high_only, middle_only)  # validate early
        self.high_only, self.middle_only = high_only, middle_only

    def get_train_examples(self, data_dir: str) -> List[RaceExample]:
        """Training questions."""
        return read_race_examples(data_dir, "train", self.high_only, self.middle_only)

    def get_dev_examples(self, data_dir: str) -> List[RaceExample]:
        """Development questions."""
        return read_race_examples(data_dir, "dev", self.high_only, self.middle_only)

    def get_test_examples(self, data_dir: str) -> List[RaceExample]:
        """Test questions."""
        return read_race_examples(data_dir, "test", self.high_only, self.middle_only)

    def get_labels(self) -> List[str]:
        """Answer letters in label-id order."""
        return list(ANSWER_LETTERS)


# -- encoding ------------------------------------------------------------------------


def race_choice_text(question: str, option: str) -> str:
    """One choice's qa text: every "_" replaced by the option, else question + " " + option."""
    if "_" in question:
        return question.replace("_", option)
    return question + " " + option


def race_choice_texts(question: str, options: Union[str, Sequence[str]]) -> Union[str, List[str]]:
    """qa text(s) as Google builds them: one string for one option, a list for a list."""
    if isinstance(options, str):
        return race_choice_text(question, options)
    return [race_choice_text(question, option) for option in options]


def _fit_choice(
    article_ids: List[int], qa_ids: List[int], max_seq_length: int, max_qa_length: int
) -> Tuple[List[int], List[int]]:
    """Keep qa's last max_qa_length ids, then cut the article so both fit in L-3."""
    budget = max_seq_length - 3
    qa_ids = qa_ids[-max_qa_length:] if max_qa_length > 0 else []
    if len(qa_ids) > budget:
        qa_ids = qa_ids[len(qa_ids) - budget :]
    return article_ids[: budget - len(qa_ids)], qa_ids


def encode_race_example(
    example: RaceExample, tokenizer, max_seq_length: int, max_qa_length: int = 128
) -> dict:
    """Google's RACE features: 4 x ``[CLS] article [SEP] qa [SEP]``, flattened to 4*L.

    Returns lists ``input_ids``, ``input_mask``, ``segment_ids`` (length 4 *
    max_seq_length, choice-major) and ``label`` (the answer index, 0 when unlabeled).
    ``tokenizer`` needs tokenize / convert_tokens_to_ids / cls_id / sep_id / pad_id; pass
    a :class:`albert_tf.text.encoding.TextEncoder` to get Google's preprocess_text
    (lower-casing) first, which a bare SentencePiece FullTokenizer does not apply.
    """

    if max_seq_length < 4:
        raise ValueError(f"max_seq_length must be at least 4, got {max_seq_length}")
    if len(example.options) != NUM_CHOICES:
        raise ValueError(
            f"{example.example_id} question {example.question_index}: "
            f"{len(example.options)} options, expected {NUM_CHOICES}"
        )
    article_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(example.article))
    features = {"input_ids": [], "input_mask": [], "segment_ids": []}
    for qa in race_choice_texts(example.question, list(example.options)):
        qa_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(qa))
        a_ids, b_ids = _fit_choice(list(article_ids), list(qa_ids), max_seq_length, max_qa_length)
        packed = pack_ids(
            a_ids,
            b_ids,
            max_seq_length,
            tokenizer.cls_id,
            tokenizer.sep_id,
            pad_id=tokenizer.pad_id,
        )
        for key in features:
            features[key].extend(packed[key])
    features["label"] = 0 if example.label is None else int(example.label)
    return features
