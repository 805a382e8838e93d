"""The audit's attacks (issue 10), each now learning nothing.

(a) exact counts in releases, (b) counts in query keys / history, (c) the
error oracle, (d) SQL injection and file access from --sql, (e) a stale answer
behind a glob-like name, (f) --domain on a device or a FIFO.
"""

import json
import logging
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("duckdb")

from privloss.query.errors import FIXED_MESSAGE  # noqa: E402
from tests.leaks._support import integers_in, rows, run, write_csv  # noqa: E402

COLUMNS = ["--privacy-unit", "user", "--item-column", "item"]
#: the count the oracle queries try to learn: the number of rows of D
N_ROWS = len(rows())


def _ledger(capsys, path, epsilon="10"):
    code, _, err = run(capsys, "ledger", "create", "--ledger", path, "--dataset", "d",
                       "--epsilon", epsilon, "--delta", "1e-4", "--interaction", "fully-adaptive")
    assert code == 0, err
    return ["--ledger", path, "--dataset", "d"]


def _history(capsys, ledger_flags):
    code, out, err = run(capsys, "ledger", "history", *ledger_flags, "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_no_visible_items_or_exact_count_in_any_output(capsys, tmp_path):
    data = write_csv(tmp_path / "d.csv")
    for algorithm in ("unknown-gumbel", "unknown-laplace", "gauss-ordered", "trunc-gauss"):
        code, out, err = run(capsys, "topk", data, *COLUMNS, "--k", "2", "--epsilon", "0.01",
                             "--delta", "1e-6", "--l0", "3", "--algorithm", algorithm,
                             "--json", "--seed", "1")
        assert code == 0, err
        payload = json.loads(out)
        assert "visible_items" not in out
        assert set(payload) == {"items", "algorithm", "parameters", "events", "spent",
                                "guarantee"}


def test_b_no_count_in_query_keys_or_history(capsys, tmp_path):
    data = write_csv(tmp_path / "d.csv")
    ledger = _ledger(capsys, tmp_path / "l.sqlite")
    code, _, err = run(capsys, "histogram", "SELECT * FROM t", "--sql", "--table", f"t={data}",
                       *COLUMNS, "--epsilon", "0.01", "--delta", "1e-6", "--l0", "3",
                       *ledger, "--json")
    assert code == 0, err
    [row] = _history(capsys, ledger)
    text = json.dumps(row)
    assert "row_hash_sum" not in text and '"rows"' not in text and "sha256" not in text
    key = row["query_key"]
    fingerprint = (json.loads(key) if isinstance(key, str) else key)["data"]
    assert set(fingerprint) == {"sql", "tables", "mac"}
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint["mac"])
    assert N_ROWS not in integers_in(row["query_key"])    # standalone numbers only


ORACLE = ("SELECT user, CASE WHEN (SELECT count(*) FROM t) > {n} THEN "
          "error('count=' || (SELECT count(*) FROM t)) ELSE item END AS item FROM t")


def test_c_exhausted_budget_refuses_before_reading(capsys, tmp_path):
    data = write_csv(tmp_path / "d.csv")
    ledger = _ledger(capsys, tmp_path / "l.sqlite", epsilon="0.5")
    answers = set()
    for n in (0, N_ROWS * 2):       # one query fails on the data, the other would not
        code, out, err = run(capsys, "topk", ORACLE.format(n=n), "--sql", "--table",
                             f"t={data}", *COLUMNS, "--k", "1", "--epsilon", "1",
                             "--delta", "1e-6", "--l0", "1", *ledger)
        assert code == 3 and out == "" and "budget" in err
        answers.add(err)
    assert len(answers) == 1          # the refusal does not depend on the data
    assert _history(capsys, ledger) == []


