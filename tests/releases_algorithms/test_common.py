"""Validation, exact parameters and histogram views shared by the algorithms."""

from fractions import Fraction

import numpy as np
import pytest

from privloss.releases.algorithms._common import (check_histogram, domain_counts, float_at_most,
                                                   label_rank, noisy_order, rational_at_least,
                                                   rational_at_most, sqrt_float_at_most,
                                                   visible_top)
from tests.releases_algorithms._support import Histogram, histogram


@pytest.mark.parametrize("value", [0.1, 0.5, 1.0, 1 / 3, 2.0 ** -30, 12345.678, 1e-9, 7])
def test_rational_at_most_is_below_and_close(value):
    q = rational_at_most(value)
    assert q <= Fraction(value)
    assert Fraction(value) - q <= Fraction(value) / 2 ** 23
    assert q.denominator <= 2 ** 60


def test_rational_at_most_keeps_decimals_and_fractions():
    assert rational_at_most(0.1) == Fraction(1, 10)       # binary 0.1 is above 1/10
    assert rational_at_most(Fraction(3, 7)) == Fraction(3, 7)
    assert rational_at_least(Fraction(3, 7)) == Fraction(3, 7)
    assert rational_at_least(1 / 3) >= Fraction(1 / 3)


def test_float_rounding_directions():
    third = Fraction(1, 3)
    assert Fraction(float_at_most(third)) <= third
    s = sqrt_float_at_most(Fraction(2))
    assert Fraction(s) ** 2 <= 2 < Fraction(np.nextafter(s, np.inf)) ** 2


def test_check_histogram_rejects_bad_input():
    with pytest.raises(TypeError, match="items, counts"):
        check_histogram(object())
    with pytest.raises(ValueError, match="one count per item"):
        check_histogram(Histogram(("a", "b"), np.array([1]), 2, 0))
    with pytest.raises(ValueError, match=">= 0"):
        check_histogram(Histogram(("a",), np.array([-1]), 1, 0))
    with pytest.raises(ValueError, match="non-increasing"):
        check_histogram(Histogram(("a", "b"), np.array([1, 2]), 2, 0))
    with pytest.raises(ValueError, match="distinct"):
        check_histogram(Histogram(("a", "a"), np.array([2, 1]), 2, 0))
    with pytest.raises(ValueError, match="integers"):
        check_histogram(Histogram(("a",), np.array([1.5]), 1, 0))
    with pytest.raises(ValueError, match="next_count"):
        check_histogram(Histogram(("a",), np.array([3]), 2, 5))


def test_truncation_is_detected():
    full = check_histogram(histogram({"a": 5, "b": 3, "c": 1}))
    cut = check_histogram(histogram({"a": 5, "b": 3, "c": 1}, top=2))
    assert not full.truncated and cut.truncated and cut.next_count == 1


def test_visible_top_uses_d_bar_then_engine_cut():
    h = check_histogram(histogram({"a": 9, "b": 7, "c": 4, "d": 2}))
    seen = visible_top(h, 2)
    assert seen.items == ("a", "b") and seen.next_count == 4
    everything = visible_top(h, None)
    assert everything.items == ("a", "b", "c", "d") and everything.next_count == 0
    cut = visible_top(check_histogram(histogram({"a": 9, "b": 7, "c": 4, "d": 2}, top=3)), 10)
    assert cut.items == ("a", "b", "c") and cut.next_count == 2
    zeros = visible_top(check_histogram(histogram({"a": 3}, domain=["a", "z"])), None)
    assert zeros.items == ("a",)          # zero counts are never visible


def test_domain_counts_aligns_and_refuses_truncation():
    h = check_histogram(histogram({"a": 5, "b": 2, "q": 7}))
    labels, counts = domain_counts(h, ["b", "a", "c"])
    assert labels == ("b", "a", "c") and counts.tolist() == [2, 5, 0]
    with pytest.raises(ValueError, match="truncated"):
        domain_counts(check_histogram(histogram({"a": 5, "b": 2}, top=1)), ["a", "b"])
    with pytest.raises(ValueError, match="truncated"):
        domain_counts(check_histogram(histogram({"a": 5, "b": 2}, top=1)), None)
    with pytest.raises(ValueError, match="empty"):
        domain_counts(h, [])


def test_noisy_order_breaks_ties_by_label_not_position():
    labels = ("b", "c", "a")
    order = noisy_order(np.array([5, 5, 5]), label_rank(labels))
    assert [labels[i] for i in order] == ["a", "b", "c"]
    mixed = ("b", 2, 1.5)
    assert sorted(label_rank(mixed).tolist()) == [0, 1, 2]


def test_domain_labels_match_integer_items_by_text():
    h = check_histogram(histogram({1: 5, 2: 3}))
    labels, counts = domain_counts(h, ["2", "1", "7"])
    assert labels == ("2", "1", "7") and counts.tolist() == [3, 5, 0]
