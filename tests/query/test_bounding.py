"""The bounding rule itself: the keyed hash, the uniform l0 choice, the
Histogram order.  Statistical tests use fixed seeds and ALPHA = 1e-4."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from privloss.query.bounding import (LANE_MASK, MIX_MULTIPLIER, SEED_BITS, SelectionKey,
                                         check_bounds, draw_seed, integer_code, mix32,
                                         text_code)
from privloss.query.engines.reference import (column_codes, reference_histogram,
                                                  selected_items)
from privloss.query.histogram import Histogram, check_domain, check_top
from privloss.samplers import InsecureSeededSource

ALPHA = 1e-4


def _unmix32(x: int) -> int:
    """Inverse of Mueller's hash (multiplier 0x119de1f3, from the same source)."""
    x = ((x >> 16) ^ x) * 0x119DE1F3 & LANE_MASK
    x = ((x >> 16) ^ x) * 0x119DE1F3 & LANE_MASK
    return (x >> 16) ^ x


def test_mix32_is_a_bijection_with_the_published_inverse():
    rng = random.Random(1)
    for x in [0, 1, 2, LANE_MASK, 1 << 31] + [rng.getrandbits(32) for _ in range(2000)]:
        y = mix32(x)
        assert 0 <= y <= LANE_MASK
        assert _unmix32(y) == x


def test_intermediates_stay_below_2_to_the_59():
    # the largest product in mix32, and the largest sum before masking
    assert LANE_MASK * MIX_MULTIPLIER < 2 ** 59
    assert 2 * LANE_MASK < 2 ** 59


def test_round_keys_are_deterministic_and_seed_dependent():
    assert SelectionKey.from_seed(5) == SelectionKey.from_seed(5)
    assert SelectionKey.from_seed(5) != SelectionKey.from_seed(6)
    key = SelectionKey.from_seed(2 ** 200)  # any size of non-negative int
    assert all(0 <= k <= LANE_MASK for k in key.round_keys)
    assert 0 <= key.key(-(2 ** 63), 2 ** 63 - 1) <= LANE_MASK


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (True, TypeError), (1.0, TypeError),
                                         ("7", TypeError)])
def test_bad_seed(seed, error):
    with pytest.raises(error, match="seed"):
        SelectionKey.from_seed(seed)


def test_draw_seed_uses_the_source():
    assert draw_seed(InsecureSeededSource(3)) == draw_seed(InsecureSeededSource(3))
    seed = draw_seed()  # secure default
    assert 0 <= seed < 2 ** SEED_BITS


@pytest.mark.parametrize("l0, linf, name", [(0, 1, "l0"), (-2, 1, "l0"), (1.5, 1, "l0"),
                                            (True, 1, "l0"), (2, 0, "linf"), (2, None, "linf"),
                                            (None, 2.0, "linf")])
def test_bad_bounds_name_the_parameter(l0, linf, name):
    with pytest.raises((ValueError, TypeError), match=name):
        check_bounds(l0, linf)


def test_codes():
    assert integer_code(-5) == -5
    with pytest.raises(ValueError, match="64-bit"):
        integer_code(2 ** 63)
    assert text_code("abc") == int("900150983cd24fb", 16)  # md5("abc") = 900150983cd24fb0...
    assert column_codes([1, 2, 2]) == {1: 1, 2: 2}
    assert column_codes(["1", 2])[2] == text_code("2")  # mixed column -> text


def _subset_counts(items, l0, seeds, user=0):
    codes_u = column_codes([user])
    codes_i = column_codes(items)
    counts = Counter()
    for seed in seeds:
        key = SelectionKey.from_seed(seed)
        counts[frozenset(selected_items(user, items, l0, key, codes_u, codes_i))] += 1
    return counts


@pytest.mark.parametrize("items, l0, user", [
    ([0, 1, 2, 3], 2, 0),                               # adjacent small integers
    ([7, 2 ** 40 + 7, -7, 2 ** 62], 1, -(2 ** 50)),     # high lanes, negative codes
    (["a", "b", "c", "d", "e"], 2, "u"),                 # text path
])
def test_l0_choice_is_uniform_over_seeds(items, l0, user):
    n_seeds = 6000
    counts = _subset_counts(items, l0, range(n_seeds), user)
    subsets = [frozenset(c) for c in itertools.combinations(items, l0)]
    assert set(counts) == set(subsets)
    observed = [counts[s] for s in subsets]
    assert stats.chisquare(observed).pvalue > ALPHA, observed


