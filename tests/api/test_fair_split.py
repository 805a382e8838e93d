"""The default budget split: error-balancing with a floor of 1/(4m) per
measurement; an explicit ``budget_split`` is used as given (issue 22)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from privloss.api.aggregate import make_query, plan_aggregate
from privloss.releases.calibration import FAIR_FLOOR, fair_shares

AGGREGATIONS = ["count", "count_distinct", "mean:p:0:100"]


@given(st.lists(st.floats(min_value=1e-12, max_value=1e12), min_size=1, max_size=12))
def test_fair_shares_floor_and_total(costs):
    shares = fair_shares({str(i): c for i, c in enumerate(costs)})
    assert math.isclose(sum(shares.values()), 1.0, rel_tol=1e-9)
    floor = FAIR_FLOOR / len(costs)
    assert all(share >= floor * (1 - 1e-12) for share in shares.values())
    # the order of the costs is kept (a larger cost never gets a smaller share)
    pairs = sorted(zip(costs, (shares[str(i)] for i in range(len(costs)))))
    assert all(a[1] <= b[1] * (1 + 1e-12) for a, b in zip(pairs, pairs[1:]))


def test_shares_above_the_floor_keep_their_ratios():
    shares = fair_shares({"a": 1e-9, "b": 1.0, "c": 3.0})
    assert shares["a"] == pytest.approx(0.25 / 3)
    assert shares["c"] / shares["b"] == pytest.approx(3.0)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_no_measurement_below_a_quarter_of_its_even_share(noise):
    planned = plan_aggregate(privacy_unit="u", by=["c"], aggregations=AGGREGATIONS,
                             epsilon=0.3, delta=1e-6, max_rows_per_group=50, noise=noise)
    shares = planned["split"]["shares"]
    assert len(shares) == 4 and not planned["split"]["given"]
    assert min(shares.values()) >= 1 / 16 * (1 - 1e-9)
    assert all(m["share"] is not None for m in planned["measurements"])
    if noise == "laplace":     # pure DP: the shares are of epsilon itself
        distinct = next(m for m in planned["measurements"] if m["measurement"] == "distinct")
        assert distinct["epsilon_alone"] >= 0.3 / 16 * (1 - 1e-4)


def test_an_explicit_split_is_used_as_given():
    split = {"count": 1.0, "count_distinct": 0.001, "mean(p)": 1.0}
    query = make_query(privacy_unit="u", by=["c"], aggregations=AGGREGATIONS, epsilon=0.3,
                       delta=1e-6, max_rows_per_group=50, budget_split=split)
    strengths = query.plan.strengths
    # the weights are proportional to the split: distinct gets 1/1000 of count's strength
    assert float(strengths["distinct"] / strengths["rows"]) == pytest.approx(0.001, rel=1e-4)
    assert query.plan.shares["distinct"] < 1 / 16


def test_topk_dry_run_shows_its_split():
    from privloss.api.planning import plan

    planned = plan("topk", epsilon=0.5, delta=1e-6, l0=5, k=10, d_bar=50)
    split = planned.to_dict()["split"]
    assert len(split) == 2 and sum(entry["share"] for entry in split) == pytest.approx(1)
    assert "  split      " in str(planned)
