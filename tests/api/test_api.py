"""The high-level API: ``privloss.topk`` / ``histogram`` / ``plan`` / ``max_epsilon``."""

import pytest

from tests._rows import write_rows

pytest.importorskip("duckdb")

import privloss  # noqa: E402
from privloss.api import protocol as api  # noqa: E402
from privloss.budget import Ledger, LedgerBudgetError, LedgerPlanError, PlanItem  # noqa: E402
from privloss.api.request import make_request  # noqa: E402

TOPK = dict(privacy_unit="user", item="item", k=2, delta=1e-6, l0=2, d_bar=10)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("PRIVLOSS_FINGERPRINT_KEY", "00" * 32)


@pytest.fixture()
def rows(tmp_path):
    """Item a: 300 users, b: 200, c: 3."""
    path = tmp_path / "rows.csv"
    write_rows(path, {"a": 300, "b": 200, "c": 3})
    return path


@pytest.fixture()
def ledger(tmp_path):
    ledger = Ledger(tmp_path / "budget.sqlite")
    ledger.create_dataset("d", epsilon=1.0, delta=1e-5)
    return ledger


class Spy:
    """Counts engine calls (the only way the API reads rows)."""

    def __init__(self, monkeypatch):
        import privloss.query.engines as engines
        self.calls = 0
        self.prepared = 0
        real_histogram, real_prepare = engines.bounded_histogram, api.prepare_data

        def histogram(*args, **kwargs):
            self.calls += 1
            return real_histogram(*args, **kwargs)

        def prepare(*args, **kwargs):
            self.prepared += 1
            return real_prepare(*args, **kwargs)

        monkeypatch.setattr(engines, "bounded_histogram", histogram)
        monkeypatch.setattr(api, "prepare_data", prepare)


def test_topk_without_ledger_repr_and_pandas(rows):
    release = privloss.topk(rows, epsilon=1.0, seed=1, **TOPK)
    assert release.items == ("a", "b")
    assert release.cached is False and release.spent["epsilon"] <= 1.0 * (1 + 1e-9)
    assert release.guarantee["interaction"] == "adaptive"
    text = repr(release)
    assert text.startswith("Release(unknown-gumbel, 2 item(s) {'a': ") and "95% interval" in text
    pytest.importorskip("pandas")
    frame = release.to_pandas()
    assert list(frame.columns) == ["item", "count", "ci95_low", "ci95_high"]
    assert list(frame["item"]) == ["a", "b"]


def test_repeated_query_is_free_and_frames_are_fingerprinted(rows, ledger):
    pd = pytest.importorskip("pandas")
    first = privloss.topk(rows, epsilon=0.3, seed=1, ledger=ledger, dataset="d", **TOPK)
    again = privloss.topk(str(rows), epsilon=0.3, seed=1, ledger=ledger, dataset="d", **TOPK)
    assert again.cached and again.items == first.items
    assert (again.counts == first.counts).all()
    frame = pd.read_csv(rows, dtype=str)
    one = privloss.topk(frame, epsilon=0.3, seed=1, ledger=ledger, dataset="d", **TOPK)
    two = privloss.topk(frame.copy(), epsilon=0.3, seed=1, ledger=ledger, dataset="d", **TOPK)
    assert not one.cached and two.cached
    assert ledger.show("d")["releases"] == 2


def test_refusal_reads_no_data_and_never_computes(rows, ledger, monkeypatch):
    privloss.topk(rows, epsilon=0.9, seed=1, ledger=ledger, dataset="d", **TOPK)
    spy = Spy(monkeypatch)
    with pytest.raises(LedgerBudgetError, match="budget"):
        privloss.topk(rows, epsilon=0.5, seed=2, ledger=ledger, dataset="d", **TOPK)
    assert spy.calls == 0 and spy.prepared == 0         # refused before any data was read
    assert ledger.show("d")["releases"] == 1


def test_ledger_refusing_after_a_stale_check_never_sees_an_answer(rows, ledger, monkeypatch):
    """Another process spends between the read-only check and the charge: the
    ledger refuses under its lock, and ``compute`` (the only place a noisy
    value is made) was never called."""
    privloss.topk(rows, epsilon=0.9, seed=1, ledger=ledger, dataset="d", **TOPK)
    monkeypatch.setattr(api, "check_budget_first", lambda *args, **kwargs: None)
    computed = []
    real = Ledger.release_with_receipt

    def instrumented(self, name, key, compute, events, **kwargs):
        def spying():
            computed.append(True)
            return compute()
        return real(self, name, key, spying, events, **kwargs)

    monkeypatch.setattr(Ledger, "release_with_receipt", instrumented)
    spy = Spy(monkeypatch)
    with pytest.raises(LedgerBudgetError):
        privloss.topk(rows, epsilon=0.5, seed=2, ledger=ledger, dataset="d", **TOPK)
    assert computed == [] and spy.calls == 0
    assert ledger.show("d")["releases"] == 1


