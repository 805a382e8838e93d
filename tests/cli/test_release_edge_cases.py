"""Edge cases of ``privloss histogram`` / ``topk`` found in review: each gives a
result or one line with exit 2 (never a traceback), and leaves the ledger as it was."""

import json

import pytest

pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")

from privloss.cli.main import main  # noqa: E402


@pytest.fixture()
def rows(tmp_path):
    lines = ["user,item"] + [f"u{u},{item}" for u in range(40) for item in ("a", "b")[: 1 + u % 2]]
    path = tmp_path / "select_rows.csv"          # a name that starts like SQL
    path.write_text("\n".join(lines) + "\n")
    return path


def run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def base(path, command="histogram"):
    return [command, path, "--privacy-unit", "user", "--item-column", "item"]


def test_gaussian_histogram_over_a_known_domain(capsys, rows, tmp_path):
    domain = tmp_path / "domain.txt"
    domain.write_text("a\nb\nc\n")
    code, out, err = run(capsys, *base(rows), "--epsilon", "1", "--delta", "1e-6",
                         "--noise", "gaussian", "--domain", domain, "--l0", "2", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["algorithm"] == "known-gaussian"
    assert {row["item"] for row in payload["items"]} == {"a", "b", "c"}


def test_known_domain_without_l0_uses_the_domain_size(capsys, rows, tmp_path):
    domain = tmp_path / "domain.txt"
    domain.write_bytes("\ufeffa\nb\n".encode("utf-8"))       # a byte-order mark is not a label
    code, out, err = run(capsys, *base(rows), "--epsilon", "1", "--domain", domain, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["parameters"]["l0_sensitivity"] == 2
    assert {row["item"] for row in payload["items"]} == {"a", "b"}


def test_parquet_directory_is_data(capsys, tmp_path):
    import pyarrow.parquet as pq

    folder = tmp_path / "parts"
    folder.mkdir()
    for part in range(2):
        table = pa.table({"user": [f"u{part}{i}" for i in range(30)], "item": ["a"] * 30})
        pq.write_table(table, folder / f"part-{part}.parquet")
    code, out, err = run(capsys, *base(folder), "--epsilon", "1", "--l0", "1", "--domain",
                         _domain(tmp_path, "a"), "--json")
    assert code == 0, err
    assert json.loads(out)["items"][0]["item"] == "a"


def _domain(tmp_path, *labels):
    path = tmp_path / "d.txt"
    path.write_text("\n".join(labels) + "\n")
    return path


@pytest.mark.parametrize("extra, needle", [
    (["--seed", "-1"], "seed"),
    (["--domain", "BINARY"], "UTF-8"),
    (["--epsilon", "1e-300", "--l0", "1", "--delta", "1e-6"], "epsilon"),
    (["--k", "2000000", "--l0", "1", "--delta", "1e-6"], "--k"),
    (["--k", "10001", "--l0", "1", "--delta", "1e-6"], "at most 10,000"),
    # was searched up to inf ("--epsilon must be in (0, inf), got inf")
    (["--epsilon", "1e300", "--l0", "1", "--delta", "1e-6"], "[0.001, 1,000,000]"),
    (["--interaction", "setwise", "--l0", "1", "--delta", "1e-6"], "interaction"),
])
def test_bad_values_one_line_exit_2_ledger_unchanged(capsys, rows, tmp_path, extra, needle):
    ledger = tmp_path / "ledger.sqlite"
    run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d", "--epsilon", "1")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"a\xff\xfe\n")
    extra = [str(binary) if arg == "BINARY" else arg for arg in extra]
    argv = base(rows, "topk") + ["--k", "1", "--epsilon", "0.5", "--ledger", ledger,
                                 "--dataset", "d"]
    for flag, value in zip(extra[::2], extra[1::2]):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    try:
        code, out, err = run(capsys, *argv)
    except SystemExit as exit_:          # argparse rejects it before the command runs
        code, (out, err) = exit_.code, capsys.readouterr()
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and out == ""
    shown = json.loads(run(capsys, "ledger", "show", "--ledger", ledger, "--dataset", "d",
                           "--json")[1])
    assert shown["releases"] == 0


def test_extreme_but_valid_parameters_release(capsys, rows, tmp_path):
    domain = _domain(tmp_path, "a", "b")
    # the top of the documented range (the service's too); 1e300 is refused below
    for extra in (["--epsilon", "1e6"], ["--epsilon", "1", "--linf", "1000000000000"]):
        code, out, err = run(capsys, *base(rows), "--l0", "2", "--domain", domain, *extra)
        assert code == 0, err


def test_labels_with_control_characters_stay_on_one_line(capsys, tmp_path):
    path = tmp_path / "rows.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"user": [f"u{i}" for i in range(50)],
                             "item": ["two\nlines"] * 50}), path)
    domain = tmp_path / "d.txt"
    domain.write_text("x\n")
    code, out, err = run(capsys, *base(path), "--epsilon", "5", "--l0", "1", "--delta", "1e-3",
                         "--d-bar", "5")
    assert code == 0, err
    assert "two\\nlines" in out


def test_sql_over_changed_data_is_a_new_query(capsys, tmp_path):
    data = tmp_path / "events.csv"
    data.write_text("user,item\n" + "".join(f"u{i},a\n" for i in range(50)))
    ledger = tmp_path / "ledger.sqlite"
    run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d", "--epsilon", "10")
    domain = _domain(tmp_path, "a")
    query = ["histogram", "SELECT * FROM events", "--sql", "--table", f"events={data}",
             "--privacy-unit", "user",
             "--item-column", "item", "--epsilon", "1", "--l0", "1", "--domain", domain,
             "--ledger", ledger, "--dataset", "d", "--json"]
    assert json.loads(run(capsys, *query)[1])["spent"]["releases"] == 1
    assert json.loads(run(capsys, *query)[1])["spent"]["repeated_query_free"] is True
    data.write_text(data.read_text() + "u99,a\n")
    again = json.loads(run(capsys, *query)[1])
    assert again["spent"]["releases"] == 2 and again["spent"]["repeated_query_free"] is False


def test_delta_above_the_budget_is_named(capsys, rows, tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d", "--epsilon", "1")
    code, out, err = run(capsys, *base(rows, "topk"), "--k", "1", "--epsilon", "0.5",
                         "--delta", "1e-6", "--l0", "1", "--ledger", ledger, "--dataset", "d")
    assert code == 3 and "budget" in err and "delta" in err
