"""Private clamping bounds (``COL:auto``, issue 22 item 7): the pre-pass's
events are charged once with the release, dry runs charge nothing, bad values
are refused before any charge, the engine's rank counts are exact, the
estimates are close to the true quantiles at large epsilon on the retail data,
and every estimate's grid stays within the placeholder the noise was
calibrated for."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from privloss.api import auto_bounds as ab
from privloss.api.aggregate import aggregate, auto_query, plan_aggregate

pytest.importorskip("duckdb")

RETAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "online_retail.csv.gz"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("PRIVLOSS_FINGERPRINT_KEY", "11" * 32)


def _frame(seed: int = 1, units: int = 40, rows: int = 300) -> pd.DataFrame:
    rng = random.Random(seed)
    return pd.DataFrame({"uid": [rng.randrange(units) for _ in range(rows)],
                         "g": [f"c{rng.randrange(4)}" for _ in range(rows)],
                         "x": [rng.choice([None, rng.uniform(-3, 70), 0.0, 5.0])
                               for _ in range(rows)]}).astype({"x": float})


def _query(**overrides) -> dict:
    parameters = dict(privacy_unit="uid", by=["g"], aggregations=["count", "mean:x:auto"],
                      epsilon=2.0, delta=1e-6, keys=[f"c{i}" for i in range(4)],
                      max_groups=2, max_rows_per_group=3)
    parameters.update(overrides)
    return parameters


def _ledger(tmp_path, epsilon=10.0):
    from privloss.budget import Ledger
    tmp_path.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_dataset("d", epsilon=epsilon, delta=1e-5)
    return ledger


# ---------------------------------------------------------------------------
# the plan: public events, the share, the guarantee

def test_events_are_the_release_at_90_percent_and_two_estimates_per_column():
    from privloss.accounting import compose
    from privloss.events import BoundedRange

    query, auto, events = auto_query(**_query(aggregations=["mean:x:auto",
                                                            "quantile:y:auto:0.5"]))
    assert auto.columns == ("x", "y")
    assert events[-4:] == auto.events and all(isinstance(e, BoundedRange) for e in auto.events)
    assert auto.strength * 4 <= Fraction(2) * ab.AUTO_SHARE       # rounded down
    assert Fraction(query.epsilon) + auto.strength * 4 <= 2     # the rest, rounded down
    assert query.epsilon == pytest.approx(1.8)
    total = compose(events, target_delta=1e-6, interaction="adaptive")
    assert total.epsilon <= 2.0
    # the placeholder grid: [-2^20, 2^20] units, whatever the data
    assert {c: (g.lo, g.hi) for c, g in query.plan.grids.items()} == \
        {"x": (-(1 << 20), 1 << 20), "y": (-(1 << 20), 1 << 20)}


def test_without_auto_nothing_changes():
    query, auto, events = auto_query(**_query(aggregations=["count", "mean:x:0:10"]))
    assert auto is None and events == query.plan.events and query.epsilon == 2.0


def test_dry_run_shows_the_share_and_charges_nothing(tmp_path):
    ledger = _ledger(tmp_path)
    planned = plan_aggregate(**_query(), ledger=ledger, dataset="d")
    assert planned["auto_bounds"]["columns"] == ["x"]
    assert planned["auto_bounds"]["share_of_epsilon"] == 0.1
    assert sum("BoundedRange" in e for e in planned["events"]) == 2
    assert planned["guarantee"]["epsilon"] <= 2.0 and planned["ledger"]["fits"]
    assert ledger.show("d")["releases"] == 0 and ledger.show("d")["spent_epsilon"] == 0


# ---------------------------------------------------------------------------
# one release, one charge

def test_charged_once_with_the_release_and_the_bounds_reported(tmp_path):
    ledger = _ledger(tmp_path)
    _, _, events = auto_query(**_query())
    verdict = ledger.would_admit("d", {"probe": 1}, events)     # read-only
    release = aggregate(_frame(), **_query(), ledger=ledger, dataset="d", seed=3)
    summary = ledger.show("d")
    assert summary["releases"] == 1
    # the one charge holds the release's events and the estimates' together
    assert summary["spent_epsilon"] == verdict["spent_epsilon"]
    release_only = _ledger(tmp_path / "other").would_admit("d", {"probe": 1},
                                                           events[:-2])["spent_epsilon"]
    assert summary["spent_epsilon"] > release_only
    assert release.events == events
    low, high = release.parameters["auto_bounds"]["estimated"]["x"]
    assert low < high and release.parameters["epsilon"] == 2.0
    grid = ab.grid_for("x", low, high)    # the estimates on the release's grid
    for row in release.rows:      # a mean is clipped to that range
        assert grid.to_float(grid.lo) <= row["values"]["mean(x)"] <= grid.to_float(grid.hi)
    again = aggregate(_frame(), **_query(), ledger=ledger, dataset="d", seed=3)
    assert again.cached and ledger.show("d")["releases"] == 1
    assert again.parameters["auto_bounds"]["estimated"] == {"x": [low, high]}


def test_without_a_ledger_the_guarantee_includes_the_estimates():
    release = aggregate(_frame(), **_query(), seed=4)
    assert release.guarantee["epsilon"] <= 2.0
    assert release.spent["epsilon"] > 0


# ---------------------------------------------------------------------------
# bad input: one line, before any charge

@pytest.mark.parametrize("change, message", [
    ({"aggregations": ["mean:x:autox"]}, "COL:LOW:HIGH"),
    ({"aggregations": ["quantile:x:auto"]}, "COL:LOW:HIGH:Q"),
    ({"aggregations": ["mean:x:auto"], "grid_exponents": {"x": 3}}, "auto-bounded"),
    ({"max_rows_per_group": 0}, "max_rows_per_group"),
    ({"epsilon": 1e-12}, "epsilon"),
])
def test_bad_values_refused_before_any_charge(tmp_path, change, message):
    ledger = _ledger(tmp_path)
    with pytest.raises((ValueError, TypeError)) as raised:
        aggregate(_frame(), **_query(**change), ledger=ledger, dataset="d", seed=1)
    text = str(raised.value)
    assert message in text and "\n" not in text
    assert ledger.show("d")["releases"] == 0


def test_sql_bounds_auto_and_a_bad_text(tmp_path):
    from privloss.api.sql import sql

    query = "SELECT g, AVG(x) FROM t GROUP BY g"
    common = dict(tables={"t": _frame()}, privacy_unit="uid", epsilon=2.0, delta=1e-6,
                  keys=[f"c{i}" for i in range(4)], max_rows_per_group=3, seed=2)
    release = sql(query, bounds={"x": "auto"}, **common)
    assert set(release.parameters["auto_bounds"]["estimated"]) == {"x"}
    with pytest.raises(ValueError, match="bounds of 'x' must be"):
        sql(query, bounds={"x": "autox"}, **common)


def test_cli_auto_and_autox(tmp_path, capsys):
    from privloss.cli.main import main

    data = tmp_path / "d.csv"
    _frame().to_csv(data, index=False)
    flags = [str(data), "--privacy-unit", "uid", "--by", "g", "--count", "--epsilon", "2",
             "--delta", "1e-6", "--max-rows-per-group", "3", "--seed", "5"]
    assert main(["aggregate", *flags, "--mean", "x:autox"]) == 2
    err = capsys.readouterr().err
    assert "--mean must be COL:LOW:HIGH" in err and err.count("\n") == 1
    assert main(["aggregate", *flags, "--mean", "x:auto", "--dry-run"]) == 0
    assert "bounds auto for x: 10% of epsilon" in capsys.readouterr().out
    assert main(["aggregate", *flags, "--mean", "x:auto", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["parameters"]["auto_bounds"]["estimated"]) == {"x"}
    assert main(["sql", "SELECT g, SUM(x) FROM t GROUP BY g", "--table", f"t={data}",
                 "--privacy-unit", "uid", "--bounds", "x=autox", "--epsilon", "1",
                 "--delta", "1e-6"]) == 2
    assert "COL=auto" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# the engine statistic and the mechanism

def test_rank_counts_match_a_python_count():
    """Bounding that keeps every row (max_groups >= groups, rows per group
    >= rows): the counts are the plain ``#{x <= t}`` of the clamped values."""
    from privloss.query import engines

    frame = _frame(7, units=10, rows=60)
    query, auto, _ = auto_query(**_query(max_groups=4, max_rows_per_group=60))
    plan = ab.prepass_plan(query.query_plan(frame, 11), auto)
    groups = engines.run(plan).groups
    values = [x for x in frame["x"] if x == x]
    got = [sum(row["ranks"]["x"][j] for row in groups) for j in range(len(ab.CANDIDATES))]
    assert got == [sum(1 for x in values if Fraction(round(x * 1024)) / 1024 <= c)
                   for c in ab.CANDIDATES]
    assert sum(row["nonnull"]["x"] for row in groups) == len(values)


