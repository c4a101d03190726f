"""RACE reader (release layout and all.txt) on the real samples, and Google's encoding."""

import json
import shutil

import pytest

from albert_tf.tasks.race import data as race


@pytest.fixture(scope="module")
def tokenizer(fixtures_dir):
    from albert_tf.text.tokenization import FullTokenizer

    return FullTokenizer(spm_model_file=str(fixtures_dir / "spm.model"))


def _release_copy(data_dir, root):
    """tmp RACE in the release layout: train from the real train, dev and test from test."""
    src = data_dir / "RACE"
    for split, origin in (("train", "train"), ("dev", "test"), ("test", "test")):
        shutil.copytree(src / origin, root / "RACE" / split)
    return root


def _all_txt_copy(data_dir, root):
    """The same passages as all.txt JSON lines (one compact object per line) per folder."""
    src = data_dir / "RACE"
    for split, origin in (("train", "train"), ("dev", "test"), ("test", "test")):
        for level in race.LEVELS:
            folder = root / "RACE" / split / level
            folder.mkdir(parents=True)
            lines = [
                json.dumps(json.loads(p.read_text(encoding="utf-8")))
                for p in sorted((src / origin / level).glob("*.txt"))
            ]
            (folder / "all.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_real_release_layout(data_dir):
    train = race.read_race_examples(str(data_dir), "train")
    assert [(e.example_id, e.question_index, e.level) for e in train] == (
        [("middle775.txt", i, "middle") for i in range(5)] + [("high7666.txt", 0, "high")]
    )
    first = train[0]
    assert first.question == "My   _   is Paul."
    assert first.options == ("name", "sister", "brother", "father")
    assert first.label == 2  # "C"
    assert first.article.startswith("My name is Jenny .")
    assert train[-1].options == ("surprised", "lonely", "happy", "sad")
    test = race.read_race_examples(str(data_dir), "test")
    assert len(test) == 10
    assert [e.label for e in test] == [0, 3, 0, 1, 2, 2, 2, 1, 2, 0]  # A D A B C C C B C A


def test_high_only_middle_only(data_dir):
    high = race.read_race_examples(str(data_dir), "test", high_only=True)
    middle = race.read_race_examples(str(data_dir), "test", middle_only=True)
    assert {e.level for e in high} == {"high"} and len(high) == 5
    assert {e.level for e in middle} == {"middle"} and len(middle) == 5
    assert middle + high == race.read_race_examples(str(data_dir), "test")
    with pytest.raises(ValueError, match="mutually exclusive"):
        race.read_race_examples(str(data_dir), "test", high_only=True, middle_only=True)
    assert race.RaceProcessor(high_only=True).get_test_examples(str(data_dir)) == high


def test_all_txt_layout_matches_release_layout(data_dir, tmp_path):
    release = _release_copy(data_dir, tmp_path / "release")
    lines = _all_txt_copy(data_dir, tmp_path / "lines")
    for split in ("train", "dev", "test"):
        expected = race.read_race_examples(str(release), split)
        assert race.read_race_examples(str(lines), split) == expected
    dev = race.RaceProcessor().get_dev_examples(str(lines))
    assert len(dev) == 10 and dev[0].example_id == "middle3540.txt"
    # data_dir may also be the RACE folder itself
    assert race.read_race_examples(str(lines / "RACE"), "dev") == dev


def test_all_txt_not_double_read(data_dir, tmp_path):
    root = _release_copy(data_dir, tmp_path)
    folder = root / "RACE" / "train" / "middle"
    passage = (folder / "775.txt").read_text(encoding="utf-8")
    (folder / "all.txt").write_text(json.dumps(json.loads(passage)) + "\n", encoding="utf-8")
    examples = race.read_race_examples(str(root), "train", middle_only=True)
    assert len(examples) == 5  # all.txt only, not all.txt plus 775.txt


def test_natural_file_order(tmp_path):
    folder = tmp_path / "RACE" / "dev" / "high"
    folder.mkdir(parents=True)
    for n in (10, 2):
        (folder / f"{n}.txt").write_text(
            json.dumps(
                {
                    "id": f"high{n}.txt",
                    "article": "a",
                    "questions": ["q"],
                    "options": [["1", "2", "3", "4"]],
                    "answers": ["B"],
                }
            )
        )
    examples = race.read_race_examples(str(tmp_path), "dev", high_only=True)
    assert [e.example_id for e in examples] == ["high2.txt", "high10.txt"]


def _write_passage(tmp_path, text, name="1.txt"):
    folder = tmp_path / "RACE" / "test" / "high"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def test_bad_json_names_file(tmp_path):
    path = _write_passage(tmp_path, '{"article": "x", "questions": [')
    with pytest.raises(race.RaceFormatError, match=f"{path}: invalid JSON"):
        race.read_race_examples(str(tmp_path), "test", high_only=True)


def test_bad_json_in_all_txt_names_line(tmp_path):
    path = _write_passage(
        tmp_path, '{"article": "a", "questions": [], "options": []}\nnot json\n', name="all.txt"
    )
    with pytest.raises(race.RaceFormatError, match=f"{path}, line 2: invalid JSON"):
        race.read_race_examples(str(tmp_path), "test", high_only=True)


def test_three_options_and_bad_answer_name_file(tmp_path):
    path = _write_passage(
        tmp_path,
        json.dumps(
            {
                "id": "x",
                "article": "a",
                "questions": ["q0", "q1"],
                "options": [["1", "2", "3", "4"], ["1", "2", "3"]],
                "answers": ["A", "B"],
            }
        ),
    )
    with pytest.raises(race.RaceFormatError, match=f"{path}: question 1 has 3 options"):
        race.read_race_examples(str(tmp_path), "test", high_only=True)
    path.write_text(
        json.dumps(
            {
                "id": "x",
                "article": "a",
                "questions": ["q"],
                "options": [["1", "2", "3", "4"]],
                "answers": ["E"],
            }
        )
    )
    with pytest.raises(race.RaceFormatError, match="answer 'E', expected A-D"):
        race.read_race_examples(str(tmp_path), "test", high_only=True)


def test_missing_level_folder(tmp_path):
    _write_passage(tmp_path, "{}")
    with pytest.raises(FileNotFoundError, match="middle"):
        race.read_race_examples(str(tmp_path), "test")


def test_unlabeled_passage(tmp_path, tokenizer):
    _write_passage(
        tmp_path,
        json.dumps(
            {"id": "u", "article": "text", "questions": ["q"], "options": [["a", "b", "c", "d"]]}
        ),
    )
    (example,) = race.read_race_examples(str(tmp_path), "test", high_only=True)
    assert example.label is None
    assert race.encode_race_example(example, tokenizer, 16)["label"] == 0


def test_choice_texts():
    assert race.race_choice_texts("My   _   is Paul.", "name") == "My   name   is Paul."
    assert race.race_choice_texts("_ and _ went.", ["Ann", "Bo"]) == [
        "Ann and Ann went.",
        "Bo and Bo went.",
    ]
    assert race.race_choice_texts("Why did he go?", "To eat.") == "Why did he go? To eat."
    assert race.race_choice_text("Why?", "Because") == "Why? Because"


def _choices(features, max_seq_length):
    """Split flattened features back into the 4 per-choice dicts."""
    return [
        {
            k: features[k][i * max_seq_length : (i + 1) * max_seq_length]
            for k in ("input_ids", "input_mask", "segment_ids")
        }
        for i in range(4)
    ]


def _segments(choice, tokenizer):
    """(article ids, qa ids) of one packed choice, checking the special tokens."""
    n = sum(choice["input_mask"])
    ids, seg = choice["input_ids"][:n], choice["segment_ids"][:n]
    assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
    first_b = seg.index(1)
    assert ids[first_b - 1] == tokenizer.sep_id
    assert set(choice["input_ids"][n:]) <= {tokenizer.pad_id}
    return ids[1 : first_b - 1], ids[first_b:-1]


def test_encode_real_example_lengths_and_layout(data_dir, tokenizer):
    example = race.read_race_examples(str(data_dir), "test")[5]  # high, long article
    max_seq_length = 128
    features = race.encode_race_example(example, tokenizer, max_seq_length)
    for key in ("input_ids", "input_mask", "segment_ids"):
        assert len(features[key]) == 4 * max_seq_length
    assert features["label"] == example.label == 2
    article_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(example.article))
    assert len(article_ids) > max_seq_length  # the article really has to be cut
    for choice, option in zip(_choices(features, max_seq_length), example.options):
        art, qa = _segments(choice, tokenizer)
        qa_text = race.race_choice_text(example.question, option)
        assert qa == tokenizer.convert_tokens_to_ids(tokenizer.tokenize(qa_text))
        assert art == article_ids[: max_seq_length - 3 - len(qa)]  # cut to fit exactly
        assert sum(choice["input_mask"]) == max_seq_length


