"""One vocabulary (issue 13, item 6): new spellings, deprecation warnings for the
old ones (which keep working), counts such as 1e6, --json and an example in
every --help."""

import argparse
import json

import pytest

from privloss.cli._vocabulary import count_value
from privloss.cli.main import COMMANDS, build_parser, main


def run(capsys, *argv):
    try:
        code = main([str(arg) for arg in argv])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def deprecations(err: str) -> list[str]:
    return [line for line in err.splitlines() if "is deprecated" in line]


@pytest.mark.parametrize("text, value", [("1e6", 10 ** 6), ("1_000", 1000), ("12", 12),
                                         ("1.5e3", 1500), (" 7 ", 7)])
def test_counts_accept_scientific_notation(text, value):
    assert count_value(text) == value


@pytest.mark.parametrize("text", ["1.5", "0", "-3", "abc", "1e400", "nan", "inf", ""])
def test_bad_counts_name_the_flag(text):
    with pytest.raises(argparse.ArgumentTypeError, match="--count must be an integer"):
        count_value(text, "--count", 10 ** 7)


def test_ledger_create_budget_flags_and_deprecated_spelling(capsys, tmp_path):
    new = tmp_path / "new.sqlite"
    code, out, err = run(capsys, "ledger", "create", "--ledger", new, "--dataset", "d",
                         "--budget-epsilon", "1", "--budget-delta", "1e-6", "--json")
    assert code == 0 and not deprecations(err)
    old = tmp_path / "old.sqlite"
    code, out_old, err = run(capsys, "ledger", "create", "--ledger", old, "--dataset", "d",
                             "--epsilon", "1", "--delta", "1e-6", "--json")
    assert code == 0
    warned = deprecations(err)
    assert len(warned) == 2 and "--budget-epsilon" in warned[0] and "--budget-delta" in warned[1]
    for key in ("budget_epsilon", "budget_delta", "interaction"):
        assert json.loads(out)[key] == json.loads(out_old)[key]
    code, _, err = run(capsys, "ledger", "create", "--ledger", tmp_path / "x.sqlite",
                       "--dataset", "d")
    assert code == 2 and "--budget-epsilon is required" in err


def test_compose_target_flags_and_deprecated_spelling(capsys):
    code, new, err = run(capsys, "compose", "--dp", "0.1x10", "--target-delta", "1e-6", "--json")
    assert code == 0 and not deprecations(err)
    code, old, err = run(capsys, "compose", "--dp", "0.1x10", "--delta", "1e-6", "--json")
    assert code == 0 and json.loads(old) == json.loads(new)
    assert "use --target-delta" in deprecations(err)[0]
    code, out, err = run(capsys, "compose", "--dp", "0.1x10", "--epsilon", "1", "--json")
    assert code == 0 and "use --target-epsilon" in deprecations(err)[0]
    assert json.loads(out)["target_epsilon"] == 1.0


def test_sample_sigma_and_sigma_squared(capsys):
    base = ["sample", "discrete-gaussian", "-n", "1e3", "--seed", "1"]
    code, by_sigma, err = run(capsys, *base, "--sigma", "3")
    assert code == 0 and not deprecations(err)
    code, by_square, _ = run(capsys, *base, "--sigma-squared", "9")
    code, by_scale, err = run(capsys, *base, "--scale", "3")
    assert code == 0 and "use --sigma" in deprecations(err)[0]
    first, second, third = (json.loads(text) for text in (by_sigma, by_square, by_scale))
    assert first["sigma_squared"] == second["sigma_squared"] == third["sigma_squared"] == "9"
    assert first["sample_mean"] == second["sample_mean"] == third["sample_mean"]
    assert first["n"] == 1000
    code, out, _ = run(capsys, "sample", "discrete-laplace", "--scale", "2", "--count", "10",
                       "--json", "--seed", "1")
    assert code == 0 and json.loads(out)["n"] == 10
    code, _, err = run(capsys, "sample", "discrete-laplace", "--sigma", "2", "-n", "3")
    assert code == 2 and "--sigma is for discrete-gaussian" in err


def test_tradeoff_json_and_count(capsys, tmp_path):
    code, out, err = run(capsys, "tradeoff", "--rr", "0.2x5", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["curves"][0]["label"].startswith("RR") and len(payload["alphas"]) == 6
    csv_new, csv_old = tmp_path / "new.csv", tmp_path / "old.csv"
    assert run(capsys, "tradeoff", "--rr", "0.2", "-n", "1e2", "--csv", csv_new)[0] == 0
    code, _, err = run(capsys, "tradeoff", "--rr", "0.2", "--points", "100", "--csv", csv_old)
    assert code == 0 and "use -n/--count" in deprecations(err)[0]
    assert csv_new.read_text() == csv_old.read_text()


def test_demo_count_flag_and_deprecated_rows():
    parser = build_parser("demo")
    assert parser.parse_args(["demo", "-n", "1e4"]).rows == 10_000
    assert parser.parse_args(["demo", "--count", "2e3"]).rows == 2_000
    assert parser.parse_args(["demo", "--rows", "1e3"]).rows == 1_000


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_has_an_example(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "example:" in out and f"privloss {command}" in out.split("example:")[1]


def test_ledger_actions_have_examples(capsys):
    for action in ("create", "show", "history", "verify"):
        with pytest.raises(SystemExit):
            main(["ledger", action, "--help"])
        assert "example:" in capsys.readouterr().out
