"""CoNLL-2003-style NER files: both column layouts, -DOCSTART-, CRLF/BOM, a missing final blank
line, unlabeled test files, the tag schemes, and every error as one line naming file:line."""

import pytest
from repo_paths import DATA

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.tasks.ner.conll import (
    ConllFormatError,
    Sentence,
    check_tags,
    label_list,
    label_scheme,
    read_conll,
)

NER = DATA / "ner"
LAYOUTS = 'expected "word label" (or CoNLL-2003\'s 4 columns "word POS chunk label")'
BIO_HINT = (
    'in BIO (IOB2) tags an entity starts with "B-{0}" (for IOB1 data, whose entities '
    'start with "I-", convert the file to IOB2 first)'
)
BIOES_HINT = 'in BIOES tags an entity is "S-{0}" alone, or "B-{0}", any "I-{0}", then "E-{0}"'


def _write(tmp_path, text, name="train.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def _error(call, *args, **kwargs):
    """The one-line message of the ConllFormatError that `call` raises."""
    with pytest.raises(ConllFormatError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and isinstance(info.value, InputError)
    return message


# --- reading ----------------------------------------------------------------------------------


def test_four_column_conll2003_layout_with_docstart():
    sentences = read_conll(str(NER / "conll2003_bio.txt"))
    assert [s.words for s in sentences] == [
        ("Marta", "Ilves", "visited", "the", "Kessler", "Glassworks", "in", "Tallinn", "."),
        ("She", "flew", "home", "."),
        ("Northwind", "shares", "rose", "after", "the", "Lumen", "Prize", "."),
    ]
    assert sentences[0].labels == ("B-PER", "I-PER", "O", "O", "B-ORG", "I-ORG", "O", "B-LOC", "O")
    assert sentences[2].labels[5:7] == ("B-MISC", "I-MISC")
    assert sentences[0].lines == tuple(range(3, 12))
    assert sentences[1].lines == (13, 14, 15, 16)
    assert sentences[2].lines[0] == 20
    assert label_scheme(label_list(sentences)) == "BIO"
    check_tags(sentences, "BIO", "conll2003_bio.txt")


def test_two_column_tab_separated_bioes_without_final_newline():
    path = NER / "two_columns_bioes.txt"
    assert not path.read_bytes().endswith(b"\n")
    sentences = read_conll(str(path))
    assert sentences == [
        Sentence(
            ("Jonas", "Ekberg", "opened", "a", "bakery", "in", "Malmo", "."),
            ("B-PER", "E-PER", "O", "O", "O", "O", "S-LOC", "O"),
        ),
        Sentence(
            ("The", "River", "Valley", "Cooperative", "agreed", "."),
            ("O", "B-LOC", "I-LOC", "E-LOC", "O", "O"),
        ),
    ]
    assert sentences[1].lines == (10, 11, 12, 13, 14, 15)
    assert label_scheme(label_list(sentences)) == "BIOES"
    check_tags(sentences, "BIOES", str(path))


def test_one_column_file_is_unlabeled():
    sentences = read_conll(str(NER / "unlabeled.txt"))
    assert sentences == [
        Sentence(("Priya", "Raman", "joined", "Orbitale", ".")),
        Sentence(("Nothing", "happened", ".")),
    ]
    assert all(s.labels is None for s in sentences)
    check_tags(sentences, "BIO", "unlabeled.txt")  # nothing to check
    path = str(NER / "unlabeled.txt")
    assert _error(read_conll, path, labeled=True) == f"{path}, line 3: 1 column; {LAYOUTS}"


def test_labeled_false_reads_only_the_words():
    sentences = read_conll(str(NER / "conll2003_bio.txt"), labeled=False)
    assert [s.labels for s in sentences] == [None, None, None]
    assert sentences[1].words == ("She", "flew", "home", ".")


@pytest.mark.parametrize("name", ["conll2003_bio.txt", "two_columns_bioes.txt"])
def test_crlf_bom_and_missing_final_blank_line_read_the_same(tmp_path, name):
    raw = (NER / name).read_bytes()
    expected = read_conll(str(NER / name))
    variants = {
        "crlf.txt": raw.replace(b"\n", b"\r\n"),
        "bom.txt": b"\xef\xbb\xbf" + raw,
        "bom_crlf.txt": b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"),
        "no_final_blank.txt": raw.rstrip(b"\n"),
        "no_final_newline_crlf.txt": raw.rstrip(b"\n").replace(b"\n", b"\r\n"),
        "extra_blank_lines.txt": raw.replace(b"\n\n", b"\n \t\n\n") + b"\n\n",
    }
    for variant, data in variants.items():
        got = read_conll(_write(tmp_path, data, variant))
        assert got == expected, variant
        if variant != "extra_blank_lines.txt":
            assert [s.lines for s in got] == [s.lines for s in expected], variant


def test_bom_before_docstart_and_docstart_without_blank_line(tmp_path):
    path = _write(tmp_path, "\ufeff-DOCSTART- O\nAda B-PER\n-DOCSTART- O\nBo B-PER\nsat O\n")
    assert read_conll(path) == [
        Sentence(("Ada",), ("B-PER",)),
        Sentence(("Bo", "sat"), ("B-PER", "O")),
    ]


def test_spaces_and_tabs_mixed_and_surrounding_whitespace(tmp_path):
    path = _write(tmp_path, "  Ada \t NNP\tB-NP  B-PER \nsat\tVBD I-VP\tO\t\n")
    assert read_conll(path) == [Sentence(("Ada", "sat"), ("B-PER", "O"))]


def test_reads_through_the_file_layer():
    path = fileio.write_text("ram://ner-test/data/dev.txt", "Ada B-PER\nLovelace I-PER\n")
    assert read_conll(path) == [Sentence(("Ada", "Lovelace"), ("B-PER", "I-PER"))]


# --- reading errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("line, count", [("Ada NNP B-PER", 3), ("Ada NNP B-NP x B-PER", 5)])
def test_wrong_column_count_names_file_and_line(tmp_path, line, count):
    path = _write(tmp_path, f"-DOCSTART- -X- -X- O\n\nBob NNP B-NP B-PER\n{line}\n")
    assert _error(read_conll, path) == f"{path}, line 4: {count} columns; {LAYOUTS}"


def test_three_columns_on_the_first_line(tmp_path):
    path = _write(tmp_path, "Ada NNP B-PER\n")
    assert _error(read_conll, path) == f"{path}, line 1: 3 columns; {LAYOUTS}"


def test_columns_must_match_the_first_token_line(tmp_path):
    path = _write(tmp_path, "-DOCSTART- O\n\nAda NNP B-NP B-PER\n\nBob B-PER\n")
    assert _error(read_conll, path) == (
        f"{path}, line 5: 2 columns but line 3 has 4; every token line of a file needs the "
        "same columns"
    )
    path = _write(tmp_path, "Ada B-PER\nsat\n", "label_missing.txt")
    assert _error(read_conll, path) == (
        f"{path}, line 2: 1 column but line 1 has 2; every token line of a file needs the "
        "same columns"
    )


def test_not_utf8_names_line_and_byte(tmp_path):
    path = _write(tmp_path, b"Ada B-PER\n\nS\xe3o B-LOC\n")
    assert _error(read_conll, path) == f"{path}, line 3: not UTF-8 text (byte 0xe3 at column 2)"


@pytest.mark.parametrize("text", ["", "\n\n", "-DOCSTART- -X- -X- O\n\n"])
def test_a_file_without_sentences_is_an_error(tmp_path, text):
    path = _write(tmp_path, text)
    assert _error(read_conll, path) == (
        f"{path}: no sentences (the file is empty or holds only -DOCSTART- lines)"
    )


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_conll(str(tmp_path / "absent.txt"))


# --- schemes and tag checks -------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels, scheme",
    [
        (["O"], "BIO"),
        (["O", "B-PER", "I-PER"], "BIO"),
        (["O", "I-PER"], "BIO"),
        (["O", "S-LOC"], "BIOES"),
        (["B-PER", "I-PER", "E-PER"], "BIOES"),
        ([], "BIO"),
    ],
)
def test_label_scheme(labels, scheme):
    assert label_scheme(labels) == scheme


def test_label_list_o_first_then_grouped_by_type():
    sentences = [
        Sentence(("a", "b", "c"), ("S-ORG", "B-LOC", "E-LOC")),
        Sentence(("d", "e", "f"), ("I-LOC", "O", "B-ORG")),
        Sentence(("g",)),
    ]
    assert label_list(sentences) == ["O", "B-LOC", "I-LOC", "E-LOC", "B-ORG", "S-ORG"]
    assert label_list([Sentence(("x",), ("B-PER",))]) == ["O", "B-PER"]  # "O" always there


def _tag_file(tmp_path, tags):
    """A 2-column file: one blank-line-separated sentence per string of space-separated tags;
    returns the path and its sentences (line numbers: see the file)."""
    lines = []
    for sentence in tags:
        lines += [f"w{i} {tag}" for i, tag in enumerate(sentence.split())] + [""]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    return path, read_conll(path)


BIO_ERRORS = [  # sentences, line, message without the hint, type of the hint
    (["B-PER I-PER O I-PER"], 4, '"I-PER" follows "O"', "PER"),
    (["O O", "I-LOC O"], 4, '"I-LOC" starts a sentence', "LOC"),
    (["B-LOC I-PER"], 2, '"I-PER" follows "B-LOC"', "PER"),
    (["B-LOC I-LOC I-ORG"], 3, '"I-ORG" follows "I-LOC"', "ORG"),
]


@pytest.mark.parametrize("tags, line, what, type_", BIO_ERRORS)
def test_bio_order_errors(tmp_path, tags, line, what, type_):
    path, sentences = _tag_file(tmp_path, tags)
    assert label_scheme(label_list(sentences)) == "BIO"
    assert _error(check_tags, sentences, "BIO", path) == (
        f"{path}, line {line}: {what}; {BIO_HINT.format(type_)}"
    )


def test_iob1_file_is_rejected_with_a_hint(tmp_path):
    # IOB1: entities start with I-, B- only between two adjacent entities of one type
    path, sentences = _tag_file(tmp_path, ["O I-PER I-PER B-PER O"])
    message = _error(check_tags, sentences, label_scheme(label_list(sentences)), path)
    assert message.startswith(f'{path}, line 2: "I-PER" follows "O"; ')
    assert "convert the file to IOB2" in message


BIOES_ERRORS = [
    (["O E-PER"], 2, '"E-PER" follows "O"', "PER"),
    (["E-PER O"], 1, '"E-PER" starts a sentence', "PER"),
    (["B-PER O"], 2, '"O" follows "B-PER"', "PER"),
    (["B-PER I-PER S-LOC"], 3, '"S-LOC" follows "I-PER"', "LOC"),
    (["B-PER I-LOC E-LOC"], 2, '"I-LOC" follows "B-PER"', "LOC"),
    (["B-PER E-LOC"], 2, '"E-LOC" follows "B-PER"', "LOC"),
    (["S-PER I-PER"], 2, '"I-PER" follows "S-PER"', "PER"),
    (["B-PER E-PER E-PER"], 3, '"E-PER" follows "E-PER"', "PER"),
    (["B-ORG B-ORG E-ORG"], 2, '"B-ORG" follows "B-ORG"', "ORG"),
    (["S-LOC", "O B-PER"], 4, '"B-PER" ends a sentence', "PER"),
    (["O B-PER I-PER"], 3, '"I-PER" ends a sentence', "PER"),
]


@pytest.mark.parametrize("tags, line, what, type_", BIOES_ERRORS)
def test_bioes_order_errors(tmp_path, tags, line, what, type_):
    path, sentences = _tag_file(tmp_path, tags)
    assert _error(check_tags, sentences, "BIOES", path) == (
        f"{path}, line {line}: {what}; {BIOES_HINT.format(type_)}"
    )


@pytest.mark.parametrize(
    "scheme, label, prefixes",
    [
        ("BIO", "PER", '"B-"/"I-"'),
        ("BIO", "E-PER", '"B-"/"I-"'),
        ("BIO", "B-", '"B-"/"I-"'),
        ("BIOES", "U-PER", '"B-"/"I-"/"E-"/"S-"'),
        ("BIOES", "o", '"B-"/"I-"/"E-"/"S-"'),
        ("BIOES", "B_PER", '"B-"/"I-"/"E-"/"S-"'),
    ],
)
def test_labels_that_are_not_tags(tmp_path, scheme, label, prefixes):
    path, sentences = _tag_file(tmp_path, [f"O {label}"])
    assert _error(check_tags, sentences, scheme, path) == (
        f'{path}, line 2: label "{label}" is not a {scheme} tag; expected "O" or {prefixes} '
        'and a type, e.g. "B-PER"'
    )


def test_sentences_not_from_a_file_are_named_by_position():
    sentences = [Sentence(("a",), ("O",)), Sentence(("b", "c"), ("O", "I-PER"))]
    assert _error(check_tags, sentences, "BIO", "predictions") == (
        f'predictions, sentence 2, word 2: "I-PER" follows "O"; {BIO_HINT.format("PER")}'
    )


def test_valid_sequences_pass():
    check_tags(
        [Sentence(tuple("abcdef"), ("B-PER", "B-PER", "I-PER", "O", "B-LOC", "I-LOC"))], "BIO"
    )
    check_tags(
        [
            Sentence(
                tuple("abcdefg"), ("S-PER", "B-PER", "E-PER", "B-LOC", "I-LOC", "I-LOC", "E-LOC")
            )
        ],
        "BIOES",
    )


def test_unknown_scheme_and_bad_sentences():
    with pytest.raises(ValueError, match="IOB1"):
        check_tags([], "IOB1")
    with pytest.raises(ValueError, match="2 words but 1 labels"):
        Sentence(("a", "b"), ("O",))
