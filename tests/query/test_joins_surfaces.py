"""Joins through the surfaces: ``privloss sql --public-table --join-truncation``
(exit 2 naming the construct) and the Python API's dry run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privloss.cli.main import main


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(3)
    orders = pd.DataFrame({"uid": rng.integers(0, 60, 600), "k": rng.choice(list("abcd"), 600),
                           "x": rng.integers(0, 10, 600)})
    lookup = pd.DataFrame({"k": list("abcd"), "region": ["N", "N", "S", "S"]})
    paths = {"orders": tmp_path / "orders.csv", "lookup": tmp_path / "lookup.csv"}
    orders.to_csv(paths["orders"], index=False)
    lookup.to_csv(paths["lookup"], index=False)
    return {name: str(path) for name, path in paths.items()}


def _sql(files, query, *extra):
    return ["sql", query, "--table", f"o={files['orders']}", "--public-table",
            f"p={files['lookup']}", "--privacy-unit", "uid", "--epsilon", "50", *extra]


def test_cli_release_with_a_public_table(files, capsys):
    assert main(_sql(files, "SELECT p.region, COUNT(*), SUM(x) FROM o JOIN p ON o.k = p.k "
                     "WHERE p.region IN ('N', 'S') GROUP BY p.region", "--bounds", "x=0:10",
                     "--max-rows-per-group", "20", "--seed", "1", "--delta", "1e-6", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(row["group"][0] for row in out["rows"]) == ["N", "S"] or out["rows"] == []
    assert out["parameters"]["joins"][0]["public"] is True


def test_cli_dry_run_states_the_truncation(files, capsys):
    assert main(["sql", "SELECT o.k, COUNT(*) FROM o JOIN o2 ON o.uid = o2.uid GROUP BY o.k",
                 "--table", f"o={files['orders']}", "--table", f"o2={files['orders']}",
                 "--privacy-unit", "uid", "--epsilon", "1", "--delta", "1e-6",
                 "--join-truncation", "4", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4*4 = 16 joined rows" in out and "the cost is that of one table" in out


@pytest.mark.parametrize("query, extra, message", [
    ("SELECT o.k, COUNT(*) FROM o JOIN o2 ON o.uid = o2.uid GROUP BY o.k", (),
     "needs --join-truncation"),
    ("SELECT o.k, COUNT(*) FROM o CROSS JOIN p GROUP BY o.k", (), "cross joins"),
    ("SELECT o.k, COUNT(*) FROM o JOIN p ON o.k > p.k GROUP BY o.k", (), "non-equi"),
    ("SELECT region, COUNT(*) FROM o JOIN p USING (k) GROUP BY region",
     ("--join-truncation", "2"), "join_truncation applies"),
    ("SELECT region, COUNT(*) FROM o JOIN p USING (k) GROUP BY region",
     ("--join-truncation", "0"), "--join-truncation must be"),
])
def test_cli_refusals_exit_2(files, capsys, query, extra, message):
    argv = _sql(files, query, *extra) + ["--table", f"o2={files['orders']}"]
    with pytest.raises(SystemExit) if "must be" in message else _nothing():
        code = main(argv)
        assert code == 2
    assert message in capsys.readouterr().err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_python_dry_run_lists_the_joins():
    from privloss.api.aggregate import plan_aggregate
    from privloss.query.joins import PublicJoin

    join = PublicJoin("p", pd.DataFrame({"k": ["a"], "r": ["N"]}), "inner", ("k",), ("k",),
                      (("r", "r"),))
    planned = plan_aggregate(privacy_unit="uid", by=["r"], aggregations=["count"],
                             epsilon=1.0, keys=[("N",)], joins=(join,))
    assert planned["joins"][0]["table"] == "p"
    assert "cost is unchanged" in planned["joins"][0]["stability"]


def test_a_changed_public_table_is_a_new_release(files):
    """The same joined query again is the stored answer (free); after the public
    table changes it is a new query, charged again."""
    import privloss
    from privloss.budget import Ledger

    ledger = Ledger(str(files["orders"]) + ".ledger.sqlite", create=True)
    ledger.create_dataset("d", epsilon=5.0, delta=1e-5)
    query = "SELECT region, COUNT(*) FROM o JOIN p USING (k) GROUP BY region"

    def release():
        return privloss.sql(query, tables={"o": files["orders"]},
                            public_tables={"p": files["lookup"]}, privacy_unit="uid",
                            epsilon=1.0, keys=[("N",), ("S",)], ledger=ledger, dataset="d",
                            seed=4)

    first = release()
    again = release()
    assert again.cached and again.rows == first.rows
    with open(files["lookup"], "a", encoding="utf-8") as handle:
        handle.write("e,N\n")
    assert not release().cached
    assert ledger.show("d")["releases"] == 2
