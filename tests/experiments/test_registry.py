"""The registry and the ``privloss reproduce`` command (through a temporary parser)."""

import argparse
import json

import pytest

from privloss import experiments
from privloss.cli import reproduce
from privloss.cli._common import CommandError
from privloss.experiments import _common

MINE = ("cr-fig1", "cr-interpolation", "cr-fig3", "cr-fig4", "cr-fig5", "notes-examples")


def parse(*argv):
    parser = argparse.ArgumentParser(prog="privloss")
    reproduce.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["reproduce", *argv])


def call(capsys, *argv):
    code = reproduce.run(parse(*argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_registry_lists_every_module_in_order():
    entries = experiments.entries()
    assert [entry.module_name for entry in entries] == list(experiments.MODULES)
    names = experiments.available()
    for name in MINE:
        assert name in names
        module = names[name]
        assert module.NAME == name and module.TITLE and module.SOURCE and callable(module.run)
    for entry in entries:
        assert entry.available or entry.reason


def test_get_accepts_module_names_and_rejects_unknown():
    assert experiments.get("cr_fig1") is experiments.get("cr-fig1")
    with pytest.raises(LookupError, match="unknown reproduction 'nope'"):
        experiments.get("nope")


def test_missing_module_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(experiments, "MODULES", experiments.MODULES + ("does_not_exist",))
    entry = experiments.entries()[-1]
    assert not entry.available and entry.reason == "not implemented yet"
    with pytest.raises(LookupError, match="not available"):
        experiments.get("does-not-exist")


def test_list(capsys):
    code, out, _ = call(capsys, "--list")
    assert code == 0
    for name in MINE:
        assert name in out
    assert len(out.strip().splitlines()) == len(experiments.MODULES)


def test_unknown_name_is_a_one_line_error(capsys):
    with pytest.raises(CommandError) as info:
        reproduce.run(parse("nope"))
    assert info.value.exit_code == 2
    assert "\n" not in str(info.value) and "unknown reproduction 'nope'" in str(info.value)


def test_missing_name_and_bad_out(tmp_path):
    with pytest.raises(CommandError):
        reproduce.run(parse())
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(CommandError, match="--out must be a directory"):
        reproduce.run(parse("cr-fig4", "--out", str(file), "--quick"))


def test_bad_seed_is_rejected_by_argparse():
    with pytest.raises(SystemExit):
        parse("cr-fig4", "--seed", "-1")


def test_run_one_writes_files_and_progress(capsys, tmp_path):
    code, out, err = call(capsys, "cr-fig4", "--quick", "--out", str(tmp_path), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["name"] == "cr-fig4"
    assert payload["key_numbers"]["laplace_lemma62_l0_10"] == pytest.approx(0.9993709057, rel=1e-9)
    for suffix in ("csv", "png", "md"):
        assert (tmp_path / f"cr-fig4.{suffix}").is_file()
    assert "[cr-fig4]" in err and "100%" in err


def test_run_all_runs_every_available(capsys, tmp_path, monkeypatch):
    # 'all' over a registry cut down to two cheap reproductions (the full set is exercised
    # by each reproduction's own test file)
    monkeypatch.setattr(experiments, "MODULES", ("cr_fig4", "cr_interpolation", "absent_one"))
    code, out, err = call(capsys, "all", "--quick", "--out", str(tmp_path))
    assert code == 0
    assert "[1/2 cr-fig4]" in err and "[2/2 cr-interpolation]" in err
    assert "cr-fig4:" in out and "cr-interpolation:" in out
    assert (tmp_path / "cr-interpolation.md").is_file()


def test_progress_printer_and_csv_helpers(tmp_path):
    import io

    stream = io.StringIO()
    _common.progress_printer("x", stream, width=4)(0.5, "half")
    assert stream.getvalue() == "[x] [##..]  50% half\n"
    params = [_common.parameter("epsilon", 0.1, _common.OURS)]
    path = _common.write_csv(tmp_path / "t.csv", ("a", "b"), [(1, 0.1)], params)
    assert _common.read_csv(path) == [{"a": "1", "b": "0.1", "parameters_source": "ours: epsilon=0.1"}]
    with pytest.raises(ValueError, match="origin"):
        _common.parameter("x", 1, "mine")
    with pytest.raises(ValueError, match="columns"):
        _common.write_csv(tmp_path / "u.csv", ("a",), [(1, 2)])


def test_run_all_goes_on_past_a_failing_reproduction(capsys, tmp_path, monkeypatch):
    from privloss.experiments import cr_fig4

    def broken(out_dir, **_):
        raise ArithmeticError("bracket did not close")

    monkeypatch.setattr(experiments, "MODULES", ("cr_fig4", "cr_interpolation"))
    monkeypatch.setattr(cr_fig4, "run", broken)
    code, out, err = call(capsys, "all", "--quick", "--out", str(tmp_path))
    assert code == 1
    assert "cr-fig4 failed: ArithmeticError: bracket did not close" in err
    assert "1 of 2 failed: cr-fig4" in err.splitlines()[-1]
    assert "cr-interpolation:" in out and (tmp_path / "cr-interpolation.md").is_file()
    code, out, _ = call(capsys, "all", "--quick", "--out", str(tmp_path), "--json")
    assert code == 1
    assert [row["name"] for row in json.loads(out)] == ["cr-interpolation", "cr-fig4"]
    assert json.loads(out)[1]["failed"] is True


def test_matplotlib_is_checked_before_any_computation(capsys, tmp_path, monkeypatch):
    import importlib.util

    from privloss.experiments import cr_fig4

    def must_not_run(out_dir, **_):
        raise AssertionError("computed before checking matplotlib")

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(cr_fig4, "run", must_not_run)
    with pytest.raises(CommandError, match=r"pip install '\.\[plot\]'"):
        reproduce.run(parse("cr-fig4", "--quick", "--out", str(tmp_path)))


def test_difference_verdict():
    # t_{9, 0.975} = 2.2621571627 (scipy.stats.t.ppf; R: qt(0.975, 9))
    verdict = _common.difference_verdict([1.0, 3.0] * 5)
    assert verdict["mean"] == 2.0
    half = 2.2621571627 * (10 / 9) ** 0.5 / 10 ** 0.5
    assert (verdict["low"], verdict["high"]) == pytest.approx((2 - half, 2 + half), rel=1e-9)
    assert verdict["verdict"] == "agree" and verdict["text"].startswith("agree at 10 trials")
    assert _common.difference_verdict([-1.0, -3.0] * 5)["verdict"] == "disagree"
    unclear = _common.difference_verdict([-1.0, 1.5] * 5)
    assert unclear["verdict"] == "inconclusive" and "contains 0" in unclear["text"]
    assert _common.difference_verdict([5.0])["verdict"] == "inconclusive"   # no interval from one
    with pytest.raises(ValueError, match="finite"):
        _common.difference_verdict([1.0, float("nan")])
    row = _common.claim("c", "d", "o", True, "w", verdict="inconclusive")
    assert row["agree"] is None and row["verdict"] == "inconclusive"
    with pytest.raises(ValueError, match="verdict"):
        _common.claim("c", "d", "o", True, "w", verdict="maybe")