def test_large_epsilon_picks_the_closest_candidate():
    from privloss.samplers import InsecureSeededSource

    _, auto, _ = auto_query(**_query(epsilon=100.0))
    auto = ab.AutoBounds(auto.columns, 100.0, auto.share, Fraction(50), auto.events, 1, 1)
    # n = 100: #{x <= 1} = 5 (and 6 at 2), #{x <= 8} = 95 (93 at 4, 96 at 16): the 5% and
    # 95% ranks are met exactly at one candidate each; every other is a rank or more off
    values = [1.0] * 5 + [1.5] + [3.0] * 87 + [5.0] * 2 + [12.0] + [100.0] * 4
    counts = [sum(1 for v in values if v <= c) for c in ab.CANDIDATES]
    rows = [{"ranks": {"x": counts}, "nonnull": {"x": len(values)}}]
    got = ab.estimate_bounds(rows, auto, source=InsecureSeededSource(1))
    assert got == {"x": (1.0, 8.0)}


def test_every_estimate_stays_within_the_placeholder():
    """For every pair of candidates the release grid has |lo|, |hi| <= 2^20
    units, so the sum's and the centred sum's sensitivities are at most the
    placeholder's (the charged noise stays valid)."""
    from privloss.query.spec import ValueGrid

    placeholder = ValueGrid.for_range("x", -1.0, 1.0, ab.PLACEHOLDER_BITS)
    values = [float(c) for c in ab.CANDIDATES]
    for i, low in enumerate(values):
        for high in values[i + 1:]:
            grid = ab.grid_for("x", low, high)
            assert grid.lo < grid.hi
            assert grid.largest_magnitude <= placeholder.largest_magnitude
            assert grid.centred_magnitude <= placeholder.centred_magnitude


