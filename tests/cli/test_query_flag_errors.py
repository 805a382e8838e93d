"""Out-of-range flags of ``privloss aggregate`` / ``sql`` (found by hand): one
line naming the flag and the value, exit 2, never a traceback, and the ledger
as it was."""

import sqlite3

import pytest

pytest.importorskip("duckdb")

from privloss.cli.main import main  # noqa: E402


@pytest.fixture()
def setup(tmp_path, capsys):
    data = tmp_path / "orders.csv"
    data.write_text("user,country,amount\n" + "".join(
        f"u{i},{'FR' if i % 2 else 'DE'},{i % 7}\n" for i in range(20)))
    ledger = tmp_path / "ledger.sqlite"
    assert main(["ledger", "create", "--ledger", str(ledger), "--dataset", "d",
                 "--budget-epsilon", "1", "--budget-delta", "1e-5", "--no-witness"]) == 0
    capsys.readouterr()
    return data, ledger


def releases(ledger) -> int:
    with sqlite3.connect(ledger) as conn:
        return conn.execute("SELECT count(*) FROM releases").fetchone()[0]


@pytest.mark.parametrize("command", ["aggregate", "sql"])
@pytest.mark.parametrize("flag", ["--max-groups", "--max-rows-per-group"])
@pytest.mark.parametrize("value", ["0", "-3", "1.5", "many"])
def test_group_bounds_out_of_range(capsys, setup, command, flag, value):
    data, ledger = setup
    if command == "aggregate":
        argv = ["aggregate", str(data), "--by", "country", "--count"]
    else:
        argv = ["sql", "SELECT country, COUNT(*) FROM t GROUP BY country",
                "--table", f"t={data}"]
    argv += ["--privacy-unit", "user", "--epsilon", "0.5", "--delta", "1e-6",
             "--ledger", str(ledger), "--dataset", "d", flag, value]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert flag in err and value in err and "integer >= 1" in err
    assert releases(ledger) == 0


@pytest.mark.parametrize("extra", [[], ["--rollup"]])
@pytest.mark.parametrize("command", ["aggregate", "sql"])
def test_missing_keys_file_names_the_flag(capsys, setup, tmp_path, command, extra):
    data, ledger = setup
    missing = tmp_path / "no-keys.csv"
    if command == "aggregate":
        argv = ["aggregate", str(data), "--by", "country", "--count", *extra]
    else:
        group = "ROLLUP(country)" if extra else "country"
        argv = ["sql", f"SELECT country, COUNT(*) FROM t GROUP BY {group}",
                "--table", f"t={data}"]
    argv += ["--privacy-unit", "user", "--epsilon", "0.5", "--keys", str(missing),
             "--ledger", str(ledger), "--dataset", "d"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "--keys" in err and str(missing) in err and "Errno" not in err
    assert releases(ledger) == 0


def test_dry_run_states_a_quantile_rank_error_not_a_half_width(capsys, setup):
    data, _ = setup
    code = main(["sql", "SELECT country, COUNT(*), MEDIAN(amount) FROM t GROUP BY country",
                 "--table", f"t={data}", "--privacy-unit", "user", "--bounds", "amount=0:10",
                 "--epsilon", "1", "--delta", "1e-6", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    quantile = next(line for line in out.splitlines() if "quantile:amount:0.5" in line)
    assert "95% rank error" in quantile and quantile.endswith(" rows")
    assert "half-width" not in quantile
    rows = next(line for line in out.splitlines() if line.strip().startswith("rows "))
    assert "95% half-width" in rows


@pytest.mark.parametrize("command", ["aggregate", "sql"])
@pytest.mark.parametrize("value", ["0", "-1", "101", "inf", "nan"])
def test_epsilon_out_of_range_states_the_one_range(capsys, setup, command, value):
    data, ledger = setup
    if command == "aggregate":
        argv = ["aggregate", str(data), "--by", "country", "--count"]
    else:
        argv = ["sql", "SELECT country, COUNT(*) FROM t GROUP BY country", "--table", f"t={data}"]
    argv += ["--privacy-unit", "user", "--epsilon", value, "--ledger", str(ledger),
             "--dataset", "d"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--epsilon" in err and value in err
    assert "(0, 100]" in err or "must be a number" in err
    assert releases(ledger) == 0


def test_library_names_are_spelled_as_flags(capsys, setup):
    data, ledger = setup
    base = ["aggregate", str(data), "--by", "country", "--count", "--ledger", str(ledger),
            "--dataset", "d"]
    keys = data.parent / "keys.csv"
    keys.write_text("country\nDE\nFR\n")
    # --min-release-users needs a thresholded release: not one with public keys
    assert main(base + ["--privacy-unit", "user", "--keys", str(keys),
                        "--min-release-users", "5", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--min-release-users needs" in err
    assert main(base + ["--privacy-unit", "nobody", "--epsilon", "0.5", "--keys", str(keys)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--privacy-unit 'nobody' is not a column" in err
    assert releases(ledger) == 0


@pytest.mark.parametrize("command", ["aggregate", "sql"])
def test_accuracy_targets_on_a_rollup_name_both_spellings(capsys, setup, command):
    data, ledger = setup
    if command == "aggregate":
        argv = ["aggregate", str(data), "--by", "country", "--count", "--rollup"]
    else:
        argv = ["sql", "SELECT country, COUNT(*) FROM t GROUP BY ROLLUP(country)",
                "--table", f"t={data}"]
    argv += ["--privacy-unit", "user", "--delta", "1e-6", "--target-half-width", "10",
             "--ledger", str(ledger), "--dataset", "d"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GROUP BY ROLLUP" in err and "--rollup" in err
    assert releases(ledger) == 0
