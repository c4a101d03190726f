"""How often the deployed tokenizers give other ids than Google's pipeline, on the repository's
real text samples (tests/data/samples: GLUE sentences, SQuAD questions and paragraphs, RACE,
Wikipedia) — the figures in docs/deployment.md.

Google's pipeline is `FullTokenizer.tokenize(preprocess_text(text, lower=True))` (the Python
path, digit+"," fix-up included). Compared with it, per text:

* the Task Library as it is (`task_library_inputs`: ASCII lowercase, the model's own
  normalizer), with the original SentencePiece model and with the preprocessing model
  (`spm_normalizer`) that export_litert puts in the metadata;
* BertQuestionAnswerer's context tokenization (split on " ", each word alone) on the SQuAD
  paragraphs;
* the string-input LiteRT tokenizer (`text_input.SentencePieceIds`: FastSentencepieceTokenize
  on the preprocessing model, then the comma fix-up in the graph);
* the WordPiece string-input tokenizer (`text_input.WordPieceIds`) on the Chinese WordPiece
  fixture's cases.

Each with the fixture's 1,000-piece model (no digit+"," pieces) and with a 3,000-piece model
trained here on the same texts (Google's recipe; it has such pieces, so the fix-up fires).

Prints, for each model and path, how many texts give other ids, and how many of those hold a
digit followed by "," or a non-ASCII character (~11 s on 2 cores).

Usage: python bench/bench_deploy_tokenization.py [--json out.json]
"""

import argparse
import collections
import csv
import json
import os
import pathlib
import re
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import sentencepiece as spm  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.deploy.spm_normalizer import preprocessing_model  # noqa: E402
from albert_tf.deploy.text_input import SentencePieceIds, WordPieceIds  # noqa: E402
from albert_tf.text.normalization import preprocess_text  # noqa: E402
from albert_tf.text.spm_train import USER_DEFINED_SYMBOLS, train_sentencepiece  # noqa: E402
from albert_tf.text.tokenization import FullTokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "deploy"))  # the Task Library's inputs: test support
import task_library_inputs as tl  # noqa: E402

SAMPLES = ROOT / "tests" / "data" / "samples"
FIXTURES = ROOT / "tests" / "data" / "fixtures"
TEXT_COLUMNS = {  # GLUE files: the columns holding text
    "sentence",
    "question",
    "sentence1",
    "sentence2",
    "#1 String",
    "#2 String",
    "question1",
    "question2",
    "Premise",
    "Hypothesis",
}


