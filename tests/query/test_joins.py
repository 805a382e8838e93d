"""Joins in DP SQL: with public tables and of two private tables on the unit
(item 2-3 of issue 20): parsing, refusals, engine statistics against DuckDB
truths, the truncation's bound, DuckDB = Spark."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import privloss
from privloss.query.engines import run
from privloss.query.joins import PrivateJoin, PublicJoin
from privloss.query.plan import Bounding, QueryPlan
from privloss.query.sql import UnsupportedSql, parse_sql

from tests.conftest import spark_skip_reason

RETAIL = "../shared/data/online_retail.csv.gz"
OTHER = ("USA", "Japan", "Australia", "Canada", "Brazil", "Singapore", "Israel", "Lebanon",
         "RSA", "Bahrain", "Saudi Arabia", "United Arab Emirates", "Hong Kong")
SPARK_SKIP = spark_skip_reason()


@pytest.fixture(scope="module")
def regions(tmp_path_factory) -> str:
    """A public Country -> Region table of the retail data's countries (CSV)."""
    countries = [row[0] for row in duckdb.sql(
        f"SELECT DISTINCT Country FROM read_csv('{RETAIL}', all_varchar=true) "
        f"ORDER BY 1").fetchall()]
    frame = pd.DataFrame({"Country": countries,
                          "Region": ["Other" if c in OTHER else "Europe" for c in countries]})
    path = tmp_path_factory.mktemp("public") / "regions.csv"
    frame.to_csv(path, index=False)
    return str(path)


def _truth(sql: str, regions: str) -> dict:
    text = sql.replace("RETAIL", f"read_csv('{RETAIL}', all_varchar=true)").replace(
        "REGIONS", f"read_csv('{regions}', all_varchar=true)")
    return {row[0]: tuple(row[1:]) for row in duckdb.sql(text).fetchall()}


def _public(regions, kind="inner", columns=(("Region", "Region"),)):
    return PublicJoin("regions", regions, kind, ("Country",), ("Country",), columns)


# --- parsing and refusals ---------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("SELECT g, COUNT(*) FROM t CROSS JOIN s GROUP BY g", "cross joins"),
    ("SELECT g, COUNT(*) FROM t, s GROUP BY g", "cross joins"),
    ("SELECT g, COUNT(*) FROM t JOIN s ON t.a < s.a GROUP BY g", "non-equi"),
    ("SELECT g, COUNT(*) FROM t JOIN s ON t.a = s.a OR t.b = s.b GROUP BY g", "non-equi"),
    ("SELECT g, COUNT(*) FROM t FULL JOIN s ON t.a = s.a GROUP BY g", "FULL JOIN"),
    ("SELECT g, COUNT(*) FROM t RIGHT JOIN s ON t.a = s.a GROUP BY g", "RIGHT JOIN"),
    ("SELECT g, COUNT(*) FROM t NATURAL JOIN s GROUP BY g", "NATURAL JOIN"),
    ("SELECT g, COUNT(*) FROM t SEMI JOIN s ON t.a = s.a GROUP BY g", "SEMI JOIN"),
    ("SELECT g, COUNT(*) FROM t JOIN (SELECT * FROM s) x ON t.a = x.a GROUP BY g",
     "subqueries"),
    ("WITH s AS (SELECT 1) SELECT g, COUNT(*) FROM t GROUP BY g", "WITH"),
    ("SELECT g, COUNT(*) FROM t JOIN s ON a = b GROUP BY g", "qualified column"),
    ("SELECT g, COUNT(*) FROM t JOIN s ON t.a = t.b GROUP BY g", "relate the joined table"),
    ("SELECT g, COUNT(*) FROM t JOIN t ON t.a = t.a GROUP BY g", "used twice"),
    ("SELECT g, COUNT(*) FROM t JOIN s ON t.a = 1 GROUP BY g", "qualified column"),
    ("SELECT g, COUNT(*) FROM t GROUP BY g; SELECT 1", "exactly one"),
    ("SELECT s.g, COUNT(*) FROM t GROUP BY s.g", "unknown table"),
])
def test_refusals_name_the_construct(text, message):
    with pytest.raises(UnsupportedSql, match=message):
        parse_sql(text, privacy_unit="uid")


