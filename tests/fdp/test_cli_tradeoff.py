"""``privloss tradeoff`` through a temporary parser (the lead wires it into cli/main.py)."""

import argparse
import csv

import pytest

from privloss.cli import tradeoff
from privloss.cli._common import CommandError


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv):
    parser = _OneLineParser(prog="privloss")
    sub = parser.add_subparsers(dest="command", parser_class=_OneLineParser)
    tradeoff.register(sub)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except CommandError as error:
        print(f"privloss tradeoff: error: {error}", file=__import__("sys").stderr)
        return error.exit_code


def run(capsys, *argv):
    code = main(["tradeoff", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_exit(capsys, *argv):
    with pytest.raises(SystemExit) as info:
        main(["tradeoff", *argv])
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_table_compares_rr_and_gaussian(capsys):
    code, out, _ = run(capsys, "--rr", "0.2x25", "--gaussian", "1", "--clt")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("curve")
    assert any(line.startswith("RR(eps=0.2) x25") and "exact" in line for line in lines)
    assert any(line.startswith("Gaussian(sigma=1)") for line in lines)
    assert "1.00167" in out                                  # CLT mu of 25-fold RR


def test_csv_has_alpha_and_beta_per_curve(capsys, tmp_path):
    path = tmp_path / "curves.csv"
    code, _, _ = run(capsys, "--rr", "0.2x25", "--laplace", "5x25", "--dp", "0.5",
                     "--csv", str(path), "--points", "51")
    assert code == 0
    rows = list(csv.DictReader(path.open()))
    assert set(rows[0]) == {"curve", "alpha", "beta", "beta_upper"}
    curves = {row["curve"] for row in rows}
    assert curves == {"RR(eps=0.2) x25", "Laplace(scale=5) x25", "pure-DP(eps=0.5)"}
    for row in rows:
        assert 0.0 <= float(row["beta"]) <= float(row["beta_upper"]) + 1e-12 <= 1.0 + 1e-12
    rr_at_zero = [row for row in rows if row["curve"].startswith("RR") and float(row["alpha"]) == 0.0]
    assert float(rr_at_zero[0]["beta"]) == 1.0


def test_csv_to_stdout(capsys):
    code, out, _ = run(capsys, "--gaussian", "2x4", "--sensitivity", "2", "--csv", "-", "--points", "5")
    assert code == 0 and out.splitlines()[0] == "curve,alpha,beta,beta_upper"
    assert "Gaussian(sigma=2) x4" in out


def test_plot_is_written(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "figure.png"
    code, _, _ = run(capsys, "--rr", "0.2x25", "--gaussian", "1", "--plot", str(path), "--clt")
    assert code == 0 and path.stat().st_size > 1000


@pytest.mark.parametrize("argv, message", [
    (("--gaussian", "0"), "sigma in '0' must be in (0, inf)"),
    (("--rr", "-1"), "epsilon in '-1' must be in [0, 700]"),
    (("--laplace", "1x0"), "K in '1x0' must be an integer in [1, 10^6]"),
    (("--rr", "0.1", "--sensitivity", "0"), "sensitivity must be in (0, inf)"),
    (("--rr", "0.1", "--points", "1"), "points must be an integer in [2, 10^5]"),
])
def test_bad_values_exit_2_with_one_line(capsys, argv, message):
    code, _, err = run_exit(capsys, *argv)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_no_mechanism_is_an_error(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "give at least one mechanism" in err


def test_unwritable_csv_is_an_error(capsys, tmp_path):
    code, _, err = run(capsys, "--rr", "0.1", "--csv", str(tmp_path / "missing" / "x.csv"))
    assert code == 2 and "cannot write --csv" in err and len(err.strip().splitlines()) == 1


def test_huge_laplace_composition_is_refused(capsys):
    code, _, err = run(capsys, "--laplace", "0.001x10")
    assert code == 2 and "too large" in err


def test_plot_without_matplotlib_is_a_one_line_error(capsys, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)      # makes `import matplotlib` fail
    code, _, err = run(capsys, "--rr", "0.1", "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "--plot needs matplotlib" in err and len(err.strip().splitlines()) == 1
