"""zCDP conversions (worked_values.md §6)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss.bounds.gaussian import analytic_gaussian_delta
from privloss.bounds.zcdp import (compose_zcdp, zcdp_delta_simple, zcdp_delta_tight,
                                  zcdp_epsilon_simple, zcdp_epsilon_tight, zcdp_from_bounded_range,
                                  zcdp_from_cdp, zcdp_from_pure_dp, zcdp_rho_for)

# worked_values.md §6: rho -> (delta, simple, CKS); CKS verified three ways and by Steinke's cdp_eps
TABLE = {
    0.025: ((1e-5, 1.0979830131, 0.8966133352), (1e-6, 1.2003940002, 1.0140742547), (1e-10, 1.5424271294, 1.3919984116)),
    0.1: ((1e-5, 2.2459660263, 1.9142388320), (1e-6, 2.4507880005, 2.1419389284), (1e-10, 3.1348542588, 2.8818280092)),
    0.5: ((1e-5, 5.2985259122, 4.7283869849), (1e-6, 5.7565217698, 5.2215344445), (1e-10, 7.2861404244, 6.8393294131)),
    1.0: ((1e-5, 7.7861404244, 7.0771966958), (1e-6, 8.4338443777, 7.7662166253), (1e-10, 10.5970518244, 10.0343435813)),
}
CASES = [(rho, delta, simple, tight) for rho, rows in TABLE.items() for delta, simple, tight in rows]


@pytest.mark.parametrize("rho, delta, simple, tight", CASES)
def test_worked_values(rho, delta, simple, tight):
    assert zcdp_epsilon_simple(rho, delta) == pytest.approx(simple, rel=1e-9)
    assert zcdp_epsilon_tight(rho, delta) == pytest.approx(tight, rel=1e-9)


def test_other_directions():
    assert zcdp_delta_tight(0.025, 1.0) == pytest.approx(1.3361319064e-6, rel=1e-9)
    assert zcdp_delta_simple(0.025, 1.0) == pytest.approx(7.4385e-5, rel=1e-4)
    assert zcdp_rho_for(1.0, 1e-6) == pytest.approx(0.0243559703595, rel=1e-9)


def test_sanity_ordering_against_exact_gaussian():
    # sigma = 3 (rho = 1/18), eps = 1: exact Gaussian <= CKS <= simple (worked_values §6)
    exact = analytic_gaussian_delta(3.0, 1.0)
    assert exact == pytest.approx(0.0002075122, rel=1e-6)
    assert exact <= zcdp_delta_tight(1 / 18, 1.0) == pytest.approx(0.00070240307, rel=1e-7)
    assert zcdp_delta_tight(1 / 18, 1.0) <= zcdp_delta_simple(1 / 18, 1.0) == pytest.approx(0.018063, rel=1e-4)


def test_conversions_between_notions():
    assert zcdp_from_pure_dp(0.2) == pytest.approx(0.02)
    assert zcdp_from_bounded_range(0.2) == pytest.approx(0.005)
    assert zcdp_from_cdp(0.5, 1.0) == pytest.approx((0.0, 0.5))      # Gaussian sigma = 1
    assert compose_zcdp([0.1, 0.2], xis=[0.0, 0.05]) == pytest.approx((0.05, 0.3))


def test_edge_cases():
    assert zcdp_epsilon_tight(0.0, 1e-6) == 0.0
    assert zcdp_epsilon_tight(0.1, 0.0) == math.inf
    assert zcdp_epsilon_simple(0.1, 0.0) == math.inf
    assert zcdp_delta_tight(0.0, 0.0) == 0.0
    assert zcdp_epsilon_tight(0.1, 1e-6, xi=0.3) == pytest.approx(0.3 + zcdp_epsilon_tight(0.1, 1e-6), rel=1e-9)
    with pytest.raises(ValueError, match="rho"):
        zcdp_epsilon_tight(-0.1, 1e-6)


@settings(max_examples=80, deadline=None)
@given(rho=st.floats(1e-6, 50.0), delta=st.floats(1e-15, 0.5))
def test_tight_is_valid_inverse_and_below_simple(rho, delta):
    tight = zcdp_epsilon_tight(rho, delta)
    assert tight <= zcdp_epsilon_simple(rho, delta) * (1 + 1e-12)
    assert zcdp_delta_tight(rho, tight) <= delta * (1 + 1e-6)
    assert zcdp_epsilon_tight(rho * 1.5, delta) >= tight


# worked_values.md §8, zCDP route for k mechanisms of 0.1 at delta = 1e-6:
# (k, BR rho, BR simple, BR CKS, DP rho, DP simple, DP CKS); CKS also = Steinke's cdp_eps
ZCDP_ROUTE = [(10, 0.0125, 0.8436290681, 0.7002051046, 0.05, 1.7122581363, 1.4715947505),
              (50, 0.0625, 1.9209610944, 1.6599790500, 0.25, 3.9669221888, 3.5422913005),
              (100, 0.125, 2.7532608849, 2.4190931769, 0.5, 5.7565217698, 5.2215344445)]


@pytest.mark.parametrize("k, br_rho, br_simple, br_tight, dp_rho, dp_simple, dp_tight", ZCDP_ROUTE)
def test_zcdp_route_worked_values(k, br_rho, br_simple, br_tight, dp_rho, dp_simple, dp_tight):
    assert k * zcdp_from_bounded_range(0.1) == pytest.approx(br_rho, rel=1e-9)
    assert k * zcdp_from_pure_dp(0.1) == pytest.approx(dp_rho, rel=1e-9)
    assert zcdp_epsilon_simple(br_rho, 1e-6) == pytest.approx(br_simple, rel=1e-9)
    assert zcdp_epsilon_tight(br_rho, 1e-6) == pytest.approx(br_tight, rel=1e-9)
    assert zcdp_epsilon_simple(dp_rho, 1e-6) == pytest.approx(dp_simple, rel=1e-9)
    assert zcdp_epsilon_tight(dp_rho, 1e-6) == pytest.approx(dp_tight, rel=1e-9)
