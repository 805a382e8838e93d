"""The bounds the accountant may use, each with the conditions under which it
is valid. A candidate either applies to a profile and interaction, giving an
epsilon at a target delta and a delta at a target epsilon, or says why not.

Adding a bound = adding one :class:`Candidate` to :data:`CANDIDATES`.

Each bound's module (``privloss.bounds.*``, the PLD package) is imported when the
candidate is first evaluated (:func:`_bounds`), not with this module: SciPy's
optimiser, ``scipy.fft`` and the PLD stack cost 0.2 to 0.3 s of a CLI start-up that
may need none of them (issue 12 item 8; tests/cli/test_startup.py).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privloss.accounting import pld_bound
from privloss.accounting.profile import Profile
from privloss.accounting.sampled_candidates import (gaussian_mus, need_gaussian_only,
                                                   need_subsampled_gaussian, need_subsampled_pld,
                                                   skip_if_gaussian_dp, subsampled_pld_delta,
                                                   subsampled_pld_epsilon, subsampled_rdp_delta,
                                                   subsampled_rdp_epsilon)
from privloss.accounting.exact_optima import (exact_gaussian, exact_theorem1, exact_theorem2,
                                              exact_theorem3)
from privloss.events import Interaction


def _bounds(name: str):
    """The module ``privloss.bounds.<name>``, imported on first use (then a dict lookup)."""
    return importlib.import_module(f"privloss.bounds.{name}")


#: Largest number of mechanisms composed by the exact adaptive recursion: its module's
#: MAX_SEQUENCE_LENGTH, spelled out so that deciding applicability imports no bound
#: (tests/cli/test_startup.py checks that they agree).
ADAPTIVE_RECURSION_LIMIT = 20
#: Largest number of mechanisms for the heterogeneous optimal-DP lattice bound.
HETEROGENEOUS_LIMIT = 100_000
#: Bracket width the heterogeneous bound is refined to; only its certified upper
#: end is charged, so a coarser bracket costs a little tightness, never validity.
HETEROGENEOUS_TOLERANCE = 1e-3
#: Largest number of distinct mechanisms (up to count) the PLD bound composes.
PLD_DISTINCT_LIMIT = 1000
#: Largest estimated grid of the composed PLD, 16 sqrt(sum count spread^2) / step
#: (the trimmed law spans about 8 standard deviations each side; ~3 s of CPU at 5e6).
PLD_GRID_LIMIT = 5_000_000
#: Largest composition Theorems 2 and 3 are evaluated for (1.5 s of CPU at 10^5,
#: linear in k); beyond it they are skipped, a rule that only tightens as events are
#: added, so adding a mechanism never lowers the answer
OPTIMAL_BR_LIMIT = 200_000
#: largest exact lattice law of a discrete mechanism the PLD row builds (sigma = 1e6
#: would enumerate ~2e7 atoms: 14 s); beyond it the Renyi and zCDP routes answer
PLD_LATTICE_LIMIT = 2_000_000


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
    #: the interaction models the bound is proven for (checked before ``why_not``);
    #: the default leaves out fully-adaptive: a new bound must opt in with a filter theorem
    models: frozenset = frozenset({Interaction.NON_ADAPTIVE, Interaction.ADAPTIVE,
                                   Interaction.SETWISE})
    #: returns the theorem by which this bound's answer IS the optimum for the profile
    #: (no valid bound can be lower), else None; checked after ``models`` and ``why_not``.
    #: Once such a bound has answered, the accountant evaluates no other candidate.
    exact_when: Callable[[Profile, Interaction], str | None] | None = None


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
    if profile.size > OPTIMAL_BR_LIMIT:
        return (f"more than {OPTIMAL_BR_LIMIT:,} mechanisms (O(k) work per evaluation; "
                f"the Renyi and zCDP routes answer)")
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
    if profile.size > OPTIMAL_BR_LIMIT:
        return (f"more than {OPTIMAL_BR_LIMIT:,} mechanisms (O(k) work per evaluation; "
                f"the Renyi and zCDP routes answer)")
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


def _exact_optimum_applies(profile: Profile, interaction) -> bool:
    """True when a closed-form optimum covers a profile of generic events: equal
    (epsilon, delta) without BR (Theorem 1), or equal pure epsilons with BR either
    non-adaptively (Theorems 2, 3) or with exactly one BR (Corollary 5.1).

    The set of such profiles is closed under removing events, which keeps the PLD
    rule below monotone: a profile the PLD skips has only exact sub-profiles.
    """
    if profile.has_mechanism_events or not profile.only_dp_like:
        return False
    eps, dels = profile.dp_like_epsilons_and_deltas()
    if not (_homogeneous(eps) and _homogeneous(dels)):
        return False
    if profile.count_br == 0:
        return True
    return profile.only_pure and (interaction is Interaction.NON_ADAPTIVE or profile.count_br == 1)


def _need_pld(profile: Profile, interaction) -> str | None:
    """The PLD bound for named mechanisms and for generic PureDP / ApproxDP / BR events
    (their worst-case pairs: randomized response [KOV], KOV's (eps, delta) pair, the
    adaptive-valid BR envelope), so that adding a named mechanism never switches on a
    bound the profile without it was denied (issue 12 item 5).

    Every condition is closed under removing events (sizes only grow when events are
    added), so answer(P + e) >= answer(P) up to the bracket widths
    (tests/accounting/test_monotonicity.py).
    """
    if profile.has_mechanism_events:
        reason = pld_bound.why_not(profile, interaction)
        if reason is not None:
            return reason
    else:
        if any(not isinstance(event, pld_bound.PLD_EVENTS) for event, _ in profile.atoms):
            return "needs named mechanisms, PureDP, ApproxDP or BoundedRange events only (no zCDP/CDP)"
        if profile.size > pld_bound.PLD_LIMIT:
            return f"more than {pld_bound.PLD_LIMIT} mechanisms"
        if _exact_optimum_applies(profile, interaction):
            return "a closed-form optimum (optimal-dp, optimal-br-nonadaptive or optimal-mixed) applies"
    distinct = set()
    for event, _ in profile.atoms:          # stops at the limit (10^5 distinct events)
        distinct.add(pld_bound._key(event))
        if len(distinct) > PLD_DISTINCT_LIMIT:
            return f"more than {PLD_DISTINCT_LIMIT} distinct mechanisms (about 1 ms each to compose)"
    atoms = _pld_lattice_atoms(profile)
    if not atoms <= PLD_LATTICE_LIMIT:
        return (f"out of its numeric range: a discrete mechanism's lattice would hold about "
                f"{atoms:.2g} atoms (limit {PLD_LATTICE_LIMIT:.0e})")
    grid = _pld_grid_estimate(profile)
    if not grid <= PLD_GRID_LIMIT:
        return (f"out of its numeric range: its grid would hold about {grid:.2g} points "
                f"(limit {PLD_GRID_LIMIT:.0e})")
    return None


def _pld_lattice_atoms(profile: Profile) -> float:
    """Atoms the largest discrete mechanism's exact lattice law enumerates (its
    support out to a 1e-15-ish tail: about 20 sigma, or 80 scales). Depends on
    the largest event only, so adding events never lowers it (monotonicity)."""
    from privloss.events import DiscreteGaussian, DiscreteLaplace

    largest = 0.0
    for event, _ in profile.atoms:
        if isinstance(event, DiscreteGaussian):
            largest = max(largest, 20.0 * event.sigma)
        elif isinstance(event, DiscreteLaplace):
            largest = max(largest, 80.0 * event.scale)
    return largest


def _pld_grid_estimate(profile: Profile) -> float:
    """16 sqrt(sum count s^2) / step, s = the largest loss of one mechanism (epsilon,
    or sensitivity / scale; sensitivity / sigma for Gaussians). Non-decreasing when
    events are added, as the monotonicity of the PLD rule needs."""
    from privloss.pld.core import DEFAULT_STEP

    total = 0.0
    for event, count in profile.atoms:
        if hasattr(event, "sigma"):
            spread = getattr(event, "sensitivity", 1.0) / event.sigma
        elif hasattr(event, "scale"):
            spread = getattr(event, "sensitivity", 1.0) / event.scale
        else:
            spread = getattr(event, "epsilon", 0.0)
        total += count * spread * spread
    return 16.0 * math.sqrt(total) / DEFAULT_STEP


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


def _zcdp_epsilon(conversion: str):
    """The epsilon of ``privloss.bounds.zcdp.<conversion>`` applied to the profile's totals."""
    def epsilon(profile: Profile, target_delta: float) -> float:
        convert = getattr(_bounds("zcdp"), conversion)
        slack = _slack(profile, target_delta)
        xi, rho = profile.zcdp_totals()
        if slack < 0 or (slack == 0 and rho > 0) or not _finite(xi, rho):
            return math.inf
        return convert(rho, min(slack, 1.0), xi=xi)
    return epsilon


