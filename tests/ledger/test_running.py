"""The ledger's incremental accounting state (budget/_running.py) gives the same
verdict, bit for bit, as the filter's full recomputation over the whole history:
on random histories of every kind of release, refusals included, under every
policy shape; and inside a ledger, charge by charge."""

from __future__ import annotations

import math
import random

import pytest

from privloss.accounting.fully_adaptive import (FilterPolicy, ReleaseGuarantee, check,
                                                default_policy, release_guarantee)
from privloss.accounting.fully_adaptive.release import RENYI_ORDERS
from privloss.budget import Ledger, LedgerBudgetError
from privloss.budget._running import RunningTable, _upper, _scaled
from privloss.events import (ApproxDP, BoundedRange, DiscreteGaussian, Gaussian, Laplace,
                             PureDP, ZCDP)
from privloss._exact import sum_upper


def _random_release(rng: random.Random):
    kind = rng.randrange(9)
    epsilon = rng.choice([1e-300, 1e-6, 0.01, 0.1, 0.3, 1 / 3, rng.uniform(0, 2)])
    if kind == 0:
        return [PureDP(epsilon)]
    if kind == 1:
        return [ApproxDP(epsilon, rng.choice([1e-9, 1e-7, 3e-7, 1e-3]))]
    if kind == 2:
        return [BoundedRange(epsilon, count=rng.randrange(1, 20))]
    if kind == 3:
        return [Gaussian(rng.uniform(0.5, 50))]
    if kind == 4:
        return [ZCDP(rng.uniform(1e-6, 0.2))]
    if kind == 5:
        return [DiscreteGaussian(rng.uniform(1, 30))]
    if kind == 6:
        return [Laplace(rng.uniform(1, 100), count=rng.randrange(1, 5)),
                Gaussian(rng.uniform(1, 10))]
    if kind == 7:
        return [Gaussian(rng.uniform(1, 10), count=rng.randrange(1, 4))]
    return [PureDP(epsilon), BoundedRange(epsilon / 2)]


def _policies(rng: random.Random):
    epsilon = rng.choice([0.5, 1.0, 3.0, 10.0])
    delta = rng.choice([0.0, 1e-6, 1e-3])
    yield default_policy(epsilon, delta)
    if delta:
        yield default_policy(epsilon, delta, "pure")
        yield default_policy(epsilon, delta, "gaussian")
        yield FilterPolicy(epsilon, delta, ("basic", "advanced", "zcdp", "renyi", "gdp"),
                           (0.0, delta / 8, delta / 8, delta / 8, delta / 8))


@pytest.mark.parametrize("seed", range(30))
def test_incremental_verdict_equals_full_recomputation(seed):
    rng = random.Random(seed)
    guarantees = [release_guarantee(_random_release(rng)) for _ in range(rng.randrange(1, 60))]
    if seed % 5 == 0:
        guarantees.insert(rng.randrange(len(guarantees)), ReleaseGuarantee.non_private())
    if seed % 7 == 0:
        guarantees.insert(0, ReleaseGuarantee.zero())
    for policy in _policies(rng):
        shared: list = []
        running = RunningTable(shared)
        admitted = refused = 0
        for candidate in guarantees:
            full = check(policy, shared + [candidate])
            fast = check(policy, running.plus(candidate))
            assert fast == full             # dataclass equality: every field, bit for bit
            assert repr(fast) == repr(full)
            if full.admitted:               # as a filter: only admitted releases are kept
                shared.append(candidate)
                running = running.advanced(shared, len(shared))
                admitted += 1
            else:
                refused += 1
        assert check(policy, running) == check(policy, list(shared))
    assert admitted + refused == len(guarantees)


def test_rebuilt_and_advanced_tables_agree():
    rng = random.Random(7)
    items = [release_guarantee(_random_release(rng)) for _ in range(40)]
    shared = items[:10]
    table = RunningTable(shared)
    shared.extend(items[10:])
    assert table.size == 10
    advanced = table.advanced(shared, 40)
    rebuilt = RunningTable(list(items))
    for name in ("epsilon", "delta", "rho", "xi", "gdp_mu"):
        assert advanced.total(name) == rebuilt.total(name)
        assert advanced.nonfinite(name) == rebuilt.nonfinite(name)
        assert advanced.positive(name) == rebuilt.positive(name)
    for index in range(len(RENYI_ORDERS)):
        assert advanced.renyi_total(index) == rebuilt.renyi_total(index)
    with pytest.raises(ValueError):
        advanced.plus(items[0]).advanced(shared, 40)


@pytest.mark.parametrize("seed", range(20))
def test_exact_sum_rounds_up_like_sum_upper(seed):
    rng = random.Random(seed)
    values = [rng.choice([rng.uniform(0, 1), rng.uniform(0, 1) * 1e-300, 1e-320, 0.1,
                          rng.uniform(0, 1e300), 5e-324]) for _ in range(rng.randrange(1, 200))]
    assert _upper(sum(map(_scaled, values))) == sum_upper(values)
    assert _upper(_scaled(1.7976931348623157e308) * 2) == math.inf
    assert sum_upper([1.7976931348623157e308] * 2) == math.inf


def test_ledger_verdicts_follow_the_full_recomputation(tmp_path):
    """Charge by charge through a ledger (refusals included), the spent epsilon
    and the verdicts equal a fresh full recomputation over the history."""
    from privloss.budget._accounting import spending_of

    ledger = Ledger(str(tmp_path / "ledger.sqlite"))
    ledger.create_dataset("d", epsilon=1.0, delta=1e-6)
    rng = random.Random(3)
    refused = 0
    for step in range(120):
        events = _random_release(rng)
        try:
            receipt = ledger.release_with_receipt("d", {"step": step}, lambda: 0, events)
        except LedgerBudgetError:
            refused += 1
            continue
        with ledger._read() as conn:
            dataset = ledger._dataset(conn, "d")
            full = spending_of(dataset, [], ledger._guarantees(conn, "d"))
        assert receipt.spent_epsilon == full.epsilon
        assert ledger.show("d")["spent_epsilon"] == full.epsilon
    assert refused > 0
    # a fresh process (no cache) agrees with the warm one
    assert Ledger(ledger.path, create=False).show("d") == ledger.show("d")
