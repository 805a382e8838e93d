"""Report noisy max (Laplace, Gumbel, exponential noise): exact laws, guarantees, inputs.

Statistical tests use ``InsecureSeededSource`` with fixed seeds and reject at
``ALPHA = 1e-4``.  Reference laws: the softmax (Gumbel form), a closed-form sum
over the discrete Laplace noise of the winner (Laplace form, ties to the lowest
index) and a sum over all orders (permute-and-flip).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.events import BoundedRange, PureDP
from privloss.mechanisms.noisy_max import ReportNoisyMax
from privloss.samplers import InsecureSeededSource
from tests.mechanisms.test_exponential import (ALPHA, NoRandomness, categorical_pvalue, draws,
                                               exact_softmax)


def laplace_argmax_law(scores, scale, radius=600) -> np.ndarray:
    """P[argmax = i] for integer scores + i.i.d. discrete Laplace(scale), lowest index on ties."""
    a = math.exp(-1 / float(scale))
    z = np.arange(-radius, radius + 1)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)

    def cdf(t):  # P[Z <= t]
        t = np.asarray(t, dtype=float)
        with np.errstate(over="ignore"):  # the unused branch of where() may overflow
            return np.where(t >= 0, 1 - a ** (t + 1) / (1 + a), a ** (-t) / (1 + a))

    law = np.zeros(len(scores))
    for i in range(len(scores)):
        term = pmf.copy()
        for j in range(len(scores)):
            if j != i:
                gap = scores[i] + z - scores[j]
                term *= cdf(gap - 1) if j < i else cdf(gap)  # j < i must lose strictly
        law[i] = term.sum()
    return law


def permute_and_flip_law(scores, rate) -> np.ndarray:
    """P[PF returns r]: average over all orders of 'first accepted', p_r = exp(rate (u_r - max))."""
    p = np.exp(rate * (np.asarray(scores, dtype=float) - max(scores)))
    law = np.zeros(len(scores))
    for order in itertools.permutations(range(len(scores))):
        survive = 1.0
        for r in order:
            law[r] += survive * p[r]
            survive *= 1 - p[r]
    return law / math.factorial(len(scores))


# ---------------------------------------------------------------------------
# exact laws
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("monotone, scale", [(True, 1), (False, 2)])
def test_gumbel_form_is_the_exponential_mechanism(monotone, scale):
    scores = [5, 3, 3, 0, 6]
    mechanism = ReportNoisyMax(Fraction(1, 2), 1, noise="gumbel", monotone=monotone)
    samples = draws(mechanism, scores, 20_000, seed=101)
    assert categorical_pvalue(samples, exact_softmax(scores, Fraction(1, 2) / scale)) > ALPHA


@pytest.mark.parametrize("monotone, sensitivity", [(True, 1), (False, 1), (True, 3)])
def test_laplace_form_matches_exact_law(monotone, sensitivity):
    scores = [5, 3, 3, 0, 6]
    epsilon = Fraction(1, 2)
    scale = Fraction(sensitivity) / epsilon * (1 if monotone else 2)
    mechanism = ReportNoisyMax(epsilon, sensitivity, noise="laplace", monotone=monotone)
    samples = draws(mechanism, scores, 10_000, seed=102)
    law = laplace_argmax_law(scores, scale)
    assert law.sum() == pytest.approx(1, abs=1e-12)
    assert categorical_pvalue(samples, law.tolist()) > ALPHA


def test_laplace_batched_path_on_a_larger_domain():
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 8, 100)  # more than the scalar cut-off: batched noise
    mechanism = ReportNoisyMax(1, 1, noise="laplace", monotone=True)
    samples = draws(mechanism, scores, 5_000, seed=109)
    assert categorical_pvalue(samples, laplace_argmax_law(scores.tolist(), 1).tolist()) > ALPHA


def test_permute_and_flip_batched_path_on_a_larger_domain():
    """One best candidate among 299 poor ones accepted w.p. p = e^-5 each: the walk
    usually passes the scalar prefix.  P[best] = (1/m) sum_{j<m} (1 - p)^j (best at
    position j after j rejections); the poor candidates share the rest evenly."""
    m = 300
    scores = [5] + [0] * (m - 1)
    mechanism = ReportNoisyMax(2, 1, noise="exponential")  # rate 2/(2*1) = 1
    samples = draws(mechanism, scores, 3_000, seed=110)
    p = math.exp(-5)
    p_best = sum((1 - p) ** j for j in range(m)) / m
    law = [p_best] + [(1 - p_best) / (m - 1)] * (m - 1)
    assert categorical_pvalue(samples, law) > ALPHA


def test_laplace_ties_go_to_the_lowest_index():
    # equal scores, small noise: ties are frequent and must all go to index 0
    law = laplace_argmax_law([0, 0], Fraction(1, 4))
    assert law[0] > law[1] + 0.9
    mechanism = ReportNoisyMax(4, 1, noise="laplace", monotone=True)
    samples = draws(mechanism, [0, 0], 10_000, seed=103)
    assert categorical_pvalue(samples, law.tolist()) > ALPHA


def test_exponential_form_is_permute_and_flip():
    scores = [5, 3, 3, 0, 6]
    mechanism = ReportNoisyMax(Fraction(1, 2), 1, noise="exponential")
    samples = draws(mechanism, scores, 20_000, seed=104)
    law = permute_and_flip_law(scores, 0.25)
    assert categorical_pvalue(samples, law.tolist()) > ALPHA
    # and it is not the exponential mechanism at the same rate
    assert categorical_pvalue(samples, exact_softmax(scores, Fraction(1, 4))) < ALPHA


def test_large_integer_scores_take_the_python_integer_path():
    base = 2**70
    scores = [base + 2, base, base + 2]
    mechanism = ReportNoisyMax(1, 1, noise="laplace", monotone=True)
    samples = draws(mechanism, scores, 5_000, seed=105)
    law = laplace_argmax_law([2, 0, 2], 1)
    assert categorical_pvalue(samples, law.tolist()) > ALPHA
    for noise in ("gumbel", "exponential"):
        out = draws(ReportNoisyMax(1, 1, noise=noise), scores, 50, seed=106)
        assert set(out) <= {0, 1, 2}


# ---------------------------------------------------------------------------
# guarantees
# ---------------------------------------------------------------------------

def test_events():
    assert ReportNoisyMax(Fraction(1, 2), 1).events == (PureDP(0.5),)
    assert ReportNoisyMax(Fraction(1, 2), 1, noise="exponential").event == PureDP(0.5)
    assert ReportNoisyMax(Fraction(1, 2), 1, noise="gumbel").event == BoundedRange(0.5)
    event = ReportNoisyMax(Fraction(1, 10), 1).event
    assert Fraction(event.epsilon) >= Fraction(1, 10)


def _max_loss(p, q):
    return float(np.max(np.abs(np.log(p) - np.log(q))))


def test_laplace_privacy_on_random_neighbours():
    """Exact laws: monotone neighbours at scale Delta/eps and arbitrary neighbours
    at 2 Delta/eps stay within epsilon; the halved scale is not enough without
    monotonicity (why the flag exists)."""
    rng = np.random.default_rng(8)
    epsilon = 1.0
    worst_monotone = worst_general = worst_misused = 0.0
    for _ in range(150):
        n = int(rng.integers(2, 5))
        scores = rng.integers(0, 6, n)
        up = scores + rng.integers(0, 2, n)
        moved = scores + rng.integers(-1, 2, n)
        worst_monotone = max(worst_monotone, _max_loss(laplace_argmax_law(scores, 1),
                                                       laplace_argmax_law(up, 1)))
        worst_general = max(worst_general, _max_loss(laplace_argmax_law(scores, 2),
                                                     laplace_argmax_law(moved, 2)))
        worst_misused = max(worst_misused, _max_loss(laplace_argmax_law(scores, 1),
                                                     laplace_argmax_law(moved, 1)))
    assert worst_monotone <= epsilon + 1e-9
    assert worst_general <= epsilon + 1e-9
    assert worst_misused > 1.5 * epsilon


def test_permute_and_flip_privacy_on_random_neighbours():
    rng = np.random.default_rng(9)
    worst = 0.0
    for _ in range(200):
        n = int(rng.integers(2, 5))
        scores = rng.integers(0, 6, n)
        moved = scores + rng.integers(-1, 2, n)
        worst = max(worst, _max_loss(permute_and_flip_law(scores, 0.5),
                                     permute_and_flip_law(moved, 0.5)))
    assert worst <= 1.0 + 1e-9


# ---------------------------------------------------------------------------
# degenerate cases
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("noise", ["laplace", "gumbel", "exponential"])
def test_one_candidate_needs_no_randomness(noise):
    mechanism = ReportNoisyMax(1, 1, noise=noise, candidates=["only"])
    assert mechanism.release([7], source=NoRandomness()) == "only"


@pytest.mark.parametrize("noise", ["laplace", "gumbel", "exponential"])
def test_epsilon_zero_is_uniform(noise):
    mechanism = ReportNoisyMax(0, 1, noise=noise)
    samples = draws(mechanism, [0, 50, -3, 9], 8_000, seed=107)
    assert categorical_pvalue(samples, [0.25] * 4) > ALPHA


@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_ties_are_symmetric(noise):
    mechanism = ReportNoisyMax(2, 1, noise=noise)
    scores = [4, 4, 1]
    samples = np.array(draws(mechanism, scores, 8_000, seed=108))
    counts = np.bincount(samples, minlength=3)
    # the two tied candidates are exchangeable: a binomial test on their split
    assert stats.binomtest(int(counts[0]), int(counts[0] + counts[1]), 0.5).pvalue > ALPHA


def test_candidates_and_mapping():
    mechanism = ReportNoisyMax(1, 1, candidates=["a", "b", "c"])
    out = mechanism.release({"a": 10, "b": 0, "c": 3}, source=InsecureSeededSource(5))
    assert out in ("a", "b", "c")


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs, error, match", [
    ((-1, 1), {}, ValueError, "epsilon"),
    ((1, 0), {}, ValueError, "sensitivity"),
    ((1, -1), {}, ValueError, "sensitivity"),
    ((1, 1), {"noise": "cauchy"}, ValueError, "noise"),
    ((1, 1), {"monotone": 1}, TypeError, "monotone"),
    ((0.5, 1), {}, TypeError, "float"),
    ((1, 1), {"candidates": []}, ValueError, "candidates"),
])
def test_bad_parameters(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        ReportNoisyMax(*args, **kwargs)


@pytest.mark.parametrize("noise", ["laplace", "gumbel", "exponential"])
@pytest.mark.parametrize("scores, error, match", [
    ([], ValueError, "at least one"),
    ([1, float("nan")], ValueError, r"scores\[1\]"),
    (np.array([0.0, np.nan]), ValueError, r"scores\[1\]"),
])
def test_bad_scores(noise, scores, error, match):
    with pytest.raises(error, match=match):
        ReportNoisyMax(1, 1, noise=noise).release(scores, source=InsecureSeededSource(1))


def test_laplace_needs_integer_scores():
    with pytest.raises(ValueError, match="integer scores"):
        ReportNoisyMax(1, 1).release([Fraction(1, 2), 1], source=InsecureSeededSource(1))
    # integral Fractions are fine
    assert ReportNoisyMax(1, 1).release([Fraction(4, 2), 1],
                                        source=InsecureSeededSource(1)) in (0, 1)
