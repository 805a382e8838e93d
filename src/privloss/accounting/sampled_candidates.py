"""Applicability and evaluation of the Gaussian-DP and subsampling bounds (issue 12),
registered in :mod:`privloss.accounting.candidates` (``gaussian-dp``,
``pld-subsampled``, ``rdp-subsampled``; the ``pld`` row is skipped when
``gaussian-dp`` is exact). Theorems: docs/accounting.md, sections "Exact Gaussian
composition" and "Subsampling"."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from privloss.accounting import pld_bound
from privloss.accounting.profile import Profile
from privloss.bounds import Bracket
from privloss.events import SAMPLED_EVENTS, Gaussian


def _is_gdp_atom(event) -> bool:
    """Continuous Gaussian, or a subsampled one: (s/sigma)-GDP too, since its privacy
    profile is at most the base mechanism's at every epsilon (a mixture over coupled
    samples; the hockey-stick divergence is jointly convex). Exact only when not
    subsampled."""
    if isinstance(event, SAMPLED_EVENTS):
        event = event.event
    return type(event) is Gaussian


def need_gaussian_only(profile: Profile, _interaction) -> str | None:
    if profile.size == 0 or not all(_is_gdp_atom(event) for event, _ in profile.atoms):
        return ("needs continuous Gaussian mechanisms only (the discrete Gaussian is not exactly "
                "GDP; no theorem makes zCDP events GDP)")
    return None


def skip_if_gaussian_dp(profile: Profile, _interaction) -> str | None:
    if profile.size and all(type(event) is Gaussian for event, _ in profile.atoms):
        return "gaussian-dp is exact for Gaussian-only profiles (a PLD would only bracket it)"
    return None


def gaussian_mus(profile: Profile):
    return [((event.event if isinstance(event, SAMPLED_EVENTS) else event).sensitivity
             / (event.event if isinstance(event, SAMPLED_EVENTS) else event).sigma, count)
            for event, count in profile.atoms]


def need_subsampled_pld(profile: Profile, _interaction) -> str | None:
    if not any(isinstance(event, SAMPLED_EVENTS) for event, _ in profile.atoms):
        return "no subsampled event (the pld bound covers named mechanisms)"
    if any(not isinstance(event, SAMPLED_EVENTS + pld_bound.PLD_EVENTS) for event, _ in profile.atoms):
        return "needs subsampled events, named mechanisms, PureDP, ApproxDP or BoundedRange only"
    if profile.size > pld_bound.PLD_LIMIT:
        return f"more than {pld_bound.PLD_LIMIT} mechanisms"
    distinct = _distinct(profile.atoms)
    if len(distinct) > DISTINCT_LIMIT:
        return f"more than {DISTINCT_LIMIT} distinct mechanisms"
    step = _step(distinct)
    widest = max(max(_loss_width(event) / step, _atom_count(event)) for event in distinct)
    if not widest <= GRID_LIMIT:           # checked before any PLD is built
        return (f"out of its numeric range: one mechanism needs about {widest:.2g} grid "
                f"points or atoms (limit {GRID_LIMIT:.0e})")
    from privloss.pld._law import GridTooLargeError

    try:
        grid = _grid_estimate(distinct)
    except (GridTooLargeError, OverflowError) as error:
        return f"out of its numeric range ({error})"
    if not grid <= GRID_LIMIT:
        return (f"out of its numeric range: its grid would hold about {grid:.2g} points "
                f"(limit {GRID_LIMIT:.0e})")
    return None


#: largest number of distinct atoms (up to count) composed by pld-subsampled
DISTINCT_LIMIT = 1000
#: largest estimated composed grid (points): 16 standard deviations of the composed
#: loss plus the widest single law, over the step (about a second of FFTs at 2e6)
GRID_LIMIT = 2_000_000


def _distinct(atoms: tuple) -> dict:
    from dataclasses import replace

    counts: dict = {}
    for event, count in atoms:
        key = replace(event, count=1) if hasattr(event, "count") else event
        counts[key] = counts.get(key, 0) + count
    return counts


def _step(distinct: dict) -> float:
    from privloss import pld

    return SUBSAMPLED_STEP if all(isinstance(e, SAMPLED_EVENTS) for e in distinct) else pld.DEFAULT_STEP


def _loss_width(event) -> float:
    """An upper bound on the loss range one atom's PLD spans (both orders): 2 eps for
    pure, Laplace and randomized-response types; 2 (mu^2/2 + 9 mu) for Gaussian types
    (tails cut at z < 9 standard deviations). Subsampling only shrinks the range."""
    if isinstance(event, SAMPLED_EVENTS):
        event = event.event
    if hasattr(event, "sigma"):
        mu = getattr(event, "sensitivity", 1.0) / event.sigma
        return 2.0 * (0.5 * mu * mu + 9.0 * mu)
    if hasattr(event, "scale"):
        return 2.0 * getattr(event, "sensitivity", 1.0) / event.scale
    return 2.0 * getattr(event, "epsilon", 0.0)


def _atom_count(event) -> float:
    """Atoms of a lattice mechanism's PLD: about 18 sigma + 2 Delta for the discrete
    Gaussian (tails cut near 9 sigma), Delta for the discrete Laplace; 0 otherwise."""
    from privloss.events import DiscreteGaussian, DiscreteLaplace

    if isinstance(event, SAMPLED_EVENTS):
        event = event.event
    if isinstance(event, DiscreteGaussian):
        return 18.0 * event.sigma + 2.0 * event.sensitivity
    if isinstance(event, DiscreteLaplace):
        return float(event.sensitivity)
    return 0.0


def _grid_estimate(distinct: dict) -> float:
    """Points of the composed law: the trimmed law spans about 8 standard deviations
    each side of its mean (tail mass 1e-15), computed from the single PLDs' laws."""
    step = _step(distinct)
    variance, widest = 0.0, 0.0
    for event, count in distinct.items():
        single = _single_cached(event, step)
        for _, upper, _lower in single.orders():
            masses = upper.masses / max(float(upper.masses.sum()), 1e-300)
            losses = upper.losses()
            mean = float(masses @ losses)
            variance_one = float(masses @ (losses - mean) ** 2)
            variance += count * variance_one / max(1, len(single.orders()))
            widest = max(widest, upper.size * step)
    return (16.0 * math.sqrt(variance) + widest) / step