def test_a_join_parses_into_pairs():
    parsed = parse_sql("SELECT c.Region, COUNT(*) FROM retail t LEFT JOIN countries c "
                       "ON t.Country = c.Country AND c.Year = t.Year GROUP BY c.Region",
                       privacy_unit="uid")
    assert parsed.tables == ("retail", "countries") and parsed.alias == "t"
    (join,) = parsed.joins
    assert join.kind == "left" and len(join.pairs) == 2
    # each pair is (earlier side, joined side) whatever the order written
    assert [p[1].split("\x1f")[0] for p in join.pairs] == ["c", "c"]
    single = parse_sql("SELECT t.g, COUNT(*) FROM retail t GROUP BY t.g", privacy_unit="uid")
    assert single.by == ("g",) and not single.joins


def _frames():
    rng = np.random.default_rng(4)
    n = 400
    orders = pd.DataFrame({"uid": rng.integers(0, 40, n), "k": rng.choice(list("abcd"), n),
                           "x": rng.integers(0, 10, n)})
    lookup = pd.DataFrame({"k": list("abcd"), "region": ["N", "N", "S", "S"],
                           "x": [1, 2, 3, 4]})
    return orders, lookup


@pytest.mark.parametrize("text, message", [
    ("SELECT x, COUNT(*) FROM o JOIN p ON o.k = p.k GROUP BY x", "ambiguous"),
    ("SELECT nothing, COUNT(*) FROM o JOIN p ON o.k = p.k GROUP BY nothing", "any table"),
    ("SELECT p.g, COUNT(*) FROM o JOIN p ON o.k = p.k GROUP BY p.g", "not a column of table"),
    ("SELECT region, COUNT(*) FROM p JOIN o ON p.k = o.k GROUP BY region", "must be a private"),
    ("SELECT region, COUNT(*) FROM o JOIN q ON o.k = q.k GROUP BY region", "not declared"),
    ("SELECT k, COUNT(*) FROM o JOIN o2 ON o.k = o2.k GROUP BY k", "join-truncation"),
])
def test_resolution_refusals(text, message):
    orders, lookup = _frames()
    with pytest.raises(UnsupportedSql, match=message):
        privloss.sql(text, tables={"o": orders, "o2": orders}, public_tables={"p": lookup},
                     privacy_unit="uid", epsilon=1.0, keys=[("a",)])


def test_a_private_join_must_equate_the_units():
    orders, lookup = _frames()
    with pytest.raises(UnsupportedSql, match="on the privacy unit"):
        privloss.sql("SELECT o.k, COUNT(*) FROM o JOIN o2 ON o.k = o2.k GROUP BY o.k",
                     tables={"o": orders, "o2": orders}, privacy_unit="uid", epsilon=1.0,
                     keys=[("a",)], join_truncation=2)
    with pytest.raises(ValueError, match="join_truncation applies"):
        privloss.sql("SELECT region, COUNT(*) FROM o JOIN p USING (k) GROUP BY region",
                     tables={"o": orders}, public_tables={"p": lookup}, privacy_unit="uid",
                     epsilon=1.0, keys=[("N",)], join_truncation=2)


