"""Pretraining data builder: raw text -> ALBERT masked-LM + sentence-order TFRecords.

Follows the recipe of Google's ``create_pretraining_data.py`` (SOP pairs, whole-word
n-gram masking, the same ``tf.train.Example`` features) and fixes its traps:

* one seeded ``random.Random`` per (input file, dupe round), derived from ``random_seed``,
  so a seed gives byte-identical output whatever the number of worker processes;
* documents are streamed: each input file is tokenised once into a compact on-disk
  cache, and every dupe round streams that cache with a bounded shuffle buffer of
  instances (Google held corpus x dupe_factor instances in RAM and shuffled globally);
* (file, round) jobs run in parallel processes (``num_workers``);
* every output is written under a temporary name and renamed only when complete.

TensorFlow is not imported here: records are encoded as protobuf bytes directly and
framed as TFRecords with a numpy CRC32C, so worker processes stay small and fast.
See docs/pretraining_data.md.
"""
from __future__ import annotations

import array
import dataclasses
import glob
import hashlib
import multiprocessing
import os
import random
import re
import shutil
import struct
import tempfile
import time
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from itertools import compress
from typing import Callable, Iterator, Sequence

import numpy as np

FEATURE_NAMES = (
    "input_ids", "input_mask", "segment_ids", "token_boundary",
    "masked_lm_positions", "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")

# Punctuation that may continue a SentencePiece word (Google's list: no apostrophe).
_SPM_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz" + '!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_SPM_PUNCT = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')


# --------------------------------------------------------------------------- options


@dataclasses.dataclass(frozen=True)
class BuilderOptions:
    """Knobs of the builder; defaults are Google's flags (plus ours at the end)."""
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    random_seed: int = 12345
    do_whole_word_mask: bool = True
    favor_shorter_ngram: bool = True
    random_next_sentence: bool = False
    ngram: int = 3
    # ours
    shuffle_buffer_size: int = 2048      # instances held for the bounded shuffle
    input_format: str = "auto"           # "auto" | "lines" | "wiki"
    keep_wiki_titles: bool = False       # keep the title line after <doc ...>
    split_wiki_sentences: bool = True    # WikiExtractor lines are paragraphs

    def __post_init__(self):
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {self.max_seq_length}")
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be >= 1, got {self.dupe_factor}")
        if self.input_format not in ("auto", "lines", "wiki"):
            raise ValueError(f"input_format must be auto, lines or wiki: {self.input_format!r}")


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
        from albert_tf.text import tokenization
        if spec.spm_model_file is None and spec.vocab_file is None:
            raise ValueError("give spm_model_file or vocab_file")
        for path in (spec.spm_model_file, spec.vocab_file):
            if path is not None and not os.path.isfile(path):
                raise FileNotFoundError(f"tokenizer file not found: {path}")
        _TOKENIZERS[spec] = tokenization.FullTokenizer(
            vocab_file=spec.vocab_file, do_lower_case=spec.do_lower_case,
            spm_model_file=spec.spm_model_file)
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
    def from_tokenizer(cls, tokenizer, spm: bool) -> "VocabTables":
        vocab = tokenizer.vocab
        rule = is_start_piece_sp if spm else is_start_piece_wordpiece
        inv = {i: p for p, i in vocab.items()}
        size = max(inv) + 1
        for name in ("[CLS]", "[SEP]", "[MASK]"):
            if name not in vocab:
                raise ValueError(f"the vocabulary has no {name} piece")
        return cls(size=size, cls_id=vocab["[CLS]"], sep_id=vocab["[SEP]"],
                   mask_id=vocab["[MASK]"],
                   is_start=tuple(int(rule(inv.get(i, ""))) for i in range(size)))


# --------------------------------------------------------------------------- input text

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")


def split_sentences(paragraph: str) -> list[str]:
    """Splits a paragraph at '.', '!' or '?' followed by space and a capital/digit."""
    return [s for s in _SENTENCE_SPLIT.split(paragraph) if s.strip()]