# ---------------------------------------------------------------------------
# the retail data: close to the true quantiles at large epsilon

@pytest.mark.skipif(not RETAIL.exists(), reason="needs the shared retail data")
def test_retail_estimates_near_the_true_quantiles():
    """G = 1, R = 1000 keeps nearly every row of a customer's one country;
    each estimate is the candidate closest in rank to 5% / 95% of the kept
    values, so it is within a factor 2 of the true quantile of all rows."""
    import numpy as np

    release = aggregate(str(RETAIL), privacy_unit="CustomerID", by=["Country"],
                        aggregations=["count", "mean:UnitPrice:auto"], epsilon=50.0,
                        delta=1e-6, max_groups=1, max_rows_per_group=1000, seed=9)
    low, high = release.parameters["auto_bounds"]["estimated"]["UnitPrice"]
    frame = pd.read_csv(RETAIL, usecols=["CustomerID", "UnitPrice"], encoding="latin-1")
    prices = frame.dropna()["UnitPrice"].to_numpy()
    true_low, true_high = np.quantile(prices, [0.05, 0.95])
    assert true_low / 2 <= low <= true_low * 2
    assert true_high / 2 <= high <= true_high * 2


# ---------------------------------------------------------------------------
# max_groups="auto" (privloss.api.auto_l0)

def _units_frame() -> pd.DataFrame:
    """95 units in groups {a, b}, 5 units in {a, b, c}: #{k <= 2} = 95 of 100,
    #{k <= 4} = 100, #{k <= 1} = 0, so the 95% candidate is 2 alone."""
    rows = [(u, g, float(u % 7)) for u in range(95) for g in ("a", "b")]
    rows += [(u, g, 1.0) for u in range(95, 100) for g in ("a", "b", "c")]
    return pd.DataFrame(rows, columns=["uid", "g", "x"])


