"""Training instances: SOP (or NSP) pairs cut from documents, masked, one seeded RNG
per (input file, dupe round) job."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from typing import Iterator

from albert_tf.pretraining.masking import mask_instance, ngram_cdfs
from albert_tf.pretraining.options import BuilderOptions
from albert_tf.pretraining.tokens import TokenCache, VocabTables
from albert_tf.text.packing import truncate_seq_pair


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


class InstanceMaker:
    """Makes SOP pairs and masks them, for one (file, round) job with its own RNG."""

    def __init__(self, options: BuilderOptions, vocab: VocabTables, rng: random.Random):
        self.o = options
        self.v = vocab
        self.rng = rng
        self.cdfs = ngram_cdfs(options.ngram, options.favor_shorter_ngram)
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
        for sent in other[rng.randint(0, len(other) - 1) :]:
            tokens_b.extend(sent)
            if len(tokens_b) >= target_b:
                break
        return tokens_b

    def make_instance(
        self, tokens_a: list, tokens_b: list, label: int, random_doc: bool = False
    ) -> TrainingInstance:
        """[CLS] A [SEP] B [SEP], masked."""
        v = self.v
        ids = [v.cls_id, *tokens_a, v.sep_id, *tokens_b, v.sep_id]
        la, lb = len(tokens_a), len(tokens_b)
        is_start = v.is_start
        boundary = [is_start[t] for t in ids]
        boundary[0] = boundary[la + 1] = boundary[-1] = 1
        inst = TrainingInstance(ids, la, lb, boundary, [], [], label, random_doc, [], [], [])
        mask_instance(inst, self.o, self.v, self.rng, self.cdfs)
        return inst


def iter_round_instances(
    cache: TokenCache, options: BuilderOptions, vocab: VocabTables, rng: random.Random
) -> Iterator[TrainingInstance]:
    """Streams the instances of one dupe round over a tokenised file, in document order."""
    maker = InstanceMaker(options, vocab, rng)
    for index, doc in enumerate(cache.iter_documents()):
        yield from maker.from_document(doc, index, cache)
