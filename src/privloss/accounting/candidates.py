"""The bounds the accountant may use, each with the conditions under which it
is valid. A candidate either applies to a profile and interaction, giving an
epsilon at a target delta and a delta at a target epsilon, or says why not.

Adding a bound = adding one :class:`Candidate` to :data:`CANDIDATES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privloss.accounting import pld_bound
from privloss.accounting.profile import Profile
from privloss.bounds import (adaptive_sequence, advanced, basic, heterogeneous_dp, optimal_br,
                             optimal_dp, rdp, setwise, zcdp)
from privloss.events import Interaction

#: Largest number of mechanisms composed by the exact adaptive recursion.
ADAPTIVE_RECURSION_LIMIT = adaptive_sequence.MAX_SEQUENCE_LENGTH
#: Largest number of mechanisms for the heterogeneous optimal-DP lattice bound.
HETEROGENEOUS_LIMIT = 10_000
#: Bracket width the heterogeneous bound is refined to; only its certified upper
#: end is charged, so a coarser bracket costs a little tightness, never validity.
HETEROGENEOUS_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Candidate:
    """``epsilon`` and ``delta`` return a float, or a :class:`~privloss.bounds.Bracket`
    whose upper end is charged and whose lower end is reported."""

    name: str
    theorem: str
    #: returns None if the bound applies, else the reason it does not
    why_not: Callable[[Profile, Interaction], str | None]
    epsilon: Callable[[Profile, float], float]
    delta: Callable[[Profile, float], float]


# --------------------------------------------------------------------------
# applicability helpers
# --------------------------------------------------------------------------

def _need_dp_like(profile: Profile, _interaction) -> str | None:
    if not profile.only_dp_like:
        return "needs (epsilon, delta)-DP events only (zCDP/CDP events have no fixed delta)"
    return None


def _homogeneous(values: np.ndarray) -> bool:
    return values.size > 0 and float(values.max() - values.min()) == 0.0


def _need_homogeneous_dp_like(profile: Profile, interaction) -> str | None:
    reason = _need_dp_like(profile, interaction)
    if reason:
        return reason
    eps, dels = profile.dp_like_epsilons_and_deltas()
    if not (_homogeneous(eps) and _homogeneous(dels)):
        return "needs every mechanism to have the same (epsilon, delta)"
    return None


def _need_heterogeneous_dp(profile: Profile, interaction) -> str | None:
    reason = _need_dp_like(profile, interaction)
    if reason:
        return reason
    eps, dels = profile.dp_like_epsilons_and_deltas()
    if _homogeneous(eps) and _homogeneous(dels):
        return "all mechanisms equal: Theorem 1 (optimal-dp) is the same optimum"
    if profile.size > HETEROGENEOUS_LIMIT:
        return f"more than {HETEROGENEOUS_LIMIT} mechanisms"
    return None


def _need_nonadaptive_br(profile: Profile, interaction) -> str | None:
    if interaction is not Interaction.NON_ADAPTIVE:
        return "needs a non-adaptive interaction (BR mechanisms fixed in advance)"
    if profile.size == 0 or profile.count_br != profile.size:
        return "needs bounded-range events only"
    return None


def _need_theorem3(profile: Profile, interaction) -> str | None:
    if not profile.only_pure:
        return "needs pure-DP and bounded-range events only"
    num_br = profile.count_br
    if num_br == 0:
        return "needs at least one bounded-range event (else use optimal-dp)"
    if num_br == profile.size and interaction is Interaction.NON_ADAPTIVE:
        return "all bounded range: Theorem 2 is the same optimum"
    if interaction is not Interaction.NON_ADAPTIVE and num_br != 1:
        return "needs a non-adaptive interaction, or exactly one BR event (Corollary 5.1)"
    if interaction is Interaction.SETWISE:
        return "Corollary 5.1 assumes the order of parameters is fixed in advance"
    return None


def _need_sequence(profile: Profile, interaction) -> str | None:
    if interaction is Interaction.SETWISE:
        # (an adaptive bound with a fixed order also holds for a non-adaptive sequence)
        return "needs the order of mechanisms fixed in advance (adaptive or non-adaptive)"
    if not profile.only_pure:
        return "needs pure-DP and bounded-range events only"
    if profile.count_br == 0:
        return "no bounded-range event: optimal-dp is the same optimum"
    if profile.size > ADAPTIVE_RECURSION_LIMIT:
        return f"exact recursion limited to {ADAPTIVE_RECURSION_LIMIT} mechanisms"
    return None


def _need_all_br(profile: Profile, _interaction) -> str | None:
    if profile.size == 0 or profile.count_br != profile.size:
        return "needs bounded-range events only"
    return None


def _always(_profile: Profile, _interaction) -> str | None:
    return None


def _need_no_approx_dp(profile: Profile, _interaction) -> str | None:
    if profile.has_approx_dp:
        return "(epsilon, delta)-DP events have no Renyi/CDP guarantee"
    return None


def _need_setwise(profile: Profile, interaction) -> str | None:
    reason = _need_no_approx_dp(profile, interaction)
    if reason:
        return reason
    if profile.approx_zcdp_delta_total > 0:
        return "approximate zCDP events: see the zCDP bounds (Lemma 3.4)"
    return None


# --------------------------------------------------------------------------
# evaluation helpers
# --------------------------------------------------------------------------

def _eps(profile: Profile) -> np.ndarray:
    return profile.dp_like_epsilons_and_deltas()[0]


def _dels(profile: Profile) -> np.ndarray:
    return profile.dp_like_epsilons_and_deltas()[1]


def _uniform(profile: Profile) -> tuple[int, float, float]:
    eps, dels = profile.dp_like_epsilons_and_deltas()
    return eps.size, float(eps[0]), float(dels[0])


def _max_pure_epsilon(profile: Profile) -> float:
    return float(np.concatenate([profile.dp_epsilons, profile.br_epsilons]).max())


def _slack(profile: Profile, target_delta: float) -> float:
    """target delta left after the conditioned-away deltas (Lemma 3.4 union bound)."""
    return target_delta - profile.conditional_delta_total


def _finite(xi: float, rho: float) -> bool:
    """False when the zCDP totals overflowed (epsilon ~ 1e154 or more): no guarantee."""
    return math.isfinite(xi) and math.isfinite(rho)


def _zcdp_epsilon(convert):
    def epsilon(profile: Profile, target_delta: float) -> float:
        slack = _slack(profile, target_delta)
        xi, rho = profile.zcdp_totals()
        if slack < 0 or (slack == 0 and rho > 0) or not _finite(xi, rho):
            return math.inf
        return convert(rho, min(slack, 1.0), xi=xi)
    return epsilon


def _zcdp_delta(convert):
    def delta(profile: Profile, target_epsilon: float) -> float:
        xi, rho = profile.zcdp_totals()
        if not _finite(xi, rho):
            return 1.0
        return min(1.0, convert(rho, target_epsilon, xi=xi) + profile.conditional_delta_total)
    return delta


def _rdp_epsilon(profile: Profile, target_delta: float) -> float:
    slack = _slack(profile, target_delta)
    xi, rho = profile.zcdp_totals_without_pure()
    if slack < 0 or not _finite(xi, rho):
        return math.inf
    if slack == 0 and (rho > 0 or profile.br_epsilons.size or profile.conditional_dp_epsilons.size):
        return math.inf
    return rdp.rdp_epsilon(min(slack, 1.0), dp_epsilons=profile.conditional_dp_epsilons,
                           br_epsilons=profile.br_epsilons, xi=xi, rho=rho)


def _rdp_delta(profile: Profile, target_epsilon: float) -> float:
    xi, rho = profile.zcdp_totals_without_pure()
    if not _finite(xi, rho):
        return 1.0
    value = rdp.rdp_delta(target_epsilon, dp_epsilons=profile.conditional_dp_epsilons,
                          br_epsilons=profile.br_epsilons, xi=xi, rho=rho)
    return min(1.0, value + profile.conditional_delta_total)


def _setwise_kwargs(profile: Profile) -> dict:
    cdp = [(mu, tau) for mu, tau, count in profile.cdp_pairs for _ in range(count)]
    zcdp_pairs = [(xi, rho) for xi, rho in profile.zcdp_pairs]
    return dict(dp_epsilons=profile.dp_epsilons, br_epsilons=profile.br_epsilons,
                cdp=cdp, zcdp=zcdp_pairs)


def _sequence(profile: Profile):
    return profile.ordered_pure_sequence()


CANDIDATES: tuple[Candidate, ...] = (
    Candidate(
        "basic", "basic composition (sum of epsilons and deltas) [DMNS06]",
        _need_dp_like,
        lambda p, d: basic.basic_epsilon(_eps(p), d, deltas=_dels(p)),
        lambda p, e: basic.basic_delta(_eps(p), e, deltas=_dels(p)),
    ),
    Candidate(
        "drv-advanced", "advanced composition [DRV10] Thm III.3",
        _need_homogeneous_dp_like,
        lambda p, d: advanced.drv_epsilon(_uniform(p)[0], _uniform(p)[1], d, delta0=_uniform(p)[2]),
        lambda p, e: advanced.drv_delta(_uniform(p)[0], _uniform(p)[1], e, delta0=_uniform(p)[2]),
    ),
    Candidate(
        "kov-advanced", "heterogeneous advanced composition [KOV] Thm 3.5",
        _need_dp_like,
        lambda p, d: advanced.kov_epsilon(_eps(p), d, deltas=_dels(p)),
        lambda p, e: advanced.kov_delta(_eps(p), e, deltas=_dels(p)),
    ),
    Candidate(
        "optimal-dp", "optimal homogeneous DP composition [CR] Thm 1 = [KOV] Thm 3.3",
        _need_homogeneous_dp_like,
        lambda p, d: optimal_dp.optimal_dp_epsilon(*_uniform(p)[:2], d, delta0=_uniform(p)[2]),
        lambda p, e: optimal_dp.optimal_dp_delta(*_uniform(p)[:2], e, delta0=_uniform(p)[2]),
    ),
    Candidate(
        "optimal-dp-heterogeneous", "optimal heterogeneous DP composition [MV] Thm 1.5 (certified lattice)",
        _need_heterogeneous_dp,
        lambda p, d: heterogeneous_dp.heterogeneous_dp_epsilon(
            _eps(p), d, deltas=_dels(p), tolerance=HETEROGENEOUS_TOLERANCE),
        lambda p, e: heterogeneous_dp.heterogeneous_dp_delta(_eps(p), e, deltas=_dels(p)),
    ),
    Candidate(
        "optimal-br-nonadaptive", "optimal non-adaptive BR composition [CR] Thm 2 = [DDR] Thm 3 "
        "(heterogeneous epsilons rounded up to the largest)",
        _need_nonadaptive_br,
        lambda p, d: optimal_br.theorem2_epsilon(p.size, _max_pure_epsilon(p), d),
        lambda p, e: optimal_br.theorem2_delta(p.size, _max_pure_epsilon(p), e),
    ),
    Candidate(
        "optimal-mixed", "optimal non-adaptive DP + BR composition [CR] Thm 3 (adaptive with one "
        "BR: Cor. 5.1); heterogeneous epsilons rounded up to the largest",
        _need_theorem3,
        lambda p, d: optimal_br.theorem3_epsilon(p.size - p.count_br, p.count_br, _max_pure_epsilon(p), d),
        lambda p, e: optimal_br.theorem3_delta(p.size - p.count_br, p.count_br, _max_pure_epsilon(p), e),
    ),
    Candidate(
        "adaptive-sequence", "exact adaptive DP/BR recursion [CR] Lemma 5.1 (certified upper end)",
        _need_sequence,
        lambda p, d: adaptive_sequence.adaptive_sequence_epsilon(_sequence(p), d),
        lambda p, e: adaptive_sequence.adaptive_sequence_delta(_sequence(p), e),
    ),
    Candidate(
        "ddr-adaptive-br", "efficient adaptive BR bound [DDR] Cor. 3.1 / Prop. 4",
        _need_all_br,
        lambda p, d: setwise.ddr_adaptive_br_epsilon(p.br_epsilons, d),
        lambda p, e: setwise.ddr_adaptive_br_delta(p.br_epsilons, e),
    ),
    Candidate(
        "setwise-eq3", "set-wise adaptive DP/BR/CDP bound [CR] eq. (3)",
        _need_setwise,
        lambda p, d: setwise.setwise_epsilon(d, **_setwise_kwargs(p)),
        lambda p, e: setwise.setwise_delta(e, **_setwise_kwargs(p)),
    ),
    Candidate(
        "zcdp-simple", "zCDP composition + [BS16] Prop 1.3 (approximate zCDP: [CR] Lemma 3.4)",
        _always,
        _zcdp_epsilon(zcdp.zcdp_epsilon_simple),
        _zcdp_delta(zcdp.zcdp_delta_simple),
    ),
    Candidate(
        "zcdp-tight", "zCDP composition + tight conversion [CKS] Cor. 13",
        _always,
        _zcdp_epsilon(zcdp.zcdp_epsilon_tight),
        _zcdp_delta(zcdp.zcdp_delta_tight),
    ),
    Candidate(
        "rdp-exact", "exact worst-case Renyi curves of DP/BR + RDP composition + tight conversion "
        "[Mironov 2017; Balle et al. 2020] (derived)",
        _always,
        _rdp_epsilon,
        _rdp_delta,
    ),
    Candidate(
        "pld", "numerical privacy-loss distribution of the named mechanisms, certified bracket "
        "(Koskela et al. 2020; dominating pairs, Zhu-Dong-Wang 2022)",
        pld_bound.why_not,
        pld_bound.epsilon,
        pld_bound.delta,
    ),
)
