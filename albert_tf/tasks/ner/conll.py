"""Reading CoNLL-2003-style NER files into sentences and checking their tags, so that a bad
line is reported with its file and line number before any training starts.

The format: one token per line, fields separated by spaces or tabs, the word first and its
NER label last: 2 columns ``word label``, or CoNLL-2003's 4 columns ``word POS chunk label``
(POS and chunk are read past). Any other count is an error, except 1 column: a file whose
token lines hold only the word is unlabeled (a test file) and its sentences have
``labels=None``. Every token line of a file has as many columns as its first one. A blank line
(or one of only spaces and tabs) ends a sentence; a ``-DOCSTART-`` line marks a new document:
it is skipped and ends any sentence, so the blank line after it is one more boundary. UTF-8
with or without a BOM, LF or CRLF line endings, the final blank line optional.

Tags follow one of two schemes (`label_scheme` tells them apart by the label set):
- "BIO" (IOB2): an entity is ``B-X`` then any number of ``I-X``;
- "BIOES": an entity is ``S-X`` alone, or ``B-X``, any ``I-X``, then ``E-X``.
`check_tags` rejects any other sequence in one line naming the file and line. IOB1 files (an
entity starts with ``I-X``; ``B-X`` only splits two adjacent entities of one type) are not
converted silently: the ``I-X`` after ``O`` is an error whose hint says to convert the file
to IOB2, since a quiet conversion would also hide real tagging mistakes.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from albert_tf.core import fileio
from albert_tf.core.errors import InputError

DOCSTART = "-DOCSTART-"
SCHEMES = ("BIO", "BIOES")
_PREFIXES = {"BIO": "BI", "BIOES": "BIES"}
_FIELD_SEPARATOR = re.compile(r"[ \t]+")
_LAYOUTS = 'expected "word label" (or CoNLL-2003\'s 4 columns "word POS chunk label")'


class ConllFormatError(InputError):
    """A line of a CoNLL file that cannot be read, or a tag that breaks its scheme; the
    message names the file and line."""


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One sentence: its words, their NER labels (None when the file has no label column) and
    the 1-based line of each word in its file (empty when not read from a file). Lines are
    not compared: a sentence equals the same words and labels read from anywhere.

    >>> Sentence(("Paris", "."), ("S-LOC", "O")) == Sentence(("Paris", "."), ("S-LOC", "O"), (3, 4))
    True
    """

    words: Tuple[str, ...]
    labels: Optional[Tuple[str, ...]] = None
    lines: Tuple[int, ...] = dataclasses.field(default=(), compare=False, repr=False)

    def __post_init__(self):
        if self.labels is not None and len(self.labels) != len(self.words):
            raise ValueError(f"{len(self.words)} words but {len(self.labels)} labels")
        if self.lines and len(self.lines) != len(self.words):
            raise ValueError(f"{len(self.words)} words but {len(self.lines)} line numbers")


def _text_lines(path) -> Iterator[Tuple[int, str]]:
    """(1-based line number, text) of each line of `path`, without BOM or LF/CRLF ending."""
    yield from fileio.numbered_lines(path, ConllFormatError)


def _check_columns(
    where: str, count: int, labeled: Optional[bool], first: Optional[Tuple[int, int]]
) -> None:
    """Raise unless a token line of `count` columns fits the file: 2 or 4 (1 only unlabeled),
    and as many as the first token line, `first` = (its line number, its count)."""
    columns = f"{count} column" if count == 1 else f"{count} columns"
    if count not in (1, 2, 4) or (count == 1 and labeled):
        raise ConllFormatError(f"{where}: {columns}; {_LAYOUTS}")
    if first is not None and count != first[1]:
        raise ConllFormatError(
            f"{where}: {columns} but line {first[0]} has {first[1]}; "
            "every token line of a file needs the same columns"
        )


def read_conll(path, labeled: Optional[bool] = None) -> List[Sentence]:
    """The sentences of a CoNLL-2003-style file (see the module docstring for the format).

    `labeled`: None decides by the file's first token line (1 column: no labels); True
    requires labels (a 1-column file is an error); False reads only the words of any file,
    labels None (e.g. a dev file given to predict). A file without sentences is an error.

    >>> from albert_tf.core import fileio
    >>> path = fileio.write_text("ram://ner-doc/train.txt", "-DOCSTART- -X- -X- O\\n\\n"
    ...                          "Ada NNP B-NP B-PER\\nsang VBD B-VP O\\n\\nOslo NNP B-NP B-LOC\\n")
    >>> read_conll(path)  # doctest: +NORMALIZE_WHITESPACE
    [Sentence(words=('Ada', 'sang'), labels=('B-PER', 'O')),
     Sentence(words=('Oslo',), labels=('B-LOC',))]
    >>> read_conll(path, labeled=False)[1]
    Sentence(words=('Oslo',), labels=None)
    """
    sentences: List[Sentence] = []
    words: List[str] = []
    labels: List[str] = []
    lines: List[int] = []
    first = None  # (line, column count) of the first token line

    def end_sentence():
        if words:
            keep = labeled is not False and first[1] > 1
            sentences.append(Sentence(tuple(words), tuple(labels) if keep else None, tuple(lines)))
            words.clear()
            labels.clear()
            lines.clear()

    for lineno, line in _text_lines(path):
        text = line.strip(" \t")
        if not text:
            end_sentence()
            continue
        fields = _FIELD_SEPARATOR.split(text)
        if fields[0] == DOCSTART:
            end_sentence()
            continue
        _check_columns(f"{path}, line {lineno}", len(fields), labeled, first)
        first = first or (lineno, len(fields))
        words.append(fields[0])
        labels.append(fields[-1])
        lines.append(lineno)
    end_sentence()
    if not sentences:
        raise ConllFormatError(
            f"{path}: no sentences (the file is empty or holds only {DOCSTART} lines)"
        )
    return sentences


