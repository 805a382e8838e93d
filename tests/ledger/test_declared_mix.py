"""Issue 23 item 1 in the ledger: a fully-adaptive budget's delta split is
chosen from the dataset's declared mix (``create_dataset(mix=)``, ``ledger
create --mix``, the service's ``mix``), and analysts' caps keep that mix.
Counts are those of docs/benchmarks.md's tightness table ("declared mix")."""

from __future__ import annotations

import json

import pytest

from privloss.events import Gaussian, PureDP


def _admitted(ledger, name, event, limit=2000) -> int:
    from privloss.budget import LedgerBudgetError

    for count in range(limit):
        try:
            ledger.release(name, {"q": count}, lambda: {"ok": True}, [event])
        except LedgerBudgetError:
            return count
    return limit


@pytest.mark.parametrize("mix, event, at_least", [
    ("pure", PureDP(0.05), 148),          # fixed-parameter optimum 170 (0.87)
    ("gaussian", Gaussian(20.0), 22),     # optimum 22
])
def test_a_declared_mix_admits_near_the_fixed_optimum(tmp_path, mix, event, at_least):
    from privloss.budget import Ledger

    budget = (3.0, 1e-6) if mix == "pure" else (1.0, 1e-6)
    declared = Ledger(tmp_path / "declared.sqlite", witness=None)
    declared.create_dataset("d", epsilon=budget[0], delta=budget[1], mix=mix)
    default = Ledger(tmp_path / "default.sqlite", witness=None)
    default.create_dataset("d", epsilon=budget[0], delta=budget[1])
    tight, loose = _admitted(declared, "d", event), _admitted(default, "d", event)
    assert tight >= at_least and tight > loose


def test_bad_mix_refused_before_anything_is_written(tmp_path):
    from privloss.budget import Ledger

    ledger = Ledger(tmp_path / "l.sqlite", witness=None)
    with pytest.raises(ValueError, match="mix must be one of"):
        ledger.create_dataset("d", epsilon=1.0, delta=1e-6, mix="purest")
    assert "d" not in ledger.datasets()


def test_an_analyst_cap_keeps_the_declared_mix():
    from privloss.accounting.fully_adaptive import default_policy, mix_of
    from privloss.budget import Ledger
    from privloss.budget._accounting import Dataset

    for mix in ("mixed", "pure", "gaussian"):
        policy = json.dumps(default_policy(3.0, 1e-6, mix).to_dict())
        dataset = Dataset("d", 3.0, 1e-6, "fully-adaptive", policy, None, None, "now")
        capped = Ledger._capped(dataset, (1.0, 1e-7))
        assert mix_of(json.loads(capped.policy)) == mix
        assert json.loads(capped.policy)["epsilon"] == 1.0


def test_cli_ledger_create_mix(tmp_path, capsys):
    from privloss.cli.main import main

    path = tmp_path / "l.sqlite"
    assert main(["ledger", "create", "--ledger", str(path), "--dataset", "d",
                 "--budget-epsilon", "1", "--budget-delta", "1e-6", "--mix", "pure",
                 "--json"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main(["ledger", "create", "--ledger", str(path), "--dataset", "e",
              "--budget-epsilon", "1", "--mix", "purest"])
    assert stopped.value.code == 2
