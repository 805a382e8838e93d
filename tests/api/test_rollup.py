"""``privloss.rollup``, ``privloss.sql`` with ``GROUP BY ROLLUP`` and
``privloss aggregate --rollup`` (issue 21): DuckDB's ROLLUP row shape on the
retail data, the one ledger charge, the dry run, bad input before any charge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import privloss  # noqa: E402
from privloss.cli.main import main  # noqa: E402

RETAIL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "online_retail.csv.gz"


@pytest.fixture(scope="module")
def one_row_per_customer(tmp_path_factory):
    """Retail reduced to one row per customer (its first line): the bounding
    with max_groups = max_rows = 1 then keeps every row, so DuckDB's exact
    ROLLUP is the truth."""
    if not RETAIL.exists():
        pytest.skip("the retail data is not available")
    path = tmp_path_factory.mktemp("retail") / "customers.csv"
    duckdb.sql(f"""COPY (SELECT CustomerID, Country, substr(StockCode, 1, 1) AS Cat FROM (
        SELECT *, row_number() OVER (PARTITION BY CustomerID ORDER BY InvoiceNo, StockCode)
        AS rn FROM read_csv_auto('{RETAIL}', all_varchar = true)
        WHERE CustomerID IS NOT NULL AND Country IS NOT NULL AND StockCode IS NOT NULL)
        WHERE rn = 1) TO '{path}' (HEADER)""")
    return path


def _duckdb_rollup(path) -> dict:
    rows = duckdb.sql(f"SELECT Country, Cat, count(*) FROM read_csv_auto('{path}', "
                      f"all_varchar = true) GROUP BY ROLLUP(Country, Cat)").fetchall()
    return {(country, cat): count for country, cat, count in rows}


def _ours(release) -> dict:
    return {tuple(row["group"]): row["values"]["count"] for row in release.rows}


def test_rollup_rows_match_duckdb_rollup_with_public_keys(one_row_per_customer):
    truth = _duckdb_rollup(one_row_per_customer)
    keys = [key for key in truth if None not in key]
    release = privloss.rollup(one_row_per_customer, privacy_unit="CustomerID",
                              by=["Country", "Cat"], aggregations=["count"], epsilon=100.0,
                              keys=keys, consistent=True, seed=5)
    ours = _ours(release)
    assert set(ours) == set(truth)                   # the same rows, NULL for subtotals
    assert release.others == []
    assert ours == truth                              # at epsilon 100 the noise rounds away
    for row in release.rows:
        low, high = row["ci95_guaranteed"]["count"]
        assert low <= truth[tuple(row["group"])] <= high


def test_sql_rollup_is_the_same_release(one_row_per_customer):
    truth = _duckdb_rollup(one_row_per_customer)
    keys = [key for key in truth if None not in key]
    text = "SELECT Country, Cat, COUNT(*) FROM retail GROUP BY ROLLUP(Country, Cat)"
    via_sql = privloss.sql(text, tables={"retail": str(one_row_per_customer)},
                           privacy_unit="CustomerID", epsilon=100.0, keys=keys,
                           consistent=True, seed=5)
    direct = privloss.rollup(one_row_per_customer, privacy_unit="CustomerID",
                             by=["Country", "Cat"], aggregations=["count"], epsilon=100.0,
                             keys=keys, consistent=True, seed=5)
    assert via_sql.rows == direct.rows and via_sql.events == direct.events
    frame = direct.to_pandas()
    assert list(frame.columns[:3]) == ["by0", "by1", "level"] and len(frame) == len(truth)
    assert frame["by0"].isna().sum() == 1 and direct.to_arrow().num_rows == len(truth)


def test_private_selection_keeps_the_large_groups_and_adds_up(one_row_per_customer):
    truth = _duckdb_rollup(one_row_per_customer)
    release = privloss.rollup(one_row_per_customer, privacy_unit="CustomerID",
                              by=["Country", "Cat"], aggregations=["count"], epsilon=20.0,
                              delta=1e-6, consistent=True, seed=9)
    ours = _ours(release)
    threshold = release.parameters["selection"]["threshold"]
    assert set(ours) <= set(truth)                     # nothing invented
    large = {key for key, count in truth.items() if count >= threshold + 30
             and (key[0] is None or truth[(key[0], None)] >= threshold + 30)}
    assert large <= set(ours)
    # every node with children adds up, its other node included
    for (country, cat), value in ours.items():
        if cat is None and country is not None:
            children = sum(v for (c, k), v in ours.items() if c == country and k is not None)
            others = sum(o["values"]["count"] for o in release.others
                         if o["parent"] == [country, None])
            if children or others:
                assert children + others == value
    top = ours[(None, None)]
    assert sum(v for (c, k), v in ours.items() if c is not None and k is None) + sum(
        o["values"]["count"] for o in release.others if o["level"] == 1) == top


def test_bad_input_raises_before_anything_is_read(tmp_path):
    missing = tmp_path / "nowhere.csv"
    for kwargs, message in [({"aggregations": ["sum:x:0:1"]}, "count and count_distinct"),
                            ({"delta": 0.0}, "delta > 0"),
                            ({"by": []}, "by must name 1 to 8"),
                            ({"max_groups": 0}, "max_groups"),
                            ({"aggregations": ["count_distinct"], "max_groups": 2},
                             "max_groups must be 1")]:
        parameters = {"privacy_unit": "u", "by": ["a", "b"], "aggregations": ["count"],
                      "epsilon": 1.0, "delta": 1e-6, **kwargs}
        with pytest.raises(ValueError, match=message):
            privloss.rollup(missing, **parameters)


def _run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _data(tmp_path) -> Path:
    path = tmp_path / "d.csv"
    path.write_text("u,a,b\n" + "".join(f"u{i},A{i % 2},b{i % 3}\n" for i in range(300)))
    return path


def test_cli_rollup_charges_the_ledger_once(tmp_path, capsys):
    data = _data(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    assert _run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
                "--epsilon", "3", "--delta", "1e-5")[0] == 0
    flags = ["--privacy-unit", "u", "--by", "a,b", "--count", "--rollup", "--epsilon", "1",
             "--delta", "1e-6", "--consistent", "--ledger", ledger, "--dataset", "d"]
    code, out, err = _run(capsys, "aggregate", data, *flags, "--dry-run", "--json")
    assert code == 0, err
    planned = json.loads(out)
    assert planned["ledger"]["fits"] and planned["selection"]["threshold"] >= 2
    assert planned["events"][0].startswith("PureDP")
    code, out, err = _run(capsys, "aggregate", data, *flags, "--json")
    assert code == 0, err
    release = json.loads(out)
    assert release["rows"][0]["group"] == [None, None]
    assert release["spent"]["releases"] == 1
    assert release["spent"]["epsilon"] == pytest.approx(1.0)
    code, out, err = _run(capsys, "ledger", "show", "--ledger", ledger, "--dataset", "d",
                          "--json")
    assert json.loads(out)["releases"] == 1


def test_cli_rollup_text_and_sql_and_errors(tmp_path, capsys):
    data = _data(tmp_path)
    keys = tmp_path / "keys.csv"
    keys.write_text("a,b\nA0,b0\nA0,b1\nA1,b2\n")
    code, out, err = _run(capsys, "sql", "SELECT a, b, COUNT(*) FROM t GROUP BY ROLLUP(a, b)",
                          "--table", f"t={data}", "--privacy-unit", "u", "--epsilon", "2",
                          "--keys", keys, "--seed", "1", "--consistent")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "a\tb\tlevel\tcount" and lines[1].startswith("(all)\t(all)\t0\t")
    assert len(lines) == 1 + 1 + 2 + 3 + 1
    code, out, err = _run(capsys, "aggregate", data, "--privacy-unit", "u", "--by", "a,b",
                          "--mean", "b:0:1", "--rollup", "--epsilon", "1", "--keys", keys)
    assert code == 2 and "count and count_distinct" in err and out == ""
    code, out, err = _run(capsys, "sql", "SELECT a, COUNT(*) FROM t GROUP BY CUBE(a)",
                          "--table", f"t={data}", "--privacy-unit", "u", "--epsilon", "1")
    assert code == 2 and "CUBE" in err
    code, out, err = _run(capsys, "aggregate", data, "--privacy-unit", "u", "--by", "a,b",
                          "--count", "--rollup", "--epsilon", "1", "--keys", keys,
                          "--dry-run")
    assert code == 0 and "shares by level" in out and "95% half-width" in out
