"""``--user-column`` is the deprecated spelling of ``--privacy-unit`` (issue 22
item 5): it still works, with one fixed warning line on stderr."""

from __future__ import annotations

import json

import pytest

from tests._rows import write_rows

pytest.importorskip("duckdb")

from privloss.cli.main import main  # noqa: E402

WARNING = ("privloss: warning: --user-column is deprecated; use --privacy-unit (the old "
           "spelling will be removed in the next release)")


def _run(capsys, rows, flag):
    code = main(["topk", str(rows), flag, "user", "--item-column", "item", "--k", "2",
                 "--epsilon", "1", "--delta", "1e-6", "--l0", "2", "--d-bar", "10",
                 "--seed", "1", "--json", "-q"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("counts", [{"a": 300, "b": 200, "c": 3}, {"a": 300, "b": 200, "c": 4}])
def test_old_spelling_works_and_warns_identically(tmp_path, capsys, counts):
    rows = tmp_path / "rows.csv"
    write_rows(rows, counts)          # the two parameters are neighbouring datasets
    code, out, err = _run(capsys, rows, "--user-column")
    assert code == 0
    assert err.strip().splitlines() == [WARNING]
    new = _run(capsys, rows, "--privacy-unit")
    assert new[0] == 0 and new[2] == ""
    assert json.loads(new[1])["items"] == json.loads(out)["items"]


def test_missing_privacy_unit_is_exit_2(tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    write_rows(rows, {"a": 3})
    code = main(["histogram", str(rows), "--item-column", "item", "--epsilon", "1"])
    assert code == 2
    assert "--privacy-unit" in capsys.readouterr().err
