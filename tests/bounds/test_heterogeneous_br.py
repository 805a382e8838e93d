"""Non-adaptive BR with distinct epsilons: the minimum of valid bounds."""

import itertools

import numpy as np
import pytest

from privloss.bounds.heterogeneous_br import heterogeneous_br_delta, heterogeneous_br_epsilon
from privloss.bounds.optimal_br import theorem2_epsilon
from tests.enumeration import float_epsilon, float_laws


def test_homogeneous_is_theorem_2():
    assert heterogeneous_br_epsilon([0.1] * 10, 1e-6) == pytest.approx(0.628636838773, rel=1e-9)


@pytest.mark.parametrize("epsilons", [(0.2, 0.7), (0.1, 0.3, 0.5), (1.0, 0.25, 0.25)])
@pytest.mark.parametrize("delta", [1e-4, 0.05])
def test_never_below_enumerated_supremum(epsilons, delta):
    grids = [np.linspace(1e-9, e - 1e-9, 11) for e in epsilons]
    truth = max(float_epsilon(*float_laws(epsilons, ts), delta, sum(epsilons)) for ts in itertools.product(*grids))
    assert heterogeneous_br_epsilon(epsilons, delta) >= truth - 1e-9
    assert heterogeneous_br_epsilon(epsilons, delta) <= theorem2_epsilon(len(epsilons), max(epsilons), delta)


def test_delta_form_and_edges():
    value = heterogeneous_br_epsilon([0.1, 0.2, 0.3], 1e-3)
    assert heterogeneous_br_delta([0.1, 0.2, 0.3], value) <= 1e-3 * (1 + 1e-6)
    assert heterogeneous_br_epsilon([0.0, 0.0], 1e-6) == 0.0
    with pytest.raises(ValueError, match="epsilons"):
        heterogeneous_br_epsilon([0.1, -0.2], 1e-6)
