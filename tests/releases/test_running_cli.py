"""``privloss running`` and ``privloss.running``: the data path, the ledger,
bad input, and identical behaviour on neighbouring inputs."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import privloss
from privloss.query.inputs import resolve_input
from privloss.cli.main import main
from privloss.query.running_source import (RunningQuery, bounded_period_totals,
                                               running_totals_sql)

ROWS = """cust,when,amount
a,2024-01-01 10:00,5
a,2024-01-01 11:00,7
a,2024-01-01 12:00,100
a,2024-01-02,3
a,2024-01-03,3
b,2024-01-02,-4
b,garbage,3
,2024-01-02,1
c,2024-01-05,2
c,2023-12-31,2
d,2024-01-09,1
"""


def _csv(tmp_path, text=ROWS, name="rows.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _common(path, *extra):
    return ["running", path, "--privacy-unit", "cust", "--time-column", "when", "--period",
            "day", "--start", "2024-01-01", "--end", "2024-01-09",
            "--max-periods-per-unit", "2", "--max-rows-per-period", "2", *extra]


@pytest.mark.parametrize("statistic, period, start, periods, expected", [
    ("count", "day", dt.date(2024, 1, 1), 5, [2, 2, 0, 0, 1]),
    ("count-distinct", "day", dt.date(2024, 1, 1), 5, [1, 1, 0, 0, 1]),
    ("sum", "day", dt.date(2024, 1, 1), 5, [20, 3, 0, 0, 2]),
    ("count", "week", dt.date(2024, 1, 1), 2, [4, 1]),
    ("count", "month", dt.date(2023, 12, 1), 2, [1, 5]),
])
def test_bounded_period_totals(tmp_path, statistic, period, start, periods, expected):
    # a: 3 rows on day 1 (capped at 2), 1 on day 2, day 3 beyond its 2 earliest periods;
    # b: "garbage" time dropped, -4 clamped to 0; the row without a unit dropped;
    # c: 2023-12-31 outside the window (inside for the month query); sums clamp to [0, 10]
    # per row and [0, 2 * 10] per unit and period
    query = RunningQuery(period, start, periods, statistic, 2, 2, 0, 10)
    totals = bounded_period_totals(resolve_input(_csv(tmp_path)), query, unit="cust",
                                   time="when", value="amount")
    assert totals.tolist() == expected


@pytest.mark.parametrize("max_periods", [5, 6, 10 ** 9])
def test_max_periods_at_or_above_the_horizon_keeps_every_period(tmp_path, max_periods):
    """A unit may count in every period when max_periods >= periods: the totals
    are the uncut ones (10^9 failed in DuckDB's min(p, n), which needs n < 10^6,
    after the charge)."""
    query = RunningQuery("day", dt.date(2024, 1, 1), 5, "count", max_periods, 2, 0, 10)
    totals = bounded_period_totals(resolve_input(_csv(tmp_path)), query, unit="cust",
                                   time="when", value="amount")
    assert totals.tolist() == [2, 2, 1, 0, 1]


def test_generated_sql_holds_only_our_identifiers():
    query = RunningQuery("week", dt.date(2024, 1, 1), 3, "sum", 2, 5, -3, 10)
    sql = running_totals_sql("privloss_source", query)
    assert "2024-01-01" in sql and "2024-01-22" in sql and "-15" in sql and "50" in sql
    # the caller's column names are projected through the relational API, never in SQL
    for word in ("cust", "when", "amount"):
        assert word not in sql


def test_hostile_column_names_are_only_identifiers(tmp_path):
    path = _csv(tmp_path, 'u"; DROP TABLE x; --,t\n1,2024-01-01\n2,2024-01-02\n')
    query = RunningQuery("day", dt.date(2024, 1, 1), 2, "count", 1, 1)
    totals = bounded_period_totals(resolve_input(path), query,
                                   unit='u"; DROP TABLE x; --', time="t")
    assert totals.tolist() == [1, 1]


def test_cli_json_release(tmp_path, capsys):
    code, out, err = _run(capsys, *_common(_csv(tmp_path), "--count", "--epsilon", "1",
                                           "--seed", "3", "--json"))
    assert code == 0, err
    payload = json.loads(out)
    labels = [row["period"] for row in payload["periods"]]
    assert labels == [f"2024-01-0{day}" for day in range(1, 10)]
    row = payload["periods"][0]
    assert set(row) == {"period", "total", "variance", "ci95", "ci95_guaranteed", "monotone"}
    monotone = [r["monotone"] for r in payload["periods"]]
    assert monotone == sorted(monotone) and min(monotone) >= 0
    assert payload["events"][0].startswith("PureDP(") and payload["spent"]["epsilon"] <= 1.0 + 1e-9
    assert payload["parameters"]["sensitivity"] == {"periods_per_unit": 2, "per_period": 2}


def test_python_api_matches_the_cli(tmp_path, capsys):
    path = _csv(tmp_path)
    code, out, _ = _run(capsys, *_common(path, "--count-distinct", "--epsilon", "2", "--seed",
                                         "8", "--json"))
    result = privloss.running(path, privacy_unit="cust", time_column="when", period="day",
                              start="2024-01-01", end="2024-01-09", count_distinct=True,
                              max_periods_per_unit=2, max_rows_per_period=2, epsilon=2.0,
                              seed=8)
    assert code == 0
    assert json.loads(out)["periods"] == json.loads(json.dumps(result.payload["periods"]))


def test_dry_run_reads_and_charges_nothing(tmp_path, capsys):
    ledger = tmp_path / "budget.sqlite"
    assert _run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "shop",
                "--budget-epsilon", "1")[0] == 0
    code, out, err = _run(capsys, *_common(tmp_path / "missing.csv", "--count", "--epsilon",
                                           "0.5", "--dry-run", "--json", "--ledger", ledger,
                                           "--dataset", "shop"))
    assert code == 0, err
    plan = json.loads(out)
    assert plan["ledger"]["fits"] and plan["periods"] == 9 and plan["levels"] == 5
    code, out, _ = _run(capsys, "ledger", "show", "--ledger", ledger, "--dataset", "shop",
                        "--json")
    assert json.loads(out)["releases"] == 0


def test_ledger_charges_once_and_refuses_with_exit_3(tmp_path, capsys):
    ledger = tmp_path / "budget.sqlite"
    _run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "shop",
         "--budget-epsilon", "1")
    path = _csv(tmp_path)
    flags = ["--ledger", ledger, "--dataset", "shop", "--json"]
    code, out, err = _run(capsys, *_common(path, "--count", "--epsilon", "0.75", *flags))
    assert code == 0, err
    assert abs(json.loads(out)["spent"]["epsilon"] - 0.75) < 1e-9
    again = _run(capsys, *_common(path, "--count", "--epsilon", "0.75", *flags))
    assert again[0] == 0 and json.loads(again[1])["spent"]["repeated_query_free"]
    code, _, err = _run(capsys, *_common(path, "--sum", "amount:0:10", "--epsilon", "0.5",
                                         *flags))
    assert code == 3 and "exceeded" in err and "nothing was read" in err
    assert "refused: at most epsilon 0.25 fits" in err          # issue 22: what still fits


@pytest.mark.parametrize("flags, message", [
    (["--count", "--epsilon", "0"], "epsilon must be in [0.001, 100]"),
    (["--count", "--epsilon", "1", "--delta", "0.1"], "delta must be 0 with Laplace"),
    (["--count", "--epsilon", "1", "--noise", "gaussian"], "delta must be in (0, 1) with Gaussian"),
    (["--sum", "amount:5:1", "--epsilon", "1"], "--sum needs LOW <= HIGH"),
    (["--sum", "amount:0.5:1", "--epsilon", "1"], "--sum bounds must be integers"),
    (["--count", "--epsilon", "1", "--end", "9999-12-31"],     # was "start..--end"
     "--start..--end must hold at most 1000000 periods"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, flags, message):
    code, out, err = _run(capsys, *_common(_csv(tmp_path), *flags))
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_column_named_before_any_charge(tmp_path, capsys):
    path = _csv(tmp_path)
    argv = _common(path, "--count", "--epsilon", "1")
    argv[argv.index("cust")] = "nope"
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "--privacy-unit 'nope' not found" in err


def _neighbour(kind):
    rows = ROWS
    if kind == "added":
        rows += "zz,2024-01-03,9\nzz,2024-01-04,9\nzz,2024-01-04,9\nzz,2024-01-08,9\n"
    elif kind == "bad-rows":
        rows += "zz,not a date,9\nzz,2024-01-03,not a number\n"
    return rows


@pytest.mark.parametrize("kind", ["added", "bad-rows"])
@pytest.mark.parametrize("statistic", [["--count"], ["--count-distinct"],
                                       ["--sum", "amount:-5:10"]])
def test_neighbouring_inputs_differ_only_in_noisy_values(tmp_path, capsys, kind, statistic):
    outputs = []
    for name, text in (("d.csv", _neighbour(None)), ("d2.csv", _neighbour(kind))):
        ledger = tmp_path / f"{name}.sqlite"
        _run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "x",
             "--budget-epsilon", "3")
        code, out, err = _run(capsys, *_common(_csv(tmp_path, text, name), *statistic,
                                               "--epsilon", "1", "--seed", "4", "--json",
                                               "--ledger", ledger, "--dataset", "x"))
        payload = json.loads(out)
        shape = [(row["period"], sorted(row), row["variance"],
                  round(row["ci95"][1] - row["ci95"][0], 9) if row["ci95"][0] > 0 else None)
                 for row in payload["periods"]]
        without = {key: value for key, value in payload.items() if key != "periods"}
        outputs.append((code, err, shape, without))
    assert outputs[0] == outputs[1]


def test_gaussian_noise_spends_a_zcdp_event_within_epsilon_delta(tmp_path, capsys):
    code, out, err = _run(capsys, *_common(_csv(tmp_path), "--count", "--epsilon", "1",
                                           "--delta", "1e-6", "--noise", "gaussian", "--seed",
                                           "2", "--json"))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["events"][0].startswith("ZCDP(")
    assert payload["guarantee"]["epsilon"] <= 1.0 + 1e-9
    assert payload["parameters"]["noise"] == "discrete-gaussian"


def test_sum_that_may_decrease_has_no_monotone_fit(tmp_path, capsys):
    code, out, err = _run(capsys, *_common(_csv(tmp_path), "--sum", "amount:-5:10",
                                           "--epsilon", "1", "--seed", "2", "--json"))
    assert code == 0, err
    rows = json.loads(out)["periods"]
    assert "monotone" not in rows[0]
    assert any(row["ci95"][0] < 0 for row in rows)          # no clipping at 0
    assert json.loads(out)["parameters"]["sensitivity"]["per_period"] == 20


def test_extreme_values_clamp_and_never_fail(tmp_path):
    # nan and empty values are dropped; +-inf and 1e300 clamp to the bounds (no error
    # that would depend on one unit's data)
    path = _csv(tmp_path, "cust,when,amount\ne,2024-01-02,nan\nf,2024-01-02,inf\n"
                          "g,2024-01-02,-inf\nh,2024-01-02,1e300\nk,2024-01-02,\n")
    query = RunningQuery("day", dt.date(2024, 1, 1), 3, "sum", 2, 2, -5, 10)
    totals = bounded_period_totals(resolve_input(path), query, unit="cust", time="when",
                                   value="amount")
    assert totals.tolist() == [0, 15, 0]


def test_running_takes_sql_and_epsilon_max(tmp_path, capsys):
    """Every release command takes --sql with --table and --epsilon max (issue 18 item 4)."""
    from privloss.budget import Ledger
    from privloss.cli.main import main

    ledger = tmp_path / "b.sqlite"
    Ledger(str(ledger), create=True).create_dataset("d", epsilon=0.5, delta=1e-6)
    code = main(["running", "SELECT * FROM t WHERE Country = 'France'", "--sql", "--table",
                 "t=../shared/data/online_retail.csv.gz", "--privacy-unit", "CustomerID",
                 "--time-column", "InvoiceDate", "--period", "month", "--start", "2010-12-01",
                 "--end", "2011-11-30", "--count-distinct", "--max-periods-per-unit", "12",
                 "--max-rows-per-period", "1", "--epsilon", "max", "--ledger", str(ledger),
                 "--dataset", "d", "--seed", "1", "--json"])
    assert code == 0, capsys.readouterr().err
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["periods"]) == 12
    assert Ledger(str(ledger), create=False).show("d")["spent_epsilon"] == pytest.approx(0.5)
