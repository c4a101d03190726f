"""Whole-word n-gram masking of a TrainingInstance (Google's budget, backoff and 80/10/10)."""

from __future__ import annotations

from itertools import compress
import random

from albert_tf.pretraining.options import BuilderOptions
from albert_tf.pretraining.tokens import VocabTables


def ngram_cdfs(ngram: int, favor_shorter: bool) -> list:
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


def word_units(inst, whole_word: bool):
    """Whole-word units of a TrainingInstance per segment: parallel lists start, end,
    segment_end_unit.

    A unit starts at each word-start piece (every piece without whole-word masking)
    and at the first piece of A and of B: a word never continues across [SEP].
    """
    la, lb, boundary = inst.len_a, inst.len_b, inst.token_boundary
    wwm = whole_word
    a_starts = (
        [1, *compress(range(2, la + 1), boundary[2 : la + 1])] if wwm else list(range(1, la + 1))
    )
    b_lo = la + 2
    b_starts = (
        [b_lo, *compress(range(b_lo + 1, b_lo + lb), boundary[b_lo + 1 : b_lo + lb])]
        if wwm
        else list(range(b_lo, b_lo + lb))
    )
    starts = a_starts + b_starts
    ends = a_starts[1:] + [la + 1] + b_starts[1:] + [b_lo + lb]
    na = len(a_starts)
    limits = [na] * na + [len(starts)] * len(b_starts)
    return starts, ends, limits


def mask_instance(
    inst, options: BuilderOptions, vocab: VocabTables, rng: random.Random, cdfs: list
):
    """Masks a TrainingInstance in place: whole-word n-grams (lengths drawn from `cdfs`,
    see ngram_cdfs) with Google's budget, backoff and 80/10/10 rule."""
    o, v = options, vocab
    ids = inst.input_ids
    if o.masked_lm_prob <= 0:
        return
    budget = min(o.max_predictions_per_seq, max(1, round(len(ids) * o.masked_lm_prob)))
    starts, ends, limits = word_units(inst, o.do_whole_word_mask)
    m = len(starts)
    order = list(range(m))
    covered = bytearray(len(ids))
    picked = []  # (position, original id, decision)
    masked = 0
    random_, randrange = rng.random, rng.randrange
    draws, spans, ngram = inst.draws, inst.spans, o.ngram
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