def _zcdp_delta(conversion: str):
    def delta(profile: Profile, target_epsilon: float) -> float:
        convert = getattr(_bounds("zcdp"), conversion)
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
    return _bounds("rdp").rdp_epsilon(min(slack, 1.0),
                                      dp_epsilons=profile.conditional_dp_epsilons,
                                      br_epsilons=profile.br_epsilons, xi=xi, rho=rho)


def _rdp_delta(profile: Profile, target_epsilon: float) -> float:
    xi, rho = profile.zcdp_totals_without_pure()
    if not _finite(xi, rho):
        return 1.0
    value = _bounds("rdp").rdp_delta(target_epsilon, dp_epsilons=profile.conditional_dp_epsilons,
                                     br_epsilons=profile.br_epsilons, xi=xi, rho=rho)
    return min(1.0, value + profile.conditional_delta_total)


def _setwise_kwargs(profile: Profile) -> dict:
    cdp = [(mu, tau) for mu, tau, count in profile.cdp_pairs for _ in range(count)]
    zcdp_pairs = [(xi, rho) for xi, rho in profile.zcdp_pairs]
    return dict(dp_epsilons=profile.dp_epsilons, br_epsilons=profile.br_epsilons,
                cdp=cdp, zcdp=zcdp_pairs)


def _sequence(profile: Profile):
    return profile.ordered_pure_sequence()


