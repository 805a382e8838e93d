"""``privloss ledger create / show / history`` through a temporary parser, and
the helpers other commands use (refused release -> exit 3, "budget")."""

from __future__ import annotations

import argparse
import json
import os
import sys

import pytest

from privloss.budget import Ledger
from privloss.cli import ledger as ledger_cli
from privloss.cli._common import CommandError
from privloss.cli.main import _OneLineParser
from privloss.events import PureDP

SHOW_KEYS = {"budget_epsilon", "budget_delta", "spent_epsilon", "spent_delta", "releases"}


def run(argv, capsys) -> tuple[int, str, str]:
    """What ``privloss.cli.main.main`` does, with only the ledger command registered."""
    parser = _OneLineParser(prog="privloss")
    subparsers = parser.add_subparsers(dest="command", parser_class=_OneLineParser)
    ledger_cli.register(subparsers)
    try:
        args = parser.parse_args(argv)
        code = args.handler(args)
    except SystemExit as exit_:
        code = exit_.code
    except CommandError as error:
        print(f"privloss {args.command}: error: {error}", file=sys.stderr)
        code = error.exit_code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "ledger.sqlite")


def test_create_show_history_json(path, capsys):
    plan = os.path.join(os.path.dirname(path), "plan.json")
    with open(plan, "w") as handle:
        json.dump([{"events": [{"type": "PureDP", "epsilon": 0.25, "count": 1}]}], handle)
    code, out, _ = run(["ledger", "create", "--ledger", path, "--dataset", "retail",
                        "--budget-epsilon", "1", "--budget-delta", "1e-6", "--interaction", "setwise",
                        "--plan", plan], capsys)
    assert code == 0 and "retail" in out and "remaining" in out
    code, out, _ = run(["ledger", "show", "--ledger", path, "--dataset", "retail", "--json"], capsys)
    shown = json.loads(out)
    assert code == 0 and SHOW_KEYS <= set(shown)
    assert shown["budget_epsilon"] == 1.0 and shown["budget_delta"] == 1e-6
    assert shown["spent_epsilon"] == 0.0 and shown["releases"] == 0
    assert shown["interaction"] == "setwise"

    Ledger(path).release("retail", {"q": 1}, lambda: {"count": 3.5}, PureDP(0.25))
    code, out, _ = run(["ledger", "show", "--ledger", path, "--dataset", "retail", "--json"], capsys)
    shown = json.loads(out)
    assert shown["releases"] == 1 and 0 < shown["spent_epsilon"] <= 0.25
    # one 0.25-DP release: delta 0 at the budget epsilon 1
    assert shown["spent_delta"] == 0.0 and shown["remaining_delta"] == 1e-6
    assert shown["plan"][0]["used"]
    code, out, _ = run(["ledger", "history", "--ledger", path, "--dataset", "retail", "--json"],
                       capsys)
    (row,) = json.loads(out)
    assert code == 0 and row["query"] == {"q": 1} and row["result"] == {"count": 3.5}
    assert row["events"] == [{"type": "PureDP", "epsilon": 0.25, "count": 1}]


def test_human_output(path, capsys):
    run(["ledger", "create", "--ledger", path, "--dataset", "d", "--budget-epsilon", "2"], capsys)
    code, out, _ = run(["ledger", "history", "--ledger", path, "--dataset", "d"], capsys)
    assert code == 0 and "no releases" in out
    Ledger(path).release("d", "first", lambda: 1, [PureDP(0.5), PureDP(0.1, count=2)])
    code, out, _ = run(["ledger", "show", "--ledger", path, "--dataset", "d"], capsys)
    assert code == 0 and "budget" in out and "epsilon = 0.7" in out and "1 release;" in out
    code, out, _ = run(["ledger", "history", "--ledger", path, "--dataset", "d"], capsys)
    assert code == 0 and "PureDP(epsilon=0.5, count=1)" in out and '"first"' in out