def test_auto_max_groups_events_and_the_groups_statistic():
    from privloss.accounting import compose
    from privloss.api.auto_l0 import GROUP_CANDIDATES
    from privloss.events import ApproxDP, BoundedRange
    from privloss.query import engines

    parameters = _query(max_groups="auto", keys=None, aggregations=["count", "mean:x:auto"])
    query, auto, events = auto_query(**parameters)
    assert isinstance(events[0], BoundedRange) and isinstance(events[1], ApproxDP)
    assert events[2:] == auto.bounds.events and len(events) == 4
    assert events[1].epsilon == max(q.plan.guarantee["epsilon"] for q in auto.queries.values())
    assert compose(events, target_delta=1e-6, interaction="adaptive").epsilon <= 2.0
    assert tuple(auto.queries) == GROUP_CANDIDATES and query.max_groups == 1
    plan = query.query_plan(_units_frame(), 5)
    assert engines.groups_per_unit(plan, GROUP_CANDIDATES) == \
        (100, [0, 95] + [100] * (len(GROUP_CANDIDATES) - 2))


def test_auto_max_groups_charged_once_and_estimated(tmp_path):
    ledger = _ledger(tmp_path, epsilon=60.0)
    parameters = _query(max_groups="auto", epsilon=50.0, keys=["a", "b", "c"],
                        aggregations=["count", "mean:x:auto"])
    _, _, events = auto_query(**parameters)
    verdict = ledger.would_admit("d", {"probe": 1}, events)
    release = aggregate(_units_frame(), **parameters, ledger=ledger, dataset="d", seed=2)
    assert ledger.show("d")["releases"] == 1
    assert ledger.show("d")["spent_epsilon"] == verdict["spent_epsilon"]
    estimated = release.parameters["auto_bounds"]["estimated"]
    assert estimated["max_groups"] == 2 and release.parameters["max_groups"] == 2
    assert set(estimated) == {"max_groups", "x"}


@pytest.mark.parametrize("change, message", [
    ({"max_groups": "autox"}, "max_groups must be an integer >= 1 or 'auto', got 'autox'"),
    ({"max_groups": "auto", "epsilon": "max"}, "cannot be combined with max_groups 'auto'"),
])
def test_auto_max_groups_bad_values_refused_first(tmp_path, change, message):
    ledger = _ledger(tmp_path)
    with pytest.raises(ValueError) as raised:
        aggregate(_frame(), **_query(**change), ledger=ledger, dataset="d", seed=1)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert ledger.show("d")["releases"] == 0


def test_auto_max_groups_other_engines_refused():
    _, auto, _ = auto_query(**_query(max_groups="auto"))
    with pytest.raises(ValueError, match="duckdb engine only"):
        auto.check_engine("spark")


def test_auto_max_groups_dry_run_and_cli(tmp_path, capsys):
    from privloss.cli.main import main

    ledger = _ledger(tmp_path)
    planned = plan_aggregate(**_query(max_groups="auto"), ledger=ledger, dataset="d")
    assert planned["auto_bounds"]["max_groups"]["share_of_epsilon"] == 0.1
    assert planned["guarantee"]["epsilon"] <= 2.0
    assert ledger.show("d")["releases"] == 0
    data = tmp_path / "u.csv"
    _units_frame().to_csv(data, index=False)
    flags = ["aggregate", str(data), "--privacy-unit", "uid", "--by", "g", "--count",
             "--epsilon", "40", "--delta", "1e-6", "--seed", "3"]
    with pytest.raises(SystemExit) as stopped:     # argparse's own one line, exit 2
        main([*flags, "--max-groups", "autox"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--max-groups must be an integer >= 1 or 'auto'" in err
    assert err.strip().splitlines()[-1].startswith("privloss aggregate: error:")
    assert main([*flags, "--max-groups", "auto", "--dry-run"]) == 0
    assert "max-groups auto: 10% of epsilon" in capsys.readouterr().out
    assert main([*flags, "--max-groups", "auto"]) == 0
    assert "# max-groups 2 (private estimate" in capsys.readouterr().out


@pytest.mark.slow
def test_spark_release_with_auto_bounds_equals_duckdb(spark):
    """The rank counts compile for Spark too: the same seed, the same release."""
    from tests.conftest import spark_skip_reason
    if spark_skip_reason() is not None:
        pytest.skip(spark_skip_reason())
    duck = aggregate(_frame(), **_query(), seed=9)
    on_spark = aggregate(_frame(), **_query(), seed=9, engine="spark")
    assert on_spark.rows == duck.rows
    assert on_spark.parameters["auto_bounds"] == duck.parameters["auto_bounds"]