#: models a bound proven for a fixed sequence of parameters covers (set-wise: the
#: bound depends on the multiset of parameters only, or all parameters are equal)
FIXED_PARAMETER_MODELS = frozenset({Interaction.NON_ADAPTIVE, Interaction.ADAPTIVE,
                                    Interaction.SETWISE})
#: bounds proven only when the ORDER of parameters is fixed in advance; left out of
#: set-wise (issue 11 item 7: KOV/MV/PLD are not proven for set-wise selection;
#: KOV's value is still available set-wise through eq. (3), docs/accounting.md)
SEQUENCE_MODELS = frozenset({Interaction.NON_ADAPTIVE, Interaction.ADAPTIVE})
#: bounds that are also valid privacy filters (fully-adaptive). For a fixed profile
#: under fully-adaptive the accountant reports the smallest budget epsilon that ONE
#: filter rule, fixed before the first release, would need to admit these events
#: (basic: RRUV 2016; the filter-* candidates below; GDP: Smith-Thakurta 2022); to
#: ENFORCE a budget use PrivacyFilter, whose policy is fixed at creation
#: (privloss.accounting.fully_adaptive, docs/accounting.md)
ALL_MODELS = frozenset(Interaction)
#: the filter-* candidates: the same arithmetic as zcdp-simple / zcdp-tight /
#: rdp-exact, justified by filter theorems instead (listed under fully-adaptive only)
FILTER_MODELS = frozenset({Interaction.FULLY_ADAPTIVE})


def _advanced_filter_epsilon(profile: Profile, target_delta: float) -> float:
    """[WRRW23] advanced composition filter: sum eps^2/2 + sqrt(2 log(1/delta') sum eps^2),
    delta' = target delta minus the (conditioned) deltas of the events."""
    slack = target_delta - profile.conditional_delta_total
    eps = profile.conditional_dp_epsilons
    eps = np.concatenate([eps, profile.br_epsilons])
    if slack <= 0 or eps.size == 0 or not np.all(np.isfinite(eps)):
        return math.inf
    largest = float(eps.max())
    if largest == 0:
        return 0.0
    norm = largest * math.sqrt(math.fsum(((eps / largest) ** 2).tolist())) * (1 + 1e-12)
    return norm * norm / 2 + norm * math.sqrt(2 * -math.log(min(slack, 1.0)))


def _advanced_filter_delta(profile: Profile, target_epsilon: float) -> float:
    eps = np.concatenate([profile.conditional_dp_epsilons, profile.br_epsilons])
    if not np.all(np.isfinite(eps)):
        return 1.0
    squares = math.fsum((eps * eps).tolist()) * (1 + 1e-12)
    if squares == 0:
        return min(1.0, profile.conditional_delta_total)
    excess = target_epsilon - squares / 2
    tail = 1.0 if excess <= 0 else math.exp(-excess * excess / (2 * squares))
    return min(1.0, tail * (1 + 1e-12) + profile.conditional_delta_total)


