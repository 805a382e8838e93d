"""The ``privloss compose`` and ``privloss calibrate`` contract."""

import json
import subprocess
import sys

import pytest

from privloss.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_exit(capsys, *argv):
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_compose_json_contract(capsys):
    code, out, _ = run(capsys, "compose", "--dp", "0.1x50", "--delta", "1e-6", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["target_delta"] == 1e-6
    assert payload["bound"] == "optimal-dp"
    assert payload["epsilon"] == pytest.approx(3.172902734019, rel=1e-9)
    names = {row["name"] for row in payload["bounds"]}
    assert {"basic", "optimal-dp", "kov-advanced", "setwise-eq3", "zcdp-tight"} <= names
    for row in payload["bounds"]:
        assert {"name", "epsilon", "applies", "reason"} <= set(row) <= \
            {"name", "epsilon", "applies", "reason", "epsilon_lower"}
        assert (row["epsilon"] is None) == (not row["applies"])


def test_pld_bound_reports_its_lower_end(capsys):
    code, out, _ = run(capsys, "compose", "--laplace", "10x1000", "--delta", "1e-6", "--json")
    payload = json.loads(out)
    assert code == 0 and payload["bound"] == "pld"
    row = next(row for row in payload["bounds"] if row["name"] == "pld")
    assert row["epsilon_lower"] <= row["epsilon"] == payload["epsilon"]
    # 1000 Laplace(scale 10) are 0.1-DP each: tighter than the worst case of Theorem 1
    optimal = next(row for row in payload["bounds"] if row["name"] == "optimal-dp")
    assert payload["epsilon"] < optimal["epsilon"]


def test_named_mechanism_flags(capsys):
    code, out, _ = run(capsys, "compose", "--gaussian", "2x3", "--sensitivity", "2", "--rr", "0.5",
                       "--epsilon", "1", "--json")
    payload = json.loads(out)
    assert code == 0 and 0 < payload["delta"] < 1


def test_compose_epsilon_target_json(capsys):
    code, out, _ = run(capsys, "compose", "--br", "1x2", "--epsilon", "0", "--interaction",
                       "non-adaptive", "--json")
    payload = json.loads(out)
    assert code == 0 and set(payload) == {"target_epsilon", "delta", "bound", "bounds"}
    assert payload["delta"] == pytest.approx(0.288317262369, rel=1e-9)    # worked_values §2
    assert all("delta" in row for row in payload["bounds"])


def test_compose_human_table_marks_the_choice(capsys):
    code, out, _ = run(capsys, "compose", "--dp", "0.1x5", "--br", "0.1x5", "--zcdp", "0.005x2",
                       "--approx-dp", "0.1:1e-9", "--delta", "1e-6")
    assert code == 0
    chosen = [line for line in out.splitlines() if line.startswith("*")]
    assert len(chosen) == 1
    assert "n/a:" in out


def test_order_of_flags_is_kept(capsys):
    # (DP, BR, BR) and (BR, BR, DP) differ adaptively (worked_values §4 table)
    _, first, _ = run(capsys, "compose", "--dp", "1", "--br", "1x2", "--epsilon", "0", "--json")
    _, last, _ = run(capsys, "compose", "--br", "1x2", "--dp", "1", "--epsilon", "0", "--json")
    assert json.loads(first)["delta"] > json.loads(last)["delta"]


@pytest.mark.parametrize("argv, needle", [
    (["compose", "--dp", "-0.1", "--target-delta", "1e-6"], "epsilon"),
    (["compose", "--dp", "nan", "--target-delta", "1e-6"], "epsilon"),
    (["compose", "--dp", "0.1", "--target-delta", "1"], "delta"),
    (["compose", "--dp", "0.1", "--target-delta", "-0.5"], "delta"),
    (["compose", "--dp", "0.1x0", "--target-delta", "1e-6"], "K"),
    (["compose", "--dp", "0.1x2.5", "--target-delta", "1e-6"], "K"),
    (["compose", "--dp", "0.1"], "--target-delta"),
    (["compose", "--dp", "0.1", "--target-delta", "1e-6", "--target-epsilon", "1"], "--target-epsilon"),
    (["compose", "--dp", "0.1", "--target-delta", "1e-6", "--bogus"], "--bogus"),
    (["compose", "--approx-dp", "0.1", "--target-delta", "1e-6"], "EPS:DELTA"),
    (["compose", "--laplace", "0", "--target-delta", "1e-6"], "scale"),
    (["compose", "--gaussian", "1", "--sensitivity", "-1", "--target-delta", "1e-6"], "sensitivity"),
    (["calibrate", "--k", "0", "--target-epsilon", "1", "--target-delta", "1e-6"], "K"),
])
def test_bad_input_one_line_exit_2(capsys, argv, needle):
    code, out, err = run_exit(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert needle in err


def test_no_mechanism_is_an_error(capsys):
    code, _, err = run(capsys, "compose", "--delta", "1e-6")
    assert code == 2 and "at least one mechanism" in err


def test_calibrate_old_delta_spelling_still_works_with_a_warning(capsys):
    code, out, err = run(capsys, "calibrate", "--k", "10", "--target-epsilon", "1",
                         "--delta", "1e-6", "--json")
    assert code == 0 and json.loads(out)["delta"] == 1e-6
    assert "--delta is deprecated" in err and "--target-delta" in err


def test_calibrate_json(capsys):
    code, out, _ = run(capsys, "calibrate", "--k", "10", "--target-epsilon", "0.999370905722",
                       "--target-delta", "1e-6", "--json")
    payload = json.loads(out)
    assert code == 0
    assert payload["per_mechanism_epsilon"] == pytest.approx(0.1, rel=1e-8)
    assert payload["check"]["epsilon"] <= 0.999370905722


def test_calibrate_gaussian(capsys):
    code, out, _ = run(capsys, "calibrate", "--k", "1", "--target-epsilon", "1", "--target-delta", "1e-5",
                       "--kind", "gaussian", "--json")
    assert json.loads(out)["sigma"] == pytest.approx(3.730631634816, rel=1e-9)


def test_console_script_runs():
    completed = subprocess.run([sys.executable, "-m", "privloss.cli.main", "compose", "--br", "0.1x10",
                                "--delta", "1e-6", "--interaction", "non-adaptive", "--json"],
                               capture_output=True, text=True, check=True)
    assert json.loads(completed.stdout)["epsilon"] == pytest.approx(0.628636838773, rel=1e-9)


def test_a_billion_equal_mechanisms_from_the_command_line(capsys):
    """Issue 23 item 3: one homogeneous --dp flag reaches 10^10 mechanisms (Theorem 1
    over O(sqrt k) terms); the value agrees with the library's compose()."""
    from privloss import PureDP, compose

    assert main(["compose", "--dp", "0.001x1000000000", "--target-delta", "1e-6",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    expected = compose([PureDP(0.001, count=10 ** 9)], target_delta=1e-6)
    assert result["bound"] == "optimal-dp" and result["epsilon"] == expected.epsilon


def test_mixed_flags_stay_under_a_million(capsys):
    code = main(["compose", "--dp", "0.001x2000000", "--br", "0.1", "--target-delta", "1e-6"])
    assert code == 2
    assert "at most 10^6 mechanisms" in capsys.readouterr().err
