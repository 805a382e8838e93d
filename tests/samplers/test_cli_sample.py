"""``privloss sample`` through a parser of our own (main.py wires it in later)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from privloss.cli import sample
from privloss.cli._common import CommandError


class OneLineParser(argparse.ArgumentParser):
    """Mirror of main.py's parser: one-line errors, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser():
    parser = OneLineParser(prog="privloss")
    subparsers = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    subparsers.required = True
    sample.register(subparsers)
    return parser


def run(argv):
    """Run like main.main: returns (exit status, stdout-independent)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except CommandError as error:
        return error.exit_code


def test_summary_reports_sample_and_exact_moments(capsys):
    argv = ["sample", "discrete-gaussian", "--scale", "10/3", "-n", "50000", "--seed", "1"]
    assert run(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["distribution"] == "discrete-gaussian"
    assert summary["sigma_squared"] == "100/9" and summary["n"] == 50000
    assert summary["exact_variance"] == pytest.approx(100 / 9, rel=1e-12)
    assert abs(summary["sample_mean"]) < 5 * summary["mean_standard_error"]
    assert summary["variance_ratio"] == pytest.approx(1, abs=0.05)
    assert "insecure" in summary["source"]
    assert "INSECURE" in captured.err


def test_laplace_summary_with_secure_default(capsys):
    assert run(["sample", "discrete-laplace", "--scale", "4", "-n", "20000"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scale"] == "4" and summary["source"].startswith("secure")
    assert summary["exact_variance"] == pytest.approx(2 * np.exp(0.25) / np.expm1(0.25) ** 2)


def test_seed_is_reproducible(tmp_path):
    first, second = tmp_path / "a.npy", tmp_path / "b.npy"
    for path in (first, second):
        assert run(["sample", "discrete-gaussian", "--scale", "1000000", "-n", "1000",
                    "--seed", "7", "-o", str(path)]) == 0
    a, b = np.load(first), np.load(second)
    assert a.dtype == np.int64 and a.shape == (1000,)
    assert np.array_equal(a, b)


def test_count_accepts_exponent_notation(capsys):
    assert run(["sample", "discrete-laplace", "--scale", "1", "-n", "1e3", "--seed", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 1000


def test_csv_output(tmp_path):
    path = tmp_path / "noise.csv"
    assert run(["sample", "discrete-laplace", "--scale", "2.5", "-n", "100", "--seed", "3",
                "-o", str(path)]) == 0
    lines = path.read_text().splitlines()
    assert lines[0] == "value" and len(lines) == 101
    assert all(line.lstrip("-").isdigit() for line in lines[1:])


def test_huge_values_need_csv(tmp_path):
    assert run(["sample", "discrete-laplace", "--scale", str(2**70), "-n", "5", "--seed", "1",
                "-o", str(tmp_path / "x.npy")]) == 2
    path = tmp_path / "x.csv"
    assert run(["sample", "discrete-laplace", "--scale", str(2**70), "-n", "5", "--seed", "1",
                "-o", str(path)]) == 0
    assert len(path.read_text().splitlines()) == 6


@pytest.mark.parametrize("argv,message", [
    (["--scale", "0", "-n", "10"], "--scale must be a positive rational"),
    (["--scale", "-3", "-n", "10"], "--scale must be a positive rational"),
    (["--scale", "abc", "-n", "10"], "--scale must be a rational number"),
    (["--scale", "1", "-n", "0"], "-n must be an integer between 1"),
    (["--scale", "1", "-n", "ten"], "-n must be an integer between 1"),
    (["--scale", "1", "-n", "2.5"], "-n must be an integer between 1"),
    (["--scale", "1", "-n", "1e12"], "-n must be an integer between 1"),
    (["--scale", "1", "-n", "5", "-o", "out.txt"], "-o must end in .npy or .csv"),
    (["--scale", "1", "-n", "5", "-o", "/no/such/dir/out.npy"], "does not exist"),
    (["--scale", "1", "-n", "5", "--seed", "-2"], "--seed must be a non-negative integer"),
])
def test_bad_input_is_one_line_error(argv, message):
    args = build_parser().parse_args(["sample", "discrete-gaussian", *argv])
    with pytest.raises(CommandError, match=message) as raised:
        args.handler(args)
    assert "\n" not in str(raised.value)
    assert raised.value.exit_code == 2


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as raised:
        build_parser().parse_args(["sample", "discrete-cauchy", "--scale", "1", "-n", "3"])
    assert raised.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sample", "discrete-gaussian", "-n", "3"])  # no --scale
