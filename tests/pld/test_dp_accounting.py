"""Agreement with Google's dp-accounting PLD accountant on shared scenarios.

dp-accounting's answers are estimates on a 1e-4 grid (pessimistic by default),
so they must land inside our certified bracket up to their own discretisation
error (a relative 1e-5 slack here). Skipped when dp-accounting is not installed.
"""

import pytest

pld_module = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

from privloss.pld import gaussian_pld, laplace_pld, randomized_response_pld  # noqa: E402

SLACK = 1e-5


def near(bracket, value):
    return bracket.lower * (1 - SLACK) - 1e-12 <= value <= bracket.upper * (1 + SLACK) + 1e-12


@pytest.mark.parametrize("scale, count", [(10.0, 100), (1.0, 30)])
def test_laplace_composition(scale, count):
    theirs = pld_module.from_laplace_mechanism(scale).self_compose(count)
    ours = laplace_pld(scale).self_compose(count)
    assert near(ours.epsilon(1e-6), theirs.get_epsilon_for_delta(1e-6))
    assert near(ours.delta(2.0), theirs.get_delta_for_epsilon(2.0))


def test_gaussian_composition():
    theirs = pld_module.from_gaussian_mechanism(2.0).self_compose(50)
    ours = gaussian_pld(2.0).self_compose(50)
    assert near(ours.epsilon(1e-6), theirs.get_epsilon_for_delta(1e-6))
    assert near(ours.delta(3.0), theirs.get_delta_for_epsilon(3.0))


def test_randomized_response():
    # the pure-DP worst case of dp-accounting is randomized response
    from dp_accounting.pld import common

    theirs = pld_module.from_privacy_parameters(common.DifferentialPrivacyParameters(0.2, 0.0))
    theirs = theirs.self_compose(25)
    ours = randomized_response_pld(0.2).self_compose(25)
    assert near(ours.delta(1.0), theirs.get_delta_for_epsilon(1.0))
