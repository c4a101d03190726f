"""Tokenising the builder's input: the tokenizer spec, the vocabulary tables that
instance making needs, and the on-disk token cache of each input file."""

from __future__ import annotations

import array
import dataclasses
import os
import struct
from typing import Iterator

from albert_tf.core import fileio
from albert_tf.pretraining.documents import iter_raw_documents
from albert_tf.pretraining.options import BuilderOptions
from albert_tf.text.normalization import preprocess_text

# Punctuation that may continue a SentencePiece word (Google's list: no apostrophe).
_SPM_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz" + '!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_SPM_PUNCT = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')


@dataclasses.dataclass(frozen=True)
class TokenizerSpec:
    """Picklable description of the tokenizer, so workers build their own."""

    spm_model_file: str | None = None
    vocab_file: str | None = None
    do_lower_case: bool = True


# --------------------------------------------------------------------------- tokenizer

_TOKENIZERS: dict = {}


def load_tokenizer(spec: TokenizerSpec):
    """Returns a (process-cached) albert_tf FullTokenizer for spec."""
    if spec not in _TOKENIZERS:
        # deferred: keeps TensorFlow off this module's import
        from albert_tf.text import tokenization

        if spec.spm_model_file is None and spec.vocab_file is None:
            raise ValueError("give spm_model_file or vocab_file")
        for path in (spec.spm_model_file, spec.vocab_file):
            if path is not None and not fileio.isfile(path):
                raise FileNotFoundError(f"tokenizer file not found: {path}")
        _TOKENIZERS[spec] = tokenization.FullTokenizer(
            vocab_file=spec.vocab_file,
            do_lower_case=spec.do_lower_case,
            spm_model_file=spec.spm_model_file,
        )
    return _TOKENIZERS[spec]


def is_start_piece_sp(piece: str) -> bool:
    """Google's SentencePiece word-start rule: '▁'/'<' prefix, a punctuation piece, or
    a character outside a-z and that punctuation (foreign text = one piece per word)."""
    if piece.startswith("\u2581") or piece.startswith("<") or piece in _SPM_PUNCT:
        return True
    return not all(c.lower() in _SPM_WORD_CHARS for c in piece)


def is_start_piece_wordpiece(piece: str) -> bool:
    """WordPiece word-start rule: continuation pieces start with '##'."""
    return not piece.startswith("##")


@dataclasses.dataclass(frozen=True)
class VocabTables:
    """What instance making needs from the vocabulary, as plain picklable lists."""

    size: int
    cls_id: int
    sep_id: int
    mask_id: int
    is_start: tuple  # is_start[id] in {0, 1}

    @classmethod
    def from_tokenizer(cls, tokenizer, spm: bool) -> VocabTables:
        vocab = tokenizer.vocab
        rule = is_start_piece_sp if spm else is_start_piece_wordpiece
        inv = {i: p for p, i in vocab.items()}
        size = max(inv) + 1
        for name in ("[CLS]", "[SEP]", "[MASK]"):
            if name not in vocab:
                raise ValueError(f"the vocabulary has no {name} piece")
        return cls(
            size=size,
            cls_id=vocab["[CLS]"],
            sep_id=vocab["[SEP]"],
            mask_id=vocab["[MASK]"],
            is_start=tuple(int(rule(inv.get(i, ""))) for i in range(size)),
        )


def tokenize_document(raw: list[str], tokenizer, spec: TokenizerSpec) -> list[list[int]]:
    """Preprocesses (SPM: preprocess_text as Google does) and tokenises each sentence."""
    out = []
    for line in raw:
        if spec.spm_model_file:
            line = preprocess_text(line, lower=spec.do_lower_case)
        else:
            line = line.strip()
        if not line:
            continue
        pieces = tokenizer.tokenize(line)
        if pieces:
            out.append(tokenizer.convert_tokens_to_ids(pieces))
    return out