def test_encode_keeps_last_qa_tokens(tokenizer):
    question = " ".join(f"word{i}" for i in range(200)) + " _ ?"
    example = race.RaceExample(
        "long", 0, "middle", "A short article.", question, ("alpha", "beta", "gamma", "delta"), 3
    )
    for max_qa_length in (128, 16):
        features = race.encode_race_example(example, tokenizer, 512, max_qa_length)
        assert len(features["input_ids"]) == 4 * 512
        short_article = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(example.article))
        for choice, option in zip(_choices(features, 512), example.options):
            art, qa = _segments(choice, tokenizer)
            full = tokenizer.convert_tokens_to_ids(
                tokenizer.tokenize(race.race_choice_text(question, option))
            )
            assert len(full) > 128
            assert qa == full[-max_qa_length:]  # the LAST tokens, with the option in them
            assert art == short_article  # short article is not cut


def test_encode_qa_longer_than_sequence(tokenizer):
    example = race.RaceExample(
        "x", 0, "high", "Article text here.", " ".join(["question"] * 50), ("a", "b", "c", "d"), 0
    )
    features = race.encode_race_example(example, tokenizer, 20, max_qa_length=128)
    for choice in _choices(features, 20):
        art, qa = _segments(choice, tokenizer)
        assert art == [] and len(qa) == 17 and sum(choice["input_mask"]) == 20
    with pytest.raises(ValueError, match="at least 4"):
        race.encode_race_example(example, tokenizer, 3)
