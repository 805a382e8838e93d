"""Regressions from the soundness review of the analytics algorithms."""

import pytest

from privloss.accounting import compose
from privloss.releases.algorithms import ALGORITHMS
from privloss.releases.algorithms.truncated_gaussian import (failure_probability,
                                                              solve_truncation)
from privloss.query.histogram import Histogram


@pytest.mark.parametrize("name, extra", [
    ("known-gumbel", {"delta": 1e-6}),
    ("unknown-gumbel", {"delta": 1e-6, "d_bar": 50}),
    ("gauss-ordered", {"delta": 1e-6, "d_bar": 50}),
])
def test_non_adaptive_caller_still_gets_adaptive_calibration(name, extra):
    """The k peeling rounds are adaptive: a release calibrated for a caller who
    says "non-adaptive" must still meet the target under adaptive composition."""
    spec = ALGORITHMS[name]
    target_delta = extra.get("delta", 1e-6)
    domain = [f"i{index}" for index in range(60)]
    histogram = Histogram.from_counts({label: 100 - index for index, label in enumerate(domain)},
                                      top=extra.get("d_bar"))
    release = spec.run(histogram, epsilon=1.0, k=10, l0_sensitivity=3, interaction="non-adaptive",
                       domain=domain if spec.domain == "known" else None, **extra)
    total = compose(release.events, target_delta=target_delta, interaction="adaptive")
    assert total.epsilon <= 1.0 * (1 + 1e-9)


def test_truncation_refuses_sigma_beyond_float_resolution():
    assert solve_truncation(5.0, 3, 1, 1e-6) == pytest.approx(25.425, abs=1e-3)
    assert failure_probability(2e6, 1e6, 1.0) > 0
    with pytest.raises(ValueError, match="sigma / linf"):
        solve_truncation(1e17, 3, 1, 1e-6)
    with pytest.raises(ValueError, match="sigma / linf"):
        failure_probability(14.9, 1e17, 1.0)