def _detect_format(path: str) -> str:
    """'wiki' if the first non-blank line opens a WikiExtractor <doc>, else 'lines'."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                return "wiki" if line.lstrip().startswith("<doc") else "lines"
    return "lines"


def iter_raw_documents(path: str, options: BuilderOptions) -> Iterator[list[str]]:
    """Yields documents of `path` as lists of raw sentence strings, in file order.

    "lines": one sentence per line, blank lines between documents (Google's format).
    "wiki": WikiExtractor output; <doc ...> / </doc> lines delimit documents, the title
    line after <doc> is dropped (unless keep_wiki_titles), blank lines are paragraph
    breaks, and paragraphs are split into sentences (unless split_wiki_sentences=False).
    """
    fmt = options.input_format
    if fmt == "auto":
        fmt = _detect_format(path)
    reader = _iter_wiki if fmt == "wiki" else _iter_lines
    with open(path, encoding="utf-8") as f:
        try:
            yield from reader(f, options)
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not valid UTF-8 text ({e})") from None


def _iter_lines(f, options: BuilderOptions) -> Iterator[list[str]]:
    """Blank-line separated documents, one sentence per line."""
    doc: list[str] = []
    for line in f:
        if line.strip():
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def _iter_wiki(f, options: BuilderOptions) -> Iterator[list[str]]:
    """WikiExtractor <doc> documents (see iter_raw_documents)."""
    doc: list[str] = []
    expect_title = False
    for line in f:
        stripped = line.strip()
        if stripped.startswith("<doc"):
            if doc:
                yield doc
            doc, expect_title = [], True
        elif stripped.startswith("</doc>"):
            if doc:
                yield doc
            doc, expect_title = [], False
        elif not stripped:
            continue
        elif expect_title:
            expect_title = False
            if options.keep_wiki_titles:
                doc.append(stripped)
        elif options.split_wiki_sentences:
            doc.extend(split_sentences(stripped))
        else:
            doc.append(stripped)
    if doc:
        yield doc


def _tokenize_document(raw: list[str], tokenizer, spec: TokenizerSpec) -> list[list[int]]:
    """Preprocesses (SPM: preprocess_text as Google does) and tokenises each sentence."""
    out = []
    if spec.spm_model_file:
        from albert_tf.text.tokenization import preprocess_text
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


# --------------------------------------------------------------------------- token cache


class TokenCache:
    """A tokenised input file on disk: ids, sentence lengths and a document index.

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
    def write(path: str, directory: str, spec: TokenizerSpec, options: BuilderOptions,
              vocab_size: int) -> dict:
        """Tokenises `path` once into `directory`; returns corpus statistics."""
        tokenizer = load_tokenizer(spec)
        code = "H" if vocab_size <= 1 << 16 else "I"
        os.makedirs(directory, exist_ok=True)
        n_docs = n_sents = n_tokens = 0
        with open(os.path.join(directory, "ids.bin"), "wb") as fi, \
                open(os.path.join(directory, "sents.bin"), "wb") as fs, \
                open(os.path.join(directory, "docs.bin"), "wb") as fd:
            fd.write(struct.pack("<qq", 0, 0))
            for raw in iter_raw_documents(path, options):
                doc = _tokenize_document(raw, tokenizer, spec)
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
        return {"documents": n_docs, "sentences": n_sents, "tokens": n_tokens,
                "id_typecode": code}

    def _read_doc(self, fs, fi, n_sents: int, n_tokens: int) -> list[list[int]]:
        """Reads one document at the current positions of the sentence and id files."""
        lengths = array.array("I")
        lengths.frombytes(fs.read(4 * n_sents))
        ids = array.array(self.id_typecode)
        ids.frombytes(fi.read(self._itemsize * n_tokens))
        flat = ids.tolist()
        doc, start = [], 0
        for n in lengths:
            doc.append(flat[start:start + n])
            start += n
        return doc

    def iter_documents(self) -> Iterator[list[list[int]]]:
        """Streams the documents in file order (each a list of sentences of ids)."""
        with open(self._path("docs.bin"), "rb") as fd, \
                open(self._path("sents.bin"), "rb") as fs, \
                open(self._path("ids.bin"), "rb") as fi:
            s0, t0 = struct.unpack("<qq", fd.read(16))
            for _ in range(self.num_documents):
                s1, t1 = struct.unpack("<qq", fd.read(16))
                yield self._read_doc(fs, fi, s1 - s0, t1 - t0)
                s0, t0 = s1, t1

    def document(self, index: int) -> list[list[int]]:
        """Random access to document `index` (for random next / single-segment draws)."""
        if self._random_files is None:
            self._random_files = tuple(open(self._path(n), "rb")
                                       for n in ("docs.bin", "sents.bin", "ids.bin"))
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


# --------------------------------------------------------------------------- instances


@dataclasses.dataclass(slots=True)
class TrainingInstance:
    """One MLM + SOP example before padding and serialisation.

    input_ids are after masking; masked_lm_ids hold the original pieces. `decisions`
    (0 [MASK], 1 kept, 2 random piece) follow masked_lm_positions; `spans` records each
    masked n-gram as (start, end, drawn_n, used_n, n_options); `draws` every n drawn
    where all 1..ngram were possible, masked or skipped (the sampling distribution).
    """
    input_ids: list
    len_a: int
    len_b: int
    token_boundary: list
    masked_lm_positions: list
    masked_lm_ids: list
    next_sentence_label: int
    random_document: bool
    decisions: list
    spans: list
    draws: list

    @property
    def segment_ids(self) -> list:
        """0 for [CLS] A [SEP], 1 for B [SEP]."""
        return [0] * (self.len_a + 2) + [1] * (self.len_b + 1)

    @property
    def original_ids(self) -> list:
        """input_ids with the masked positions restored."""
        ids = list(self.input_ids)
        for p, t in zip(self.masked_lm_positions, self.masked_lm_ids):
            ids[p] = t
        return ids


def round_seed(random_seed: int, file_index: int, round_index: int) -> int:
    """The seed of the RNG for one (input file, dupe round) job."""
    digest = hashlib.sha256(f"{random_seed}/{file_index}/{round_index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _ngram_cdfs(ngram: int, favor_shorter: bool) -> list:
    """cdfs[k] = cumulative p(n) for n = 1..k, p ∝ 1/n (reversed unless favor_shorter)."""
    cdfs = [None]
    for k in range(1, ngram + 1):
        p = [1.0 / n for n in range(1, ngram + 1)]
        if not favor_shorter:
            p = p[::-1]
        p = p[:k]
        total, acc, cdf = sum(p), 0.0, []
        for v in p:
            acc += v / total
            cdf.append(acc)
        cdf[-1] = 1.0
        cdfs.append(cdf)
    return cdfs


class InstanceMaker:
    """Makes SOP pairs and masks them, for one (file, round) job with its own RNG."""

    def __init__(self, options: BuilderOptions, vocab: VocabTables, rng: random.Random):
        self.o = options
        self.v = vocab
        self.rng = rng
        self.cdfs = _ngram_cdfs(options.ngram, options.favor_shorter_ngram)
        from albert_tf.text.packing import truncate_seq_pair
        self._truncate = truncate_seq_pair

    # ----- pairs

    def from_document(self, doc: list, doc_index: int, cache: TokenCache) -> list:
        """All instances of one document (Google's chunking, SOP swap, random next)."""
        o, rng = self.o, self.rng
        max_num_tokens = o.max_seq_length - 3
        target = max_num_tokens
        if rng.random() < o.short_seq_prob:
            target = rng.randint(2, max_num_tokens)
        instances, chunk, length, i = [], [], 0, 0
        while i < len(doc):
            chunk.append(doc[i])
            length += len(doc[i])
            if i == len(doc) - 1 or length >= target:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = [t for s in chunk[:a_end] for t in s]
                random_doc = False
                if len(chunk) == 1 or (o.random_next_sentence and rng.random() < 0.5):
                    random_doc, label = True, 1
                    tokens_b = self._random_b(target - len(tokens_a), doc_index, cache)
                    i -= len(chunk) - a_end  # put the unused segments back
                elif not o.random_next_sentence and rng.random() < 0.5:
                    label = 1
                    tokens_b = tokens_a
                    tokens_a = [t for s in chunk[a_end:] for t in s]
                else:
                    label = 0
                    tokens_b = [t for s in chunk[a_end:] for t in s]
                truncated = self._truncate(tokens_a, tokens_b, max_num_tokens, rng=rng)
                if truncated is not None:  # a version that returns new lists
                    tokens_a, tokens_b = truncated
                if tokens_a and tokens_b:
                    instances.append(self.make_instance(tokens_a, tokens_b, label, random_doc))
                chunk, length = [], 0
            i += 1
        return instances

    def _random_b(self, target_b: int, doc_index: int, cache: TokenCache) -> list:
        """Segment B from a random other document of the file, from a random sentence."""
        rng, n_docs = self.rng, cache.num_documents
        for _ in range(10):
            k = rng.randint(0, n_docs - 1)
            if k != doc_index:
                break
        other = cache.document(k)
        tokens_b: list = []
        for sent in other[rng.randint(0, len(other) - 1):]:
            tokens_b.extend(sent)
            if len(tokens_b) >= target_b:
                break
        return tokens_b

    def make_instance(self, tokens_a: list, tokens_b: list, label: int,
                      random_doc: bool = False) -> TrainingInstance:
        """[CLS] A [SEP] B [SEP], masked."""
        v = self.v
        ids = [v.cls_id, *tokens_a, v.sep_id, *tokens_b, v.sep_id]
        la, lb = len(tokens_a), len(tokens_b)
        is_start = v.is_start
        boundary = [is_start[t] for t in ids]
        boundary[0] = boundary[la + 1] = boundary[-1] = 1
        inst = TrainingInstance(ids, la, lb, boundary, [], [], label, random_doc, [], [], [])
        self._mask(inst)
        return inst

    # ----- masking

    def _units(self, inst: TrainingInstance):
        """Whole-word units per segment: parallel lists start, end, segment_end_unit.

        A unit starts at each word-start piece (every piece without whole-word masking)
        and at the first piece of A and of B: a word never continues across [SEP].
        """
        la, lb, boundary = inst.len_a, inst.len_b, inst.token_boundary
        wwm = self.o.do_whole_word_mask
        a_starts = [1, *compress(range(2, la + 1), boundary[2:la + 1])] if wwm \
            else list(range(1, la + 1))
        b_lo = la + 2
        b_starts = [b_lo, *compress(range(b_lo + 1, b_lo + lb), boundary[b_lo + 1:b_lo + lb])] \
            if wwm else list(range(b_lo, b_lo + lb))
        starts = a_starts + b_starts
        ends = a_starts[1:] + [la + 1] + b_starts[1:] + [b_lo + lb]
        na = len(a_starts)
        limits = [na] * na + [len(starts)] * len(b_starts)
        return starts, ends, limits

    def _mask(self, inst: TrainingInstance):
        """Whole-word n-gram masking with Google's budget, backoff and 80/10/10 rule."""
        o, v, rng = self.o, self.v, self.rng
        ids = inst.input_ids
        if o.masked_lm_prob <= 0:
            return
        budget = min(o.max_predictions_per_seq, max(1, round(len(ids) * o.masked_lm_prob)))
        starts, ends, limits = self._units(inst)
        m = len(starts)
        order = list(range(m))
        covered = bytearray(len(ids))
        picked = []  # (position, original id, decision)
        masked = 0
        random_, randrange = rng.random, rng.randrange
        draws, spans, cdfs, ngram = inst.draws, inst.spans, self.cdfs, o.ngram
        mask_id, vocab_size = v.mask_id, v.size
        for j in range(m):
            if masked >= budget:
                break
            k = j + int(random_() * (m - j))  # lazy Fisher-Yates: a uniform order
            order[j], order[k] = order[k], order[j]
            u = order[j]
            n_options = min(ngram, limits[u] - u)
            # n in 1..n_options with p ∝ 1/n (or reversed), renormalised to the options
            r, cdf, n = random_(), cdfs[n_options], 1
            while n < n_options and r >= cdf[n - 1]:
                n += 1
            drawn = n
            if n_options == ngram:
                draws.append(n)
            start = starts[u]
            while n > 1 and masked + ends[u + n - 1] - start > budget:
                n -= 1  # back off to a shorter n-gram that fits the budget
            end = ends[u + n - 1]
            if masked + end - start > budget or 1 in covered[start:end]:
                continue
            spans.append((start, end, drawn, n, n_options))
            covered[start:end] = b"\x01" * (end - start)
            for p in range(start, end):
                if random_() < 0.8:
                    picked.append((p, ids[p], 0))
                    ids[p] = mask_id
                elif random_() < 0.5:
                    picked.append((p, ids[p], 1))
                else:
                    picked.append((p, ids[p], 2))
                    ids[p] = randrange(vocab_size)
            masked += end - start
        picked.sort()
        inst.masked_lm_positions = [p for p, _, _ in picked]
        inst.masked_lm_ids = [t for _, t, _ in picked]
        inst.decisions = [d for _, _, d in picked]


def iter_round_instances(cache: TokenCache, options: BuilderOptions, vocab: VocabTables,
                         rng: random.Random) -> Iterator[TrainingInstance]:
    """Streams the instances of one dupe round over a tokenised file, in document order."""
    maker = InstanceMaker(options, vocab, rng)
    for index, doc in enumerate(cache.iter_documents()):
        yield from maker.from_document(doc, index, cache)


# --------------------------------------------------------------------------- serialisation

_VARINT_CACHE: dict = {}


def _varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint_table(size: int) -> list:
    """Varint bytes of 0..size-1, cached."""
    table = _VARINT_CACHE.get(size)
    if table is None:
        table = _VARINT_CACHE[size] = [_varint(i) for i in range(size)]
    return table


def _ld(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return tag + _varint(len(payload)) + payload


class ExampleEncoder:
    """Encodes TrainingInstances as tf.train.Example bytes in Google's feature layout.

    Builds the protobuf wire format directly (Example.features.feature map entries,
    Int64List/FloatList packed), which parses exactly like tf.train.Example output.
    Each map entry is a prefix that depends only on the feature and the payload
    length (cached) followed by the packed values.
    """

    def __init__(self, max_seq_length: int, max_predictions_per_seq: int, vocab_size: int):
        self.L = max_seq_length
        self.P = max_predictions_per_seq
        self.table = _varint_table(max(vocab_size, max_seq_length, 2))
        self._prefixes: dict = {}

    def _prefix(self, name: str, size: int) -> bytes:
        """Map-entry bytes before a packed payload of `size` bytes."""
        key = (name, size)
        prefix = self._prefixes.get(key)
        if prefix is None:
            kind = b"\x12" if name == "masked_lm_weights" else b"\x1a"  # float / int64 list
            values = b"\x0a" + _varint(size)                  # packed `value` field
            feature = kind + _varint(len(values) + size)
            entry = (_ld(b"\x0a", name.encode()) + b"\x12"
                     + _varint(len(feature) + len(values) + size) + feature + values)
            prefix = b"\x0a" + _varint(len(entry) + size) + entry
            self._prefixes[key] = prefix
        return prefix

    def _field(self, name: str, packed: bytes) -> bytes:
        return self._prefix(name, len(packed)) + packed

    def encode(self, inst: TrainingInstance) -> bytes:
        """Serialised tf.train.Example of one instance, zero-padded to L and P."""
        L, P, table, field = self.L, self.P, self.table, self._field
        n = len(inst.input_ids)
        k = len(inst.masked_lm_positions)
        if n > L or k > P:
            raise ValueError(f"instance of {n} tokens / {k} predictions exceeds {L} / {P}")
        pad, ppad = b"\x00" * (L - n), b"\x00" * (P - k)
        features = b"".join((
            field("input_ids", b"".join([table[t] for t in inst.input_ids]) + pad),
            field("input_mask", b"\x01" * n + pad),
            field("segment_ids", b"\x00" * (inst.len_a + 2) + b"\x01" * (inst.len_b + 1) + pad),
            field("token_boundary", bytes(inst.token_boundary) + pad),
            field("masked_lm_positions",
                  b"".join([table[p] for p in inst.masked_lm_positions]) + ppad),
            field("masked_lm_ids", b"".join([table[t] for t in inst.masked_lm_ids]) + ppad),
            field("masked_lm_weights", _ONE_F32 * k + _ZERO_F32 * (P - k)),
            field("next_sentence_labels", table[inst.next_sentence_label]),
        ))
        return b"\x0a" + _varint(len(features)) + features


_ONE_F32 = struct.pack("<f", 1.0)
_ZERO_F32 = struct.pack("<f", 0.0)


# --------------------------------------------------------------------------- TFRecord framing


def _crc32c_table() -> np.ndarray:
    """Byte table of the reflected Castagnoli CRC (polynomial 0x82F63B78)."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1)
    return table.astype(np.uint32)


_CRC_TABLE = _crc32c_table()


def crc32c_many(records: Sequence[bytes]) -> list:
    """CRC32C of each bytes object, computed column-wise over the batch with numpy."""
    if not records:
        return []
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    order = np.argsort(-lengths, kind="stable")
    width = int(lengths[order[0]])
    crc = np.full(len(records), 0xFFFFFFFF, dtype=np.uint32)
    if width:
        rows = b"".join(records[i].ljust(width, b"\x00") for i in order)
        cols = np.frombuffer(rows, dtype=np.uint8).reshape(len(records), width).T.copy()
        active = len(records) - np.searchsorted(lengths[order][::-1], np.arange(width),
                                                side="right")
        table, c = _CRC_TABLE, crc
        for j in range(width):
            a = int(active[j])
            head = c[:a]
            head[:] = table[(head ^ cols[j, :a]) & 0xFF] ^ (head >> 8)
        crc = c
    out = np.empty_like(crc)
    out[order] = crc ^ np.uint32(0xFFFFFFFF)
    return out.tolist()


def _mask_crc(crc: int) -> int:
    """TFRecord's masked CRC."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


_HEADER_CACHE: dict = {}


def _record_header(length: int) -> bytes:
    """The 12-byte TFRecord header (length and its masked CRC), cached by length."""
    header = _HEADER_CACHE.get(length)
    if header is None:
        raw = struct.pack("<Q", length)
        header = raw + struct.pack("<I", _mask_crc(crc32c_many([raw])[0]))
        _HEADER_CACHE[length] = header
    return header


def frame_records(records: Sequence[bytes]) -> bytes:
    """TFRecord framing of a batch of serialised records."""
    crcs = crc32c_many(records)
    parts = []
    for data, crc in zip(records, crcs):
        parts.append(_record_header(len(data)))
        parts.append(data)
        parts.append(struct.pack("<I", _mask_crc(crc)))
    return b"".join(parts)


def iter_framed_records(f) -> Iterator[bytes]:
    """Yields whole framed records (header + data + CRC) from a TFRecord file object."""
    while True:
        header = f.read(12)
        if not header:
            return
        if len(header) < 12:
            raise ValueError("truncated TFRecord header")
        (length,) = struct.unpack("<Q", header[:8])
        body = f.read(length + 4)
        if len(body) < length + 4:
            raise ValueError("truncated TFRecord body")
        yield header + body


# --------------------------------------------------------------------------- jobs


class _Stats:
    """Counters gathered while instances are made."""

    def __init__(self):
        self.c = Counter()
        self.spans: list = []
        self.draws: list = []
        self.decisions: list = []

    def add(self, inst: TrainingInstance):
        c = self.c
        c["instances"] += 1
        c["tokens"] += len(inst.input_ids)
        c["masked"] += len(inst.masked_lm_positions)
        c["label_1"] += inst.next_sentence_label
        c["random_document"] += inst.random_document
        self.decisions.extend(inst.decisions)
        self.draws.extend(inst.draws)
        self.spans.extend([s[3] for s in inst.spans])
        if len(self.decisions) > 100_000:
            self.flush()

    def flush(self) -> Counter:
        """Folds the buffered per-piece lists into the counters."""
        c = self.c
        for name, values in (("decision", self.decisions), ("drawn", self.draws),
                             ("span", self.spans)):
            for value, count in Counter(values).items():
                c[(name, value)] += count
            values.clear()
        return c


def _tokenize_job(args) -> dict:
    """Worker: tokenise one input file into its cache directory."""
    path, directory, spec, options, vocab_size = args
    info = TokenCache.write(path, directory, spec, options, vocab_size)
    info["directory"] = directory
    return info


def _round_job(args) -> tuple:
    """Worker: one dupe round over one file -> a framed part file; returns its counters."""
    (cache_dir, id_code, file_index, round_index, options, vocab, part_path) = args
    t0 = time.perf_counter()
    seed = round_seed(options.random_seed, file_index, round_index)
    rng = random.Random(seed)
    # the shuffle has its own stream, so the instances do not depend on the buffer size
    shuffle_rng = random.Random(seed ^ 0x5EED5EED)
    cache = TokenCache(cache_dir, id_code)
    encoder = ExampleEncoder(options.max_seq_length, options.max_predictions_per_seq,
                             vocab.size)
    stats = _Stats()
    buffer: list = []
    size = max(1, options.shuffle_buffer_size)
    batch: list = []
    try:
        with open(part_path, "wb") as out:
            for inst in iter_round_instances(cache, options, vocab, rng):
                stats.add(inst)
                record = encoder.encode(inst)
                if len(buffer) < size:
                    buffer.append(record)
                    continue
                k = shuffle_rng.randrange(size)
                batch.append(buffer[k])
                buffer[k] = record
                if len(batch) >= 512:
                    out.write(frame_records(batch))
                    batch = []
            shuffle_rng.shuffle(buffer)
            batch.extend(buffer)
            for i in range(0, len(batch), 512):
                out.write(frame_records(batch[i:i + 512]))
    finally:
        cache.close()
    stats.c["seconds"] = time.perf_counter() - t0
    return part_path, stats.flush(), _peak_rss_bytes()


def _peak_rss_bytes() -> int:
    """Peak resident set size of this process (ru_maxrss), in bytes."""
    try:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, AttributeError):  # pragma: no cover - non-POSIX
        return 0


# --------------------------------------------------------------------------- outputs


class _OutputSet:
    """Output files written under temporary names, renamed together when complete."""

    def __init__(self, paths: Sequence[str]):
        self.paths = list(paths)
        self.tmp = [f"{p}.tmp-{os.getpid()}" for p in self.paths]
        self.files = []
        for tmp in self.tmp:
            os.makedirs(os.path.dirname(os.path.abspath(tmp)), exist_ok=True)
            self.files.append(open(tmp, "wb"))
        self.counts = [0] * len(self.paths)
        self._next = 0

    def add_part_round_robin(self, part_path: str, count: int):
        """Deals the `count` records of a part file to the outputs in turn (Google's order)."""
        if len(self.files) == 1:
            self.add_part_to(0, part_path, count)
            return
        with open(part_path, "rb") as f:
            for record in iter_framed_records(f):
                self.files[self._next].write(record)
                self.counts[self._next] += 1
                self._next = (self._next + 1) % len(self.files)

    def add_part_to(self, index: int, part_path: str, count: int):
        """Appends a whole part file (of `count` records) to output `index`."""
        with open(part_path, "rb") as f:
            shutil.copyfileobj(f, self.files[index], 1 << 20)
        self.counts[index] += count

    def commit(self):
        """Flushes, closes and renames every output into place."""
        for f in self.files:
            f.flush()
            os.fsync(f.fileno())
            f.close()
        for tmp, path in zip(self.tmp, self.paths):
            os.replace(tmp, path)

    def abort(self):
        """Closes and deletes the temporary outputs."""
        for f, tmp in zip(self.files, self.tmp):
            f.close()
            if os.path.exists(tmp):
                os.remove(tmp)


# --------------------------------------------------------------------------- public API


def expand_input_files(spec) -> list:
    """Comma-separated list (or sequence) of paths or globs -> existing, non-empty files.

    Raises FileNotFoundError / ValueError naming the offending pattern or file.
    """
    patterns = spec.split(",") if isinstance(spec, str) else list(spec)
    files: list = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise FileNotFoundError(f"no input file matches {pattern!r}")
        for path in matches:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"input file not found: {path}")
            if os.path.getsize(path) == 0:
                raise ValueError(f"input file is empty: {path}")
            files.append(path)
    if not files:
        raise ValueError("no input files given")
    return files


def split_output_files(spec) -> list:
    """Comma-separated list (or sequence) of output paths."""
    paths = spec.split(",") if isinstance(spec, str) else list(spec)
    paths = [p.strip() for p in paths if p.strip()]
    if not paths:
        raise ValueError("no output files given")
    return paths


def _prepare(spm_model_file, vocab_file, do_lower_case, options):
    """Tokenizer spec, vocabulary tables and validated options."""
    spec = TokenizerSpec(spm_model_file=spm_model_file if spm_model_file else None,
                         vocab_file=vocab_file if (vocab_file and not spm_model_file) else None,
                         do_lower_case=do_lower_case)
    tokenizer = load_tokenizer(spec)
    vocab = VocabTables.from_tokenizer(tokenizer, spm=bool(spec.spm_model_file))
    return spec, vocab, options


def iter_tokenized_documents(input_file: str, spm_model_file: str | None = None,
                             vocab_file: str | None = None, do_lower_case: bool = True,
                             **options) -> Iterator[list]:
    """Documents of a file as the builder tokenises them: lists of sentences of ids."""
    opts = BuilderOptions(**options)
    spec, _, _ = _prepare(spm_model_file, vocab_file, do_lower_case, opts)
    tokenizer = load_tokenizer(spec)
    for raw in iter_raw_documents(input_file, opts):
        doc = _tokenize_document(raw, tokenizer, spec)
        if doc:
            yield doc


def create_instances(input_file: str, spm_model_file: str | None = None,
                     vocab_file: str | None = None, do_lower_case: bool = True,
                     round_index: int = 0, num_rounds: int = 1, file_index: int = 0,
                     **options) -> list:
    """TrainingInstances of dupe rounds round_index .. round_index+num_rounds-1 of one
    file, in document order (no shuffle buffer, not serialised): the instances that
    build_pretraining_data writes for that file."""
    opts = BuilderOptions(**options)
    path = expand_input_files(input_file)[0]
    spec, vocab, opts = _prepare(spm_model_file, vocab_file, do_lower_case, opts)
    instances: list = []
    with tempfile.TemporaryDirectory(prefix="albert_tokens_") as tmp:
        info = TokenCache.write(path, tmp, spec, opts, vocab.size)
        cache = TokenCache(tmp, info["id_typecode"])
        try:
            for r in range(round_index, round_index + num_rounds):
                rng = random.Random(round_seed(opts.random_seed, file_index, r))
                instances.extend(iter_round_instances(cache, opts, vocab, rng))
        finally:
            cache.close()
    return instances


def build_pretraining_data(input_files, output_files, spm_model_file: str | None = None,
                           vocab_file: str | None = None, do_lower_case: bool = True,
                           num_workers: int = 1, one_output_per_input: bool = False,
                           progress: Callable[[dict], None] | None = None,
                           **options) -> dict:
    """Builds MLM + SOP TFRecords from text files; returns statistics.

    input_files / output_files: comma-separated strings or sequences (inputs may be
    globs). Records go round-robin to the outputs like Google's, or, with
    one_output_per_input, every record of input i goes to output i. options are
    BuilderOptions fields (Google's flag names). num_workers > 1 runs (file, round) jobs
    in that many processes; the output is identical for any num_workers.
    """
    t_start = time.perf_counter()
    opts = BuilderOptions(**options)
    inputs = expand_input_files(input_files)
    outputs = split_output_files(output_files)
    if one_output_per_input and len(outputs) != len(inputs):
        raise ValueError(f"one_output_per_input needs one output per input: "
                         f"{len(inputs)} inputs, {len(outputs)} outputs")
    spec, vocab, opts = _prepare(spm_model_file, vocab_file, do_lower_case, opts)
    out_dir = os.path.dirname(os.path.abspath(outputs[0]))
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".albert_pretraining_", dir=out_dir)
    sink = _OutputSet(outputs)
    run = _Run(inputs, opts, spec, vocab, work, sink, one_output_per_input, progress, t_start)
    try:
        if num_workers <= 1:
            run.serial()
        else:
            run.parallel(num_workers)
        sink.commit()
    except BaseException:
        sink.abort()
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return run.summary(sink, outputs)


