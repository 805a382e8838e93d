"""``privloss histogram``, ``topk``, ``ledger`` and ``demo`` from the command line."""

import json
import sqlite3

import pytest

pytest.importorskip("duckdb")

from privloss.cli.main import main  # noqa: E402
from tests._rows import write_rows  # noqa: E402


@pytest.fixture()
def data(tmp_path):
    """Small (user, item) CSV: item a is used by 60 users, b by 40, c by 3."""
    path = tmp_path / "rows.csv"
    write_rows(path, {"a": 60, "b": 40, "c": 3})
    domain = tmp_path / "domain.txt"
    domain.write_text("a\nb\nc\nd\n")
    return path, domain


def run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def ledger_rows(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM releases").fetchone()[0]


def test_histogram_known_domain_json(capsys, data):
    rows, domain = data
    code, out, _ = run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column", "item",
                       "--epsilon", "1", "--l0", "2", "--domain", domain, "--seed", "1", "--json")
    payload = json.loads(out)
    assert code == 0
    assert {row["item"] for row in payload["items"]} == {"a", "b", "c", "d"}
    for row in payload["items"]:
        low, high = row["ci95"]
        assert low <= row["count"] <= high
    assert payload["spent"]["epsilon"] <= 1.0 * (1 + 1e-9)


def test_topk_with_ledger_charges_once_and_refuses_with_exit_3(capsys, data, tmp_path):
    rows, domain = data
    ledger = tmp_path / "ledger.sqlite"
    assert run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
               "--epsilon", "1", "--delta", "1e-6")[0] == 0
    query = ["topk", rows, "--privacy-unit", "user", "--item-column", "item", "--k", "2",
             "--epsilon", "0.6", "--domain", domain, "--ledger", ledger, "--dataset", "d", "--json"]
    code, out, _ = run(capsys, *query)
    first = json.loads(out)
    assert code == 0 and len(first["items"]) == 2 and first["spent"]["releases"] == 1
    code, out, _ = run(capsys, *query)             # identical query: stored answer, no cost
    again = json.loads(out)
    assert code == 0 and again["items"] == first["items"] and again["spent"]["releases"] == 1
    changed = [arg if arg != "2" else "1" for arg in query]
    code, out, err = run(capsys, *changed)          # 0.6 + 0.6 > 1: refused
    assert code == 3 and "budget" in err and out == ""
    assert ledger_rows(ledger) == 1
    code, out, _ = run(capsys, "ledger", "show", "--ledger", ledger, "--dataset", "d", "--json")
    shown = json.loads(out)
    assert {"budget_epsilon", "budget_delta", "spent_epsilon", "spent_delta", "releases"} <= set(shown)
    assert shown["releases"] == 1 and shown["spent_epsilon"] <= 1.0 * (1 + 1e-9)


@pytest.mark.parametrize("change, needle", [
    (["--k", "0"], "k"),
    (["--epsilon", "0"], "epsilon"),
    (["--delta", "1"], "delta"),
    (["--privacy-unit", "nobody"], "nobody"),
])
def test_bad_input_exit_2_and_ledger_unchanged(capsys, data, tmp_path, change, needle):
    rows, domain = data
    ledger = tmp_path / "ledger.sqlite"
    run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d", "--epsilon", "1")
    argv = ["topk", rows, "--privacy-unit", "user", "--item-column", "item", "--k", "2",
            "--epsilon", "0.5", "--domain", domain, "--ledger", ledger, "--dataset", "d"]
    for position in range(0, len(change), 2):
        flag, value = change[position], change[position + 1]
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    with pytest.raises(SystemExit) if needle in ("k", "epsilon", "delta") else _nothing():
        code, out, err = run(capsys, *argv)
        assert code == 2 and needle in err
    assert ledger_rows(ledger) == 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_unreadable_file_and_missing_domain(capsys, tmp_path):
    code, _, err = run(capsys, "topk", tmp_path / "missing.csv", "--privacy-unit", "u",
                       "--item-column", "i", "--k", "1", "--epsilon", "1", "--delta", "1e-6",
                       "--l0", "1")
    assert code == 2 and "missing.csv" in err
    rows = tmp_path / "rows.csv"
    rows.write_text("u,i\n1,a\n")
    code, _, err = run(capsys, "topk", rows, "--privacy-unit", "u", "--item-column", "i",
                       "--k", "1", "--epsilon", "1", "--algorithm", "known-gumbel")
    assert code == 2 and "--domain" in err