#: grid step of the subsampled PLD when every atom is subsampled (as dp-accounting's
#: default value_discretization_interval): their loss ranges are short, so a finer
#: grid stays cheap and the bracket tight; mixed profiles use the pld bound's default
SUBSAMPLED_STEP = 1e-4


def _subsampled_single(event, step: float):
    """Dominating PLD of one atom: Poisson-subsampled mechanisms exactly
    (privloss.pld.subsampled); sampled without replacement (replace-one): the
    amplified pure-DP worst case for Laplace types [BBG18 Thm 9], the unsubsampled
    PLD for Gaussian types (subsampling is a mixture over coupled samples, and the
    hockey-stick divergence is jointly convex, so it never exceeds the base
    mechanism's profile at any epsilon); other events as the pld bound."""
    from privloss import pld
    from privloss.events import DiscreteGaussian, DiscreteLaplace, Laplace, PoissonSampled
    from privloss.pld import subsampled

    if not isinstance(event, SAMPLED_EVENTS):
        return pld_bound._single(event)          # default step (mixed profiles only)
    inner = event.event
    if isinstance(event, PoissonSampled):
        builder = {Gaussian: subsampled.poisson_gaussian_pld, Laplace: subsampled.poisson_laplace_pld,
                   DiscreteLaplace: subsampled.poisson_discrete_laplace_pld,
                   DiscreteGaussian: subsampled.poisson_discrete_gaussian_pld}[type(inner)]
        noise = inner.sigma if isinstance(inner, (Gaussian, DiscreteGaussian)) else inner.scale
        return builder(noise, event.probability, sensitivity=inner.sensitivity, step=step)
    guarantee = event.guarantee
    if isinstance(inner, (Laplace, DiscreteLaplace)):
        return pld.pure_dp_pld(guarantee.epsilon, step=step)
    if isinstance(inner, Gaussian):
        return pld.gaussian_pld(inner.sigma, sensitivity=inner.sensitivity, step=step)
    return pld.discrete_gaussian_pld(inner.sigma, sensitivity=inner.sensitivity, step=step)


@lru_cache(maxsize=64)
def _single_cached(event, step: float):
    return _subsampled_single(event, step)


@lru_cache(maxsize=16)
def subsampled_composed_pld(atoms: tuple):
    from privloss import pld

    counts = _distinct(atoms)
    step = _step(counts)
    return pld.compose([(_single_cached(event, step), count) for event, count in counts.items()])


def _unsubsampled(atoms: tuple) -> tuple:
    """The atoms with every subsampled event replaced by its inner mechanism."""
    return tuple((event.event if isinstance(event, SAMPLED_EVENTS) else event, count)
                 for event, count in atoms)


