"""privloss.aggregate: bounding, mechanisms, accounting, bad input, SQL, CLI."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from privloss.api.aggregate import aggregate, make_query, plan_aggregate
from privloss.query.engines import bounded_aggregates
from privloss.query.sql import UnsupportedSql, parse_sql
from privloss.query.spec import ValueGrid

from tests.aggregate.reference import bounded


def _frame(seed: int, units: int = 25, rows: int = 150, text_groups: bool = True):
    rng = random.Random(seed)
    data = {"uid": [], "g": [], "h": [], "x": [], "y": []}
    for _ in range(rows):
        data["uid"].append(rng.randrange(units))
        group = rng.randrange(6)
        data["g"].append(f"c{group}" if text_groups else group)
        data["h"].append(rng.choice(["p", "q"]))
        data["x"].append(rng.choice([None, rng.uniform(-20, 120), rng.randrange(0, 50)]))
        data["y"].append(rng.uniform(0, 10))
    frame = pd.DataFrame(data)
    frame["x"] = frame["x"].astype(float)
    return frame


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("by", [("g",), ("g", "h")])
def test_bounding_matches_python_reference(seed, by):
    frame = _frame(seed, text_groups=seed != 2)
    grids = {"x": ValueGrid.for_range("x", 0.0, 100.0), "y": ValueGrid.for_range("y", 0, 10)}
    exact = bounded_aggregates(frame, unit="uid", by=by, value_columns=("x", "y"), grids=grids,
                               quantile_columns=("x", "y"), bins=8, max_groups=2,
                               max_rows=3, seed=seed * 7)
    rows = [(r.uid, tuple(getattr(r, b) for b in by),
             {"x": float(r.x), "y": float(r.y)})
            for r in frame.itertuples()]
    expected = bounded(rows, by_integer=len(by) == 1 and seed == 2, unit_integer=True,
                       grids=grids, columns=("x", "y"), max_groups=2, max_rows=3,
                       seed=seed * 7)
    got = {row["group"]: {k: row[k] for k in ("distinct", "rows", "sum", "nonnull", "bins")}
           for row in exact}
    assert got == expected


def _query(**overrides):
    parameters = dict(privacy_unit="uid", by=["g"], aggregations=["count", "sum:x:0:100"],
                      epsilon=1.0, delta=1e-6, keys=[f"c{i}" for i in range(6)],
                      max_groups=2, max_rows_per_group=3)
    parameters.update(overrides)
    return parameters


def test_known_keys_complete_and_neighbouring_fields_equal():
    frame = _frame(4)
    keys = [f"c{i}" for i in range(8)]                  # c6, c7 are empty groups
    first = aggregate(frame, **_query(keys=keys), seed=11)
    extra = pd.DataFrame({"uid": [999] * 3, "g": ["c1", "c2", "c9"], "h": ["p"] * 3,
                          "x": [5.0, 7.0, 9.0], "y": [1.0] * 3})
    second = aggregate(pd.concat([frame, extra]), **_query(keys=keys), seed=11)
    assert [row["group"] for row in first.rows] == [[k] for k in keys]
    assert [row["group"] for row in second.rows] == [[k] for k in keys]
    assert first.columns == second.columns
    assert first.parameters == second.parameters and first.events == second.events
    for a, b in zip(first.rows, second.rows):    # interval widths are public
        for name in first.columns:
            wa = a["ci95"][name][1] - a["ci95"][name][0]
            wb = b["ci95"][name][1] - b["ci95"][name][0]
            assert wa == wb


def test_quantiles_are_bounded_range_events_tighter_than_laplace():
    from privloss.accounting import compose
    from privloss.events import BoundedRange, PureDP

    query = make_query(**_query(aggregations=["quantile:x:0:100:0.25,0.5,0.75"]))
    events = query.plan.events
    assert len(events) == 3 and all(isinstance(e, BoundedRange) for e in events)
    assert all(e.count == 2 for e in events)              # max_groups affected groups each
    as_br = compose(events, target_delta=1e-6, interaction="adaptive").epsilon
    as_pure = compose(tuple(PureDP(e.epsilon, count=e.count) for e in events),
                      target_delta=1e-6, interaction="adaptive").epsilon
    assert as_br <= 1.0 + 1e-9 and as_br < as_pure


@pytest.mark.parametrize("change, message", [
    (dict(aggregations=["sum:missing:0:1"]), "is not a column"),
    (dict(aggregations=["sum:x:5:5"]), "LOW < HIGH"),
    (dict(aggregations=["sum:h:0:1"]), "must be numeric"),
    (dict(privacy_unit="nope"), "is not a column"),
    # 10^9 was refused only by the composition's length check, naming no parameter
    (dict(max_groups=10_001), r"^max_groups must be an integer in \[1, 10,000\], got 10001"),
])
def test_bad_input_leaves_the_ledger_unchanged(tmp_path, change, message):
    from privloss.budget import Ledger

    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_dataset("d", epsilon=5.0, delta=1e-5)
    before = ledger.show("d")
    with pytest.raises((ValueError, TypeError), match=message):
        aggregate(_frame(5), **_query(**change), ledger=ledger, dataset="d", seed=1)
    after = ledger.show("d")
    assert (after["spent_epsilon"], after["releases"]) == (before["spent_epsilon"],
                                                           before["releases"])


def test_ledger_charged_once_and_refused_before_reading(tmp_path):
    from privloss.budget import Ledger, LedgerBudgetError

    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_dataset("d", epsilon=1.5, delta=1e-5)
    aggregate(_frame(6), **_query(), ledger=ledger, dataset="d", seed=1)
    assert ledger.show("d")["releases"] == 1
    with pytest.raises(LedgerBudgetError):
        aggregate(_frame(7), **_query(), ledger=ledger, dataset="d")
    assert ledger.show("d")["releases"] == 1
    planned = plan_aggregate(**_query(), ledger=ledger, dataset="d")
    assert planned["ledger"]["fits"] is False
    again = aggregate(_frame(6), **_query(), ledger=ledger, dataset="d", seed=1)
    assert again.cached and ledger.show("d")["releases"] == 1     # the stored answer, free


def test_dry_run_lists_each_measurement():
    planned = plan_aggregate(**_query(aggregations=["count", "mean:x:0:100",
                                                    "quantile:x:0:100:0.5"], keys=None))
    names = [m["measurement"] for m in planned["measurements"]]
    assert names == ["rows", "csum:x", "nonnull:x", "quantile:x:0.5", "distinct"]
    assert planned["guarantee"]["epsilon"] <= 1.0
    assert planned["threshold"] >= 2


@pytest.mark.parametrize("text, message", [
    ("SELECT g, COUNT(*) FROM t CROSS JOIN s GROUP BY g", "cross joins"),
    ("SELECT g, COUNT(*) FROM t JOIN s ON t.a < s.a GROUP BY g", "non-equi"),
    ("SELECT g, COUNT(*) FROM t GROUP BY g HAVING COUNT(*) > 2", "HAVING"),
    ("SELECT g, COUNT(*) FROM (SELECT * FROM t) GROUP BY g", "subqueries"),
    ("SELECT g, h, COUNT(*) FROM t GROUP BY g", "neither aggregated nor in GROUP BY"),
    ("SELECT g, MAX(x) FROM t GROUP BY g", "function"),
    ("SELECT g, COUNT(*) FROM t", "needs GROUP BY"),
    ("SELECT g, SUM(z) FROM t GROUP BY g", "no bounds"),
    ("DELETE FROM t", "only SELECT"),
])
def test_sql_refusals(text, message):
    with pytest.raises(UnsupportedSql, match=message):
        parse_sql(text, bounds={"x": (0, 1)}, privacy_unit="uid")


def test_sql_plan():
    parsed = parse_sql("SELECT g, COUNT(*), AVG(x), MEDIAN(x), QUANTILE(x, 0.9) FROM t "
                       "GROUP BY g", bounds={"x": (0, 100)}, privacy_unit="uid")
    assert parsed.table == "t" and parsed.by == ("g",)
    assert [a.name for a in parsed.aggregations] == ["count", "mean(x)",
                                                     "quantile(x,0.5,0.9)"]


def test_cli_sql_dry_run_and_refusal(tmp_path, capsys):
    from privloss.cli.main import main

    path = tmp_path / "t.csv"
    _frame(8).to_csv(path, index=False)
    assert main(["sql", "SELECT g, COUNT(*), AVG(x) FROM t GROUP BY g", "--table",
                 f"t={path}", "--privacy-unit", "uid", "--epsilon", "1", "--delta", "1e-6",
                 "--bounds", "x=0:100", "--dry-run", "--json"]) == 0
    assert main(["sql", "SELECT g, x FROM t GROUP BY g", "--table", f"t={path}",
                 "--privacy-unit", "uid", "--epsilon", "1"]) == 2
    assert main(["aggregate", str(path), "--by", "g", "--count", "--sum", "x:0:100",
                 "--privacy-unit", "uid", "--epsilon", "2", "--delta", "1e-6", "--seed", "3",
                 "--json"]) == 0


def _mechanism_draws(query, exact, runs: int):
    from privloss.releases.aggregate import release_payload
    from privloss.samplers import InsecureSeededSource

    source = InsecureSeededSource(123)
    return [release_payload(query.plan, query.aggregations, exact, keys=query.keys,
                            source=source) for _ in range(runs)]


@pytest.mark.slow
def test_counts_and_sums_unbiased_with_stated_variance():
    """8000 runs: the mean within 4.5 standard errors (P[fail] < 1e-5); the
    sample variance within 5 of its standard errors, sqrt((kurtosis - 1) / n)
    with kurtosis 6 (the Laplace's; the discrete Laplace's tends to it for the
    large scales used here); normal approximation, P[fail] about 1e-6."""
    query = make_query(**_query(keys=["a"], aggregations=["count", "sum:x:0:100"]))
    exact = [{"group": ("a",), "distinct": 3, "rows": 7, "sum": {"x": 123456},
              "nonnull": {"x": 7}, "bins": {}}]
    draws = _mechanism_draws(query, exact, 8000)
    counts = np.array([d["rows"][0]["values"]["count"] for d in draws], dtype=float)
    sums = np.array([d["rows"][0]["values"]["sum(x)"] for d in draws])
    grid = query.plan.grids["x"]
    for values, truth, name, unit in ((counts, 7, "rows", 1.0),
                                      (sums, grid.to_float(123456), "sum:x",
                                       float(grid.step))):
        variance = query.plan.noises[name].variance() * unit ** 2
        assert abs(values.mean() - truth) < 4.5 * math.sqrt(variance / len(values))
        assert abs(values.var() / variance - 1) < 5 * math.sqrt(5 / len(values))


@pytest.mark.parametrize("levels", ["0.9", "0.1,0.95", "0.3333"])
def test_quantile_levels_that_are_not_short_binary_fractions(levels):
    """0.9 is 8106479329266893 / 2^53 exactly: its scores overflowed int64 and the
    release failed after the charge ("the computation failed; the release was
    charged"). At a large epsilon each released quantile is near the exact one."""
    frame = _frame(3, units=3000, rows=20000)      # over 2^10 rows a group: 2^53 * n > 2^63
    release = aggregate(frame, **_query(aggregations=[f"quantile:x:0:100:{levels}"],
                                        epsilon=50.0, max_rows_per_group=10), seed=4)
    bounded = frame.dropna(subset=["x"]).assign(x=lambda f: f["x"].clip(0, 100))
    for row in release.rows:
        values = bounded[bounded["g"] == row["group"][0]]["x"]
        for name, value in row["values"].items():
            level = float(name.split(",")[-1].rstrip(")")) if "," in name else None
            assert 0 <= value <= 100
            if level is not None:
                assert abs(value - values.quantile(level)) < 15, (name, value)


@pytest.mark.slow
def test_quantile_selection_matches_exponential_pmf():
    """Chi-square goodness of fit of 3000 selections against the exact pmf
    (ExponentialMechanism.probabilities), p > 1e-4."""
    from scipy.stats import chisquare

    from privloss.releases import aggregate as mechanisms
    from privloss.mechanisms.exponential import ExponentialMechanism
    from privloss.samplers import InsecureSeededSource

    query = make_query(**_query(keys=["a"], aggregations=["quantile:x:0:100:0.5"],
                                epsilon=0.3))
    plan = query.plan
    m = plan.measurements[0]
    bins = {0: 2, 40: 5, 128: 4, 200: 3, 256: 1}
    source = InsecureSeededSource(5)
    chosen = [mechanisms._quantile(plan, m, bins, 15, source)[0] for _ in range(3000)]
    grid = plan.grids["x"]
    index = np.array([round((v / float(grid.step) - grid.lo) * plan.quantile_bins
                            / (grid.hi - grid.lo)) for v in chosen])
    counts = np.zeros(plan.quantile_bins + 1)
    for b, c in bins.items():
        counts[b] += c
    scores = -np.abs(np.cumsum(counts) * 2 - 15).astype(np.int64)
    probabilities = ExponentialMechanism(plan.strengths[m.name],
                                         score_range=m.linf * 2).probabilities(scores)
    # pool the candidates into 8 cells of similar mass for the test
    edges = np.searchsorted(np.cumsum(probabilities), np.linspace(0, 1, 9)[1:-1])
    cells = np.split(np.arange(len(probabilities)), edges)
    observed = [np.isin(index, cell).sum() for cell in cells if len(cell)]
    expected = [probabilities[cell].sum() * len(index) for cell in cells if len(cell)]
    assert chisquare(observed, np.array(expected) * sum(observed) / sum(expected)).pvalue > 1e-4


def test_unknown_keys_neighbouring_public_fields_equal():
    frame = _frame(9, units=200, rows=1200)
    extra = pd.DataFrame({"uid": [999] * 2, "g": ["c1", "zz"], "h": ["p"] * 2,
                          "x": [5.0, 7.0], "y": [1.0] * 2})
    parameters = _query(keys=None, epsilon=4.0, aggregations=["count", "mean:x:0:100"])
    first = aggregate(frame, **parameters, seed=4)
    second = aggregate(pd.concat([frame, extra]), **parameters, seed=4)
    assert first.parameters == second.parameters and first.events == second.events
    assert first.parameters["threshold"] >= 2
    assert {tuple(row["group"]) for row in first.rows} <= {(f"c{i}",) for i in range(6)}


def test_gaussian_noise_csv_text_values_and_quantiles(tmp_path):
    path = tmp_path / "t.csv"
    frame = _frame(10)
    frame.loc[3, "x"] = None
    frame.to_csv(path, index=False)
    release = aggregate(path, **_query(noise="gaussian", aggregations=[
        "count", "sum:x:0:100", "quantile:x:0:100:0.5,0.9"]), seed=5)
    assert [row["group"] for row in release.rows] == [[f"c{i}"] for i in range(6)]
    for row in release.rows:
        low, high = 0.0, 100.0
        assert low <= row["values"]["quantile(x,0.5)"] <= high
        assert row["ci95"]["quantile(x,0.9)"]["rank_error"] > 0
    assert any(type(e).__name__ == "DiscreteGaussian" for e in release.events)


def test_integer_and_multi_column_keys():
    frame = _frame(11, text_groups=False)
    release = aggregate(frame, **_query(by=["g", "h"], keys=[(0, "p"), (1, "q"), (9, "p")]),
                        seed=6)
    assert [row["group"] for row in release.rows] == [[0, "p"], [1, "q"], [9, "p"]]
    release = aggregate(frame, **_query(by=["g"], keys=[0, 1, 2, 3, 4, 5, 6]), seed=6)
    assert len(release.rows) == 7


@pytest.mark.parametrize("seed", [12, 13])
def test_bounding_matches_reference_with_one_value_column(seed):
    frame = _frame(seed)
    grids = {"x": ValueGrid.for_range("x", 0.0, 100.0)}
    exact = bounded_aggregates(frame, unit="uid", by=("g",), value_columns=("x",), grids=grids,
                               quantile_columns=("x",), bins=8, max_groups=1, max_rows=2,
                               seed=seed)
    rows = [(r.uid, (r.g,), {"x": float(r.x)}) for r in frame.itertuples()]
    expected = bounded(rows, by_integer=False, unit_integer=True, grids=grids, columns=("x",),
                       max_groups=1, max_rows=2, seed=seed)
    got = {row["group"]: {k: row[k] for k in ("distinct", "rows", "sum", "nonnull", "bins")}
           for row in exact}
    assert got == expected


@pytest.mark.parametrize("text, message", [
    ("SELECT country, COUNT(*) FROM retail GROUP BY 'country", "does not parse"),
    ("SELECT country, COUNT(*) FROM retail WHERE " + "NOT " * 3000 + "1 GROUP BY country",
     "nested too deeply|does not parse"),
])
def test_sql_that_breaks_the_tokenizer_or_the_stack_is_refused_cleanly(text, message):
    """sqlglot raises TokenError / RecursionError here, not ParseError."""
    with pytest.raises(UnsupportedSql, match=message):
        parse_sql(text, bounds={}, privacy_unit="CustomerID")