def test_demo_runs(capsys, tmp_path):
    code, out, err = run(capsys, "demo", "--rows", "20000", "--ledger", tmp_path / "demo.sqlite",
                         "--seed", "3")
    assert code == 0
    assert "repeated query: stored answer returned, no extra cost: True" in out
    assert "refused" in out and "budget" in out
    assert "[5/5]" in err


@pytest.mark.parametrize("command", [
    ["histogram", "--epsilon", "1", "--l0", "1", "--linf", "2", "--domain", "DOMAIN"],
    ["histogram", "--epsilon", "1", "--delta", "1e-6", "--noise", "gaussian", "--l0", "2"],
    ["topk", "--k", "2", "--epsilon", "5", "--delta", "1e-3", "--l0", "2",
     "--algorithm", "unknown-gumbel"],
    ["topk", "--k", "2", "--epsilon", "1", "--l0", "2", "--algorithm", "known-laplace",
     "--domain", "DOMAIN"],
])
def test_spark_and_duckdb_give_the_same_release(capsys, data, spark, command):
    """End to end through the CLI: same data, same (insecure) seed, same JSON."""
    rows, domain = data
    argv = [domain if arg == "DOMAIN" else arg for arg in command]
    argv[1:1] = [rows, "--privacy-unit", "user", "--item-column", "item"]
    outputs = {}
    for engine in ("duckdb", "spark"):
        code, out, err = run(capsys, *argv, "--engine", engine, "--seed", "11", "--json")
        assert code == 0, err
        outputs[engine] = json.loads(out)
    assert outputs["spark"]["items"] == outputs["duckdb"]["items"]
    assert outputs["spark"]["spent"] == outputs["duckdb"]["spent"]
    assert outputs["duckdb"]["items"]


@pytest.mark.parametrize("content", [
    "user,item\n",                          # empty table
    "user,item\nu1,a\n,b\nu2,\n",           # a null user id, a null item
])
def test_empty_or_null_data_gives_a_noisy_release(capsys, tmp_path, content):
    """No data-dependent failure: an empty table is a noisy empty release; null
    user ids and items are dropped and the parameters say so (no counts)."""
    ledger = tmp_path / "ledger.sqlite"
    run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d", "--epsilon", "10",
        "--delta", "1e-5", "--interaction", "fully-adaptive")
    path = tmp_path / "rows.csv"
    path.write_text(content)
    for command in (["topk", "--k", "1"], ["histogram"]):
        code, out, err = run(capsys, command[0], path, *command[1:], "--privacy-unit", "user",
                             "--item-column", "item", "--epsilon", "0.5", "--delta", "1e-6",
                             "--l0", "1", "--ledger", ledger, "--dataset", "d", "--json")
        assert code == 0, err
        payload = json.loads(out)
        assert payload["items"] == [] and payload["parameters"]["nulls"] == "dropped"
    assert ledger_rows(ledger) == 2


def test_missing_file_exit_2_and_ledger_unchanged(capsys, tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d", "--epsilon", "1",
        "--interaction", "fully-adaptive")
    code, out, err = run(capsys, "histogram", tmp_path / "missing.csv", "--privacy-unit", "user",
                         "--item-column", "item", "--epsilon", "0.5", "--delta", "1e-6",
                         "--l0", "1", "--ledger", ledger, "--dataset", "d")
    assert code == 2 and "missing.csv" in err and out == ""
    assert len(err.strip().splitlines()) == 1
    assert ledger_rows(ledger) == 0