def _pld_answer(atoms: tuple, method: str, target: float) -> Bracket:
    """Bracket of the subsampled PLD, its upper end capped by the unsubsampled PLD's.

    Subsampling never increases the privacy profile (hockey-stick divergences are
    jointly convex over the coupled samples), so the unsubsampled composition's
    certified upper end is valid too; taking the smaller upper end makes
    "subsampled never costs more than unsubsampled" hold exactly, also where the two
    grids round differently (probability near 1). The lower end stays the subsampled
    PLD's (a lower bound on the subsampled truth).
    """
    from privloss.pld._law import GridTooLargeError

    bracket = getattr(subsampled_composed_pld(atoms), method)(target)
    if all(_is_gdp_atom(event) for event, _ in atoms):
        return bracket                 # gaussian-dp already carries the unsubsampled value
    plain_atoms = _unsubsampled(atoms)
    distinct = _distinct(plain_atoms)
    try:
        feasible = (len(distinct) <= DISTINCT_LIMIT
                    and max(max(_loss_width(event) / _step(distinct), _atom_count(event))
                            for event in distinct) <= GRID_LIMIT
                    and _grid_estimate(distinct) <= GRID_LIMIT)
        if not feasible:
            return bracket
        plain = getattr(pld_bound.composed_pld(plain_atoms), method)(target)
    except (GridTooLargeError, OverflowError):
        return bracket
    return Bracket(bracket.lower, min(bracket.upper, plain.upper))


def subsampled_pld_epsilon(profile: Profile, target_delta: float) -> Bracket:
    return _pld_answer(profile.atoms, "epsilon", target_delta)


def subsampled_pld_delta(profile: Profile, target_epsilon: float) -> Bracket:
    return _pld_answer(profile.atoms, "delta", target_epsilon)


def subsampled_gaussians(profile: Profile) -> list:
    """The atoms of ``profile`` that are subsampled (discrete) Gaussians."""
    from privloss.events import DiscreteGaussian

    return [(event, count) for event, count in profile.atoms
            if isinstance(event, SAMPLED_EVENTS) and isinstance(event.event, (Gaussian, DiscreteGaussian))]


def subsampled_gaussian_event_rdp(event, orders=None) -> np.ndarray:
    """Renyi curve of one subsampled (discrete) Gaussian event: Poisson
    [Mironov-Talwar-Zhang 2019; Zhu-Wang 2019 for the discrete Gaussian], without
    replacement [Wang-Balle-Kasiviswanathan 2019] (privloss.bounds.subsampled_rdp),
    at ``orders`` (default: that module's ORDERS)."""
    from privloss.bounds.subsampled_rdp import subsampled_gaussian_rdp
    from privloss.events import DiscreteGaussian, PoissonSampled

    inner = event.event
    if isinstance(event, PoissonSampled):
        kind = "poisson-general" if isinstance(inner, DiscreteGaussian) else "poisson"
    else:
        kind = "without-replacement"
    base_rho = inner.sensitivity ** 2 / (2.0 * inner.sigma ** 2)
    if orders is None:
        return subsampled_gaussian_rdp(base_rho, event.probability, kind=kind)
    return subsampled_gaussian_rdp(base_rho, event.probability, kind=kind, orders=orders)


def need_subsampled_gaussian(profile: Profile, interaction) -> str | None:
    if not subsampled_gaussians(profile):
        return "no subsampled Gaussian event (rdp-exact covers the rest)"
    return None


@lru_cache(maxsize=16)
def _subsampled_rdp_parts(atoms: tuple):
    """(Renyi curve on subsampled_rdp.ORDERS, conditioned-away delta) of a profile."""
    from privloss.bounds import subsampled_rdp

    profile = Profile(atoms)
    sampled = subsampled_gaussians(profile)
    rest = Profile(tuple(atom for atom in atoms if atom not in sampled))
    xi, rho = rest.zcdp_totals_without_pure()
    curve = subsampled_rdp.pure_curve(rest.conditional_dp_epsilons, rest.br_epsilons)
    curve = curve + xi + subsampled_rdp.ORDERS * rho
    grouped: dict = {}
    for event, count in sampled:
        grouped[event] = grouped.get(event, 0) + count
    for event, count in grouped.items():
        curve = curve + count * subsampled_gaussian_event_rdp(event)
    return curve, rest.conditional_delta_total


def subsampled_rdp_epsilon(profile: Profile, target_delta: float) -> float:
    from privloss.bounds import subsampled_rdp

    curve, conditioned = _subsampled_rdp_parts(profile.atoms)
    slack = target_delta - conditioned
    if slack <= 0 or not np.all(np.isfinite(curve)):
        return math.inf
    return subsampled_rdp.epsilon_from_curve(curve, min(slack, 1.0))


def subsampled_rdp_delta(profile: Profile, target_epsilon: float) -> float:
    from privloss.bounds import subsampled_rdp

    curve, conditioned = _subsampled_rdp_parts(profile.atoms)
    if not np.all(np.isfinite(curve)):
        return 1.0
    return min(1.0, subsampled_rdp.delta_from_curve(curve, target_epsilon) + conditioned)
