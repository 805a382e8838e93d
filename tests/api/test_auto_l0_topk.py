"""``l0="auto"`` for top-k and histograms (issue 22 item 7,
:mod:`privloss.api.auto_l0_topk`): the estimate and the release are one
ledger charge whose events include the estimate, a dry run charges nothing,
bad values are refused with one line before any charge, the interval score
prefers the candidate that rounds the quantile up, and at large epsilon the
estimate is near the true 95th percentile of distinct items per customer on
the retail data."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import privloss
from privloss.api.auto_l0 import GROUP_CANDIDATES
from privloss.api.auto_l0_topk import auto_l0_plan, draw_interval

pytest.importorskip("duckdb")

RETAIL = Path(__file__).resolve().parents[3] / "shared" / "data" / "online_retail.csv.gz"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("PRIVLOSS_FINGERPRINT_KEY", "11" * 32)


def _frame() -> pd.DataFrame:
    """90 units with items {a, b, c} (k = 3), 10 with 6 items: #{k <= 2} = 0,
    #{k <= 4} = 90, #{k <= 8} = 100; 95% of 100 lies inside (90, 100], so the
    95% candidate is 8 alone."""
    rows = [(u, item) for u in range(90) for item in "abc"]
    rows += [(u, item) for u in range(90, 100) for item in "abcdef"]
    return pd.DataFrame(rows, columns=["uid", "item"])


def _ledger(tmp_path, epsilon=100.0):
    from privloss.budget import Ledger
    tmp_path.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_dataset("d", epsilon=epsilon, delta=1e-5)
    return ledger


COMMON = dict(privacy_unit="uid", item="item", epsilon=50.0, delta=1e-6)


def test_plan_events_share_and_guarantee():
    from privloss.accounting import compose
    from privloss.events import ApproxDP, BoundedRange

    auto = auto_l0_plan("histogram", epsilon=2.0, delta=1e-6)
    assert tuple(auto.requests) == GROUP_CANDIDATES
    estimate, release = auto.events
    assert isinstance(estimate, BoundedRange) and isinstance(release, ApproxDP)
    assert estimate.epsilon == pytest.approx(0.2) and Fraction(estimate.epsilon) >= auto.strength
    worst = max(compose(tuple(r.events()), target_delta=1e-6, interaction="adaptive").epsilon
                for r in auto.requests.values())
    assert release.epsilon == worst and release.delta == 1e-6
    assert compose(auto.events, target_delta=1e-6, interaction="adaptive").epsilon <= 2.0
    assert all(r.epsilon < 1.8 + 1e-9 for r in auto.requests.values())


def test_interval_score_prefers_the_candidate_rounding_the_quantile_up():
    """Counts equal above the quantile (every unit has k <= 1) tie under
    ``-|c - qN|`` but not under the interval score: at large epsilon the draw
    is 1 every time."""
    from privloss.samplers import InsecureSeededSource

    counts = [100] * len(GROUP_CANDIDATES)
    draws = {draw_interval(counts, 100, Fraction(50), InsecureSeededSource(s))
             for s in range(20)}
    assert draws == {0}
    counts = [0, 90, 100, 100, 100, 100, 100, 100, 100]     # 95 inside (90, 100]: t = 4
    draws = {draw_interval(counts, 100, Fraction(50), InsecureSeededSource(s))
             for s in range(20)}
    assert draws == {2}


def test_charged_once_with_the_estimate_and_reported(tmp_path):
    ledger = _ledger(tmp_path)
    auto = auto_l0_plan("histogram", epsilon=50.0, delta=1e-6, domain=list("abcdef"))
    verdict = ledger.would_admit("d", {"probe": 1}, auto.events)         # read-only
    release = privloss.histogram(_frame(), **COMMON, domain=list("abcdef"), l0="auto",
                                 ledger=ledger, dataset="d", seed=3)
    summary = ledger.show("d")
    assert summary["releases"] == 1 and summary["spent_epsilon"] == verdict["spent_epsilon"]
    (row,) = ledger.history("d")
    assert len(row["events"]) == 2 and "BoundedRange" in json.dumps(row["events"])
    assert row["query"]["l0"] == "auto"
    assert release.parameters["l0_estimated"] == 8
    assert release.events == auto.events
    again = privloss.histogram(_frame(), **COMMON, domain=list("abcdef"), l0="auto",
                               ledger=ledger, dataset="d", seed=3)
    assert again.cached and ledger.show("d")["releases"] == 1


def test_topk_without_a_ledger_the_guarantee_includes_the_estimate():
    release = privloss.topk(_frame(), **COMMON, k=2, l0="auto", seed=4)
    assert release.parameters["l0_estimated"] == 8
    assert release.guarantee["epsilon"] <= 50.0
    assert len(release.items) == 2


@pytest.mark.parametrize("change, message", [
    ({"l0": "autox"}, "l0 must be an integer >= 1, None or 'auto', got 'autox'"),
    ({"l0": "auto", "epsilon": "max"}, "cannot be combined with l0 'auto'"),
    ({"l0": "auto", "engine": "spark"}, "l0 'auto' runs on the duckdb engine only"),
    ({"l0": "auto", "delta": 0.0}, "delta"),
])
def test_bad_values_refused_before_any_charge(tmp_path, change, message):
    ledger = _ledger(tmp_path)
    with pytest.raises(ValueError) as raised:
        privloss.histogram(_frame(), **{**COMMON, **change}, ledger=ledger, dataset="d",
                           seed=1)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert ledger.show("d")["releases"] == 0


def test_refused_budget_charges_nothing(tmp_path):
    from privloss.budget import LedgerBudgetError

    ledger = _ledger(tmp_path, epsilon=1.0)
    with pytest.raises(LedgerBudgetError, match="nothing was read"):
        privloss.histogram(_frame(), **COMMON, l0="auto", ledger=ledger, dataset="d")
    assert ledger.show("d")["releases"] == 0


def test_cli_dry_run_release_and_autox(tmp_path, capsys):
    from privloss.cli.main import main

    ledger = _ledger(tmp_path)
    data = tmp_path / "d.csv"
    _frame().to_csv(data, index=False)
    flags = ["histogram", str(data), "--privacy-unit", "uid", "--item-column", "item",
             "--epsilon", "50", "--delta", "1e-6", "--seed", "5",
             "--ledger", str(tmp_path / "l.sqlite"), "--dataset", "d"]
    with pytest.raises(SystemExit) as exited:          # argparse's one line
        main([*flags, "--l0", "autox"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--l0 must be an integer >= 1 or 'auto', got 'autox'" in err
    assert err.count("\n") == 1
    assert main([*flags, "--l0", "auto", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "l0 auto: 10% of epsilon" in out and "BoundedRange" in out
    assert "1, 2, 4, 8, 16, 32, 64, 128, 256" in out
    assert ledger.show("d")["releases"] == 0
    assert main([*flags, "--l0", "auto"]) == 0
    assert "# l0 8 (private estimate" in capsys.readouterr().out
    assert ledger.show("d")["releases"] == 1
    assert main([*flags, "--l0", "auto", "--epsilon", "max"]) == 2
    assert "--l0 auto needs a number for --epsilon" in capsys.readouterr().err


@pytest.mark.skipif(not RETAIL.exists(), reason="needs the shared retail data")
def test_retail_estimate_near_the_true_95th_percentile():
    """At large epsilon the draw is the candidate that rounds the true 95th
    percentile of distinct StockCodes per customer up (or 256, the largest)."""
    import numpy as np

    frame = pd.read_csv(RETAIL, usecols=["CustomerID", "StockCode"], encoding="latin-1",
                        dtype={"StockCode": str}).dropna()
    per_unit = frame.drop_duplicates().groupby("CustomerID").size().to_numpy()
    true = float(np.quantile(per_unit, 0.95))
    release = privloss.histogram(str(RETAIL), privacy_unit="CustomerID", item="StockCode",
                                 epsilon=50.0, delta=1e-6, l0="auto", k=3, seed=9)
    estimated = release.parameters["l0_estimated"]
    expected = min(1 << math.ceil(math.log2(true)), GROUP_CANDIDATES[-1])
    assert estimated in (expected, expected // 2, expected * 2)
    assert estimated / 2 <= true <= estimated * 2 or estimated == GROUP_CANDIDATES[-1]