def test_plan_numbers_equal_the_release(rows, ledger):
    planned = privloss.plan("topk", epsilon=0.4, ledger=ledger, dataset="d",
                            **{k: v for k, v in TOPK.items() if k not in ("user", "item")})
    assert planned.ledger["fits"] and planned.ledger["spent_epsilon_before"] == 0
    release = privloss.topk(rows, epsilon=0.4, seed=3, ledger=ledger, dataset="d", **TOPK)
    parameters = release.parameters
    assert planned.noise["scale"] == parameters["scale"]
    assert planned.noise["ci95_half_width"] == parameters["ci95_half_width"]
    assert planned.threshold["offset"] == parameters["threshold_offset"]
    assert [repr(event) for event in planned.events] == [repr(e) for e in release.events]
    assert planned.ledger["spent_epsilon_after"] == pytest.approx(release.spent["epsilon"],
                                                                 rel=1e-12)
    text = str(planned)
    assert "threshold" in text and "fits" in text and "+-" in text


def test_domain_caps_the_l0_sensitivity(rows):
    release = privloss.histogram(rows, privacy_unit="user", item="item", epsilon=1.0, l0=50,
                                 domain=["a", "b", "c"], seed=1)
    assert release.parameters["l0_sensitivity"] == 3
    planned = privloss.plan("histogram", epsilon=1.0, l0=50, domain=3)
    assert planned.request.l0_sensitivity == 3
    assert any("l0 = 3" in note for note in planned.notes)
    assert planned.noise["scale"] == release.parameters["scale"] == 3.0


def test_max_epsilon_fits_exactly_and_the_next_is_refused(rows, ledger):
    ledger.create_dataset("small", epsilon=0.5, delta=1e-5)
    privloss.topk(rows, epsilon=0.2, seed=1, ledger=ledger, dataset="small", **TOPK)
    arguments = {k: v for k, v in TOPK.items() if k not in ("user", "item")}
    best = privloss.max_epsilon("topk", ledger=ledger, dataset="small", **arguments)
    assert 0 < best < 0.5
    release = privloss.topk(rows, epsilon=best, seed=2, ledger=ledger, dataset="small", **TOPK)
    assert release.spent["epsilon"] <= 0.5 * (1 + 1e-9)
    assert release.spent["epsilon"] > 0.5 * (1 - 1e-3)      # the budget is used up
    with pytest.raises(LedgerBudgetError):      # the same release again does not fit
        privloss.topk(rows, epsilon=best, seed=4, ledger=ledger, dataset="small", **TOPK)


def test_max_epsilon_under_a_plan_is_the_planned_epsilon(rows, tmp_path):
    ledger = Ledger(tmp_path / "plan.sqlite")
    request = make_request("topk", epsilon=0.3, delta=1e-6, k=2, l0=2, d_bar=10,
                           interaction="adaptive")
    item = PlanItem(request.events(), {"command": "topk", "algorithm": "unknown-gumbel",
                                       "epsilon": 0.3, "k": 2})
    ledger.create_dataset("p", epsilon=1.0, delta=1e-5, interaction="adaptive", plan=[item])
    arguments = {k: v for k, v in TOPK.items() if k not in ("user", "item")}
    assert privloss.max_epsilon("topk", ledger=ledger, dataset="p", **arguments) == 0.3
    with pytest.raises(LedgerPlanError):
        privloss.max_epsilon("topk", ledger=ledger, dataset="p", **{**arguments, "k": 1})
    release = privloss.topk(rows, epsilon=0.3, seed=1, ledger=ledger, dataset="p", **TOPK)
    assert release.spent["releases"] == 1
    with pytest.raises(LedgerBudgetError):      # every planned release was made
        privloss.max_epsilon("topk", ledger=ledger, dataset="p", **arguments)


