"""GLUE processors on the real GLUE samples in ../shared/data, plus crafted edge cases."""

import os

import pytest

from albert_tf.tasks.classification.reader import GlueFormatError
from albert_tf.tasks.glue.processors import (
    PROCESSORS,
    MnliMismatchedProcessor,
    best_checkpoint_metric,
    get_processor,
)
from albert_tf.tasks.glue.submission import submission_file_name, write_submission

# task, split, count, (first guid, text_a prefix, text_b prefix, label), (last ...)
REAL = [
    (
        "cola",
        "train",
        50,
        ("train-0", "Our friends won't buy", None, "1"),
        ("train-49", "The dog barked out of the room.", None, "0"),
    ),
    (
        "cola",
        "dev",
        50,
        ("dev-0", "The sailors rode the breeze", None, "1"),
        ("dev-49", "I can't believe Fred won't, either.", None, "1"),
    ),
    (
        "cola",
        "test",
        50,
        ("0", "Bill whistled past the house.", None, None),
        ("49", "I can't believe Holly won't eat cabbage.", None, None),
    ),
    (
        "sst-2",
        "train",
        50,
        ("train-0", "hide new secretions from the parental units ", None, "0"),
        ("train-49", "disappointments ", None, "0"),
    ),
    (
        "sst-2",
        "dev",
        50,
        ("dev-0", "it 's a charming and often affecting journey . ", None, "1"),
        ("dev-49", "it 's hampered by a lifetime-channel", None, "0"),
    ),
    (
        "sst-2",
        "test",
        50,
        ("0", "uneasy mishmash of styles and genres .", None, None),
        ("49", "the furious coherence that ( deniro )", None, None),
    ),
    (
        "mrpc",
        "train",
        50,
        ("train-0", "Amrozi accused his brother", "Referring to him", "1"),
        ("train-49", "A former teammate, Carlton Dotson", "His body was found July 25", "0"),
    ),
    (
        "mrpc",
        "dev",
        50,
        ("dev-0", "He said the foodservice pie", '"The foodservice pie', "1"),
        ("dev-49", "United issued a statement", "Senior vice president Sara Fields", "1"),
    ),
    (
        "mrpc",
        "test",
        50,
        ("0", "PCCW's chief operating officer", "Current Chief Operating", None),
        ("49", "Nicholas is the uncle of Louima", "Mr. Nicolas is an uncle", None),
    ),
    (
        "sts-b",
        "train",
        50,
        ("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0),
        ("train-49", "A boy is playing guitar.", "A man is playing a guitar.", 3.2),
    ),
    (
        "sts-b",
        "dev",
        50,
        ("dev-0", "A man with a hard hat is dancing.", "A man wearing a hard hat", 5.0),
        ("dev-49", "A man is fitting silencer on a pistol.", "A man is adding a silencer", 4.5),
    ),
    (
        "sts-b",
        "test",
        50,
        ("0", "A girl is styling her hair.", "A girl is brushing her hair.", None),
        ("49", "The ballerina is dancing.", "A man is dancing.", None),
    ),
    (
        "qqp",
        "train",
        9,
        ("train-133273", "How is the life of a math student?", "Which level of", "0"),
        (
            "train-196763",
            "Can I enter University of Melbourne",
            "University of the Philippines",
            "0",
        ),
    ),
    (
        "qqp",
        "dev",
        9,
        ("dev-201359", "Why are African-Americans so beautiful?", "Why are hispanics", "0"),
        ("dev-382732", "Why is my life getting so complicated?", "Why is my life so", "0"),
    ),
    (
        "qqp",
        "test",
        9,
        ("0", "Would the idea of Trump and Putin", "Do you think that if Donald", None),
        ("8", "What are the health implications", "What are the implications", None),
    ),
    (
        "mnli",
        "train",
        6,
        ("train-0", "Conceptually cream skimming", "Product and geography", "neutral"),
        ("train-11", "Fun for adults and children.", "Fun for only children.", "contradiction"),
    ),
    (
        "mnli",
        "dev",
        11,
        ("dev-0", "The new rights are nice enough", "Everyone really likes", "neutral"),
        (
            "dev-10",
            "The most important directions",
            "Go downwards to one of the gates",
            "contradiction",
        ),
    ),
    (
        "mnli",
        "test",
        5,
        ("0", "Hierbas, ans seco", "Hierbas is a name", None),
        ("4", "Built in 1870", "It was constructed in 1870", None),
    ),
    (
        "mnli-mm",
        "train",
        6,
        ("train-0", "Conceptually cream skimming", "Product and geography", "neutral"),
        ("train-11", "Fun for adults and children.", "Fun for only children.", "contradiction"),
    ),
    (
        "mnli-mm",
        "dev",
        5,
        (
            "dev-0",
            "Your contribution helped",
            "Your contributions were of no help",
            "contradiction",
        ),
        ("dev-4", "I was on this earth you know", "I don't yet know the reason", "entailment"),
    ),
    (
        "mnli-mm",
        "test",
        5,
        ("0", "What have you decided", "So what's your decision?", None),
        ("4", " So we've got a couple of aircraft", "At the present time", None),
    ),
    (
        "qnli",
        "train",
        5,
        (
            "train-0",
            "When did the third Digimon series begin?",
            "Unlike the two seasons",
            "not_entailment",
        ),
        ("train-4", "What famous palace is located in London?", "London contains four", None),
    ),
    (
        "qnli",
        "dev",
        50,
        ("dev-0", "What came into force after", "As of that day", "entailment"),
        ("dev-49", "What were the Saxon Palace", "Warsaw’s municipal government", "entailment"),
    ),
    (
        "qnli",
        "test",
        50,
        ("0", "What organization is devoted to Jihad", "For some decades prior", None),
        ("49", "What was the last name of the designers", "The Literary and Philosophical", None),
    ),
    (
        "rte",
        "train",
        50,
        (
            "train-0",
            "No Weapons of Mass Destruction Found in Iraq Yet.",
            "Weapons of Mass",
            "not_entailment",
        ),
        (
            "train-49",
            "Argentina sought help from Britain",
            "Argentina sought UK expertise",
            "not_entailment",
        ),
    ),
    (
        "rte",
        "dev",
        50,
        ("dev-0", "Dana Reeve, the widow", "Christopher Reeve had an accident.", "not_entailment"),
        (
            "dev-49",
            "The team drawing up Iraq's new constitution",
            "On Sunday, officials argued",
            None,
        ),
    ),
    (
        "rte",
        "test",
        50,
        ("0", "Mangla was summoned after", "Shukla is related to Mangla.", None),
        ("49", "Robert Tuttle told the BBC", "Robert Tuttle has been criticised", None),
    ),
    (
        "wnli",
        "train",
        50,
        ("train-1", "John couldn't see the stage", "John is so short.", "1"),
        ("train-68", "I couldn't put the pot on the shelf", "The shelf was too high.", "1"),
    ),
    (
        "wnli",
        "dev",
        71,
        ("dev-0", "The drain is clogged with hair.", "The hair has to be cleaned.", "0"),
        ("dev-70", "George got free tickets to the play", "Eric was not particularly eager", "0"),
    ),
    (
        "wnli",
        "test",
        50,
        ("0", "Maude and Dora had seen the trains", "Horses ran away when", None),
        ("49", "When I got to the house, Mrs. Everett", "Hermoine was in Hermione's room.", None),
    ),
    (
        "ax",
        "test",
        50,
        ("0", "The cat sat on the mat.", "The cat did not sit on the mat.", "contradiction"),
        ("49", "Some animals like to scratch their ears.", "Some dogs like to scratch", "neutral"),
    ),
]

LABELS = {
    "cola": ["0", "1"],
    "sst-2": ["0", "1"],
    "mrpc": ["0", "1"],
    "sts-b": [],
    "qqp": ["0", "1"],
    "mnli": ["contradiction", "entailment", "neutral"],
    "mnli-mm": ["contradiction", "entailment", "neutral"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["0", "1"],
    "ax": ["contradiction", "entailment", "neutral"],
}


def _read(task, split, data_dir):
    return getattr(get_processor(task), f"get_{split}_examples")(str(data_dir))


def _check(example, expected, unlabeled):
    guid, text_a, text_b, label = expected
    assert example.guid == guid
    assert example.text_a.startswith(text_a)
    if text_b is None:
        assert example.text_b is None
    else:
        assert example.text_b.startswith(text_b)
    if unlabeled:
        assert example.label is None
    elif label is not None:
        assert example.label == label


@pytest.mark.parametrize("task,split,count,first,last", REAL, ids=[f"{r[0]}-{r[1]}" for r in REAL])
def test_real_samples(data_dir, task, split, count, first, last):
    examples = _read(task, split, data_dir)
    assert len(examples) == count
    unlabeled = split == "test" and task != "ax"
    _check(examples[0], first, unlabeled)
    _check(examples[-1], last, unlabeled)
    for ex in examples:
        assert "\r" not in ex.text_a and "\n" not in ex.text_a
        assert not ex.text_a.startswith("\ufeff")
        if unlabeled:
            assert ex.label is None
    assert len({ex.guid for ex in examples}) == count  # guids are unique


@pytest.mark.parametrize("task", sorted(LABELS))
def test_label_sets(data_dir, task):
    processor = get_processor(task)
    assert processor.get_labels() == LABELS[task]
    splits = ["test"] if task == "ax" else ["train", "dev"]
    seen = {ex.label for split in splits for ex in _read(task, split, data_dir)}
    if task == "sts-b":
        assert processor.is_regression and processor.num_labels == 1
        assert all(isinstance(v, float) and 0.0 <= v <= 5.0 for v in seen)
    else:
        assert not processor.is_regression
        assert seen <= set(LABELS[task]) and len(seen) >= 2
        assert processor.num_labels == len(LABELS[task])
        assert processor.label_map() == {l: i for i, l in enumerate(LABELS[task])}


def test_bom_header_skipped(data_dir):
    with open(os.path.join(data_dir, "MRPC", "train.tsv"), "rb") as f:
        assert f.read(3) == b"\xef\xbb\xbf"  # the sample really has the BOM
    first = _read("mrpc", "train", data_dir)[0]
    assert first.label == "1" and first.text_a.startswith("Amrozi")


def test_crlf_diagnostic(data_dir):
    with open(os.path.join(data_dir, "diagnostic", "diagnostic-full.tsv"), "rb") as f:
        assert b"\r\n" in f.read()
    examples = _read("ax", "test", data_dir)
    assert all(ex.label in LABELS["ax"] for ex in examples)  # no trailing '\r' on labels


def test_quotes_kept_verbatim(data_dir):
    dev = _read("mrpc", "dev", data_dir)
    # an unbalanced opening quote: QUOTE_NONE keeps it and does not swallow the next line
    assert (
        dev[0].text_b == '"The foodservice pie business does not fit our long-term growth strategy.'
    )
    assert dev[1].guid == "dev-1" and dev[1].label == "0"
    assert any('"' in ex.text_a for ex in _read("mrpc", "train", data_dir))


def test_crafted_bom_crlf_quotes(tmp_path):
    task = tmp_path / "RTE"
    task.mkdir()
    (task / "train.tsv").write_bytes(
        b"\xef\xbb\xbfindex\tsentence1\tsentence2\tlabel\r\n"
        b'0\t"He said "hi\tB\xe2\x80\x99s\tentailment\r\n'
        b"\r\n"
        b"1\tA\rB\tC\tnot_entailment\r\n"
    )
    examples = get_processor("rte").get_train_examples(str(tmp_path))
    assert [ex.guid for ex in examples] == ["train-0", "train-1"]
    assert examples[0].text_a == '"He said "hi' and examples[0].text_b == "B\u2019s"
    assert examples[1].text_a == "A\rB"  # a lone CR inside a field is not a line break
    assert examples[1].label == "not_entailment"


def test_task_folder_itself_accepted(data_dir):
    via_parent = _read("cola", "dev", data_dir)
    via_task = _read("cola", "dev", data_dir / "CoLA")
    assert via_parent == via_task


def test_missing_file_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="CoLA"):
        get_processor("cola").get_train_examples(str(tmp_path))


def test_malformed_row_names_file_and_line(tmp_path):
    task = tmp_path / "RTE"
    task.mkdir()
    (task / "dev.tsv").write_text(
        "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly two\n", encoding="utf-8"
    )
    with pytest.raises(GlueFormatError, match=r"RTE.dev\.tsv, line 3: expected at least 4"):
        get_processor("rte").get_dev_examples(str(tmp_path))


def test_bad_label_and_bad_float_raise(tmp_path):
    (tmp_path / "CoLA").mkdir()
    (tmp_path / "CoLA" / "train.tsv").write_text("src\t1\t\tok\nsrc\t2\t\tbad\n")
    with pytest.raises(GlueFormatError, match=r"line 2: label '2' not in"):
        get_processor("cola").get_train_examples(str(tmp_path))
    (tmp_path / "STS-B").mkdir()
    header = (
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    )
    (tmp_path / "STS-B" / "dev.tsv").write_text(header + "0\tg\tf\ty\to\ts\ts\ta\tb\tfive\n")
    with pytest.raises(GlueFormatError, match="not a number"):
        get_processor("sts-b").get_dev_examples(str(tmp_path))


def test_qqp_bad_rows_skipped_and_counted(tmp_path):
    (tmp_path / "QQP").mkdir()
    (tmp_path / "QQP" / "train.tsv").write_text(
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        "1\t1\t2\tWhat is A?\tWhat is B?\t0\n"
        "2\t3\t4\tbroken row with a newline\n"
        "in the question\t1\n"
        "3\t5\t6\tWhy?\tWhy not?\t1\n"
        "4\t7\t8\tq\tq\tmaybe\n"
    )
    processor = get_processor("qqp")
    examples = processor.get_train_examples(str(tmp_path))
    assert [ex.guid for ex in examples] == ["train-1", "train-3"]
    assert processor.skipped_rows == {"train": 3}
    assert "line 3" in processor.skipped_messages["train"][0]


def test_qqp_real_files_have_no_bad_rows(data_dir):
    processor = get_processor("qqp")
    processor.get_dev_examples(str(data_dir))
    assert processor.skipped_rows == {"dev": 0}


def test_ax_is_test_only_and_unlabeled_fallback(tmp_path):
    processor = get_processor("AX")
    with pytest.raises(ValueError, match="no train split"):
        processor.get_train_examples(str(tmp_path))
    (tmp_path / "diagnostic").mkdir()
    (tmp_path / "diagnostic" / "diagnostic.tsv").write_text(
        "index\tsentence1\tsentence2\n0\tP one\tH one\n1\tP two\tH two\n"
    )
    examples = processor.get_test_examples(str(tmp_path))
    assert [(ex.guid, ex.text_a, ex.text_b, ex.label) for ex in examples] == [
        ("0", "P one", "H one", None),
        ("1", "P two", "H two", None),
    ]


def test_registry_and_names():
    assert get_processor("CoLA").task_name == "cola"
    assert isinstance(get_processor(" MisMNLI "), MnliMismatchedProcessor)
    assert get_processor("mnli-mm").files["dev"] == "dev_mismatched.tsv"
    assert set(PROCESSORS) >= {
        "cola",
        "sst-2",
        "mrpc",
        "sts-b",
        "qqp",
        "mnli",
        "mnli-mm",
        "mismnli",
        "qnli",
        "rte",
        "wnli",
        "ax",
    }
    with pytest.raises(KeyError, match="known tasks: ax, cola"):
        get_processor("imdb")
    # a fresh instance each time: QQP's skip counter is per processor
    assert get_processor("qqp") is not get_processor("qqp")


def test_submission_file_names():
    expected = {
        "cola": "CoLA.tsv",
        "sst-2": "SST-2.tsv",
        "mrpc": "MRPC.tsv",
        "sts-b": "STS-B.tsv",
        "qqp": "QQP.tsv",
        "mnli": "MNLI-m.tsv",
        "mnli-mm": "MNLI-mm.tsv",
        "mismnli": "MNLI-mm.tsv",
        "qnli": "QNLI.tsv",
        "rte": "RTE.tsv",
        "wnli": "WNLI.tsv",
        "ax": "AX.tsv",
    }
    assert {t: submission_file_name(t) for t in expected} == expected


def test_best_checkpoint_metric():
    assert best_checkpoint_metric("CoLA") == "matthews_corrcoef"
    assert best_checkpoint_metric("sts-b") == "pearson"
    for task in ("mrpc", "qqp", "mnli", "mismnli", "sst-2", "qnli", "rte", "wnli"):
        assert best_checkpoint_metric(task) == "accuracy"


def test_best_metric_is_a_glue_metrics_key():
    from albert_tf.tasks.glue import metrics

    for task in PROCESSORS:
        preds = [0.5, 1.5, 2.0] if task == "sts-b" else [0, 1, 1]
        assert best_checkpoint_metric(task) in metrics.glue_metrics(task, preds, [0, 1, 0])


def test_write_submission_labels(data_dir, tmp_path):
    test = _read("rte", "test", data_dir)[:3]
    out = tmp_path / "sub" / submission_file_name("rte")
    write_submission(str(out), "rte", [ex.guid for ex in test], [1, 0, 1])
    assert out.read_text() == (
        "index\tprediction\n0\tnot_entailment\n1\tentailment\n2\tnot_entailment\n"
    )
    write_submission(str(out), "mnli", [5, 6], ["neutral", "entailment"])  # overwrite
    assert out.read_text() == "index\tprediction\n5\tneutral\n6\tentailment\n"
    assert os.listdir(out.parent) == ["RTE.tsv"]  # no temp files left behind


def test_write_submission_stsb_floats_and_errors(tmp_path):
    out = tmp_path / "STS-B.tsv"
    write_submission(str(out), "sts-b", [0, 1], [4.25, 0.5])
    assert out.read_text() == "index\tprediction\n0\t4.25\n1\t0.5\n"
    with pytest.raises(ValueError, match="2 indices but 1 predictions"):
        write_submission(str(out), "cola", [0, 1], [1])
    with pytest.raises(ValueError, match="not a label id"):
        write_submission(str(out), "cola", [0], [2])
    with pytest.raises(ValueError, match="not in labels"):
        write_submission(str(out), "cola", [0], ["yes"])
    assert out.read_text() == "index\tprediction\n0\t4.25\n1\t0.5\n"  # failures left it intact
