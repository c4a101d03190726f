"""Sequence packing: Google's pop-from-longer truncation, layout, and Python/graph agreement."""

import random

import pytest

from albert_tf.text import packing
from albert_tf.text.packing import pack_ids, pack_ids_graph, truncate_seq_pair, truncated_lengths


def _reference_truncate(a, b, max_num_tokens, rng=None):
    """The loop as described for Google's builders, written out independently."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_num_tokens:
        longer = a if len(a) > len(b) else b
        if rng is not None and rng.random() < 0.5:
            longer.pop(0)
        else:
            longer.pop()
    return a, b


def test_closed_form_equals_pop_loop_exhaustively():
    for la in range(25):
        for lb in range(25):
            for budget in range(0, 52):
                a, b = _reference_truncate(range(la), range(lb), budget)
                assert truncated_lengths(la, lb, budget) == (len(a), len(b)), (la, lb, budget)


def test_truncate_in_place_from_back_and_ties_pop_b():
    a, b = [1, 2, 3, 4], [5, 6, 7, 8]
    truncate_seq_pair(a, b, 5)
    assert a == [1, 2, 3] and b == [5, 6]
    a, b = list(range(10)), [100]
    truncate_seq_pair(a, b, 4)
    assert a == [0, 1, 2] and b == [100]


def test_truncate_with_rng_pops_random_ends_like_reference():
    for seed in range(50):
        src = random.Random(seed)
        a = list(range(src.randrange(0, 40)))
        b = list(range(100, 100 + src.randrange(0, 40)))
        budget = src.randrange(0, 60)
        ref_rng, rng = random.Random(seed + 1000), random.Random(seed + 1000)
        want = _reference_truncate(a, b, budget, ref_rng)
        truncate_seq_pair(a, b, budget, rng=rng)
        assert (a, b) == want
        assert rng.random() == ref_rng.random()  # one draw per pop, as the reference
    a, b = list(range(30)), list(range(30))
    truncate_seq_pair(a, b, 10, rng=random.Random(7))
    assert a[0] != 0 or b[0] != 0  # some pops came from the front


def test_pack_ids_pair_layout():
    out = pack_ids([10, 11, 12], [20, 21], 10, cls_id=2, sep_id=3, pad_id=0)
    assert out["input_ids"] == [2, 10, 11, 12, 3, 20, 21, 3, 0, 0]
    assert out["input_mask"] == [1] * 8 + [0, 0]
    assert out["segment_ids"] == [0] * 5 + [1] * 3 + [0, 0]


def test_pack_ids_single_and_pad_id():
    out = pack_ids([7, 8, 9, 10], None, 5, cls_id=2, sep_id=3, pad_id=9)
    assert out["input_ids"] == [2, 7, 8, 9, 3]
    out = pack_ids([7], None, 5, cls_id=2, sep_id=3, pad_id=99)
    assert out["input_ids"] == [2, 7, 3, 99, 99]
    assert out["segment_ids"] == [0] * 5 and out["input_mask"] == [1, 1, 1, 0, 0]


def test_pack_ids_truncates_longer_side_without_mutating():
    a, b = list(range(10, 30)), [1, 2]
    out = pack_ids(a, b, 9, cls_id=2, sep_id=3)
    assert out["input_ids"] == [2, 10, 11, 12, 13, 3, 1, 2, 3]
    assert a == list(range(10, 30)) and b == [1, 2]


def test_pack_ids_too_small_raises():
    with pytest.raises(ValueError):
        pack_ids([1], [2], 2, cls_id=2, sep_id=3)
    with pytest.raises(ValueError):
        pack_ids([1], None, 1, cls_id=2, sep_id=3)
    assert pack_ids([1], [2], 3, cls_id=2, sep_id=3)["input_ids"] == [2, 3, 3]


@pytest.mark.parametrize("pair", [True, False])
def test_graph_packing_agrees_with_python(pair):
    import tensorflow as tf

    rng = random.Random(123 + pair)
    for max_len in (3, 4, 5, 8, 17, 64):
        if not pair and max_len < 2:
            continue
        a = [[rng.randrange(5, 1000) for _ in range(rng.randrange(0, 80))] for _ in range(64)]
        b = [[rng.randrange(5, 1000) for _ in range(rng.randrange(0, 80))] for _ in range(64)]
        rt_a = tf.ragged.constant(a, dtype=tf.int32, ragged_rank=1)
        rt_b = tf.ragged.constant(b, dtype=tf.int32, ragged_rank=1) if pair else None
        got = pack_ids_graph(rt_a, rt_b, max_len, cls_id=2, sep_id=3, pad_id=0)
        for key in ("input_ids", "input_mask", "segment_ids"):
            assert got[key].dtype == tf.int32 and got[key].shape == (64, max_len)
        for i in range(64):
            want = pack_ids(a[i], b[i] if pair else None, max_len, cls_id=2, sep_id=3)
            for key, value in want.items():
                assert got[key][i].numpy().tolist() == value, (key, i, max_len)


def test_graph_packing_in_tf_function_with_int32_splits():
    import tensorflow as tf

    a = tf.ragged.constant([[5, 6, 7], [8]], dtype=tf.int64).with_row_splits_dtype(tf.int32)
    fn = tf.function(lambda x: pack_ids_graph(x, None, 4, cls_id=2, sep_id=3, pad_id=1))
    out = fn(a)
    assert out["input_ids"].numpy().tolist() == [[2, 5, 6, 3], [2, 8, 3, 1]]
    assert packing.pack_ids_graph is pack_ids_graph
