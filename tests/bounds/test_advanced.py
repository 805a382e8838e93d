"""Basic, DRV10 and KOV advanced composition; parallel composition and group privacy."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss.bounds.advanced import drv_delta, drv_epsilon, kov_delta, kov_epsilon
from privloss.bounds.basic import basic_delta, basic_epsilon, group_privacy, parallel_composition
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from tests.enumeration import dp_composition_delta, invert

# worked_values.md §1 comparison table, eps = 0.1, delta = 1e-6 (re-derived by hand there)
TABLE = [(10, 1.767429, 1.0), (50, 4.242777, 3.919797), (100, 6.308231, 5.756106)]


@pytest.mark.parametrize("k, drv, kov", TABLE)
def test_worked_values(k, drv, kov):
    assert drv_epsilon(k, 0.1, 1e-6) == pytest.approx(drv, abs=1e-6)
    assert kov_epsilon([0.1] * k, 1e-6) == pytest.approx(kov, abs=1e-6)


@pytest.mark.parametrize("k", [2, 5, 7])
@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.05])
def test_never_below_enumerated_optimum(k, delta):
    epsilons = [0.25] * k
    truth = float(invert(lambda e: dp_composition_delta(epsilons, e), delta, 0.25 * k, iterations=60))
    assert kov_epsilon(epsilons, delta) >= truth - 1e-12
    assert drv_epsilon(k, 0.25, delta) >= truth - 1e-12
    assert basic_epsilon(epsilons, delta) >= truth - 1e-12


def test_heterogeneous_kov_never_below_enumeration():
    epsilons = [0.05, 0.4, 0.2, 0.7, 0.1]
    truth = float(invert(lambda e: dp_composition_delta(epsilons, e), 1e-3, sum(epsilons), iterations=80))
    assert kov_epsilon(epsilons, 1e-3) >= truth


@settings(max_examples=80, deadline=None)
@given(k=st.integers(1, 2000), epsilon=st.floats(0.001, 2.0), delta=st.floats(1e-12, 0.3))
def test_ordering_optimal_kov_drv(k, epsilon, delta):
    optimal = optimal_dp_epsilon(k, epsilon, delta)
    kov = kov_epsilon([epsilon] * k, delta)
    drv = drv_epsilon(k, epsilon, delta)
    basic = basic_epsilon([epsilon] * k, delta)
    # KOV's third term is DRV's with tanh(eps/2) <= e^eps - 1 in the mean, so KOV <= DRV
    # always; DRV and basic are not comparable (DRV is larger for small k)
    assert optimal <= kov * (1 + 1e-12)
    assert kov <= drv * (1 + 1e-12)
    assert kov <= basic * (1 + 1e-12)
    assert optimal <= basic * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 500), epsilon=st.floats(0.001, 2.0), delta=st.floats(1e-12, 0.3))
def test_delta_inverts_epsilon(k, epsilon, delta):
    eps_kov = kov_epsilon([epsilon] * k, delta)
    assert kov_delta([epsilon] * k, eps_kov) <= delta * (1 + 1e-9)
    eps_drv = drv_epsilon(k, epsilon, delta)
    assert drv_delta(k, epsilon, eps_drv) <= delta * (1 + 1e-9)


def test_with_per_mechanism_deltas():
    assert drv_epsilon(10, 0.1, 1e-6, delta0=1e-7) == math.inf       # 10 * 1e-7 >= 1e-6
    assert drv_epsilon(10, 0.1, 2e-6, delta0=1e-7) == pytest.approx(drv_epsilon(10, 0.1, 1e-6))
    assert basic_epsilon([0.1, 0.2], 1e-6, deltas=[1e-6, 1e-6]) == math.inf
    assert basic_epsilon([0.1, 0.2], 2e-6, deltas=[1e-6, 1e-6]) == pytest.approx(0.3)
    assert basic_delta([0.1, 0.2], 0.3 + 1e-9, deltas=[1e-6, 2e-6]) == pytest.approx(3e-6)
    assert basic_delta([0.1, 0.2], 0.29) == 1.0


def test_parallel_and_group():
    assert parallel_composition([0.1, 0.5, 0.2], deltas=[0, 1e-6, 0]) == (0.5, 1e-6)
    assert group_privacy(0.5, 0.0, 4)[0] == pytest.approx(2.0)
    eps, delta = group_privacy(0.5, 1e-6, 3)
    assert eps == pytest.approx(1.5) and delta == pytest.approx(3 * math.exp(1.0) * 1e-6)
    assert group_privacy(5.0, 0.1, 10)[1] == 1.0


def test_bad_input():
    with pytest.raises(ValueError, match=r"epsilons\[1\]"):
        kov_epsilon([0.1, -1.0], 1e-6)
    with pytest.raises(ValueError, match="target_delta"):
        basic_epsilon([0.1], 2.0)
    with pytest.raises(ValueError, match="group_size"):
        group_privacy(0.1, 0.0, 0)
