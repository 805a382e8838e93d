"""Soundness at the edges (issue 12 item 5): near the largest possible loss the
accountant's delta is never below the exact optimum.

Reference recipe: Theorem 1 ([KOV] Thm 3.3, Murtagh-Vadhan form) evaluated in mpmath at
50 digits with the float inputs taken exactly (tests/bounds/test_optimal_dp.py,
``_theorem1_mpmath``): delta = (1+e^eps)^-k sum_i C(k,i) [e^{(k-i)eps} - e^{eps_g+i eps}]_+.
A randomized response with parameter eps and a PureDP(eps) event both have this
optimum (RR is the worst case of eps-DP), in every interaction model.
"""

import math

import pytest

from privloss import PureDP, compose
from privloss.events import RandomizedResponse
from tests.bounds.test_optimal_dp import _near_maximum, _theorem1_mpmath


def test_issue_examples():
    # before: 2.245891488835574e-13 (2.4e-7 relative below) and 8.318416668009152e-07
    rr = compose([RandomizedResponse(0.47153718434967623, count=18)], target_epsilon=8.487669316906967,
                 interaction="setwise")
    assert 2.245892028067484e-13 <= rr.delta <= 2.245892028067484e-13 * (1 + 1e-10)
    dp = compose([PureDP(16.94348870936686, count=11)], target_epsilon=186.37837497119304)
    assert 8.318416810089666e-07 <= dp.delta <= 8.318416810089666e-07 * (1 + 1e-10)


@pytest.mark.parametrize("interaction", ["non-adaptive", "adaptive", "setwise"])
@pytest.mark.parametrize("k, epsilon", [(3, 0.7), (18, 0.47153718434967623), (11, 16.94348870936686),
                                        (40, 0.05)])
def test_delta_within_1e6_of_the_largest_loss(interaction, k, epsilon):
    for event in (PureDP(epsilon, count=k), RandomizedResponse(epsilon, count=k)):
        for epsilon_g in _near_maximum(k, epsilon):
            truth = _theorem1_mpmath(k, epsilon, epsilon_g)
            result = compose([event], target_epsilon=epsilon_g, interaction=interaction)
            assert result.delta >= truth, (event, epsilon_g, result.bound)
            assert result.delta <= truth * (1 + 1e-9) + 1e-300, (event, epsilon_g, result.bound)
            for row in result.bounds:       # every bound, not only the winner, stays valid
                if row.applies:
                    assert row.value >= truth, (row.name, event, epsilon_g)


@pytest.mark.parametrize("k, epsilon", [(2, 0.3), (11, 16.94348870936686)])
def test_beyond_the_largest_loss_is_zero_only_exactly(k, epsilon):
    exact_top = k * epsilon
    below = math.nextafter(exact_top, 0.0)
    assert compose([PureDP(epsilon, count=k)], target_epsilon=below).delta >= \
        _theorem1_mpmath(k, epsilon, below)
    assert compose([PureDP(epsilon, count=k)], target_epsilon=2 * exact_top).delta == 0.0
