"""Plans from the command line: ``ledger create --interaction adaptive|setwise
--plan FILE``, releases that follow the plan, and releases that do not (exit 2,
nothing computed, the ledger unchanged)."""

import json
import sqlite3

import pytest

pytest.importorskip("duckdb")

from privloss.cli.main import main  # noqa: E402
from tests._rows import write_rows  # noqa: E402


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "rows.csv"
    write_rows(path, {"a": 60, "b": 40})
    domain = tmp_path / "domain.txt"
    domain.write_text("a\nb\nc\n")
    return path, domain


PLAN = """
# two top-2 releases over a known domain of 3 labels, then a histogram
[[release]]
command = "topk"
algorithm = "known-gumbel"
epsilon = 0.3
k = 2
domain_size = 3

[[release]]
command = "topk"
algorithm = "known-gumbel"
epsilon = 0.3
k = 2
domain_size = 3

[[release]]
command = "histogram"
noise = "laplace"
epsilon = 0.2
l0 = 2
domain_size = 3
"""


def run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rows_in(path) -> list:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id, coalesce(status, 'pending'), plan_item FROM releases "
                            "LEFT JOIN outcomes ON release_id = id ORDER BY id").fetchall()


def create(capsys, tmp_path, interaction, plan_text=PLAN):
    plan = tmp_path / "plan.toml"
    plan.write_text(plan_text)
    ledger = tmp_path / "ledger.sqlite"
    result = run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
                 "--budget-epsilon", "1", "--budget-delta", "1e-6", "--interaction",
                 interaction, "--plan", plan)
    return ledger, result


def topk(data, ledger, epsilon="0.3", seed="3"):
    rows, domain = data
    return ["topk", rows, "--privacy-unit", "user", "--item-column", "item", "--k", "2",
            "--epsilon", epsilon, "--domain", domain, "--ledger", ledger, "--dataset", "d",
            "--seed", seed, "--json"]


def test_adaptive_plan_from_a_file(capsys, data, tmp_path):
    ledger, (code, out, err) = create(capsys, tmp_path, "adaptive")
    assert code == 0, err
    assert "0 of 3 planned releases used" in out and "#3  command=histogram" in out
    code, out, err = run(capsys, *topk(data, ledger))
    assert code == 0, err
    # off plan: another epsilon; refused before any data is read, nothing recorded
    before = rows_in(ledger)
    code, out, err = run(capsys, *topk(data, ledger, epsilon="0.4"))
    assert code == 2 and out == ""
    error = [line for line in err.splitlines() if "warning" not in line]
    assert len(error) == 1 and "next planned release is #2" in error[0]
    assert rows_in(ledger) == before
    # out of order: the histogram is item 3
    rows, domain = data
    code, _, err = run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column",
                       "item", "--epsilon", "0.2", "--l0", "2", "--domain", domain,
                       "--ledger", ledger, "--dataset", "d")
    assert code == 2 and "#2" in err
    assert run(capsys, *topk(data, ledger))[0] == 0          # a repeat: free, no plan item
    assert run(capsys, *topk(data, ledger, seed="4"))[0] == 0
    code, _, err = run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column",
                       "item", "--epsilon", "0.2", "--l0", "2", "--domain", domain,
                       "--ledger", ledger, "--dataset", "d")
    assert code == 0, err
    code, _, err = run(capsys, *topk(data, ledger, epsilon="0.01"))
    assert code == 3 and "planned releases were made" in err
    code, out, _ = run(capsys, "ledger", "show", "--ledger", ledger, "--dataset", "d", "--json")
    shown = json.loads(out)
    assert [item["used"] for item in shown["plan"]] == [True, True, True]
    assert shown["spent_epsilon"] <= 1.0 and [row[2] for row in rows_in(ledger)] == [0, 1, 2]


def test_plans_that_do_not_fit_or_are_malformed_are_refused(capsys, tmp_path):
    ledger, (code, _, err) = create(capsys, tmp_path, "adaptive", PLAN * 3)
    assert code == 2 and "does not fit the budget" in err and "over the budget" in err
    assert not ledger.exists() or rows_in(ledger) == []
    for text, message in (("[[release]]\ncommand = 'count'\nepsilon = 1\n", "command must be"),
                          ("[[release]]\ncommand = 'topk'\nk = 2\n", "epsilon is required"),
                          ("[[release]]\nbogus = 1\n", "unknown field"),
                          ("not toml [", "not valid TOML")):
        _, (code, _, err) = create(capsys, tmp_path, "setwise", text)
        assert code == 2 and message in err and err.count("\n") == 1, err


def test_interaction_and_plan_go_together(capsys, tmp_path):
    ledger = tmp_path / "l.sqlite"
    code, _, err = run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
                       "--budget-epsilon", "1", "--interaction", "adaptive")
    assert code == 2 and "needs --plan" in err
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN)
    code, _, err = run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
                       "--budget-epsilon", "1", "--plan", plan)
    assert code == 2 and "--plan goes with" in err
    code, _, err = run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
                       "--budget-epsilon", "1")
    assert code == 0 and "no --budget-delta" in err or "no --delta" in err   # the warning
