"""Theorem 1 (KOV optimal homogeneous DP composition)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss.bounds.optimal_dp import optimal_dp_delta, optimal_dp_epsilon
from tests.enumeration import dp_composition_delta, invert

# worked_values.md §1 (epsilon = 0.1 per mechanism, delta0 = 0); recomputed there by
# closed form + root finding at 50 digits, by PLD convolution, and by exact inversion.
WORKED = [
    (1, 1e-6, 0.099998095161), (1, 1e-3, 0.098093346072),
    (10, 1e-6, 0.999370905722), (50, 1e-6, 3.172902734019), (100, 1e-6, 4.774567588108),
    (10, 1e-3, 0.753573154879), (50, 1e-3, 2.007441716737), (100, 1e-3, 3.115559460797),
]


@pytest.mark.parametrize("k, delta, expected", WORKED)
def test_worked_values(k, delta, expected):
    assert optimal_dp_epsilon(k, 0.1, delta) == pytest.approx(expected, rel=1e-9)


def test_worked_point_value():
    # worked_values §1: k=25, eps=0.2, eps_g=1 (closed form and conjugate of the RR tradeoff curve)
    assert optimal_dp_delta(25, 0.2, 1.0) == pytest.approx(0.1219257716, rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 5, 10])
@pytest.mark.parametrize("epsilon_g", [0.0, 0.05, 0.3, 0.95])
def test_delta_equals_enumeration(k, epsilon_g):
    truth = float(dp_composition_delta([0.1] * k, epsilon_g))
    value = optimal_dp_delta(k, 0.1, epsilon_g)
    assert value >= truth
    assert value == pytest.approx(truth, rel=1e-11, abs=1e-300)


@pytest.mark.parametrize("k, delta", [(3, 1e-3), (6, 1e-4), (7, 0.02)])
def test_epsilon_equals_enumerated_inverse(k, delta):
    epsilons = [0.3] * k
    truth = float(invert(lambda e: dp_composition_delta(epsilons, e), delta, 0.3 * k, iterations=70))
    value = optimal_dp_epsilon(k, 0.3, delta)
    assert value >= truth - 1e-12
    assert value == pytest.approx(truth, rel=1e-9)


def test_delta0_formula_matches_enumeration():
    truth = float(dp_composition_delta([0.2] * 4, 0.3, deltas=[1e-3] * 4))
    assert optimal_dp_delta(4, 0.2, 0.3, delta0=1e-3) == pytest.approx(truth, rel=1e-11)


def test_edge_cases():
    assert optimal_dp_delta(10, 0.1, 1.0) == pytest.approx(0.0, abs=1e-15)     # eps_g = k eps
    assert optimal_dp_epsilon(10, 0.1, 0.0) == pytest.approx(1.0, rel=1e-11)   # delta = 0 -> k eps
    assert optimal_dp_epsilon(10, 0.1, 0.0) >= 1.0
    assert optimal_dp_epsilon(7, 0.1, 1.0) == 0.0
    assert optimal_dp_delta(5, 0.0, 0.0, delta0=0.01) == pytest.approx(1 - 0.99 ** 5, rel=1e-12)
    # k = 1: closed form log(e^eps - delta (1 + e^eps))
    assert optimal_dp_epsilon(1, 1.0, 0.1) == pytest.approx(math.log(math.e - 0.1 * (1 + math.e)), rel=1e-12)
    # infeasible: delta below 1 - (1 - delta0)^k
    assert optimal_dp_epsilon(3, 0.1, 1e-4, delta0=1e-4) == math.inf


@pytest.mark.parametrize("bad", [dict(k=0), dict(k=1.5), dict(epsilon=-1), dict(epsilon=math.nan),
                                 dict(target_delta=1.5), dict(target_delta=-0.1)])
def test_bad_input_names_parameter(bad):
    args = dict(k=3, epsilon=0.1, target_delta=1e-6) | bad
    name = next(iter(bad))
    with pytest.raises((ValueError, TypeError), match=name):
        optimal_dp_epsilon(**args)


@pytest.mark.parametrize("k, epsilon", [(10 ** 5, 20.0), (10 ** 5, 1e-4), (10 ** 5, 1.0), (1, 20.0)])
def test_no_overflow_large_k_and_epsilon(k, epsilon):
    value = optimal_dp_epsilon(k, epsilon, 1e-6)
    assert math.isfinite(value) and 0 < value <= k * epsilon * (1 + 1e-12)
    delta = optimal_dp_delta(k, epsilon, value)
    assert 0 <= delta <= 1e-6


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 300), epsilon=st.floats(0.001, 3.0), delta=st.floats(1e-12, 0.5))
def test_inverse_is_certified_and_monotone(k, epsilon, delta):
    value = optimal_dp_epsilon(k, epsilon, delta)
    assert 0 <= value <= k * epsilon * (1 + 1e-12)
    assert optimal_dp_delta(k, epsilon, value) <= delta
    assert optimal_dp_epsilon(k + 1, epsilon, delta) >= value
    assert optimal_dp_epsilon(k, epsilon * 1.1, delta) >= value


# ---- near the largest loss (issue 12, item 5): eps_g within 1e-6 of k eps --------------

def _theorem1_mpmath(k, epsilon, epsilon_g):
    """Theorem 1 at 50 digits from the float inputs taken exactly (only the active terms,
    i < (k eps - eps_g) / (2 eps), contribute)."""
    import mpmath

    with mpmath.workdps(50):
        eps, eg = mpmath.mpf(epsilon), mpmath.mpf(epsilon_g)
        total = mpmath.mpf(0)
        for i in range(k + 1):
            term = mpmath.exp((k - i) * eps) - mpmath.exp(eg + i * eps)
            if term <= 0:
                break
            total += mpmath.binomial(k, i) * term
        return total / (1 + mpmath.exp(eps)) ** k


def _near_maximum(k, epsilon):
    top = k * epsilon
    points = [top * (1 - r) for r in (1e-6, 3e-7, 1e-7, 1e-9, 1e-12, 1e-14)]
    below = top
    for _ in range(4):                       # the last few floats below (and at) k eps
        points.append(below)
        below = math.nextafter(below, 0.0)
    return points


@pytest.mark.parametrize("k, epsilon", [(1, 0.3), (2, 1e-3), (11, 16.94348870936686),
                                        (18, 0.47153718434967623), (100, 0.1), (1000, 2.5)])
def test_delta_near_the_largest_loss_is_exact(k, epsilon):
    for epsilon_g in _near_maximum(k, epsilon):
        truth = _theorem1_mpmath(k, epsilon, epsilon_g)
        value = optimal_dp_delta(k, epsilon, epsilon_g)
        assert value >= truth, (k, epsilon, epsilon_g)
        assert value <= truth * (1 + 1e-10) + 1e-300, (k, epsilon, epsilon_g)


def test_issue_examples_near_the_largest_loss():
    # issue 12: the reported values were 2.245891488835574e-13 and 8.318416668009152e-07
    # (2.4e-7 and 1.7e-8 relative below); references: _theorem1_mpmath at 50 digits
    assert 2.245892028067484e-13 <= optimal_dp_delta(18, 0.47153718434967623, 8.487669316906967) \
        <= 2.245892028067484e-13 * (1 + 1e-10)
    assert 8.318416810089666e-07 <= optimal_dp_delta(11, 16.94348870936686, 186.37837497119304) \
        <= 8.318416810089666e-07 * (1 + 1e-10)


@pytest.mark.parametrize("k, epsilon, epsilon_g", [
    (300_001, 1e-3, 1.0), (300_001, 1e-3, 5.0), (500_000, 0.01, 30.0), (500_000, 0.01, 120.0),
    (250_000, 0.2, 2000.0), (250_000, 0.2, 49_000.0), (1_000_000, 1e-4, 0.05),
])
def test_windowed_sum_equals_the_full_sum_and_never_falls_below(monkeypatch, k, epsilon,
                                                                  epsilon_g):
    """Above WINDOW_FROM the binomial sum runs over a window of O(sqrt k) terms with a
    certified tail and float-error bound (issue 23: privloss.bounds._binomial_window).
    The full log-gamma sum carries an outward slack of 16 ulps of its magnitude
    (up to 5e-8 relative here), so the window, accurate to 1e-10 (mpmath,
    tests/bounds/test_optimal_dp_large.py), may lie below it by that slack."""
    from privloss.bounds import optimal_dp
    windowed = optimal_dp.optimal_dp_delta(k, epsilon, epsilon_g)
    monkeypatch.setattr(optimal_dp, "WINDOW_FROM", 10**9)
    full = optimal_dp.optimal_dp_delta(k, epsilon, epsilon_g)
    assert full * (1 - 1e-7) <= windowed <= full * (1 + 1e-12) + 1e-290