def test_unqualified_columns_resolve_to_their_one_table():
    orders, lookup = _frames()
    truth = orders.merge(lookup[["k", "region"]], on="k").groupby("region").size()
    release = privloss.sql("SELECT region, COUNT(*) FROM o JOIN p ON o.k = p.k WHERE "
                           "region <> 'nowhere' GROUP BY region",
                           tables={"o": orders}, public_tables={"p": lookup},
                           privacy_unit="uid", epsilon=100, keys=[("N",), ("S",)],
                           max_groups=2, max_rows_per_group=50, seed=1)
    got = {row["group"][0]: row["values"]["count"] for row in release.rows}
    assert set(got) == {"N", "S"}
    for region in got:
        assert abs(got[region] - truth[region]) < 0.05 * truth[region] + 30
    assert release.parameters["joins"][0]["table"] == "p"


# --- engine statistics against DuckDB truths (retail data) ----------------------------

def test_public_inner_join_groups_by_a_public_column(regions):
    plan = QueryPlan(source=RETAIL, privacy_unit="CustomerID", by=("Region",),
                     bounding=Bounding(None, 10 ** 7), seed=1, joins=(_public(regions),))
    got = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(plan).groups}
    assert got == _truth("SELECT Region, count(DISTINCT CustomerID), count(*) FROM RETAIL t "
                         "JOIN REGIONS r USING (Country) WHERE CustomerID IS NOT NULL "
                         "GROUP BY Region", regions)


def test_left_join_and_a_filter_on_a_public_column(regions):
    from privloss.query import filters as f
    plan = QueryPlan(source=RETAIL, privacy_unit="CustomerID", by=("Country",),
                     bounding=Bounding(None, 10 ** 7), seed=1,
                     joins=(_public(regions, "left"),),
                     where=f.Compare("=", f.Column("Region"), f.Literal("Other")))
    got = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(plan).groups}
    assert got == _truth("SELECT t.Country, count(DISTINCT CustomerID), count(*) FROM RETAIL t "
                         "LEFT JOIN REGIONS r ON t.Country = r.Country WHERE Region = 'Other' "
                         "AND CustomerID IS NOT NULL GROUP BY t.Country", regions)
    assert len(got) == len(OTHER) - 1 or len(got) >= 5


def test_duplicate_public_keys_multiply_rows_before_the_bounding(tmp_path):
    orders = pd.DataFrame({"uid": [1, 1, 2, 3], "k": ["a", "a", "a", "b"]})
    lookup = pd.DataFrame({"k": ["a", "a", "b"], "tag": ["t1", "t2", "t1"]})
    join = PublicJoin("p", lookup, "inner", ("k",), ("k",), (("tag", "tag"),))
    unbounded = QueryPlan(source=orders, privacy_unit="uid", by=("tag",),
                          bounding=Bounding(None, 100), seed=0, joins=(join,))
    got = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(unbounded).groups}
    assert got == {"t1": (3, 4), "t2": (2, 3)}
    bounded = QueryPlan(source=orders, privacy_unit="uid", by=("tag",),
                        bounding=Bounding(1, 1), seed=0, joins=(join,))
    stats = run(bounded).groups
    # after the join, each unit still counts once, in one group
    assert sum(g["rows"] for g in stats) == 3 and sum(g["distinct"] for g in stats) == 3


def test_private_join_truncates_each_unit_to_n_rows_per_side(regions):
    n = 3
    join = PrivateJoin("retail2", RETAIL, "inner", ("CustomerID",), ("CustomerID",),
                       (("StockCode", "StockCode2"),))
    plan = QueryPlan(source=RETAIL, privacy_unit="CustomerID", by=("Country",),
                     bounding=Bounding(None, 10 ** 7), seed=5, joins=(join,),
                     join_truncation=n)
    got = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(plan).groups}
    per_unit = _truth("SELECT Country, count(DISTINCT CustomerID), "
                      "sum(least(c, 3) * least(c, 3)) FROM (SELECT CustomerID, Country, "
                      "count(*) AS c FROM RETAIL WHERE CustomerID IS NOT NULL "
                      "GROUP BY 1, 2) GROUP BY Country", regions)
    # a unit in one country keeps min(c, N) rows per side: exactly min(c, N)^2 joined rows
    # (units in several countries keep N rows overall, so their countries may get fewer)
    for country, (units, rows) in got.items():
        assert rows <= per_unit[country][1] and units <= per_unit[country][0]
    single = _truth("SELECT Country, count(*) FROM (SELECT CustomerID, min(Country) AS Country, "
                    "count(DISTINCT Country) AS m, count(*) AS c FROM RETAIL WHERE CustomerID "
                    "IS NOT NULL GROUP BY 1) WHERE m = 1 GROUP BY Country", regions)
    assert got["United Kingdom"][0] >= single["United Kingdom"][0]
    again = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(plan).groups}
    assert again == got                      # the seed fixes the truncation


