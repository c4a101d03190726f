"""`tokenizer.json` for the Hugging Face export: ALBERT's tokenizer as a `tokenizers` pipeline,
built here from the SentencePiece model's own data, so transformers' fast `AlbertTokenizerFast`
loads without sentencepiece or protobuf (which it needs to convert `spiece.model` itself).

The pipeline is albert_tf's tokenizer (`preprocess_text(lower=True)` then SentencePiece):
1. Google's `preprocess_text`: strip and collapse whitespace (the codepoints `str.split()`
   splits on), NFKD, drop the characters `unicodedata.combining` marks, lowercase;
2. SentencePiece's normalizer: its precompiled character map (`nmt_nfkc`), then
   `remove_extra_whitespaces` and `add_dummy_prefix` as the model's normalizer spec says, and
   every space written as "▁";
3. a Unigram model with the pieces and scores of the SentencePiece model; user-defined
   symbols are matched first as in SentencePiece; pieces that end in a digit and ","
   get a score far below any other, since Google's tokenizer never outputs them (it re-encodes
   such a piece as its digits and ",");
4. [CLS] A [SEP] (B [SEP]) with type ids 0 / 1.
The control symbols ([CLS], [SEP], [MASK], <pad>) and <unk> are special tokens. Where the result
can differ from albert_tf's ids (measured in docs/interop.md): Google's comma fix-up re-encodes a
piece such as "000," to "▁000" ","  (the re-encoding adds a "▁"), which a Unigram model cannot
do, and `tokenizers`' lowercasing and NFKD follow its own Unicode tables.
"""

from __future__ import annotations

import json

from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, processors
from tokenizers.models import Unigram

from albert_tf.text import codepoints
from albert_tf.text.spm_encode import SPIECE_UNDERLINE
from albert_tf.text.vocab_files import read_spm_model

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # SentencePiece's types
COMMA_PENALTY = 100.0  # below every score: a digit+"," piece is chosen only when nothing else fits


def _needs_comma_fix(piece: str) -> bool:
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _preprocess_text():
    """Google's preprocess_text(lower=True) as `tokenizers` normalizers."""
    space = codepoints.ranges_to_class(codepoints.whitespace_codepoints())
    combining = codepoints.ranges_to_class(codepoints.combining_codepoints())
    return [
        normalizers.Replace(Regex(f"^{space}+|{space}+$"), ""),
        normalizers.Replace(Regex(f"{space}+"), " "),
        normalizers.NFKD(),
        normalizers.Replace(Regex(combining), ""),
        normalizers.Lowercase(),
    ]


def _sentencepiece_normalizer(spec):
    """The SentencePiece model's normalization (its charsmap, whitespace, dummy prefix)."""
    steps = []
    if spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(spec.precompiled_charsmap))
    if spec.remove_extra_whitespaces:
        steps += [
            normalizers.Replace(Regex("^ +| +$"), ""),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    if spec.add_dummy_prefix:
        steps.append(normalizers.Prepend(SPIECE_UNDERLINE))
    steps.append(normalizers.Replace(" ", SPIECE_UNDERLINE))
    return steps


def tokenizer_from_spm(spm_model_file) -> Tokenizer:
    """ALBERT's tokenizer as a `tokenizers.Tokenizer` built from a SentencePiece model (a file
    or a TF Hub folder holding one): see the module docstring."""
    proto = sentencepiece_model_pb2.ModelProto.FromString(read_spm_model(spm_model_file))
    if proto.trainer_spec.model_type != 1:  # 1: UNIGRAM
        raise ValueError(f"{spm_model_file}: not a Unigram SentencePiece model")
    vocab, unk_id, specials = [], None, []
    lowest = min((p.score for p in proto.pieces if p.type == NORMAL), default=0.0)
    for i, piece in enumerate(proto.pieces):
        score = piece.score
        if piece.type == NORMAL and _needs_comma_fix(piece.piece):
            score = lowest - COMMA_PENALTY
        vocab.append((piece.piece, score))
        if piece.type == UNKNOWN:
            unk_id = i
        if piece.type in (UNKNOWN, CONTROL):
            specials.append(piece.piece)
    tok = Tokenizer(Unigram(vocab, unk_id, False))
    tok.normalizer = normalizers.Sequence(
        _preprocess_text() + _sentencepiece_normalizer(proto.normalizer_spec)
    )
    tok.decoder = decoders.Metaspace(replacement=SPIECE_UNDERLINE, prepend_scheme="always")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    pieces = {p: i for i, (p, _) in enumerate(vocab)}
    if "[CLS]" in pieces and "[SEP]" in pieces:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0",
            pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[("[CLS]", pieces["[CLS]"]), ("[SEP]", pieces["[SEP]"])],
        )
    return tok


def tokenizer_json(spm_model_file) -> str:
    """The `tokenizer.json` text of `tokenizer_from_spm(spm_model_file)` (indented JSON)."""
    return json.dumps(json.loads(tokenizer_from_spm(spm_model_file).to_str()), indent=2) + "\n"