def sample_texts() -> tuple:
    """(sentences, squad paragraphs): unique texts of the samples, in a fixed order."""
    csv.field_size_limit(sys.maxsize)
    texts = []
    for path in sorted(SAMPLES.glob("*/*.tsv")):
        with open(path, encoding="utf-8-sig", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                texts += [v for k, v in row.items() if k in TEXT_COLUMNS and v]
    paragraphs = []
    for path in sorted(SAMPLES.glob("squad/*/*.json")):
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            for p in article["paragraphs"]:
                paragraphs.append(p["context"])
                texts += [q["question"] for q in p["qas"]]
    for path in sorted(SAMPLES.glob("RACE/*/*/*.txt")):
        record = json.loads(path.read_text(encoding="utf-8"))
        texts += [record["article"]] + record["questions"]
    for path in sorted(SAMPLES.glob("wiki/*/*")):
        texts += [ln for ln in path.read_text(encoding="utf-8").splitlines() if len(ln) > 40]
    return list(dict.fromkeys(texts)), list(dict.fromkeys(paragraphs))


def google_ids(tok, text):
    return tok.convert_tokens_to_ids(tok.tokenize(preprocess_text(text, lower=True)))


def compare_sentencepiece(model_file, texts, paragraphs) -> dict:
    """Texts whose ids differ from Google's, for each deployed SentencePiece tokenizer."""
    tok = FullTokenizer(spm_model_file=str(model_file))
    original = pathlib.Path(model_file).read_bytes()
    plain = spm.SentencePieceProcessor(model_proto=original)
    folded = spm.SentencePieceProcessor(model_proto=preprocessing_model(original))
    graph = SentencePieceIds(original)
    want = [google_ids(tok, t) for t in texts]
    differ = lambda got: [t for t, g, w in zip(texts, got, want) if g != w]
    qa_words = lambda sp, p: [i for w in p.split(" ") if w for i in tl.task_library_ids(sp, w)]
    result = {
        "texts": len(texts),
        "comma_pieces_in_model": sum(
            len(p) > 1 and p[-1] == "," and p[-2].isdigit()
            for p in (plain.id_to_piece(i) for i in range(plain.get_piece_size()))
        ),
        "task_library_original_model": differ([tl.task_library_ids(plain, t) for t in texts]),
        "task_library_preprocessing_model": differ([tl.task_library_ids(folded, t) for t in texts]),
        "string_input_litert": differ([graph(tf.constant([t])).numpy().tolist() for t in texts]),
        "paragraphs": len(paragraphs),
        "question_answerer_paragraphs": [
            p for p in paragraphs if qa_words(folded, p) != google_ids(tok, p)
        ],
    }
    return result


def compare_wordpiece() -> dict:
    """The WordPiece string-input tokenizer vs Google's FullTokenizer(vocab_file)."""
    vocab = FIXTURES / "albert_zh" / "vocab.txt"
    cases = [
        json.loads(line) for line in open(FIXTURES / "albert_zh" / "wordpiece_tokenization.jsonl")
    ]
    tok = FullTokenizer(vocab_file=str(vocab), do_lower_case=True)
    graph = WordPieceIds(vocab.read_bytes())
    texts = [c["text"] for c in cases]
    got = [graph(tf.constant([t])).numpy().tolist() for t in texts]
    want = [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts]
    return {
        "texts": len(texts),
        "string_input_litert": [t for t, g, w in zip(texts, got, want) if g != w],
    }


def trained_model(texts, folder) -> str:
    """A 3,000-piece model of the texts with Google's recipe, plus the 30 most common
    "<digits>," words as pieces: Google's 30k-clean.model has many ("▁1990,", ...), which is
    why its fix-up exists; sentencepiece 0.2 no longer learns them by itself."""
    corpus = pathlib.Path(folder) / "corpus.txt"
    corpus.write_text("\n".join(preprocess_text(t, lower=True) for t in texts) + "\n")
    words = collections.Counter(
        w for t in texts for w in preprocess_text(t, lower=True).split() if re.fullmatch(r"\d+,", w)
    )
    symbols = list(USER_DEFINED_SYMBOLS) + [w for w, _ in words.most_common(30)]
    prefix = str(pathlib.Path(folder) / "m3k")
    return train_sentencepiece(corpus, prefix, 3000, num_threads=1, user_defined_symbols=symbols)


def summary(value):
    """A count, or for a list of differing texts: how many, and how many of them hold a digit
    followed by "," (where Google's fix-up can act) or a non-ASCII character."""
    if not isinstance(value, list):
        return value
    comma = sum(bool(re.search(r"\d,", t)) for t in value)
    other = sum(any(ord(c) > 127 for c in t) for t in value)
    return f"{len(value)} (digit+',' {comma}, non-ASCII {other})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the full report (texts included) here")
    args = parser.parse_args()
    texts, paragraphs = sample_texts()
    report = {"fixture_1000": compare_sentencepiece(FIXTURES / "spm.model", texts, paragraphs)}
    with tempfile.TemporaryDirectory() as folder:
        report["trained_3000"] = compare_sentencepiece(
            trained_model(texts, folder), texts, paragraphs
        )
    report["wordpiece_fixture"] = compare_wordpiece()
    for name, entry in report.items():
        print(name, json.dumps({k: summary(v) for k, v in entry.items()}, ensure_ascii=False))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