def test_private_join_is_per_unit_exact_on_a_small_table():
    orders = pd.DataFrame({"uid": [1] * 5 + [2] * 2 + [3], "g": ["a"] * 5 + ["b"] * 2 + ["c"]})
    customers = pd.DataFrame({"uid": [1, 1, 1, 2, 4], "segment": ["s", "s", "s", "t", "u"]})
    join = PrivateJoin("c", customers, "inner", ("uid",), ("uid",), (("segment", "segment"),))
    plan = QueryPlan(source=orders, privacy_unit="uid", by=("g",),
                     bounding=Bounding(None, 100), seed=0, joins=(join,), join_truncation=2)
    got = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(plan).groups}
    assert got == {"a": (1, 4), "b": (1, 2)}        # 2*2 and 2*1; unit 3 has no match
    left = QueryPlan(source=orders, privacy_unit="uid", by=("g",),
                     bounding=Bounding(None, 100), seed=0,
                     joins=(PrivateJoin("c", customers, "left", ("uid",), ("uid",),
                                        (("segment", "segment"),)),), join_truncation=2)
    got = {g["group"][0]: (g["distinct"], g["rows"]) for g in run(left).groups}
    assert got == {"a": (1, 4), "b": (1, 2), "c": (1, 1)}


def test_a_unit_in_a_private_join_changes_only_its_own_rows():
    """Neighbouring inputs: removing unit 1 from both tables changes only the
    statistics of unit 1's groups, and by at most its bounded contribution."""
    rng = np.random.default_rng(9)
    orders = pd.DataFrame({"uid": rng.integers(0, 30, 300), "g": rng.choice(list("abc"), 300)})
    customers = pd.DataFrame({"uid": rng.integers(0, 30, 90), "seg": rng.choice(list("xy"), 90)})

    def stats(o, c):
        join = PrivateJoin("c", c, "inner", ("uid",), ("uid",), (("seg", "seg"),))
        plan = QueryPlan(source=o, privacy_unit="uid", by=("g", "seg"),
                         bounding=Bounding(2, 3), seed=11, joins=(join,), join_truncation=4)
        return {g["group"]: (g["distinct"], g["rows"]) for g in run(plan).groups}

    full = stats(orders, customers)
    without = stats(orders[orders.uid != 1], customers[customers.uid != 1])
    changed = [k for k in set(full) | set(without) if full.get(k) != without.get(k)]
    assert len(changed) <= 2
    for k in changed:
        d = np.subtract(full.get(k, (0, 0)), without.get(k, (0, 0)))
        assert 0 <= d[0] <= 1 and 0 <= d[1] <= 3


def test_end_to_end_release_at_large_epsilon(regions):
    release = privloss.sql(
        "SELECT r.Region, COUNT(DISTINCT CustomerID) FROM retail t JOIN regions r "
        "ON t.Country = r.Country GROUP BY r.Region",
        tables={"retail": RETAIL}, public_tables={"regions": regions},
        privacy_unit="CustomerID", epsilon=100, keys=[("Europe",), ("Other",)], seed=2)
    truth = _truth("SELECT Region, count(DISTINCT CustomerID) FROM RETAIL t JOIN REGIONS r "
                   "USING (Country) WHERE CustomerID IS NOT NULL GROUP BY Region", regions)
    for row in release.rows:
        region = row["group"][0]
        # max_groups=1: a customer of both regions counts in one
        assert abs(row["values"]["count_distinct"] - truth[region][0]) <= 15


