"""The accuracy flags on the CLI (issue 22): --target-half-width,
--min-release-users and --plot; planning reads no data and charges nothing."""

from __future__ import annotations

import csv
import json

import pytest

pytest.importorskip("duckdb")

from privloss.budget import Ledger  # noqa: E402
from privloss.cli.main import main  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def rows(tmp_path):
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user", "item"])
        writer.writerows([[f"u{i}", "abc"[i % 3]] for i in range(600)])
    return path


@pytest.fixture()
def ledger(tmp_path):
    path = tmp_path / "budget.sqlite"
    Ledger(path).create_dataset("d", epsilon=1.0, delta=1e-5)
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_with_target_and_plot_charges_nothing(rows, ledger, tmp_path, capsys):
    picture = tmp_path / "accuracy.png"
    code, out, err = _run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column",
                          "item", "--delta", "1e-6", "--l0", "1", "--target-half-width", "25",
                          "--dry-run", "--plot", picture, "--ledger", ledger, "--dataset", "d")
    assert code == 0, err
    assert "smallest epsilon whose 95% half-width is at most 25" in out
    assert "almost never released" in out
    assert picture.read_bytes().startswith(PNG)
    summary = Ledger(ledger).show("d")
    assert summary["releases"] == 0 and summary["spent_epsilon"] == 0


def test_aggregate_json_plan_has_split_and_accuracy(rows, capsys):
    code, out, err = _run(capsys, "aggregate", rows, "--privacy-unit", "user", "--by", "item",
                          "--count", "--count-distinct", "--delta", "1e-6",
                          "--max-rows-per-group", "2", "--min-release-users", "150",
                          "--dry-run", "--json")
    assert code == 0, err
    planned = json.loads(out)
    assert planned["accuracy"]["goal"] == "release"
    assert planned["split"]["shares"] and min(planned["split"]["shares"].values()) >= 0.125
    assert planned["accuracy"]["release_epsilons"]["0.5"] < planned["accuracy"]["epsilon"]


def test_release_at_the_planned_epsilon(rows, ledger, capsys):
    code, out, err = _run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column",
                          "item", "--delta", "1e-6", "--l0", "1", "--target-half-width", "30",
                          "--ledger", ledger, "--dataset", "d", "--seed", "1", "--json", "-q")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["epsilon_planned"] < 1
    assert all(high - low <= 60 for low, high in (row["ci95"] for row in payload["items"]))


@pytest.mark.parametrize("flags, message", [
    (["--epsilon", "1", "--target-half-width", "3"], "give one"),
    (["--target-half-width", "3", "--min-release-users", "9"], "give one"),
    ([], "--epsilon"),
    (["--epsilon", "1", "--plot", "x.png"], "--plot goes with --dry-run"),
    (["--epsilon", "1", "--plot", "x.svg", "--dry-run"], ".png"),
])
def test_bad_combinations_exit_2(rows, capsys, flags, message):
    code, _, err = _run(capsys, "topk", rows, "--privacy-unit", "user", "--item-column",
                        "item", "--k", "2", "--delta", "1e-6", *flags)
    assert code == 2 and message in err


def test_plot_of_a_given_epsilon(rows, tmp_path, capsys):
    picture = tmp_path / "p.png"
    code, _, err = _run(capsys, "aggregate", rows, "--privacy-unit", "user", "--by", "item",
                        "--count", "--keys", _keys(tmp_path), "--epsilon", "0.5", "--dry-run",
                        "--plot", picture)
    assert code == 0, err
    assert picture.read_bytes().startswith(PNG)


def _keys(tmp_path):
    path = tmp_path / "keys.csv"
    path.write_text("item\na\nb\nc\n")
    return path


def test_running_dry_run_with_target_and_plot(tmp_path, capsys):
    data = tmp_path / "events.csv"
    data.write_text("cust,when\na,2024-01-01\nb,2024-01-02\n")
    picture = tmp_path / "running.png"
    code, out, err = _run(capsys, "running", data, "--privacy-unit", "cust", "--time-column",
                          "when", "--period", "day", "--start", "2024-01-01", "--end",
                          "2024-01-09", "--max-periods-per-unit", "2",
                          "--max-rows-per-period", "1", "--count", "--target-half-width",
                          "12", "--dry-run", "--json", "--plot", picture)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["ci95_half_width_max"] <= 12
    assert summary["accuracy"]["goal"] == "half-width"
    assert picture.read_bytes().startswith(PNG)
    code, _, err = _run(capsys, "running", data, "--privacy-unit", "cust", "--time-column",
                        "when", "--period", "day", "--start", "2024-01-01", "--end",
                        "2024-01-09", "--max-periods-per-unit", "2",
                        "--max-rows-per-period", "1", "--count", "--min-release-users", "5",
                        "--dry-run")
    assert code == 2 and "thresholded" in err


def test_min_release_users_is_offered_only_where_groups_are_thresholded(capsys):
    """Running totals release every period (no threshold): the flag is not in
    their help (and refused there with the reason, above)."""
    for command, offered in (("topk", True), ("histogram", True), ("aggregate", True),
                             ("running", False)):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert ("--min-release-users" in capsys.readouterr().out) is offered, command
