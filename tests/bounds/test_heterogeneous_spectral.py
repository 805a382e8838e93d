"""The spectral (tilted characteristic-function) construction of the heterogeneous
optimal-DP bracket (issue 12, item 9): certified against the shift-and-add
programme, the 2^k enumeration in mpmath (tests.enumeration) and Theorem 1 in
mpmath; its error model checked against exact convolutions."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.bounds import _heterogeneous_lattice as lattice
from privloss.bounds._heterogeneous_laws import _LossLaw
from privloss.bounds._lattice_fft import _Kernels, tilted_law
from privloss.bounds.heterogeneous_dp import (heterogeneous_dp_delta,
                                              heterogeneous_dp_delta_enumerated,
                                              heterogeneous_dp_epsilon)
from tests.bounds.test_heterogeneous_dp import kov_delta
from tests.enumeration import dp_composition_delta


@pytest.fixture
def force_spectral(monkeypatch):
    monkeypatch.setattr(lattice, "SPECTRAL_MIN_MECHANISMS", 1)
    monkeypatch.setattr(lattice, "SPECTRAL_MIN_WORK", 0.0)


@pytest.fixture
def force_shift_and_add(monkeypatch):
    monkeypatch.setattr(lattice, "SPECTRAL_MIN_MECHANISMS", 10 ** 12)


def both_ways(monkeypatch, call):
    """call() with the spectral construction, then with the shift-and-add programme."""
    monkeypatch.setattr(lattice, "SPECTRAL_MIN_MECHANISMS", 1)
    monkeypatch.setattr(lattice, "SPECTRAL_MIN_WORK", 0.0)
    new = call()
    monkeypatch.setattr(lattice, "SPECTRAL_MIN_MECHANISMS", 10 ** 12)
    old = call()
    return new, old


# --------------------------------------------------------------------------
# the tilted law and its error model, against exact convolution
# --------------------------------------------------------------------------

def exact_law(offsets, probs):
    law = np.ones(1)
    for off, pr in zip(offsets, probs):
        kernel = np.zeros(int(off.max()) + 1)
        np.add.at(kernel, off, pr)
        law = np.convolve(law, kernel)
    return law


@pytest.mark.parametrize("seed", range(4))
def test_tilted_law_within_its_error_bound(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(30, 120))
    offsets = np.sort(rng.integers(0, 40, size=(k, 3)), axis=1)
    probs = rng.dirichlet(np.ones(3), size=k)
    kernels = _Kernels(offsets, np.log(probs), 0, np.full(probs.shape, 4 * 2.0 ** -53))
    exact = exact_law(offsets, probs)
    support = np.arange(exact.size)
    mean = float(np.sum(exact * support))
    for center in (None, mean + 1.5 * math.sqrt(k) * 5, mean + 4 * math.sqrt(k) * 5):
        law = tilted_law(kernels, center, 1 << 22)
        tilted = exact * np.exp(law.theta * support - law.log_mgf)
        assert tilted.sum() == pytest.approx(1.0, rel=1e-9)
        window = slice(law.start, law.start + law.f.size)
        outside = tilted.sum() - tilted[window].sum()
        assert outside <= law.tail * (1 + 1e-9) + 1e-300          # Chernoff holds
        padded = np.zeros(law.f.size)
        inside = tilted[window]
        padded[:inside.size] = inside
        assert np.abs(law.f - padded).sum() <= law.error           # certified L1 error
        assert law.error < 1e-9


def test_loss_law_tilt_error_decreases():
    law = _LossLaw(step=0.01, offset=0, stride=1, mass=np.ones(3) / 3, relative_error=0.0,
                   dropped=0.0, absolute_error=0.0, upward=True, tilt=0.002,
                   tilt_log_error=math.log(1e-9))
    assert law.tilt_error(0.0) >= 1e-9
    assert law.tilt_error(10.0) < law.tilt_error(1.0) < law.tilt_error(0.0)


# --------------------------------------------------------------------------
# certified against exact references
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_contains_enumeration(force_spectral, seed):
    rng = np.random.default_rng(40 + seed)
    k = int(rng.integers(4, 12))
    eps = rng.uniform(0.02, 1.2, k)
    for step in (0.05, 0.013):
        for fraction in (0.05, 0.3, 0.6):
            eg = float(fraction * eps.sum())
            truth = dp_composition_delta(eps, eg)
            bracket = heterogeneous_dp_delta(eps, eg, lattice_step=step)
            assert mpmath.mpf(bracket.lower) <= truth <= mpmath.mpf(bracket.upper)


def theorem1_delta(k, epsilon, epsilon_g):
    """[CR] Theorem 1 in mpmath (the independent reference of test_heterogeneous_dp)."""
    return kov_delta(k, epsilon, epsilon_g)


@pytest.mark.parametrize("k, epsilon, fraction", [(300, 0.1, 0.25), (1200, 0.037, 0.12),
                                                   (500, 0.3, 0.3)])
def test_contains_theorem1_in_bracket_mode(force_spectral, monkeypatch, k, epsilon, fraction):
    monkeypatch.setattr(lattice, "EXACT_LATTICE_POINTS", 8)     # no exact lattice
    eg = fraction * k * epsilon
    truth = theorem1_delta(k, epsilon, eg)
    bracket = heterogeneous_dp_delta([epsilon] * k, eg)
    assert mpmath.mpf(bracket.lower) <= truth <= mpmath.mpf(bracket.upper)
    assert bracket.upper - bracket.lower <= 2e-4 * bracket.upper


# --------------------------------------------------------------------------
# against the shift-and-add programme (the previous implementation)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("k, target", [(200, 1e-6), (700, 1e-9), (2000, 1e-6)])
def test_epsilon_matches_shift_and_add(monkeypatch, k, target):
    eps = np.random.default_rng(k).uniform(0.01, 0.5, k)
    new, old = both_ways(monkeypatch, lambda: heterogeneous_dp_epsilon(eps, target,
                                                                       tolerance=1e-3))
    assert new.lower <= old.upper and old.lower <= new.upper       # both contain the optimum
    assert new.upper - new.lower <= 1e-3
    assert old.upper - old.lower <= 1e-3


@pytest.mark.parametrize("k, step", [(200, 0.004), (1000, 0.002)])
def test_same_step_same_bracket(monkeypatch, k, step):
    """At one lattice step both constructions bound the same two laws: the brackets
    agree up to the numeric error terms (~1e-9 relative)."""
    eps = np.random.default_rng(7 * k).uniform(0.01, 0.5, k)
    for fraction in (0.2, 0.35):
        eg = float(fraction * eps.sum())
        new, old = both_ways(monkeypatch,
                             lambda: heterogeneous_dp_delta(eps, eg, lattice_step=step))
        assert new.upper == pytest.approx(old.upper, rel=1e-7)
        assert new.lower == pytest.approx(old.lower, rel=1e-7)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.0, 2.0), min_size=1, max_size=10), st.floats(0.0, 1.0),
       st.sampled_from([0.3, 0.04, 0.0071]))
def test_property_contains_enumeration(eps, fraction, step):
    """The spectral bracket (forced at any k) contains the 2^k enumeration."""
    eg = fraction * sum(eps)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(lattice, "SPECTRAL_MIN_MECHANISMS", 1)
        monkeypatch.setattr(lattice, "SPECTRAL_MIN_WORK", 0.0)
        bracket = heterogeneous_dp_delta(eps, eg, lattice_step=step)
    truth = heterogeneous_dp_delta_enumerated(eps, eg)      # within ~k 1e-15 of the optimum
    assert 0.0 <= bracket.lower <= bracket.upper <= 1.0
    assert bracket.lower <= truth * (1 + 1e-12) + 1e-13
    assert truth <= bracket.upper * (1 + 1e-12) + 1e-13


small_lists = st.lists(st.floats(0.01, 1.5), min_size=15, max_size=60)


@settings(max_examples=12, deadline=None)
@given(small_lists, st.floats(0.0, 0.8), st.sampled_from([0.05, 0.011]))
def test_property_overlaps_shift_and_add(eps, fraction, step):
    """Both are certified brackets around the same optimum, so they must overlap."""
    eg = fraction * sum(eps)
    with pytest.MonkeyPatch.context() as monkeypatch:
        new, old = both_ways(monkeypatch,
                             lambda: heterogeneous_dp_delta(eps, eg, lattice_step=step))
    assert 0.0 <= new.lower <= new.upper <= 1.0
    assert new.lower <= old.upper * (1 + 1e-12) + 1e-300
    assert old.lower <= new.upper * (1 + 1e-12) + 1e-300


# --------------------------------------------------------------------------
# scale (issue 12 item 9: 10.9 s at 10^4 distinct epsilons before)
# --------------------------------------------------------------------------

def test_ten_thousand_distinct_epsilons():
    eps = np.random.default_rng(0).uniform(0.01, 0.5, 10_000)
    bracket = heterogeneous_dp_epsilon(eps, 1e-6, tolerance=1e-3)
    # the shift-and-add bracket of the previous implementation (0.000824 step, 6.6 s)
    previous = (553.9809843084583, 553.9819641216569)
    assert previous[0] <= bracket.upper and bracket.lower <= previous[1]
    assert bracket.upper - bracket.lower <= 1e-3
    check = heterogeneous_dp_delta(eps, bracket.upper)
    assert check.lower <= 1e-6


def test_nearly_equal_epsilons_near_periodic_law():
    """Almost equal epsilons off any short lattice: the laws are nearly periodic (many
    significant frequencies); the bracket must still hold Theorem 1 at both ends."""
    from privloss.bounds.optimal_dp import optimal_dp_delta

    k = 3000
    eps = 0.1 + 1e-9 * np.random.default_rng(3).random(k)
    eg = 6.0
    bracket = heterogeneous_dp_delta(eps, eg)
    assert bracket.lower <= optimal_dp_delta(k, float(eps.max()), eg)
    assert bracket.upper >= optimal_dp_delta(k, float(eps.min()), eg) * (1 - 1e-9)


@pytest.mark.slow
def test_hundred_thousand_distinct_epsilons():
    eps = np.random.default_rng(0).uniform(0.01, 0.5, 100_000)
    bracket = heterogeneous_dp_epsilon(eps, 1e-6, tolerance=1e-3)
    assert bracket.upper - bracket.lower <= 1e-3
    assert float(np.sum(eps * np.tanh(eps / 2))) < bracket.lower
    check = heterogeneous_dp_delta(eps, bracket.upper)
    assert check.lower <= 1e-6
