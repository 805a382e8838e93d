"""``privloss topk|histogram`` on top of the Python API: --dry-run, --epsilon max,
the suppressed-items note, the same JSON as ``privloss.topk``, instant refusals."""

import json
from pathlib import Path

import pytest

from tests._rows import write_rows

pytest.importorskip("duckdb")

import privloss  # noqa: E402
from privloss.cli.main import main  # noqa: E402

RETAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "online_retail.csv.gz"
RETAIL_QUERY = ("SELECT CustomerID, Description FROM retail "
                "WHERE CustomerID IS NOT NULL AND Description IS NOT NULL")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("PRIVLOSS_FINGERPRINT_KEY", "11" * 32)


@pytest.fixture()
def rows(tmp_path):
    """Item a: 300 users, b: 200, c: 3 (never above an unknown-domain threshold)."""
    path = tmp_path / "rows.csv"
    write_rows(path, {"a": 300, "b": 200, "c": 3})
    return path


def run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def create(capsys, path, epsilon="1", delta="1e-5", dataset="d"):
    code, _, err = run(capsys, "ledger", "create", "--ledger", path, "--dataset", dataset,
                       "--budget-epsilon", epsilon, "--budget-delta", delta)
    assert code == 0, err
    assert "deprecated" not in err


def topk(rows, *extra):
    return ["topk", rows, "--privacy-unit", "user", "--item-column", "item", "--k", "3",
            "--delta", "1e-6", "--l0", "2", "--d-bar", "10", *extra]


def releases(capsys, ledger, dataset="d"):
    code, out, _ = run(capsys, "ledger", "show", "--ledger", ledger, "--dataset", dataset,
                       "--json")
    assert code == 0
    return json.loads(out)


def test_dry_run_reads_nothing_and_matches_the_release(capsys, rows, tmp_path):
    ledger = tmp_path / "l.sqlite"
    create(capsys, ledger)
    where = ["--ledger", ledger, "--dataset", "d"]
    # a missing file: the dry run does not even look at the data
    code, out, err = run(capsys, *topk(tmp_path / "absent.csv", "--epsilon", "0.5", *where,
                                       "--dry-run", "--json"))
    assert code == 0, err
    planned = json.loads(out)
    assert planned["dry_run"] and planned["ledger"]["fits"]
    assert releases(capsys, ledger)["releases"] == 0
    code, out, err = run(capsys, *topk(rows, "--epsilon", "0.5", *where, "--seed", "1",
                                       "--json"))
    assert code == 0, err
    released = json.loads(out)
    parameters = released["parameters"]
    assert planned["events"] == released["events"]
    assert planned["noise"]["scale"] == parameters["scale"]
    assert planned["noise"]["ci95_half_width"] == parameters["ci95_half_width"]
    assert planned["threshold"]["offset"] == parameters["threshold_offset"]
    assert planned["ledger"]["spent_epsilon_after"] == pytest.approx(
        released["spent"]["epsilon"], rel=1e-12)
    code, out, _ = run(capsys, *topk(rows, "--epsilon", "0.5", "--dry-run"))
    assert code == 0 and "threshold" in out and "+-" in out and "nothing was read" in out


def test_human_output_says_what_was_suppressed_and_bounded(capsys, rows):
    code, out, err = run(capsys, *topk(rows, "--epsilon", "1", "--seed", "2"))
    assert code == 0, err
    assert "item(s) were below the threshold and not released" in out   # c never is
    assert "contribution-bounded counts (at most 2 item(s) per user" in out


def test_domain_caps_l0_and_says_so(capsys, rows, tmp_path):
    domain = tmp_path / "domain.txt"
    domain.write_text("a\nb\nc\n")
    code, out, err = run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column",
                         "item", "--epsilon", "1", "--l0", "100", "--domain", domain,
                         "--seed", "1")
    assert code == 0, err
    assert "the noise is scaled for l0 = 3" in out
    code, out, _ = run(capsys, "histogram", rows, "--privacy-unit", "user", "--item-column",
                       "item", "--epsilon", "1", "--l0", "100", "--domain", domain, "--json",
                       "--seed", "1")
    assert json.loads(out)["parameters"]["l0_sensitivity"] == 3


def test_python_api_and_cli_give_the_same_json(capsys, rows, tmp_path):
    domain = tmp_path / "domain.txt"
    domain.write_text("a\nb\nc\nd\n")
    for argv, call in (
            (topk(rows, "--epsilon", "0.7", "--seed", "5", "--json"),
             lambda: privloss.topk(rows, privacy_unit="user", item="item", k=3, epsilon=0.7,
                                   delta=1e-6, l0=2, d_bar=10, seed=5)),
            (["histogram", rows, "--privacy-unit", "user", "--item-column", "item",
              "--epsilon", "0.4", "--domain", domain, "--seed", "6", "--json"],
             lambda: privloss.histogram(rows, privacy_unit="user", item="item", epsilon=0.4,
                                        domain=["a", "b", "c", "d"], seed=6))):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        from privloss.api.protocol import payload_of
        assert json.loads(out) == json.loads(json.dumps(payload_of(call())))