def test_c_engine_failure_fixed_message_and_charged(capsys, tmp_path, caplog):
    data = write_csv(tmp_path / "d.csv")
    ledger = _ledger(capsys, tmp_path / "l.sqlite")
    with caplog.at_level(logging.ERROR, logger="privloss.engine"):
        code, out, err = run(capsys, "topk", ORACLE.format(n=0), "--sql", "--table",
                             f"t={data}", *COLUMNS, "--k", "1", "--epsilon", "1",
                             "--delta", "1e-6", "--l0", "1", *ledger)
    assert code == 2 and out == ""
    assert re.fullmatch(rf"privloss topk: error: {FIXED_MESSAGE} \(error id [0-9a-f]{{8}}\)\n",
                        err)
    assert f"count={N_ROWS}" in caplog.text        # the operator's log has the real text
    code, out, _ = run(capsys, "ledger", "show", *ledger, "--json")
    assert json.loads(out)["spent_epsilon"] > 0      # the failed computation was charged


def test_c_no_ledger_engine_failure_is_fixed(capsys, tmp_path):
    data = write_csv(tmp_path / "d.csv")
    code, out, err = run(capsys, "topk", ORACLE.format(n=0), "--sql", "--table", f"t={data}",
                         *COLUMNS, "--k", "1", "--epsilon", "1", "--delta", "1e-6", "--l0", "1")
    assert code == 2 and out == "" and FIXED_MESSAGE in err and N_ROWS not in integers_in(err)


@pytest.mark.parametrize("text", [
    "SELECT 1 AS user, 'a' AS item) ; COPY (SELECT * FROM t) TO '{out}'; SELECT (1",
    "SELECT * FROM t; COPY (SELECT * FROM t) TO '{out}'",
    "COPY (SELECT * FROM t) TO '{out}'",
    "SELECT * FROM t, (SELECT 1) AS x -- ) ; COPY (SELECT * FROM t) TO '{out}'",
    "SELECT user, item FROM read_csv('{passwd}', columns={{'user': 'VARCHAR', "
    "'item': 'VARCHAR'}})",
    "SELECT * FROM t UNION ALL SELECT * FROM read_csv('{out}')",
    "ATTACH '{out}' AS other",
])
def test_d_injection_refused_and_nothing_written(capsys, tmp_path, text):
    data = write_csv(tmp_path / "d.csv")
    target = tmp_path / "exported.csv"
    query = text.format(out=target, passwd="/etc/passwd")
    code, out, err = run(capsys, "histogram", query, "--sql", "--table", f"t={data}", *COLUMNS,
                         "--epsilon", "1", "--delta", "1e-6", "--l0", "1", "--json")
    if code == 0:       # a harmless comment: only the registered table was read
        assert "--" in text
    else:
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert not target.exists()
    assert "root:" not in out + err


def test_e_glob_like_name_changed_data_is_a_fresh_charged_answer(capsys, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    literal = write_csv(folder / "d[1]*.csv")
    decoy = folder / "d1-decoy.csv"           # matches the name read as a glob
    decoy.write_text("user,item\n" + "".join(f"x{i},zzz\n" for i in range(500)))
    ledger = _ledger(capsys, tmp_path / "l.sqlite", epsilon="100")
    query = ["histogram", literal, *COLUMNS, "--epsilon", "5", "--delta", "1e-6", "--l0", "1",
             "--d-bar", "20", *ledger, "--json"]
    first = json.loads(run(capsys, *query)[1])
    assert first["spent"]["releases"] == 1
    assert "zzz" not in {row["item"] for row in first["items"]}
    assert json.loads(run(capsys, *query)[1])["spent"]["repeated_query_free"] is True
    literal.write_text(literal.read_text() + "late-user,a\n")
    again = json.loads(run(capsys, *query)[1])
    assert again["spent"]["releases"] == 2 and again["spent"]["repeated_query_free"] is False


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["device", "fifo", "large"])
def test_f_domain_device_fifo_or_huge_exits_2_at_once(tmp_path, kind):
    data = write_csv(tmp_path / "d.csv")
    if kind == "device":
        domain = "/dev/zero"
    elif kind == "fifo":
        domain = tmp_path / "fifo"
        os.mkfifo(domain)
    else:
        domain = tmp_path / "big.txt"
        with open(domain, "wb") as handle:       # sparse: 65 MiB without writing them
            handle.truncate(65 << 20)
    result = subprocess.run([sys.executable, "-m", "privloss.cli.main", "histogram", str(data),
                             *COLUMNS, "--epsilon", "1", "--l0", "1", "--domain", str(domain)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--domain" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