@pytest.mark.parametrize("arguments, message", [
    (dict(epsilon=0), "epsilon must be"),
    (dict(epsilon=1, delta=1.0), "delta must be"),
    (dict(epsilon=1, k=0), "k must be"),
    (dict(epsilon=1, algorithm="known-gumbel"), "domain must be given"),
    (dict(epsilon=1, delta=0.0), "delta must be in"),
    (dict(epsilon=1, domain=["a"], k=2), "k must be at most"),
])
def test_bad_parameters_are_named_before_anything_is_read(rows, arguments, message,
                                                          monkeypatch):
    spy = Spy(monkeypatch)
    with pytest.raises((ValueError, TypeError), match=message):
        privloss.topk(rows, **{**TOPK, **arguments})
    assert spy.prepared == 0 and spy.calls == 0


def test_progress_line_only_when_asked_or_on_a_terminal(capsys):
    with api.Progress(None) as status:        # pytest's stderr is not a terminal: silent
        status.step("reading")
    assert capsys.readouterr().err == ""
    pytest.importorskip("rich")
    with api.Progress(True) as status:        # forced on: a Rich status line, then cleared
        status.step("reading and bounding")
    with api.Progress(False) as status:
        status.step("never shown")
    assert "never shown" not in capsys.readouterr().err


def test_python_api_accepts_frames_relations_and_sql(rows, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pa = pytest.importorskip("pyarrow")
    from privloss.query.inputs import SqlQuery

    reference = privloss.topk(rows, epsilon=1.0, seed=7, **TOPK)
    con = duckdb.connect()
    relation = con.sql(f"SELECT * FROM read_csv('{rows}', all_varchar=true)")
    table = relation.arrow()
    table = table if isinstance(table, pa.Table) else table.read_all()
    query = SqlQuery("SELECT * FROM t", tables={"t": str(rows)})
    for data in (table, relation, query):
        release = privloss.topk(data, epsilon=1.0, seed=7, **TOPK)
        assert release.items == reference.items
        assert list(release.counts) == list(reference.counts)


def test_missing_file_is_bad_input_even_when_the_budget_is_spent(ledger, tmp_path, rows):
    privloss.topk(rows, epsilon=0.9, seed=1, ledger=ledger, dataset="d", **TOPK)
    with pytest.raises(FileNotFoundError):
        privloss.topk(tmp_path / "absent.csv", epsilon=0.5, ledger=ledger, dataset="d", **TOPK)


def test_releases_as_arrow_and_polars():
    """Issue 22 item 5: Release.to_arrow() / to_polars() (and the group-by's)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"u": rng.integers(0, 200, 2000), "g": rng.choice(list("abc"), 2000),
                          "x": rng.random(2000)})
    release = privloss.topk(frame, privacy_unit="u", item="g", k=2, epsilon=1.0, delta=1e-6,
                            l0=2, seed=1)
    table = release.to_arrow()
    assert table.column_names == ["item", "count", "ci95_low", "ci95_high"]
    assert table.column("item").to_pylist() == list(release.items)
    assert release.to_polars().shape == (len(release.items), 4)
    grouped = privloss.aggregate(frame, privacy_unit="u", by=["g"],
                                 aggregations=["count", "mean:x:0:1"], epsilon=1.0,
                                 keys=[("a",), ("b",), ("c",)], seed=1)
    assert grouped.to_arrow().num_rows == 3
    assert "mean(x)_ci95_high" in grouped.to_polars().columns
    # the three frames have the same columns (to_pandas had no intervals)
    assert list(grouped.to_pandas().columns) == grouped.to_arrow().column_names \
        == grouped.to_polars().columns


@pytest.mark.parametrize("method, module, extra", [("to_pandas", "pandas", "frames"),
                                                  ("to_arrow", "pyarrow", "analytics"),
                                                  ("to_polars", "polars", "frames")])
def test_a_missing_frame_library_names_the_extra(monkeypatch, method, module, extra):
    """Issue 22 item 5 for the library: ``to_pandas`` without pandas said only
    "No module named 'pandas'"; now one line naming ``pip install``."""
    import sys

    import numpy as np

    from privloss.api.aggregate import AggregateRelease
    from privloss.releases.release import Release

    release = Release(items=[], counts=np.array([], dtype=np.int64), ci95=[], events=(),
                      algorithm="x", parameters={})
    monkeypatch.setitem(sys.modules, module, None)          # as if not installed
    with pytest.raises(ModuleNotFoundError, match=rf"pip install 'privloss\[{extra}\]'") as raised:
        getattr(release, method)()
    assert raised.value.name == module
    assert hasattr(AggregateRelease, method)
