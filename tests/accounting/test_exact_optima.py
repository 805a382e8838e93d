"""Exact optima end the search (issue 12 item 8): when a bound that IS the optimum
for the profile has answered (Theorem 1 for equal (epsilon, delta)-DP events,
Theorems 2 and 3 / Corollary 5.1 for equal-epsilon BR mixes, exact Gaussian DP),
the accountant evaluates no other bound. Every valid bound is at least the
optimum, so the answer may change only by the optimum's own outward rounding."""

from __future__ import annotations

import dataclasses

import mpmath
import pytest

from privloss.accounting.accountant import PrivacyAccountant
from privloss.accounting.candidates import CANDIDATES
from privloss.bounds.zcdp import zcdp_delta_tight, zcdp_epsilon_tight
from privloss.events import (ApproxDP, BoundedRange, Gaussian, Interaction, Laplace, PureDP,
                             ZCDP)

#: every candidate, none of them allowed to end the search (the behaviour before)
EVERY_BOUND = tuple(dataclasses.replace(candidate, exact_when=None) for candidate in CANDIDATES)

EXACT = {   # profile -> (interactions where an exact optimum applies, the exact bound)
    "one pure-DP": ([PureDP(0.1)], "optimal-dp"),
    "50 pure-DP": ([PureDP(0.1, count=50)], "optimal-dp"),
    "7 x PureDP(5)": ([PureDP(5.0, count=7)], "optimal-dp"),
    "approximate DP": ([ApproxDP(0.2, 1e-8, count=10)], "optimal-dp"),
    "one BR": ([BoundedRange(0.1)], None),
    "9 DP + 1 BR": ([PureDP(0.2, count=9), BoundedRange(0.2)], None),
    "BR only": ([BoundedRange(0.3, count=5)], None),
    "DP + BR split": ([PureDP(0.1, count=3), BoundedRange(0.1, count=2), PureDP(0.1)], None),
    "Gaussians": ([Gaussian(2.0, sensitivity=3.0), Gaussian(1.5, count=4)], "gaussian-dp"),
}
TARGETS = [("delta", 1e-6), ("delta", 0.0), ("delta", 0.3),
           ("epsilon", 0.0), ("epsilon", 0.5), ("epsilon", 2.0)]


def answer(events, interaction, target, value, candidates=CANDIDATES):
    accountant = PrivacyAccountant(events, interaction=interaction, candidates=candidates)
    return accountant.epsilon(value) if target == "delta" else accountant.delta(value)


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("interaction", list(Interaction))
def test_skipping_changes_no_answer_beyond_rounding(name, interaction):
    events, _ = EXACT[name]
    for target, value in TARGETS:
        skipped = answer(events, interaction, target, value)
        full = answer(events, interaction, target, value, EVERY_BOUND)
        # never below the minimum over every bound (the exact row is one of them) ...
        assert skipped.value >= full.value, (target, value, skipped.bound, full.bound)
        # ... and above it by the optimum's outward rounding only (1e-12 relative; near
        # the largest loss, a delta of 1e-31 where a bound that rounds the largest loss
        # itself says 0)
        assert skipped.value <= full.value * (1 + 1e-11) + 1e-25, (target, value, skipped.bound,
                                                                   full.bound)


@pytest.mark.parametrize("name", EXACT)
def test_the_table_says_why_a_bound_was_not_evaluated(name):
    events, exact = EXACT[name]
    result = answer(events, "adaptive", "delta", 1e-6)
    skipped = [row for row in result.bounds if row.reason.startswith("not evaluated")]
    if name in ("BR only", "DP + BR split"):      # adaptive with several BR: no closed form
        assert skipped == []
        return
    assert skipped and all(not row.applies and row.value is None for row in skipped)
    assert all(f"{result.bound} is the exact optimum" in row.reason for row in skipped)
    assert exact is None or result.bound == exact
    full = answer(events, "adaptive", "delta", 1e-6, EVERY_BOUND)
    assert {row.name for row in skipped} <= {row.name for row in full.bounds if row.applies}


@pytest.mark.parametrize("events", [
    [PureDP(0.1), PureDP(0.2)],                      # heterogeneous: MV's lattice is a bracket
    [PureDP(0.1, count=5), Laplace(10.0)],           # a named mechanism: the PLD can be tighter
    [PureDP(0.1, count=5), ZCDP(0.01)],
    [BoundedRange(0.1, count=3), BoundedRange(0.2)],
])
def test_no_exact_optimum_evaluates_every_bound(events):
    result = answer(events, "adaptive", "delta", 1e-6)
    assert not [row for row in result.bounds if row.reason.startswith("not evaluated")]
    assert result.value == answer(events, "adaptive", "delta", 1e-6, EVERY_BOUND).value


def test_without_the_exact_bound_every_other_bound_answers():
    others = tuple(candidate for candidate in CANDIDATES if candidate.name != "optimal-dp")
    result = answer([PureDP(0.1, count=50)], "adaptive", "delta", 1e-6, others)
    assert not [row for row in result.bounds if row.reason.startswith("not evaluated")]
    assert result.bound == "rdp-exact"


# --------------------------------------------------------------------------
# the zCDP conversions without scipy.optimize: the optimal order by bisection
# --------------------------------------------------------------------------

def _tight_epsilon_reference(rho, delta, xi=0.0):
    """inf over a > 1 of [CKS] Cor. 13 at 40 digits: the objective's minimiser is the
    root of rho (a-1)^2 + log a - log(1/delta) (its derivative's sign)."""
    with mpmath.workdps(40):
        rho, xi, log_inv = mpmath.mpf(rho), mpmath.mpf(xi), -mpmath.log(mpmath.mpf(delta))
        # bracketed: negative at a -> 1, positive at 1 + 2 sqrt(log(1/delta) / rho)
        a = mpmath.findroot(lambda a: rho * (a - 1) ** 2 + mpmath.log(a) - log_inv,
                            (1 + mpmath.mpf(10) ** -30, 1 + 2 * mpmath.sqrt(log_inv / rho)),
                            solver="anderson")
        return xi + a * rho + (log_inv + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.05, 1.0, 30.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 0.01])
def test_tight_zcdp_epsilon_against_mpmath(rho, delta):
    # the conversion never reports less than xi (a conservative clip it makes)
    reference = max(0.1, float(_tight_epsilon_reference(rho, delta, xi=0.1)))
    value = zcdp_epsilon_tight(rho, delta, xi=0.1)
    assert reference <= value <= reference * (1 + 1e-11)


@pytest.mark.parametrize("rho", [1e-4, 0.05, 2.0])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
def test_tight_zcdp_delta_is_its_epsilons_inverse(rho, epsilon):
    delta = zcdp_delta_tight(rho, epsilon)
    if not 1e-300 < delta < 1:
        return
    # the same optimum read the other way: epsilon(delta(epsilon)) = epsilon
    assert zcdp_epsilon_tight(rho, delta) == pytest.approx(epsilon, rel=1e-9)
