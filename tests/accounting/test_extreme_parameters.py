"""Far outside the documented range (epsilon up to 20), the accountant must still
never be optimistic: bounds whose arithmetic breaks are dropped (reported with the
reason), others answer, and nothing raises a bare OverflowError or math error.

Regression for: BoundedRange(1e300) reported epsilon 5e-6 (rdp-exact lost eps - t
to rounding); gaussian_pld(1e-100) reported epsilon 0; PureDP(1e300) raised."""

import math
import warnings

import pytest

from privloss import pld
from privloss.accounting import PrivacyAccountant, compose
from privloss.bounds import rdp
from privloss.events import BoundedRange, DiscreteLaplace, Gaussian, Laplace, PureDP
from privloss.pld._law import GridTooLargeError

HUGE = [1e6, 1e12, 1e16, 1e20, 1e300]


@pytest.fixture(autouse=True)
def _quiet_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy reports inf squares
        yield


@pytest.mark.parametrize("epsilon", HUGE)
def test_bounded_range_rdp_is_never_below_the_truth(epsilon):
    # one epsilon-BR mechanism is (epsilon - log 2 - 1e-6-ish)-DP at delta 1e-6 at best
    assert rdp.rdp_epsilon(1e-6, br_epsilons=[epsilon]) >= 0.999 * epsilon
    assert rdp.rdp_delta(epsilon / 2, br_epsilons=[epsilon]) == 1.0
    for alpha in (1.5, 2.0, 10.0):
        assert rdp.br_renyi(epsilon, alpha) >= 0.999 * epsilon


@pytest.mark.parametrize("event", [
    *(BoundedRange(epsilon) for epsilon in HUGE),
    *(PureDP(epsilon) for epsilon in HUGE),
    *(Laplace(scale=1 / epsilon, sensitivity=1) for epsilon in HUGE),
    *(DiscreteLaplace(scale=1 / epsilon, sensitivity=1) for epsilon in HUGE),
], ids=repr)
def test_accountant_stays_pessimistic(event):
    epsilon = event.guarantee.epsilon if hasattr(event, "guarantee") else event.epsilon
    result = compose([event], target_delta=1e-6)
    assert result.epsilon >= 0.99 * epsilon - 1.0
    assert PrivacyAccountant([event]).delta(min(5.0, epsilon / 2)).value == 1.0


def test_dropped_bounds_say_why():
    rows = compose([Laplace(scale=1e-6, sensitivity=1)], target_delta=1e-6).bounds
    reasons = {row.name: row.reason for row in rows if not row.applies}
    assert "numeric range" in reasons["pld"] and "numeric range" in reasons["drv-advanced"]


@pytest.mark.parametrize("sigma", [1e-7, 1e-20, 1e-100])
def test_tiny_gaussian_noise_is_never_free(sigma):
    with pytest.raises(GridTooLargeError):
        pld.gaussian_pld(sigma).epsilon(1e-6)
    epsilon = compose([Gaussian(sigma=sigma, sensitivity=1)], target_delta=1e-6).epsilon
    assert epsilon >= 1 / (2 * sigma * sigma) or math.isinf(epsilon)
