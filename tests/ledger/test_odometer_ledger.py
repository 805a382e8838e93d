"""Datasets without a fixed budget (issue 23 item 2): the ledger refuses
nothing but a release after which no level of the odometer's grid admits the
history (its reading would be infinite from then on), and reports the privacy odometer's running epsilon, the reading of
privloss.PrivacyOdometer over the same releases in the same order (valid at
every time at once under fully adaptive choice), on both backends, through
the Python API and `privloss ledger show`."""

from __future__ import annotations

import json
import math
import random

import pytest

from privloss import PrivacyOdometer
from privloss.budget import Ledger, LedgerBudgetError, LedgerPlanError
from privloss.cli.main import main
from privloss.events import ApproxDP, BoundedRange, Gaussian, PureDP, ZCDP


def _releases(seed: int, count: int):
    rng = random.Random(seed)
    kinds = [lambda: [PureDP(rng.uniform(0.001, 0.3))],
             lambda: [BoundedRange(rng.uniform(0.01, 0.2), count=rng.randrange(1, 5))],
             lambda: [ApproxDP(rng.uniform(0.01, 0.2), 1e-9)],
             lambda: [Gaussian(rng.uniform(2, 20))],
             lambda: [ZCDP(rng.uniform(1e-4, 0.05))]]
    return [rng.choice(kinds)() for _ in range(count)]


def _check_against_odometer(ledger: Ledger, delta: float, seed: int) -> None:
    ledger.create_dataset("open", epsilon=None, delta=delta)
    odometer = PrivacyOdometer(delta)
    shown = ledger.show("open")
    assert shown["odometer"] == {"epsilon": 0.0, "delta": delta, "bound": "empty"}
    assert math.isinf(shown["budget_epsilon"])
    admitted = []
    for index, events in enumerate(_releases(seed, 40)):
        trial = PrivacyOdometer(delta)
        for earlier in admitted + [events]:
            expected = trial.spend(earlier)
        if math.isinf(expected):
            # no level of the grid would admit it: refused (the reading would be
            # infinite from then on), nothing recorded
            with pytest.raises(LedgerBudgetError, match="cannot give this history a finite"):
                ledger.release_with_receipt("open", {"q": index}, lambda: index, events)
            continue
        receipt = ledger.release_with_receipt("open", {"q": index}, lambda: index, events)
        assert receipt.spent_epsilon == expected == odometer.spend(events)    # bit for bit
        admitted.append(events)
    shown = ledger.show("open")
    assert shown["odometer"]["epsilon"] == shown["spent_epsilon"] == odometer.epsilon
    assert shown["releases"] == len(admitted) > 0 and shown["admitted"]
    # a fresh process reads the same
    assert Ledger(ledger.path, create=False).show("open")["odometer"] == shown["odometer"]


@pytest.mark.parametrize("seed", range(3))
def test_the_ledger_reads_the_odometer(tmp_path, seed):
    _check_against_odometer(Ledger(str(tmp_path / "l.sqlite")), [1e-6, 1e-3, 1e-8][seed], seed)


def test_pure_releases_without_delta_read_the_exact_sum(tmp_path):
    ledger = Ledger(str(tmp_path / "l.sqlite"))
    ledger.create_dataset("open", epsilon=None)
    for index in range(30):
        ledger.release("open", index, lambda: 0, [PureDP(0.5)])   # over any small budget
    assert ledger.show("open")["spent_epsilon"] == 15.0
    with pytest.raises(LedgerPlanError):
        ledger.create_dataset("planned", epsilon=None, interaction="adaptive", plan=[])


def test_the_odometer_on_postgres(postgres_server):
    _check_against_odometer(Ledger(postgres_server.new_database()), 1e-6, 5)


def test_the_cli_creates_and_shows_an_odometer(tmp_path, capsys):
    path = str(tmp_path / "l.sqlite")
    assert main(["ledger", "create", "--ledger", path, "--dataset", "open", "--odometer",
                 "--budget-delta", "1e-6"]) == 0
    Ledger(path, create=False).release("open", "q", lambda: 1, [PureDP(0.25)])
    capsys.readouterr()
    assert main(["ledger", "show", "--ledger", path, "--dataset", "open"]) == 0
    out = capsys.readouterr().out
    assert "no fixed budget" in out and "odometer" in out and "0.25" in out
    assert main(["ledger", "show", "--ledger", path, "--dataset", "open", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["budget_epsilon"] is None and shown["odometer"]["epsilon"] == 0.25
    assert main(["ledger", "create", "--ledger", path, "--dataset", "x", "--odometer",
                 "--budget-epsilon", "1"]) == 2
    assert "--odometer" in capsys.readouterr().err


def test_a_release_whose_delta_no_level_allows_is_refused_saying_what_fits(tmp_path):
    """delta_j = delta / ((j + 1)(j + 2)) shrinks up the grid: a release with
    delta 1e-7 on an odometer at delta 1e-6 fits no level whose epsilon covers
    it; it used to be charged and left the reading infinite for good."""
    ledger = Ledger(str(tmp_path / "l.sqlite"))
    ledger.create_dataset("open", epsilon=None, delta=1e-6)
    with pytest.raises(LedgerBudgetError, match=r"allows a total delta of about 1\.85e-10"):
        ledger.release("open", "big", lambda: 0, [ApproxDP(0.5, 1e-7)])
    assert ledger.show("open")["releases"] == 0
    ledger.release("open", "small", lambda: 0, [ApproxDP(0.5, 1e-11)])
    shown = ledger.show("open")
    assert shown["releases"] == 1 and math.isfinite(shown["spent_epsilon"])