class TokenCache:
    """A tokenised input file on the local disk (the builder's scratch folder, never a user
    path): ids, sentence lengths and a document index.

    Files in `directory`: ids.bin (uint16 or uint32 piece ids), sents.bin (uint32
    sentence lengths), docs.bin (int64 pairs: sentences and tokens before each document,
    plus a final pair). Reading keeps only the current documents in memory.
    """

    def __init__(self, directory: str, id_typecode: str):
        self.directory = directory
        self.id_typecode = id_typecode
        self._itemsize = array.array(id_typecode).itemsize
        self.num_documents = os.path.getsize(self._path("docs.bin")) // 16 - 1
        self._random_files = None

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @staticmethod
    def write(
        path: str, directory: str, spec: TokenizerSpec, options: BuilderOptions, vocab_size: int
    ) -> dict:
        """Tokenises `path` once into `directory`; returns corpus statistics."""
        tokenizer = load_tokenizer(spec)
        code = "H" if vocab_size <= 1 << 16 else "I"
        os.makedirs(directory, exist_ok=True)
        n_docs = n_sents = n_tokens = 0
        with (
            open(os.path.join(directory, "ids.bin"), "wb") as fi,
            open(os.path.join(directory, "sents.bin"), "wb") as fs,
            open(os.path.join(directory, "docs.bin"), "wb") as fd,
        ):
            fd.write(struct.pack("<qq", 0, 0))
            for raw in iter_raw_documents(path, options):
                doc = tokenize_document(raw, tokenizer, spec)
                if not doc:
                    continue
                lengths = array.array("I", map(len, doc))
                fs.write(lengths.tobytes())
                fi.write(array.array(code, [t for s in doc for t in s]).tobytes())
                n_docs += 1
                n_sents += len(doc)
                n_tokens += sum(lengths)
                fd.write(struct.pack("<qq", n_sents, n_tokens))
        if n_docs == 0:
            raise ValueError(f"input file has no text to build examples from: {path}")
        return {"documents": n_docs, "sentences": n_sents, "tokens": n_tokens, "id_typecode": code}

    def _read_doc(self, fs, fi, n_sents: int, n_tokens: int) -> list[list[int]]:
        """Reads one document at the current positions of the sentence and id files."""
        lengths = array.array("I")
        lengths.frombytes(fs.read(4 * n_sents))
        ids = array.array(self.id_typecode)
        ids.frombytes(fi.read(self._itemsize * n_tokens))
        flat = ids.tolist()
        doc, start = [], 0
        for n in lengths:
            doc.append(flat[start : start + n])
            start += n
        return doc

    def iter_documents(self) -> Iterator[list[list[int]]]:
        """Streams the documents in file order (each a list of sentences of ids)."""
        with (
            open(self._path("docs.bin"), "rb") as fd,
            open(self._path("sents.bin"), "rb") as fs,
            open(self._path("ids.bin"), "rb") as fi,
        ):
            s0, t0 = struct.unpack("<qq", fd.read(16))
            for _ in range(self.num_documents):
                s1, t1 = struct.unpack("<qq", fd.read(16))
                yield self._read_doc(fs, fi, s1 - s0, t1 - t0)
                s0, t0 = s1, t1

    def document(self, index: int) -> list[list[int]]:
        """Random access to document `index` (for random next / single-segment draws)."""
        if self._random_files is None:
            self._random_files = tuple(
                open(self._path(n), "rb") for n in ("docs.bin", "sents.bin", "ids.bin")
            )
        fd, fs, fi = self._random_files
        fd.seek(16 * index)
        s0, t0, s1, t1 = struct.unpack("<qqqq", fd.read(32))
        fs.seek(4 * s0)
        fi.seek(self._itemsize * t0)
        return self._read_doc(fs, fi, s1 - s0, t1 - t0)

    def close(self):
        """Closes the random-access handles."""
        if self._random_files:
            for f in self._random_files:
                f.close()
        self._random_files = None
