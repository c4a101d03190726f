"""How the other ALBERT tokenizers compare with Google's (albert_tf's `FullTokenizer` on
`preprocess_text(text, lower=True)`, the reference), string by string, on the repository's data
samples (tests/data/samples: every GLUE .tsv cell with a letter, SQuAD contexts and questions,
RACE files, the Wikipedia and pretraining text lines) and on the 40 strings of
tests/data/fixtures/tokenization.jsonl:

- `hub`: the TF Hub preprocessing SavedModel's `.tokenize` (tests/data/fixtures/tfhub/
  albert_tiny_preprocess, made by Model Garden's export_tfhub.py; tf-text in the graph);
- `tokenizer.json`: the Hugging Face export's tokenizer (albert_tf/formats/hf_tokenizer.py),
  run by the `tokenizers` library, and `tokenizer.json (comma pieces)`: the same on a copy of
  the model with six digit+"," pieces added (the fixture's 1,000 pieces have none; Google's
  30k-clean.model has many), which exercises Google's comma fix-up;
- `transformers AlbertTokenizer`: transformers' own ALBERT class loading the export (when
  transformers is installed; it keeps the vocabulary but swaps in its own normalizer).

    python bench/measure_tokenizers.py     # about a minute on 2 cores

Prints one line per tokenizer and text set (equal / total) and the first differing strings.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import tempfile

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the preprocessing model's ops)

from albert_tf.formats.hf_tokenizer import tokenizer_from_spm
from albert_tf.formats.huggingface import export_huggingface
from albert_tf.formats.tfhub import load_tfhub
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenization import FullTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "data", "fixtures")
SAMPLES = os.path.join(ROOT, "tests", "data", "samples")
SPM = os.path.join(FIXTURES, "spm.model")
COMMA_PIECES = ("▁1,", "000,", "▁2,", "0,", "▁10,", "5,")


def sample_texts() -> dict:
    """Text set name → unique strings."""
    sets = {"glue_tsv": [], "squad": [], "race": [], "wiki_and_pretraining_text": []}
    for path in sorted(glob.glob(os.path.join(SAMPLES, "*", "*.tsv"))):
        with open(path, encoding="utf-8-sig") as f:
            for line in f.read().splitlines():
                sets["glue_tsv"] += [c for c in line.split("\t") if any(ch.isalpha() for ch in c)]
    for path in sorted(glob.glob(os.path.join(SAMPLES, "squad", "*", "*.json"))):
        with open(path, encoding="utf-8") as f:
            for article in json.load(f)["data"]:
                for p in article["paragraphs"]:
                    sets["squad"] += [p["context"]] + [q["question"] for q in p["qas"]]
    for path in sorted(glob.glob(os.path.join(SAMPLES, "RACE", "*", "*", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            race = json.load(f)
        sets["race"] += [race["article"]] + race["questions"] + sum(race["options"], [])
    for path in sorted(glob.glob(os.path.join(SAMPLES, "wiki", "*", "*"))) + sorted(
        glob.glob(os.path.join(SAMPLES, "pretraining_text", "*.txt"))
    ):
        with open(path, encoding="utf-8") as f:
            sets["wiki_and_pretraining_text"] += [ln for ln in f.read().splitlines() if ln.strip()]
    with open(os.path.join(FIXTURES, "tokenization.jsonl"), encoding="utf-8") as f:
        sets["fixture_strings"] = [json.loads(line)["text"] for line in f]
    return {k: list(dict.fromkeys(v)) for k, v in sets.items()}


def comma_model(folder) -> str:
    """A copy of the fixture model with digit+"," pieces added (new ids at the end)."""
    from sentencepiece import sentencepiece_model_pb2

    with open(SPM, "rb") as f:
        proto = sentencepiece_model_pb2.ModelProto.FromString(f.read())
    for piece in COMMA_PIECES:
        added = proto.pieces.add()
        added.piece, added.score, added.type = piece, -2.0, 1
    path = os.path.join(folder, "comma.model")
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    return path


def google(spm_model_file):
    tok = FullTokenizer(spm_model_file=spm_model_file)
    return lambda texts: [
        tok.convert_tokens_to_ids(tok.tokenize(preprocess_text(t, lower=True))) for t in texts
    ]


def hub_tokenize():
    obj = tf.saved_model.load(os.path.join(FIXTURES, "tfhub", "albert_tiny_preprocess"))
    return lambda texts: obj.tokenize(tf.constant(texts)).to_list()


def json_tokenize(spm_model_file):
    tok = tokenizer_from_spm(spm_model_file)
    return lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]


def transformers_tokenize(folder):
    try:
        import transformers
    except ImportError:
        return None
    model, _ = load_tfhub(os.path.join(FIXTURES, "tfhub", "albert_tiny_model"))
    export_huggingface(model, folder, SPM)
    tok = transformers.AlbertTokenizer.from_pretrained(folder)
    return lambda texts: [tok(t, add_special_tokens=False)["input_ids"] for t in texts]


def main():
    sets = sample_texts()
    with tempfile.TemporaryDirectory() as scratch:
        comma = comma_model(scratch)
        candidates = {
            "hub": (hub_tokenize(), google(SPM)),
            "tokenizer.json": (json_tokenize(SPM), google(SPM)),
            "tokenizer.json (comma pieces)": (json_tokenize(comma), google(comma)),
            "transformers AlbertTokenizer": (
                transformers_tokenize(os.path.join(scratch, "hf")),
                google(SPM),
            ),
        }
        results = {}
        for name, (run, reference) in candidates.items():
            if run is None:
                continue
            for set_name, texts in sets.items():
                ours, theirs = reference(texts), run(texts)
                differing = [t for t, a, b in zip(texts, ours, theirs) if a != b]
                results[f"{name} / {set_name}"] = (len(texts) - len(differing), len(texts))
                print(f"{name} / {set_name}: {len(texts) - len(differing)} of {len(texts)} equal")
                for text in differing[:3]:
                    print(f"    differs: {text[:90]!r}")
    print(json.dumps({k: f"{a}/{b}" for k, (a, b) in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
