"""One-shot Gumbel top-k: law of the ordered output, events, degenerate and bad inputs.

Statistical tests use fixed seeds and reject at ``ALPHA = 1e-4``.  The reference
is the exact law of sequential peeling,
``P[(i, j)] = w_i / W * w_j / (W - w_i)`` with ``w = exp(epsilon u / scale)``;
the Durfee-Rogers theorem (one-shot Gumbel = peeling) is checked separately by
a float Gumbel simulation that lives only in this test.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from privloss.accounting import PrivacyFilter
from privloss.events import BoundedRange, Composed
from privloss.mechanisms.gumbel_topk import GumbelTopK
from privloss.samplers import InsecureSeededSource
from tests.mechanisms.test_exponential import ALPHA, NoRandomness, categorical_pvalue, draws


def peeling_law(scores, rate, k) -> dict[tuple[int, ...], float]:
    """Exact probability of every ordered k-tuple under k rounds of peeling."""
    weights = [math.exp(rate * (u - max(scores))) for u in scores]
    law = {}
    for tup in itertools.permutations(range(len(scores)), k):
        p, left = 1.0, math.fsum(weights)
        for i in tup:
            p *= weights[i] / left
            left -= weights[i]
        law[tup] = p
    return law


def tuple_pvalue(samples, law) -> float:
    keys = sorted(law)
    index = {key: position for position, key in enumerate(keys)}
    codes = [index[tuple(sample)] for sample in samples]
    return categorical_pvalue(codes, [law[key] for key in keys])


SCORES = [6, 4, 4, 1, 0]


# ---------------------------------------------------------------------------
# law
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, rate", [({"score_range": 1}, 0.5), ({"sensitivity": 1}, 0.25)])
def test_ordered_top2_matches_peeling(kwargs, rate):
    mechanism = GumbelTopK(Fraction(1, 2), 2, **kwargs)
    samples = draws(mechanism, SCORES, 20_000, seed=201)
    assert tuple_pvalue(samples, peeling_law(SCORES, rate, 2)) > ALPHA


def test_one_shot_gumbel_equals_peeling_in_real_arithmetic():
    """Durfee-Rogers: top-2 of u/scale*eps + Gumbel(1) noise, in noisy order, has the
    peeling law.  Float Gumbel here is test-only; the library never forms it."""
    rng = np.random.default_rng(202)
    rate = 0.5
    noisy = rate * np.array(SCORES, dtype=float) + rng.gumbel(size=(40_000, len(SCORES)))
    top = np.argsort(-noisy, axis=1)[:, :2]
    assert tuple_pvalue(top.tolist(), peeling_law(SCORES, rate, 2)) > ALPHA
    # power check: the same samples reject the peeling law at twice the rate
    assert tuple_pvalue(top.tolist(), peeling_law(SCORES, 2 * rate, 2)) < ALPHA


def test_top3_matches_peeling_on_rational_scores():
    scores = [Fraction(5, 2), 2, Fraction(7, 3), 0]
    mechanism = GumbelTopK(1, 3, score_range=Fraction(1, 2), candidates=["a", "b", "c", "d"])
    source = InsecureSeededSource(203)
    names = ["a", "b", "c", "d"]
    samples = [[names.index(c) for c in mechanism.release(scores, source=source)]
               for _ in range(15_000)]
    assert tuple_pvalue(samples, peeling_law([float(u) for u in scores], 2.0, 3)) > ALPHA


def test_full_ranking_is_a_permutation():
    mechanism = GumbelTopK(1, 6, score_range=1)
    out = mechanism.release([3, 1, 4, 1, 5, 9], source=InsecureSeededSource(204))
    assert sorted(out) == list(range(6))


def test_large_domain_returns_distinct_plausible_items():
    rng = np.random.default_rng(205)
    scores = rng.poisson(5, 100_000)
    scores[[10, 20, 30]] = [10_000, 9_000, 8_000]
    out = GumbelTopK(Fraction(1, 10), 3, score_range=1).release(
        scores, source=InsecureSeededSource(206))
    assert out == [10, 20, 30]  # gaps of 100/epsilon-scale units: other orders ~ e^-100


# ---------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------

def test_events_are_k_bounded_range_steps_in_order():
    mechanism = GumbelTopK(Fraction(1, 4), 3, score_range=1)
    assert mechanism.events == (BoundedRange(0.25),) * 3
    assert mechanism.event == Composed((BoundedRange(0.25),) * 3)
    assert GumbelTopK(Fraction(1, 4), 1, sensitivity=1).event == BoundedRange(0.25)


def test_budget_is_charged_for_k_steps():
    budget = PrivacyFilter(1.0)
    mechanism = GumbelTopK(Fraction(1, 4), 4, score_range=1)
    mechanism.release(SCORES, source=InsecureSeededSource(207), budget=budget)
    assert budget.remaining_epsilon() == pytest.approx(0.0, abs=1e-9)


# ---------------------------------------------------------------------------
# degenerate cases
# ---------------------------------------------------------------------------

def test_epsilon_zero_gives_uniform_ordered_pairs():
    mechanism = GumbelTopK(0, 2, score_range=1)
    samples = draws(mechanism, [9, 0, 5, 1], 8_000, seed=208)
    law = {pair: 1 / 12 for pair in itertools.permutations(range(4), 2)}
    assert tuple_pvalue(samples, law) > ALPHA


def test_ties():
    mechanism = GumbelTopK(1, 2, score_range=1)
    scores = [3, 3, 3]
    samples = draws(mechanism, scores, 6_000, seed=209)
    assert tuple_pvalue(samples, peeling_law(scores, 1.0, 2)) > ALPHA


def test_single_candidate_needs_no_randomness():
    mechanism = GumbelTopK(1, 1, score_range=1, candidates=["x"])
    assert mechanism.release([4], source=NoRandomness()) == ["x"]


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs, error, match", [
    ((1, 0), {"score_range": 1}, ValueError, "k must"),
    ((1, True), {"score_range": 1}, ValueError, "k must"),
    ((1, 2.0), {"score_range": 1}, ValueError, "k must"),
    ((1, 4), {"score_range": 1, "candidates": ["a", "b", "c"]}, ValueError, "at most"),
    ((-1, 1), {"score_range": 1}, ValueError, "epsilon"),
    ((1, 1), {}, ValueError, "exactly one"),
    ((1, 1), {"sensitivity": 0}, ValueError, "sensitivity"),
    ((1, 1), {"score_range": 1, "candidates": []}, ValueError, "candidates"),
])
def test_bad_parameters(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        GumbelTopK(*args, **kwargs)


@pytest.mark.parametrize("scores, error, match", [
    ([1, 2], ValueError, "at most the number of scores"),
    ([], ValueError, "at least one"),
    ([1, 2, float("nan")], ValueError, r"scores\[2\]"),
])
def test_bad_scores(scores, error, match):
    with pytest.raises(error, match=match):
        GumbelTopK(1, 3, score_range=1).release(scores, source=InsecureSeededSource(1))
