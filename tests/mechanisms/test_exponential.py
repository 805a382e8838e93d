"""Exponential mechanism: exact law, guarantee, utility bound, degenerate and bad inputs.

Statistical tests use ``InsecureSeededSource`` with fixed seeds and reject at
``ALPHA = 1e-4`` (chi-square against the exact softmax computed with mpmath,
independently of the mechanism's own code).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from privloss.accounting import BudgetExceededError, PrivacyFilter
from privloss.events import BoundedRange
from privloss.mechanisms._exact_choice import exact_scores, log_weights
from privloss.mechanisms.exponential import ExponentialMechanism
from privloss.samplers import InsecureSeededSource, RandomSource
from tests.samplers._stats import ALPHA, chi_square_pvalue


def exact_softmax(scores, rate) -> list[float]:
    """P[r] proportional to exp(rate * u_r), in 40-digit arithmetic."""
    with mpmath.workdps(40):
        rate = mpmath.mpf(Fraction(rate).numerator) / Fraction(rate).denominator
        values = [mpmath.mpf(Fraction(u).numerator) / Fraction(u).denominator for u in scores]
        top = max(values)
        weights = [mpmath.exp(rate * (u - top)) for u in values]
        total = mpmath.fsum(weights)
        return [float(w / total) for w in weights]


def categorical_pvalue(samples, probabilities) -> float:
    """Chi-square p-value of index samples against exact category probabilities."""
    def mass(lo, hi):
        lo = 0 if lo is None else lo
        hi = len(probabilities) - 1 if hi is None else hi
        return math.fsum(probabilities[lo:hi + 1])
    return chi_square_pvalue(np.asarray(samples), mass, range(1, len(probabilities)))[0]


def draws(mechanism, scores, n, seed):
    source = InsecureSeededSource(seed)
    return [mechanism.release(scores, source=source) for _ in range(n)]


class NoRandomness(RandomSource):
    """A source that fails the test if any randomness is requested."""

    def random_words(self, count):
        raise AssertionError("randomness was used")


# ---------------------------------------------------------------------------
# exact law
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("scores, epsilon, kwargs, rate", [
    ([0, 1, 2, 3, 5, Fraction(7, 2)], Fraction(1, 2), {"score_range": 1}, Fraction(1, 2)),
    ([4, 3, 3], Fraction(1, 2), {"sensitivity": 1}, Fraction(1, 4)),          # McSherry-Talwar
    ([10, 7, 12, 12, 0, -3, 9], 1, {"score_range": Fraction(3, 2)}, Fraction(2, 3)),
    (["1/3", "2/7", Decimal("0.5"), 0], 3, {"score_range": "1/2"}, 6),
])
def test_frequencies_match_exact_softmax(scores, epsilon, kwargs, rate):
    mechanism = ExponentialMechanism(epsilon, **kwargs)
    samples = draws(mechanism, scores, 20_000, seed=11)
    assert categorical_pvalue(samples, exact_softmax(scores, rate)) > ALPHA


def test_chi_square_detects_the_wrong_scaling():
    """Power check of the harness: the range form is not the McSherry-Talwar law."""
    samples = draws(ExponentialMechanism(Fraction(1, 2), score_range=1), [4, 3, 3], 20_000, 15)
    assert categorical_pvalue(samples, exact_softmax([4, 3, 3], Fraction(1, 2))) > ALPHA
    assert categorical_pvalue(samples, exact_softmax([4, 3, 3], Fraction(1, 4))) < ALPHA


def test_scalar_path_for_huge_denominators_has_the_exact_law():
    scores = [Fraction(k * 3**40 + 1, 3**40) for k in (0, 1, 2, 2, 4)]
    weights = log_weights(exact_scores(scores), Fraction(1, 2))
    assert not weights.batched  # denominators beyond int64: Python-integer kernels
    mechanism = ExponentialMechanism(Fraction(1, 2), score_range=1)
    samples = draws(mechanism, scores, 10_000, seed=12)
    assert categorical_pvalue(samples, exact_softmax(scores, Fraction(1, 2))) > ALPHA


def test_scores_beyond_int64_keep_the_exact_law():
    base = 2**70
    scores = [base, base - 1, base + 2, base - 40]
    mechanism = ExponentialMechanism(1, score_range=1)
    samples = draws(mechanism, scores, 10_000, seed=13)
    assert categorical_pvalue(samples, exact_softmax(scores, 1)) > ALPHA


def test_numpy_integer_scores_on_a_larger_domain():
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 30, 200)
    mechanism = ExponentialMechanism(Fraction(1, 5), score_range=1)
    samples = draws(mechanism, scores, 10_000, seed=14)
    assert categorical_pvalue(samples, exact_softmax(scores.tolist(), Fraction(1, 5))) > ALPHA


def test_probabilities_method_matches_reference():
    mechanism = ExponentialMechanism(Fraction(1, 2), score_range=1)
    scores = [0, 1, 2, 3, 5, Fraction(7, 2)]
    assert np.allclose(mechanism.probabilities(scores), exact_softmax(scores, Fraction(1, 2)),
                       rtol=1e-13, atol=0)


# ---------------------------------------------------------------------------
# ballot example (seed 003)
# ---------------------------------------------------------------------------

def test_ballot_example_recomputed():
    votes = [4, 3, 3]
    classic = {eps: ExponentialMechanism(eps, sensitivity=1).probabilities(votes)
               for eps in (5, Fraction(1, 2), 0)}
    # seed columns epsilon = 0.5 and 0 are reproduced to the printed 2 digits
    assert np.allclose(classic[Fraction(1, 2)], [0.39, 0.30, 0.30], atol=0.006)
    assert np.allclose(classic[0], [1 / 3] * 3, rtol=1e-15)
    # the seed's epsilon = 5 column (0.9, 0.045, 0.045) does not sum to 1;
    # the McSherry-Talwar form gives 1/(1 + 2 e^-2.5) and e^-2.5/(1 + 2 e^-2.5)
    expected_top = 1 / (1 + 2 * math.exp(-2.5))
    assert classic[5][0] == pytest.approx(expected_top, rel=1e-14)
    assert classic[5][0] == pytest.approx(0.858981, abs=1e-6)
    assert classic[5][1] == pytest.approx(0.070509, abs=1e-6)
    # range-based scaling (range = 1 for vote counts under add/remove) doubles the exponent
    ranged = ExponentialMechanism(5, score_range=1).probabilities(votes)
    assert ranged[0] == pytest.approx(1 / (1 + 2 * math.exp(-5)), rel=1e-14)


# ---------------------------------------------------------------------------
# guarantee
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{"score_range": 1}, {"sensitivity": 1},
                                    {"score_range": Fraction(1, 3)}])
def test_events_are_bounded_range_epsilon(kwargs):
    mechanism = ExponentialMechanism(Fraction(3, 4), **kwargs)
    assert mechanism.events == (BoundedRange(0.75),)
    assert mechanism.event == BoundedRange(0.75)


def test_event_epsilon_is_never_below_the_exact_epsilon():
    for epsilon in (Fraction(1, 10), Fraction(1, 3), Fraction(2, 7), "0.3", Decimal("1.1")):
        event_epsilon = ExponentialMechanism(epsilon, score_range=1).event.epsilon
        assert Fraction(event_epsilon) >= Fraction(epsilon)
        assert event_epsilon == pytest.approx(float(Fraction(epsilon)), rel=1e-15)


def _loss_interval(p, q):
    loss = np.log(p) - np.log(q)
    return loss.max() - loss.min(), np.abs(loss).max()


@pytest.mark.parametrize("form", ["range", "sensitivity"])
def test_bounded_range_on_random_neighbours(form):
    """Exact probabilities of neighbours: the privacy loss spans at most epsilon."""
    rng = np.random.default_rng(7)
    epsilon = Fraction(7, 10)
    for _ in range(300):
        n = int(rng.integers(2, 8))
        scores = rng.integers(-5, 20, n)
        if form == "range":  # counts under add/remove: all move the same way, range 1
            shift = rng.integers(0, 2, n) * (1 if rng.random() < 0.5 else -1)
            mechanism = ExponentialMechanism(epsilon, score_range=1)
        else:  # arbitrary changes of at most 1: sensitivity 1
            shift = rng.integers(-1, 2, n)
            mechanism = ExponentialMechanism(epsilon, sensitivity=1)
        p = mechanism.probabilities(scores)
        q = mechanism.probabilities(scores + shift)
        spread, worst = _loss_interval(p, q)
        assert spread <= float(epsilon) + 1e-9
        assert worst <= float(epsilon) + 1e-9


def test_release_charges_the_budget_after_computing():
    mechanism = ExponentialMechanism(Fraction(1, 2), score_range=1, candidates=["a", "b"])
    budget = PrivacyFilter(1.0)
    source = InsecureSeededSource(3)
    assert mechanism.release([1, 0], source=source, budget=budget) in ("a", "b")
    assert mechanism.release([1, 0], source=source, budget=budget) in ("a", "b")
    with pytest.raises(BudgetExceededError):
        mechanism.release([1, 0], source=source, budget=budget)


def test_default_source_is_secure_and_works():
    mechanism = ExponentialMechanism(1, score_range=1, candidates=["x", "y", "z"])
    assert mechanism.release({"x": 1, "y": 2, "z": 0}) in ("x", "y", "z")


# ---------------------------------------------------------------------------
# utility
# ---------------------------------------------------------------------------

def test_utility_gap_formula():
    mechanism = ExponentialMechanism(Fraction(1, 2), score_range=2, candidates=range(100))
    expected = (2 / 0.5) * (math.log(100 / 4) + math.log(1 / 0.01))
    gap = mechanism.utility_gap(0.01, n_optimal=4)
    assert expected <= gap <= expected * (1 + 1e-11)
    classic = ExponentialMechanism(Fraction(1, 2), sensitivity=2)
    assert classic.utility_gap(0.01, n_candidates=100) == pytest.approx(
        (4 / 0.5) * math.log(100 / 0.01), rel=1e-11)
    assert mechanism.failure_probability(gap, n_optimal=4) == pytest.approx(0.01, rel=1e-9)
    assert ExponentialMechanism(0, score_range=1).utility_gap(0.1, n_candidates=3) == math.inf


def test_utility_guarantee_holds_with_the_stated_probability():
    """One optimum at 10 and nine candidates at 4.5: the bound is nearly tight here."""
    beta = 0.05
    scores = [10] + [Fraction(9, 2)] * 9
    mechanism = ExponentialMechanism(1, score_range=1)
    gap = mechanism.utility_gap(beta, n_candidates=len(scores))  # ln(10) + ln(20) = 5.298
    assert 4.5 <= 10 - gap  # the nine poor candidates count as failures
    exact_failure = 9 * math.exp(-5.5) / (1 + 9 * math.exp(-5.5))
    assert beta / 2 < exact_failure <= beta  # the guarantee is not vacuous here
    samples = np.array(draws(mechanism, scores, 10_000, seed=21))
    failures = int(np.sum(np.array([float(u) for u in scores])[samples] <= 10 - gap))
    assert stats.binomtest(failures, samples.size, exact_failure).pvalue > ALPHA
    assert stats.binomtest(failures, samples.size, beta, alternative="greater").pvalue > ALPHA


def test_best_of_two_example_from_seed():
    """Counts 0 and c: the wrong answer has probability <= 2 exp(-c epsilon / 2)."""
    for c in (1, 5, 20):
        for epsilon in (Fraction(1, 10), 1, 3):
            p_wrong = ExponentialMechanism(epsilon, sensitivity=1).probabilities([0, c])[0]
            assert p_wrong <= 2 * math.exp(-c * float(epsilon) / 2)


# ---------------------------------------------------------------------------
# degenerate cases
# ---------------------------------------------------------------------------

def test_one_candidate_needs_no_randomness():
    mechanism = ExponentialMechanism(1, score_range=1, candidates=["only"])
    assert mechanism.release([123], source=NoRandomness()) == "only"
    assert ExponentialMechanism(1, score_range=1).release([5], source=NoRandomness()) == 0


def test_epsilon_zero_is_uniform():
    mechanism = ExponentialMechanism(0, score_range=1)
    scores = [0, 100, -50, 7, 3]
    samples = draws(mechanism, scores, 10_000, seed=31)
    assert categorical_pvalue(samples, [0.2] * 5) > ALPHA
    assert mechanism.event == BoundedRange(0.0)


def test_ties_are_equally_likely():
    mechanism = ExponentialMechanism(2, score_range=1)
    scores = [5, 5, 5, 1]
    samples = draws(mechanism, scores, 10_000, seed=32)
    assert categorical_pvalue(samples, exact_softmax(scores, 2)) > ALPHA


def test_mapping_scores_and_candidates():
    mechanism = ExponentialMechanism(Fraction(1, 2), score_range=1,
                                     candidates=["1.00$", "3.00$", "3.01$"])
    source = InsecureSeededSource(4)
    out = {mechanism.release({"3.01$": 0, "1.00$": 3, "3.00$": 6}, source=source)
           for _ in range(50)}
    assert out <= {"1.00$", "3.00$", "3.01$"}


def test_floats_only_with_allow_float():
    with pytest.raises(TypeError, match="float"):
        ExponentialMechanism(0.5, score_range=1)
    mechanism = ExponentialMechanism(1, score_range=1)
    with pytest.raises(TypeError, match="float"):
        mechanism.release([1.5, 2.0])
    lenient = ExponentialMechanism(0.5, score_range=1, allow_float=True)
    samples = draws(lenient, np.array([1.5, 2.0, 0.25]), 10_000, seed=33)
    assert categorical_pvalue(samples, exact_softmax([1.5, 2.0, 0.25], 0.5)) > ALPHA


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    ({"epsilon": -1, "score_range": 1}, ValueError, "epsilon"),
    ({"epsilon": "-1/2", "score_range": 1}, ValueError, "epsilon"),
    ({"epsilon": float("nan"), "score_range": 1, "allow_float": True}, ValueError, "epsilon"),
    ({"epsilon": 1}, ValueError, "exactly one"),
    ({"epsilon": 1, "score_range": 1, "sensitivity": 1}, ValueError, "exactly one"),
    ({"epsilon": 1, "score_range": 0}, ValueError, "score_range"),
    ({"epsilon": 1, "sensitivity": -2}, ValueError, "sensitivity"),
    ({"epsilon": True, "score_range": 1}, TypeError, "epsilon"),
    ({"epsilon": 1, "score_range": 1, "candidates": []}, ValueError, "candidates"),
    ({"epsilon": 1, "score_range": 1, "candidates": ["a", "a"]}, ValueError, "distinct"),
    ({"epsilon": 1, "score_range": 1, "candidates": [[1], [2]]}, TypeError, "hashable"),
    ({"epsilon": 1, "score_range": 1, "candidates": "abc"}, TypeError, "candidates"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        ExponentialMechanism(**kwargs)


@pytest.mark.parametrize("scores, error, match", [
    ([], ValueError, "at least one"),
    ([1, float("nan")], ValueError, r"scores\[1\]"),
    (np.array([1.0, np.nan]), ValueError, r"scores\[1\]"),
    ([1, float("inf")], ValueError, r"scores\[1\]"),
    ([1, True], TypeError, r"scores\[1\]"),
    ([1, "x"], ValueError, r"scores\[1\]"),
    ([[1, 2]], TypeError, r"scores\[0\]"),
    (np.zeros((2, 2), dtype=np.int64), ValueError, "one-dimensional"),
    ("123", TypeError, "sequence"),
    (5, TypeError, "sequence"),
    ({"a": 1}, TypeError, "candidates"),
])
def test_bad_scores(scores, error, match):
    mechanism = ExponentialMechanism(1, score_range=1)
    with pytest.raises(error, match=match):
        mechanism.release(scores, source=InsecureSeededSource(1))


def test_scores_must_match_declared_candidates():
    mechanism = ExponentialMechanism(1, score_range=1, candidates=["a", "b", "c"])
    with pytest.raises(ValueError, match="one entry per candidate"):
        mechanism.release([1, 2])
    with pytest.raises(ValueError, match="missing"):
        mechanism.release({"a": 1, "b": 2})
    with pytest.raises(ValueError, match="unexpected"):
        mechanism.release({"a": 1, "b": 2, "c": 3, "d": 4})


@pytest.mark.parametrize("beta", [0, 1, -0.1, 2, float("nan")])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        ExponentialMechanism(1, score_range=1).utility_gap(beta, n_candidates=3)


def test_bad_utility_counts():
    mechanism = ExponentialMechanism(1, score_range=1)
    with pytest.raises(ValueError, match="n_candidates is required"):
        mechanism.utility_gap(0.1)
    with pytest.raises(ValueError, match="n_optimal"):
        mechanism.utility_gap(0.1, n_candidates=3, n_optimal=4)
    with pytest.raises(ValueError, match="gap"):
        mechanism.failure_probability(-1, n_candidates=3)


# ---------------------------------------------------------------------------
# no floating point on the sampling path
# ---------------------------------------------------------------------------

def _raise(*args, **kwargs):
    raise AssertionError("floating-point function called during sampling")


def test_release_calls_no_float_functions(monkeypatch):
    mechanisms = [ExponentialMechanism(Fraction(1, 3), score_range=1),
                  ExponentialMechanism(Fraction(5, 2), sensitivity=Fraction(1, 2))]
    scalar_scores = [Fraction(k, 3**40) for k in range(5)]
    for name in ("exp", "log", "sqrt", "pow", "log1p", "expm1", "floor", "ceil"):
        monkeypatch.setattr(math, name, _raise)
    for name in ("exp", "log", "sqrt", "power", "float_power", "floor", "ceil", "log2", "exp2"):
        monkeypatch.setattr(np, name, _raise)
    source = InsecureSeededSource(41)
    for mechanism in mechanisms:
        for _ in range(20):
            mechanism.release([3, 1, 4, 1, 5, 9, 2, 6], source=source)
            mechanism.release(scalar_scores, source=source)
    assert type(mechanisms[0].release([1, 2], source=source)) is int