CANDIDATES: tuple[Candidate, ...] = (
    Candidate(
        "basic", "basic composition (sum of epsilons and deltas) [DMNS06]",
        _need_dp_like,
        lambda p, d: _bounds("basic").basic_epsilon(_eps(p), d, deltas=_dels(p)),
        lambda p, e: _bounds("basic").basic_delta(_eps(p), e, deltas=_dels(p)),
        models=ALL_MODELS,
    ),
    Candidate(
        "drv-advanced", "advanced composition [DRV10] Thm III.3",
        _need_homogeneous_dp_like,
        lambda p, d: _bounds("advanced").drv_epsilon(*_uniform(p)[:2], d, delta0=_uniform(p)[2]),
        lambda p, e: _bounds("advanced").drv_delta(*_uniform(p)[:2], e, delta0=_uniform(p)[2]),
        models=FIXED_PARAMETER_MODELS,
    ),
    Candidate(
        "kov-advanced", "heterogeneous advanced composition [KOV] Thm 3.5",
        _need_dp_like,
        lambda p, d: _bounds("advanced").kov_epsilon(_eps(p), d, deltas=_dels(p)),
        lambda p, e: _bounds("advanced").kov_delta(_eps(p), e, deltas=_dels(p)),
        models=SEQUENCE_MODELS,
    ),
    Candidate(
        "optimal-dp", "optimal homogeneous DP composition [CR] Thm 1 = [KOV] Thm 3.3",
        _need_homogeneous_dp_like,
        lambda p, d: _bounds("optimal_dp").optimal_dp_epsilon(*_uniform(p)[:2], d,
                                                              delta0=_uniform(p)[2]),
        lambda p, e: _bounds("optimal_dp").optimal_dp_delta(*_uniform(p)[:2], e,
                                                            delta0=_uniform(p)[2]),
        models=FIXED_PARAMETER_MODELS,
        exact_when=exact_theorem1,
    ),
    Candidate(
        "optimal-dp-heterogeneous", "optimal heterogeneous DP composition [MV] Thm 1.5 (certified lattice)",
        _need_heterogeneous_dp,
        lambda p, d: _bounds("heterogeneous_dp").heterogeneous_dp_epsilon(
            _eps(p), d, deltas=_dels(p), tolerance=HETEROGENEOUS_TOLERANCE),
        lambda p, e: _bounds("heterogeneous_dp").heterogeneous_dp_delta(_eps(p), e,
                                                                        deltas=_dels(p)),
        models=SEQUENCE_MODELS,
    ),
    Candidate(
        "optimal-br-nonadaptive", "optimal non-adaptive BR composition [CR] Thm 2 = [DDR] Thm 3 "
        "(heterogeneous epsilons rounded up to the largest)",
        _need_nonadaptive_br,
        lambda p, d: _bounds("optimal_br").theorem2_epsilon(p.size, _max_pure_epsilon(p), d),
        lambda p, e: _bounds("optimal_br").theorem2_delta(p.size, _max_pure_epsilon(p), e),
        models=frozenset({Interaction.NON_ADAPTIVE}),
        exact_when=exact_theorem2,
    ),
    Candidate(
        "optimal-mixed", "optimal non-adaptive DP + BR composition [CR] Thm 3 (adaptive with one "
        "BR: Cor. 5.1); heterogeneous epsilons rounded up to the largest",
        _need_theorem3,
        lambda p, d: _bounds("optimal_br").theorem3_epsilon(p.size - p.count_br, p.count_br,
                                                            _max_pure_epsilon(p), d),
        lambda p, e: _bounds("optimal_br").theorem3_delta(p.size - p.count_br, p.count_br,
                                                          _max_pure_epsilon(p), e),
        models=SEQUENCE_MODELS,
        exact_when=exact_theorem3,
    ),
    Candidate(
        "adaptive-sequence", "exact adaptive DP/BR recursion [CR] Lemma 5.1 (certified upper end)",
        _need_sequence,
        lambda p, d: _bounds("adaptive_sequence").adaptive_sequence_epsilon(_sequence(p), d),
        lambda p, e: _bounds("adaptive_sequence").adaptive_sequence_delta(_sequence(p), e),
        models=SEQUENCE_MODELS,
    ),
    Candidate(
        "ddr-adaptive-br", "efficient adaptive BR bound [DDR] Cor. 3.1 / Prop. 4",
        _need_all_br,
        lambda p, d: _bounds("setwise").ddr_adaptive_br_epsilon(p.br_epsilons, d),
        lambda p, e: _bounds("setwise").ddr_adaptive_br_delta(p.br_epsilons, e),
        models=FIXED_PARAMETER_MODELS,
    ),
    Candidate(
        "setwise-eq3", "set-wise adaptive DP/BR/CDP bound [CR] eq. (3)",
        _need_setwise,
        lambda p, d: _bounds("setwise").setwise_epsilon(d, **_setwise_kwargs(p)),
        lambda p, e: _bounds("setwise").setwise_delta(e, **_setwise_kwargs(p)),
        models=FIXED_PARAMETER_MODELS,
    ),
    Candidate(
        "filter-advanced", "advanced composition filter [WRRW23] (adaptively chosen epsilons)",
        _need_dp_like,
        _advanced_filter_epsilon,
        _advanced_filter_delta,
        models=FILTER_MODELS,
    ),
    Candidate(
        "filter-zcdp", "zCDP filter [FZ21] / approximate zCDP filter [WRRW23] + [CKS] Cor. 13",
        _always,
        _zcdp_epsilon("zcdp_epsilon_tight"),
        _zcdp_delta("zcdp_delta_tight"),
        models=FILTER_MODELS,
    ),
    Candidate(
        "filter-renyi", "Renyi filter at one order fixed in advance [FZ21] with the exact DP/BR "
        "curves + [CKS] Prop. 12",
        _always,
        _rdp_epsilon,
        _rdp_delta,
        models=FILTER_MODELS,
    ),
    Candidate(
        "zcdp-simple", "zCDP composition + [BS16] Prop 1.3 (approximate zCDP: [CR] Lemma 3.4)",
        _always,
        _zcdp_epsilon("zcdp_epsilon_simple"),
        _zcdp_delta("zcdp_delta_simple"),
        models=FIXED_PARAMETER_MODELS,  # fully-adaptive: see the filter-* candidates
    ),
    Candidate(
        "zcdp-tight", "zCDP composition + tight conversion [CKS] Cor. 13",
        _always,
        _zcdp_epsilon("zcdp_epsilon_tight"),
        _zcdp_delta("zcdp_delta_tight"),
        models=FIXED_PARAMETER_MODELS,  # fully-adaptive: see the filter-* candidates
    ),
    Candidate(
        "rdp-exact", "exact worst-case Renyi curves of DP/BR + RDP composition + tight conversion "
        "[Mironov 2017; Balle et al. 2020] (derived)",
        _always,
        _rdp_epsilon,
        _rdp_delta,
        models=FIXED_PARAMETER_MODELS,  # fully-adaptive: see the filter-* candidates
    ),
    Candidate(
        "pld", "numerical privacy-loss distribution of the named mechanisms and of the worst-case "
        "pairs of PureDP/ApproxDP/BR events, certified bracket "
        "(Koskela et al. 2020; dominating pairs, Zhu-Dong-Wang 2022)",
        lambda p, i: skip_if_gaussian_dp(p, i) or _need_pld(p, i),
        pld_bound.epsilon,
        pld_bound.delta,
        models=SEQUENCE_MODELS,
    ),
    Candidate(
        "gaussian-dp", "exact Gaussian DP composition: mu = sqrt(sum (s_i/sigma_i)^2) and the GDP "
        "profile [Dong-Roth-Su 2022 Cor. 2.13, 3.3; fully adaptive: Smith-Thakurta 2022]",
        need_gaussian_only,
        lambda p, d: _bounds("gaussian_dp").gaussian_composition_epsilon(gaussian_mus(p), d),
        lambda p, e: _bounds("gaussian_dp").gaussian_composition_delta(gaussian_mus(p), e),
        models=ALL_MODELS,      # = privloss.bounds.gaussian_dp.INTERACTIONS (tested)
        exact_when=exact_gaussian,
    ),
    Candidate(
        "pld-subsampled", "certified PLD of Poisson-subsampled Laplace/Gaussian (add/remove; "
        "Zhu-Dong-Wang 2022 dominating pairs) with the other PLD events",
        need_subsampled_pld,
        subsampled_pld_epsilon,
        subsampled_pld_delta,
        models=SEQUENCE_MODELS,
    ),
    Candidate(
        "rdp-subsampled", "Renyi curves of subsampled Gaussians (Poisson: Mironov-Talwar-Zhang "
        "2019; without replacement: Wang-Balle-Kasiviswanathan 2019) + exact DP/BR curves",
        need_subsampled_gaussian,
        subsampled_rdp_epsilon,
        subsampled_rdp_delta,
        models=FIXED_PARAMETER_MODELS,
    ),
)