def test_epsilon_max_fits_exactly_and_the_next_is_refused(capsys, rows, tmp_path):
    ledger = tmp_path / "l.sqlite"
    create(capsys, ledger, epsilon="0.6")
    where = ["--ledger", ledger, "--dataset", "d"]
    assert run(capsys, *topk(rows, "--epsilon", "0.2", *where))[0] == 0
    code, out, err = run(capsys, *topk(rows, "--epsilon", "max", *where, "--json"))
    assert code == 0, err
    payload = json.loads(out)
    assert 0 < payload["epsilon_max"] < 0.6
    assert 0.6 * (1 - 1e-3) < payload["spent"]["epsilon"] <= 0.6 * (1 + 1e-9)
    code, out, err = run(capsys, *topk(rows, "--epsilon", str(payload["epsilon_max"]), *where,
                                       "--seed", "9"))
    assert code == 3 and "budget" in err and out == ""
    code, _, err = run(capsys, *topk(rows, "--epsilon", "max"))
    assert code == 2 and "--epsilon max needs --ledger" in err


def test_refusal_is_instant_and_reads_no_data(capsys, rows, tmp_path, monkeypatch):
    import privloss.query.engines as engines
    import privloss.cli._release as release

    ledger = tmp_path / "l.sqlite"
    create(capsys, ledger, epsilon="0.3")
    calls = []
    monkeypatch.setattr(release, "data_source", lambda args: calls.append("read"))
    monkeypatch.setattr(engines, "bounded_histogram", lambda *a, **k: calls.append("engine"))
    code, out, err = run(capsys, *topk(rows, "--epsilon", "0.5", "--ledger", ledger,
                                       "--dataset", "d"))
    assert code == 3 and "budget" in err and out == "" and calls == []


@pytest.mark.skipif(not RETAIL.exists(), reason="../shared/data/online_retail.csv.gz missing")
def test_retail_dry_run_then_release(capsys, tmp_path):
    """The issue's walk-through: the dry run shows the threshold before paying, the
    release's parameters equal it, and the suppressed items are reported."""
    ledger = tmp_path / "retail.sqlite"
    create(capsys, ledger, epsilon="1", delta="1e-6", dataset="retail")
    argv = ["topk", RETAIL_QUERY, "--sql", "--table", f"retail={RETAIL}", "--privacy-unit",
            "CustomerID", "--item-column", "Description", "--k", "5", "--epsilon", "0.5",
            "--delta", "5e-7", "--l0", "50", "--d-bar", "100", "--ledger", ledger,
            "--dataset", "retail"]
    code, out, err = run(capsys, *argv, "--dry-run", "--json")
    assert code == 0, err
    planned = json.loads(out)
    assert planned["threshold"]["offset"] > 300          # about 362 distinct customers
    code, out, err = run(capsys, *argv, "--seed", "11", "--json")
    assert code == 0, err
    released = json.loads(out)
    assert planned["threshold"]["offset"] == released["parameters"]["threshold_offset"]
    assert planned["noise"]["ci95_half_width"] == released["parameters"]["ci95_half_width"]
    assert planned["ledger"]["spent_epsilon_after"] == pytest.approx(
        released["spent"]["epsilon"], rel=1e-12)
    code, out, err = run(capsys, *argv, "--seed", "11")       # the stored answer, in words
    assert code == 0, err
    assert "this answer was stored" in out
    if len(released["items"]) < 5:
        assert f"{5 - len(released['items'])} of the k = 5 requested item(s) were below" in out


@pytest.mark.slow
@pytest.mark.skipif(not RETAIL.exists(), reason="../shared/data/online_retail.csv.gz missing")
def test_retail_epsilon_max_fits_exactly_and_the_next_is_refused(capsys, tmp_path):
    ledger = tmp_path / "retail.sqlite"
    create(capsys, ledger, epsilon="1", delta="1e-6", dataset="retail")
    argv = ["topk", RETAIL_QUERY, "--sql", "--table", f"retail={RETAIL}", "--privacy-unit",
            "CustomerID", "--item-column", "Description", "--k", "5", "--delta", "2e-7",
            "--l0", "50", "--d-bar", "100", "--ledger", ledger, "--dataset", "retail", "--json"]
    assert run(capsys, *argv, "--epsilon", "0.4")[0] == 0
    code, out, err = run(capsys, *argv, "--epsilon", "max")
    assert code == 0, err
    payload = json.loads(out)
    assert 1 - 1e-3 < payload["spent"]["epsilon"] <= 1 + 1e-9
    code, out, err = run(capsys, *argv, "--epsilon", str(payload["epsilon_max"]), "--seed", "1")
    assert code == 3 and "budget" in err