@pytest.mark.skipif(SPARK_SKIP is not None, reason=SPARK_SKIP or "")
def test_duckdb_equals_spark_for_joins():
    orders = pd.DataFrame({"uid": [str(u) for u in np.random.default_rng(1).integers(0, 50, 400)],
                           "k": list("abcd") * 100})
    lookup = pd.DataFrame({"k": list("abcd"), "region": ["N", "N", "S", "S"]})
    public = PublicJoin("p", lookup, "inner", ("k",), ("k",), (("region", "region"),))
    private = PrivateJoin("o2", orders, "inner", ("uid",), ("uid",), (("k", "k2"),))
    for joins, truncation in (((public,), None), ((public, private), 3)):
        plan = QueryPlan(source=orders, privacy_unit="uid", by=("region",),
                         bounding=Bounding(1, 2), seed=7, joins=joins,
                         join_truncation=truncation)
        duck = sorted((g["group"], g["distinct"], g["rows"]) for g in run(plan).groups)
        spark = sorted((g["group"], g["distinct"], g["rows"])
                       for g in run(plan, "spark").groups)
        assert duck == spark


def test_plan_checks_its_joins():
    public = PublicJoin("p", "p.csv", "inner", ("k",), ("k",), (("r", "r"),))
    private = PrivateJoin("o2", "o.csv", "left", ("uid",), ("uid",), (("g", "g2"),))
    common = dict(source="o.csv", privacy_unit="uid", by=("r",), bounding=Bounding(1, 1),
                  seed=0)
    with pytest.raises(ValueError, match="needs join_truncation"):
        QueryPlan(**common, joins=(private,))
    with pytest.raises(ValueError, match="private tables only"):
        QueryPlan(**common, joins=(public,), join_truncation=2)
    with pytest.raises(ValueError, match="join_truncation"):
        QueryPlan(**common, joins=(public, private), join_truncation=0)
    with pytest.raises(ValueError, match="privacy unit"):
        QueryPlan(**common, joins=(PublicJoin("p", "p.csv", "inner", ("k",), ("k",),
                                              (("u", "uid"),)),))
    with pytest.raises(ValueError, match="join kind"):
        PublicJoin("p", "p.csv", "full", ("k",), ("k",))
    with pytest.raises(ValueError, match="as many left keys"):
        PublicJoin("p", "p.csv", "inner", ("k", "j"), ("k",))
    plan = QueryPlan(**common, joins=(public, private), join_truncation=2)
    assert plan.base_columns == ("uid", "k")     # r and g2 come from the joins


def test_a_join_reads_only_declared_files(tmp_path):
    """The private connection reads exactly the plan's files: a public table is
    opened through the plan, never through a path in the query text."""
    orders = tmp_path / "o.csv"
    orders.write_text("uid,k\n1,a\n2,b\n")
    lookup = tmp_path / "p.csv"
    lookup.write_text("k,r\na,x\nb,y\n")
    release = privloss.sql("SELECT r, COUNT(*) FROM o JOIN p USING (k) GROUP BY r",
                           tables={"o": str(orders)}, public_tables={"p": str(lookup)},
                           privacy_unit="uid", epsilon=100, keys=[("x",), ("y",)], seed=0)
    assert sorted(row["group"][0] for row in release.rows) == ["x", "y"]
    with pytest.raises(UnsupportedSql, match="not declared"):
        privloss.sql(f"SELECT r, COUNT(*) FROM o JOIN '{lookup}' q USING (k) GROUP BY r",
                     tables={"o": str(orders)}, privacy_unit="uid", epsilon=1, keys=[("x",)])