def test_choices_of_two_users_are_independent():
    # two users with the same items: the pair of choices is uniform on 4 x 4
    items = [10, 11, 12, 13]
    codes_i = column_codes(items)
    codes_u = column_codes([1, 2])
    joint = Counter()
    for seed in range(8000):
        key = SelectionKey.from_seed(seed)
        first = selected_items(1, items, 1, key, codes_u, codes_i)[0]
        second = selected_items(2, items, 1, key, codes_u, codes_i)[0]
        joint[first, second] += 1
    observed = [joint[a, b] for a in items for b in items]
    assert stats.chisquare(observed).pvalue > ALPHA, observed


def test_many_users_one_seed_are_uniform():
    # what an engine sees in one query: 6000 users with the same 4 items
    items = [3, 1, 4, 5]
    key = SelectionKey.from_seed(12345)
    codes_i = column_codes(items)
    counts = Counter()
    users = range(6000)
    codes_u = column_codes(users)
    for user in users:
        counts[frozenset(selected_items(user, items, 2, key, codes_u, codes_i))] += 1
    observed = [counts[frozenset(s)] for s in itertools.combinations(items, 2)]
    assert stats.chisquare(observed).pvalue > ALPHA, observed


def test_reference_bounds_are_respected():
    rng = random.Random(4)
    rows = [(rng.randrange(30), rng.randrange(12)) for _ in range(600)]
    loose = reference_histogram(rows)
    bounded = reference_histogram(rows, l0=3, linf=2, seed=1)
    users = {u for u, _ in rows}
    assert int(bounded.counts.sum()) <= len(users) * 3 * 2
    for label, count in bounded.as_dict().items():
        assert count <= loose.as_dict()[label]
    # without l0 and with linf=1 the count is the number of distinct users
    distinct = Counter(item for _, item in set(rows))
    assert loose.as_dict() == dict(distinct)


def test_reference_ignores_row_order():
    rng = random.Random(5)
    rows = [(rng.randrange(40), rng.randrange(15)) for _ in range(500)]
    first = reference_histogram(rows, l0=2, linf=3, seed=9)
    rng.shuffle(rows)
    second = reference_histogram(rows, l0=2, linf=3, seed=9)
    assert first.items == second.items
    assert np.array_equal(first.counts, second.counts)


def test_histogram_order_and_truncation():
    h = Histogram.from_counts({"b": 3, "a": 3, "c": 5, "d": 1, "z": 0}, top=2)
    assert h.items == ("c", "a")
    assert h.counts.dtype == np.int64 and list(h.counts) == [5, 3]
    assert h.total_items == 4 and h.next_count == 3 and h.truncated
    full = Histogram.from_counts({2: 1, 10: 1, 1: 4})
    assert full.items == (1, 2, 10) and full.next_count == 0 and not full.truncated


def test_histogram_domain():
    h = Histogram.from_counts({"5": 2, "7": 9, "8": 1}, domain=[9, 5, 7])
    assert h.items == (7, 5, 9)  # domain labels, matched through their text
    assert list(h.counts) == [9, 2, 0]
    assert h.total_items == 2 and h.next_count == 0
    top = Histogram.from_counts({"a": 2}, domain=["a", "b", "c"], top=1)
    assert top.items == ("a",) and top.next_count == 0 and top.total_items == 1


@pytest.mark.parametrize("domain, error, match", [
    ([], ValueError, "at least one"),
    (["a", "a"], ValueError, "more than once"),
    (["a", 1], TypeError, "all strings or all integers"),
    ([True], TypeError, "all strings or all integers"),
    ("abc", TypeError, "sequence"),
])
def test_bad_domain(domain, error, match):
    with pytest.raises(error, match=match):
        check_domain(domain)


@pytest.mark.parametrize("top", [0, -1, 1.0, True])
def test_bad_top(top):
    with pytest.raises((ValueError, TypeError), match="top"):
        check_top(top)


def test_bad_counts():
    with pytest.raises(ValueError, match="count of label 'x'"):
        Histogram.from_counts({"x": -1})