@pytest.mark.parametrize("extra, message", [
    (["--budget-epsilon", "0"], "budget-epsilon must be in (0, inf)"),
    (["--budget-epsilon", "-1"], "budget-epsilon must be in (0, inf)"),
    (["--budget-epsilon", "abc"], "budget-epsilon must be a number"),
    (["--budget-epsilon", "1", "--budget-delta", "1"], "delta must be in [0, 1)"),
    (["--budget-epsilon", "1", "--interaction", "non-adaptive"], "invalid choice"),
    ([], "--budget-epsilon is required"),
])
def test_bad_create_input_exits_2_and_leaves_no_file(path, capsys, extra, message):
    code, out, err = run(["ledger", "create", "--ledger", path, "--dataset", "d"] + extra, capsys)
    assert code == 2 and message in err and err.count("\n") == 1 and out == ""
    assert not os.path.exists(path)


def test_bad_name_creates_no_file(path, capsys):
    code, _, err = run(["ledger", "create", "--ledger", path, "--dataset", " x", "--budget-epsilon", "1"],
                       capsys)
    assert code == 2 and "dataset must be a non-empty name" in err
    assert not os.path.exists(path)


def test_errors_on_existing_ledgers_exit_2_and_change_nothing(path, tmp_path, capsys):
    run(["ledger", "create", "--ledger", path, "--dataset", "d", "--budget-epsilon", "1"], capsys)
    Ledger(path).release("d", "q", lambda: 1, PureDP(0.5))
    before = (Ledger(path).show("d"), Ledger(path).history("d"))
    cases = [
        (["ledger", "create", "--ledger", path, "--dataset", "d", "--budget-epsilon", "5"], "already exists"),
        (["ledger", "show", "--ledger", path, "--dataset", "nope"], "no dataset 'nope'"),
        (["ledger", "history", "--ledger", path, "--dataset", "nope"], "no dataset 'nope'"),
        (["ledger", "show", "--ledger", str(tmp_path / "missing.sqlite"), "--dataset", "d"],
         "no ledger file at"),
        (["ledger", "show", "--ledger", path], "required: --dataset"),
        (["ledger"], "required"),
    ]
    for argv, message in cases:
        code, _, err = run(argv, capsys)
        assert code == 2 and message in err and err.count("\n") == 1, argv
    assert (Ledger(path).show("d"), Ledger(path).history("d")) == before
    assert not (tmp_path / "missing.sqlite").exists()


def test_corrupt_ledger_file_exits_2(tmp_path, capsys):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"garbage" * 1000)
    code, _, err = run(["ledger", "show", "--ledger", str(corrupt), "--dataset", "d"], capsys)
    assert code == 2 and "not a privloss ledger" in err and err.count("\n") == 1
    assert corrupt.read_bytes() == b"garbage" * 1000


def test_refused_release_exits_3_with_budget_in_the_message(path):
    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=0.5)
    ledger.release("d", "a", lambda: 0, PureDP(0.4))
    with pytest.raises(CommandError) as caught:
        with ledger_cli.ledger_errors():
            ledger.release("d", "b", lambda: 0, PureDP(0.4))
    assert caught.value.exit_code == ledger_cli.BUDGET_EXIT_CODE == 3
    assert "budget" in str(caught.value) and "remaining epsilon 0.1" in str(caught.value)
    with pytest.raises(CommandError) as caught:
        with ledger_cli.ledger_errors():
            ledger.release("nope", "b", lambda: 0, PureDP(0.4))
    assert caught.value.exit_code == 2


def test_ledger_flags_helper(path):
    parser = argparse.ArgumentParser()
    ledger_cli.add_ledger_flags(parser)
    assert ledger_cli.open_ledger_from_args(parser.parse_args([])) is None
    with pytest.raises(CommandError, match="--ledger and --dataset go together"):
        ledger_cli.open_ledger_from_args(parser.parse_args(["--ledger", path]))
    with pytest.raises(CommandError, match="no ledger file at"):
        ledger_cli.open_ledger_from_args(parser.parse_args(["--ledger", path, "--dataset", "d"]))
    Ledger(path).create_dataset("d", epsilon=1.0)
    opened = ledger_cli.open_ledger_from_args(parser.parse_args(["--ledger", path, "--dataset", "d"]))
    assert opened.show("d")["budget_epsilon"] == 1.0