def _split_tag(tag: str, scheme: str) -> Optional[Tuple[str, str]]:
    """(prefix, type) of an entity tag of `scheme`, ("O", "") for "O", None if malformed."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in _PREFIXES[scheme]:
        return tag[0], tag[2:]
    return None


def label_scheme(labels: Iterable[str]) -> str:
    """The tag scheme of a label set: "BIOES" when any label is an ``E-`` or ``S-`` tag, else
    "BIO" (IOB2). Malformed labels are left to `check_tags`, which names their lines.

    >>> label_scheme(["O", "B-PER", "I-PER", "B-LOC"])
    'BIO'
    >>> label_scheme(["O", "S-LOC", "B-PER", "E-PER"])
    'BIOES'
    """
    return "BIOES" if any(label[:2] in ("E-", "S-") for label in labels) else "BIO"


def _scheme_hint(scheme: str, type_: str) -> str:
    """How an entity of `type_` is tagged in `scheme`: the second half of a tag error."""
    if scheme == "BIO":
        return (
            f'in BIO (IOB2) tags an entity starts with "B-{type_}" (for IOB1 data, whose '
            'entities start with "I-", convert the file to IOB2 first)'
        )
    return (
        f'in BIOES tags an entity is "S-{type_}" alone, or "B-{type_}", any "I-{type_}", '
        f'then "E-{type_}"'
    )


def _fits(scheme: str, prev: Tuple[str, str], cur: Tuple[str, str]) -> bool:
    """Whether tag `cur` may follow tag `prev` ("O" before a sentence's first tag)."""
    open_entity = prev[0] in ("B", "I")  # an entity that may (BIO) or must (BIOES) go on
    if scheme == "BIO":
        return cur[0] != "I" or (open_entity and cur[1] == prev[1])
    if open_entity:  # BIOES: go on (I-) or close (E-) with the entity's own type
        return cur[0] in ("I", "E") and cur[1] == prev[1]
    return cur[0] in ("O", "B", "S")


def _check_sentence(sentence: Sentence, number: int, scheme: str, path: str) -> None:
    """`check_tags` for one labeled sentence, the `number`-th (1-based) of its list."""
    labels = sentence.labels

    def where(i):
        if sentence.lines:
            return f"{path}, line {sentence.lines[i]}"
        return f"{path}, sentence {number}, word {i + 1}"

    prev = ("O", "")
    for i, label in enumerate(labels):
        cur = _split_tag(label, scheme)
        if cur is None:
            prefixes = "/".join(f'"{p}-"' for p in _PREFIXES[scheme])
            raise ConllFormatError(
                f'{where(i)}: label "{label}" is not a {scheme} tag; '
                f'expected "O" or {prefixes} and a type, e.g. "B-PER"'
            )
        if not _fits(scheme, prev, cur):
            after = "starts a sentence" if i == 0 else f'follows "{labels[i - 1]}"'
            raise ConllFormatError(
                f'{where(i)}: "{label}" {after}; {_scheme_hint(scheme, cur[1] or prev[1])}'
            )
        prev = cur
    if scheme == "BIOES" and prev[0] in ("B", "I"):
        raise ConllFormatError(
            f'{where(len(labels) - 1)}: "{labels[-1]}" ends a sentence; '
            f"{_scheme_hint(scheme, prev[1])}"
        )


def check_tags(sentences: Sequence[Sentence], scheme: str, path: str = "<sentences>") -> None:
    """Raise ConllFormatError on the first label that is not a `scheme` tag or breaks its
    order, naming `path` and the word's line (its sentence and word number for sentences not
    read from a file). Unlabeled sentences pass.

    >>> check_tags([Sentence(("Ann", "Lee"), ("B-PER", "I-PER"))], "BIO", "train.txt")
    >>> check_tags([Sentence(("in", "Rome"), ("O", "I-LOC"), (7, 8))], "BIO", "train.txt")
    Traceback (most recent call last):
    ...
    albert_tf.tasks.ner.conll.ConllFormatError: train.txt, line 8: "I-LOC" follows "O"; \
in BIO (IOB2) tags an entity starts with "B-LOC" (for IOB1 data, whose entities start with \
"I-", convert the file to IOB2 first)
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r} is not one of {SCHEMES}")
    for number, sentence in enumerate(sentences, start=1):
        if sentence.labels is not None:
            _check_sentence(sentence, number, scheme, path)


def label_list(sentences: Iterable[Sentence]) -> List[str]:
    """The labels of labeled sentences in a stable order: "O" first (always there: the model
    needs it), then the entity labels grouped by type in sorted order, B- I- E- S- within a
    type; anything else after them, sorted.

    >>> label_list([Sentence(("Paris", "is"), ("S-LOC", "O")),
    ...             Sentence(("Ann", "Lee"), ("B-PER", "E-PER"))])
    ['O', 'S-LOC', 'B-PER', 'E-PER']
    """
    found = set()
    for sentence in sentences:
        if sentence.labels is not None:
            found.update(sentence.labels)
    found.discard("O")

    def key(label):
        tag = _split_tag(label, "BIOES")
        return (0, tag[1], "BIES".index(tag[0])) if tag else (1, label, 0)

    return ["O"] + sorted(found, key=key)