class _Run:
    """Schedules tokenise and round jobs and merges their parts in a fixed order."""

    def __init__(self, inputs, opts, spec, vocab, work, sink, per_input, progress, t_start):
        self.inputs, self.opts, self.spec, self.vocab = inputs, opts, spec, vocab
        self.work, self.sink, self.per_input = work, sink, per_input
        self.progress, self.t_start = progress, t_start
        self.counters = Counter()
        self.corpus = Counter()
        self.worker_peak_rss = 0

    def _tok_args(self, f: int):
        return (self.inputs[f], os.path.join(self.work, f"tokens-{f:05d}"), self.spec,
                self.opts, self.vocab.size)

    def _round_args(self, f: int, r: int, info: dict):
        return (info["directory"], info["id_typecode"], f, r, self.opts, self.vocab,
                os.path.join(self.work, f"part-{f:05d}-{r:05d}.tfrecord"))

    def _merge(self, f: int, result: tuple):
        """Adds one finished round's part file to the outputs, then deletes it."""
        part, counters, peak = result
        if self.per_input:
            self.sink.add_part_to(f, part, counters["instances"])
        else:
            self.sink.add_part_round_robin(part, counters["instances"])
        os.remove(part)
        seconds = counters.pop("seconds", 0.0)
        self.counters.update(counters)
        self.counters["job_seconds"] += seconds
        self.worker_peak_rss = max(self.worker_peak_rss, peak)
        if self.progress:
            elapsed = time.perf_counter() - self.t_start
            self.progress({"instances": self.counters["instances"], "seconds": elapsed,
                           "instances_per_second": self.counters["instances"] / elapsed,
                           "input_file": self.inputs[f]})

    def _corpus(self, info: dict):
        for key in ("documents", "sentences", "tokens"):
            self.corpus[key] += info[key]

    def serial(self):
        """Everything in this process, file by file."""
        for f in range(len(self.inputs)):
            info = _tokenize_job(self._tok_args(f))
            self._corpus(info)
            for r in range(self.opts.dupe_factor):
                self._merge(f, _round_job(self._round_args(f, r, info)))
            shutil.rmtree(info["directory"], ignore_errors=True)

    def parallel(self, num_workers: int):
        """Tokenise jobs first, then round jobs, merged in (file, round) order.

        Uses 'spawn' worker processes (safe when the parent has TensorFlow threads); a
        worker that dies raises BrokenProcessPool instead of hanging.
        """
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=num_workers, mp_context=ctx)
        try:
            tok = [pool.submit(_tokenize_job, self._tok_args(f))
                   for f in range(len(self.inputs))]
            pending: deque = deque()
            rounds_left: dict = {}
            for f in range(len(self.inputs)):
                info = tok[f].result()
                self._corpus(info)
                for r in range(self.opts.dupe_factor):
                    pending.append((f, pool.submit(_round_job, self._round_args(f, r, info))))
                rounds_left[f] = [info["directory"], self.opts.dupe_factor]
                while pending and pending[0][1].done():
                    self._merge_pending(pending, rounds_left)
            while pending:
                self._merge_pending(pending, rounds_left)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _merge_pending(self, pending: deque, rounds_left: dict):
        """Merges the oldest pending round; drops a file's cache after its last round."""
        f, future = pending.popleft()
        self._merge(f, future.result())
        rounds_left[f][1] -= 1
        if rounds_left[f][1] == 0:
            shutil.rmtree(rounds_left[f][0], ignore_errors=True)

    def summary(self, sink: _OutputSet, outputs: list) -> dict:
        """The statistics dictionary returned by build_pretraining_data."""
        c = self.counters
        n, masked = c["instances"], c["masked"]
        spans = {k[1]: v for k, v in c.items() if isinstance(k, tuple) and k[0] == "span"}
        drawn = {k[1]: v for k, v in c.items() if isinstance(k, tuple) and k[0] == "drawn"}
        total_spans, total_drawn = sum(spans.values()), sum(drawn.values())
        seconds = time.perf_counter() - self.t_start
        return {
            "input_files": list(self.inputs),
            "output_files": list(outputs),
            "records_per_output": list(sink.counts),
            "documents": self.corpus["documents"],
            "sentences": self.corpus["sentences"],
            "corpus_tokens": self.corpus["tokens"],
            "instances": n,
            "tokens": c["tokens"],
            "masked_pieces": masked,
            "masked_fraction": masked / max(1, c["tokens"]),
            "mask_token_fraction": c[("decision", 0)] / max(1, masked),
            "kept_fraction": c[("decision", 1)] / max(1, masked),
            "random_piece_fraction": c[("decision", 2)] / max(1, masked),
            "sop_swapped_fraction": c["label_1"] / max(1, n),
            "random_document_fraction": c["random_document"] / max(1, n),
            "span_length_fractions": {k: v / total_spans for k, v in sorted(spans.items())},
            "drawn_ngram_fractions": {k: v / total_drawn for k, v in sorted(drawn.items())},
            "seconds": seconds,
            "instances_per_second": n / seconds if seconds > 0 else 0.0,
            "worker_peak_rss_bytes": self.worker_peak_rss,
        }
