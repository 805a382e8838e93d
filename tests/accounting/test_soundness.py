"""Every bound the accountant reports is never below the true optimum.

Ground truth from mpmath enumeration (tests/enumeration.py): for a non-adaptive
composition of BR mechanisms the optimum is a supremum over one t per BR
mechanism, so the maximum over a grid of t vectors is a lower bound on it, and
every valid bound must lie above that maximum. Pure-DP mechanisms are
RR_{2eps,eps}, exact. Adaptive and set-wise compositions are at least as costly.
"""

import itertools

import numpy as np
import pytest

from privloss import BoundedRange, Interaction, PrivacyAccountant, PureDP
from tests.enumeration import (br_mechanism, dp_mechanism, float_epsilon, float_laws, invert,
                               product_delta)

CASES = [
    # (dp epsilons, br epsilons)
    ((0.3, 0.3), ()),
    ((), (0.5, 0.5, 0.5)),
    ((0.2,), (0.4, 0.4)),
    ((0.1, 0.6), (0.3,)),
    ((), (0.2, 0.7)),
    ((1.0,), (1.0, 1.0, 1.0)),
]


def enumerated_lower_bound(dp, br, delta, grid=9):
    """max over a t-grid of the exact non-adaptive epsilon at delta (a lower bound on the optimum).

    Checked against the mpmath enumeration of tests/enumeration.py in
    test_float_enumeration_matches_mpmath."""
    widths = [2 * e for e in dp] + list(br)
    total = sum(dp) + sum(br)
    grids = [np.linspace(1e-9, e - 1e-9, grid) for e in br]
    best = 0.0
    for ts in itertools.product(*grids) if br else [()]:
        p_mass, q_mass = float_laws(widths, [e for e in dp] + list(ts))
        best = max(best, float_epsilon(p_mass, q_mass, delta, total))
    return best


def test_float_enumeration_matches_mpmath():
    mechanisms = [dp_mechanism(0.3), br_mechanism(0.5, 0.2), br_mechanism(0.5, 0.35)]
    exact = float(invert(lambda eg: product_delta(mechanisms, eg), 1e-3, 1.6, iterations=60))
    p_mass, q_mass = float_laws([0.6, 0.5, 0.5], [0.3, 0.2, 0.35])
    assert float_epsilon(p_mass, q_mass, 1e-3, 1.6) == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize("dp, br", CASES)
@pytest.mark.parametrize("delta", [1e-4, 0.05])
def test_every_reported_bound_is_above_the_enumerated_optimum(dp, br, delta):
    truth = enumerated_lower_bound(dp, br, delta)
    events = [PureDP(e) for e in dp] + [BoundedRange(e) for e in br]
    for interaction in Interaction:
        result = PrivacyAccountant(events, interaction=interaction).epsilon(delta)
        for row in result.bounds:
            if row.applies:
                assert row.value >= truth - 1e-9 * max(1.0, truth), (interaction, row.name, row.value, truth)
        assert result.value >= truth - 1e-9 * max(1.0, truth)
