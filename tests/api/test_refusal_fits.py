"""A refused release says first what still fits (issue 22 item 5): the Python
exception, the CLI (exit 3) and so the HTTP detail carry the same line."""

from __future__ import annotations

import re

import pytest

from tests._rows import write_rows

pytest.importorskip("duckdb")

import privloss  # noqa: E402
from privloss.budget import Ledger, LedgerBudgetError  # noqa: E402

TOPK = dict(privacy_unit="user", item="item", k=2, delta=1e-6, l0=2, d_bar=10)
FITS = re.compile(r"^refused: at most epsilon ([0-9.]+) fits; the budget's epsilon is the "
                  r"binding limit; ")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("PRIVLOSS_FINGERPRINT_KEY", "00" * 32)


@pytest.fixture()
def rows(tmp_path):
    path = tmp_path / "rows.csv"
    write_rows(path, {"a": 300, "b": 200, "c": 3})
    return path


@pytest.fixture()
def ledger(tmp_path):
    ledger = Ledger(tmp_path / "budget.sqlite")
    ledger.create_dataset("d", epsilon=1.0, delta=1e-5)
    return ledger


def test_topk_refusal_names_the_largest_epsilon_that_fits(rows, ledger):
    privloss.topk(rows, epsilon=0.9, seed=1, ledger=ledger, dataset="d", **TOPK)
    with pytest.raises(LedgerBudgetError) as refused:
        privloss.topk(rows, epsilon=0.5, seed=2, ledger=ledger, dataset="d", **TOPK)
    message = str(refused.value)
    match = FITS.match(message)
    assert match, message
    assert "closest rule" not in message.split("; ")[0]
    shown = float(match.group(1))
    arguments = {k: v for k, v in TOPK.items() if k not in ("privacy_unit", "item")}
    best = privloss.max_epsilon("topk", ledger=ledger, dataset="d", **arguments)
    assert shown <= best < shown * 1.13          # two significant digits, rounded down
    # what it says fits does fit
    privloss.topk(rows, epsilon=shown, seed=3, ledger=ledger, dataset="d", **TOPK)


def test_aggregate_refusal_names_what_fits(tmp_path):
    import csv

    path = tmp_path / "orders.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["u", "c", "p"])
        writer.writerows([[f"u{i}", "x" if i % 2 else "y", i % 50] for i in range(200)])
    ledger = Ledger(tmp_path / "agg.sqlite")
    ledger.create_dataset("d", epsilon=0.5, delta=1e-5)
    query = dict(privacy_unit="u", by=["c"], aggregations=["count", "mean:p:0:100"],
                 keys=["x", "y"], ledger=ledger, dataset="d", seed=1)
    privloss.aggregate(path, epsilon=0.4, **query)
    with pytest.raises(LedgerBudgetError) as refused:
        privloss.aggregate(path, epsilon=0.3, **query)
    match = FITS.match(str(refused.value))
    assert match, str(refused.value)
    assert 0.05 < float(match.group(1)) <= 0.1


def test_nothing_fits_is_said(rows, ledger):
    arguments = {k: v for k, v in TOPK.items() if k not in ("privacy_unit", "item")}
    best = privloss.max_epsilon("topk", ledger=ledger, dataset="d", **arguments)
    privloss.topk(rows, epsilon=best, seed=1, ledger=ledger, dataset="d", **TOPK)
    with pytest.raises(LedgerBudgetError, match=r"^refused: no epsilon of this release fits"):
        privloss.topk(rows, epsilon=0.5, seed=2, ledger=ledger, dataset="d", **TOPK)


def test_cli_refusal_exit_3_one_line(rows, tmp_path, capsys):
    from privloss.cli.main import main

    ledger = Ledger(tmp_path / "cli.sqlite")
    ledger.create_dataset("d", epsilon=1.0, delta=1e-5)
    base = [str(rows), "--privacy-unit", "user", "--item-column", "item", "--k", "2",
            "--delta", "1e-6", "--l0", "2", "--d-bar", "10", "--ledger",
            str(tmp_path / "cli.sqlite"), "--dataset", "d", "--seed", "1", "-q"]
    assert main(["topk", *base, "--epsilon", "0.9"]) == 0
    capsys.readouterr()
    assert main(["topk", *base, "--epsilon", "0.5"]) == 3
    error = [line for line in capsys.readouterr().err.strip().splitlines()
             if "--seed makes the noise predictable" not in line]
    assert len(error) == 1 and error[0].startswith(
        "privloss topk: error: refused: at most epsilon"), error


def test_delta_as_the_binding_limit(rows, tmp_path):
    ledger = Ledger(tmp_path / "delta.sqlite")
    ledger.create_dataset("d", epsilon=5.0, delta=1e-6)
    query = dict(privacy_unit="user", item="item", k=2, l0=1, d_bar=5, ledger=ledger,
                 dataset="d", epsilon=0.3, delta=5e-7)
    for seed in range(3):
        privloss.topk(rows, seed=seed, **query)
    with pytest.raises(LedgerBudgetError, match=r"^refused: no epsilon of this release fits; "
                                                r"delta is the binding limit"):
        privloss.topk(rows, seed=9, **query)
