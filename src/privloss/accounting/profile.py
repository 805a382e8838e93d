"""Flatten an event tree into a *profile*: the multiset (and order) of atomic
guarantees that the bound functions take as input."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from privloss.events import (MECHANISM_EVENTS, SAMPLED_EVENTS, ApproxDP, ApproxZCDP, BoundedRange,
                             Composed, ConcentratedDP, Event, Group, NonPrivate, NoOp, Parallel,
                             PureDP, ZCDP, group_guarantee)


class UnsupportedEventError(TypeError):
    """An event this accountant does not know how to account for."""


def flatten(events) -> tuple[tuple[Event, int], ...]:
    """Atomic events with their repetition counts, in order of use.

    Raises :class:`UnsupportedEventError` on anything that is not a known event
    (before the caller changes any state).
    """
    out: list[tuple[Event, int]] = []

    def visit(event, multiplier: int):
        if isinstance(event, Composed):
            for _ in range(multiplier):
                for child in event.events:
                    visit(child, 1)
        elif isinstance(event, NoOp):
            return
        elif isinstance(event, NonPrivate):
            out.append((event, multiplier))
        elif isinstance(event, SAMPLED_EVENTS) and event.probability == 1.0:
            # sampling everything: the event is its inner mechanism, whatever the relation
            out.append((event.event, multiplier * event.count))
        elif isinstance(event, (PureDP, BoundedRange, ApproxDP, ZCDP, ApproxZCDP, ConcentratedDP)
                        + MECHANISM_EVENTS + SAMPLED_EVENTS):
            out.append((event, multiplier * event.count))
        elif isinstance(event, Group):
            for atom, count in flatten(group_guarantee(event.event, event.size)):
                out.append((atom, multiplier * count))
        elif isinstance(event, Parallel):
            for atom, count in dominating_branch([flatten(branch) for branch in event.events]):
                out.append((atom, multiplier * count))
        else:
            raise UnsupportedEventError(
                f"event must be one of PureDP, BoundedRange, ApproxDP, ZCDP, ApproxZCDP, "
                f"ConcentratedDP, Laplace, Gaussian, RandomizedResponse, DiscreteLaplace, "
                f"DiscreteGaussian, PoissonSampled, SampledWithoutReplacement, Group, Parallel, "
                f"Composed, NoOp, NonPrivate; got {event!r}")

    if isinstance(events, Event):
        events = (events,)
    for event in events:
        visit(event, 1)
    return tuple(out)


#: most mechanisms one composition may hold (counts included): every bound is
#: evaluated in O(k) memory at most, and 10^7 answers in seconds
MAX_MECHANISMS = 10_000_000


@dataclass(frozen=True)
class Profile:
    """Atomic guarantees of a composition. ``atoms`` keeps order and counts.

    Named mechanisms (Laplace, Gaussian, ...) are kept as given in ``atoms`` (the
    PLD bound uses them) and read through their ``guarantee`` (PureDP / ZCDP)
    everywhere else: see :attr:`generic_atoms`.
    """

    atoms: tuple[tuple[Event, int], ...] = ()

    def __post_init__(self):
        total = sum(count for _, count in self.atoms)
        if total > MAX_MECHANISMS:
            largest = max(self.atoms, key=lambda atom: atom[1])
            raise ValueError(f"count must keep a composition to at most {MAX_MECHANISMS:,} "
                             f"mechanisms (the bounds are evaluated on arrays of that length), "
                             f"got {total:,} (largest: {largest[0]!r} with count "
                             f"{largest[1]:,})")
        check_relations(self.atoms)

    @cached_property
    def generic_atoms(self) -> tuple[tuple[Event, int], ...]:
        return tuple((event.guarantee if isinstance(event, MECHANISM_EVENTS + SAMPLED_EVENTS)
                      else event, count) for event, count in self.atoms)

    @property
    def relation(self) -> str | None:
        """The neighbouring relation the subsampled atoms declare (None: no such atom)."""
        return next((event.relation for event, _ in self.atoms if isinstance(event, SAMPLED_EVENTS)),
                    None)

    @property
    def has_mechanism_events(self) -> bool:
        return any(isinstance(event, MECHANISM_EVENTS) for event, _ in self.atoms)

    @classmethod
    def of(cls, events) -> "Profile":
        return cls(flatten(events))

    def plus(self, events) -> "Profile":
        return Profile(self.atoms + flatten(events))

    # ---- per-kind views (expanded arrays, in order) -------------------------
    def _values(self, kind, attribute):
        parts = [np.full(count, getattr(event, attribute), dtype=float)
                 for event, count in self.generic_atoms if type(event) is kind]
        return np.concatenate(parts) if parts else np.zeros(0)

    @cached_property
    def dp_epsilons(self) -> np.ndarray:
        return self._values(PureDP, "epsilon")

    @cached_property
    def br_epsilons(self) -> np.ndarray:
        return self._values(BoundedRange, "epsilon")

    @cached_property
    def approx_epsilons(self) -> np.ndarray:
        return self._values(ApproxDP, "epsilon")

    @cached_property
    def approx_deltas(self) -> np.ndarray:
        return self._values(ApproxDP, "delta")

    @cached_property
    def zcdp_pairs(self) -> list[tuple[float, float]]:
        """(xi, rho) of every ZCDP and ApproxZCDP atom, with multiplicity counts folded."""
        return [(event.xi * count, event.rho * count) for event, count in self.generic_atoms
                if isinstance(event, (ZCDP, ApproxZCDP))]

    @cached_property
    def approx_zcdp_delta_total(self) -> float:
        return float(sum(event.delta * count for event, count in self.generic_atoms
                         if isinstance(event, ApproxZCDP)))

    @cached_property
    def conditional_delta_total(self) -> float:
        """Sum of the deltas of ApproxZCDP and ApproxDP atoms: the mass of the bad
        events conditioned away by the zCDP and Renyi routes (union bound, [CR] Lemma 3.4).

        An (eps, delta)-DP pair is a post-processing of KOV's pair "reveal the input
        with probability delta, else randomized response RR_eps" [KOV Thm 2.1], so
        conditioned on not revealing (probability 1 - delta under both inputs) it is
        eps-DP; hence delta-approximately eps^2/2-zCDP [BS16 Prop 1.4, Def 8.1]
        (derived; docs/accounting.md)."""
        from privloss._exact import sum_upper

        zcdp = [np.full(count, event.delta, dtype=float) for event, count in self.generic_atoms
                if isinstance(event, ApproxZCDP)]
        # rounded up to the next binary64 number: compared exactly with delta caps
        return sum_upper(np.concatenate([self.approx_deltas, *zcdp]))

    @cached_property
    def conditional_dp_epsilons(self) -> np.ndarray:
        """epsilons of PureDP atoms and of ApproxDP atoms once their delta is conditioned away."""
        return np.concatenate([self.dp_epsilons, self.approx_epsilons])

    @cached_property
    def cdp_pairs(self) -> list[tuple[float, float, int]]:
        return [(event.mu, event.tau, count) for event, count in self.generic_atoms
                if isinstance(event, ConcentratedDP)]

    # ---- classification -------------------------------------------------------
    def count(self, *kinds) -> int:
        return sum(count for kind, count in self._counts_by_type.items() if issubclass(kind, kinds))

    @cached_property
    def _counts_by_type(self) -> dict[type, int]:
        """Mechanisms per event type (the profile is immutable: counted once, not once
        per classification; 10^5 distinct events are classified a dozen times)."""
        totals: dict[type, int] = {}
        for event, count in self.generic_atoms:
            totals[type(event)] = totals.get(type(event), 0) + count
        return totals

    @cached_property
    def size(self) -> int:
        return sum(count for _, count in self.atoms)

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    @property
    def has_non_private(self) -> bool:
        return self.count(NonPrivate) > 0

    @property
    def only_pure(self) -> bool:
        """Every atom is PureDP or BoundedRange."""
        return self.count(PureDP, BoundedRange) == self.size

    @property
    def only_dp_like(self) -> bool:
        """Every atom has an (epsilon, delta)-DP guarantee (PureDP, BR, ApproxDP)."""
        return self.count(PureDP, BoundedRange, ApproxDP) == self.size

    @property
    def has_approx_dp(self) -> bool:
        return self.count(ApproxDP) > 0

    def dp_like_epsilons_and_deltas(self) -> tuple[np.ndarray, np.ndarray]:
        """(epsilon_i, delta_i) of every atom read as (eps, delta)-DP (BR -> eps-DP)."""
        return self._dp_like

    @cached_property
    def _dp_like(self) -> tuple[np.ndarray, np.ndarray]:
        eps = np.concatenate([self.dp_epsilons, self.br_epsilons, self.approx_epsilons])
        dels = np.concatenate([np.zeros(self.dp_epsilons.size + self.br_epsilons.size),
                               self.approx_deltas])
        return eps, dels

    def ordered_pure_sequence(self) -> list[tuple[str, float]]:
        """[("dp"|"br", epsilon), ...] in order of use (pure atoms only)."""
        sequence: list[tuple[str, float]] = []
        for event, count in self.generic_atoms:
            kind = "br" if isinstance(event, BoundedRange) else "dp"
            sequence.extend([(kind, event.epsilon)] * count)
        return sequence

    @property
    def count_br(self) -> int:
        return self.count(BoundedRange)

    def zcdp_totals_without_pure(self) -> tuple[float, float]:
        """(xi, rho) of the zCDP, approximate-zCDP and CDP atoms; CDP (mu, tau) ->
        (mu - tau^2/2, tau^2/2) [CR] Lemma 2.2. xi is clipped at >= 0 (conservative)."""
        xi = sum(x for x, _ in self.zcdp_pairs)
        rho = sum(r for _, r in self.zcdp_pairs)
        for mu, tau, count in self.cdp_pairs:
            xi += count * (mu - tau * tau / 2.0)
            rho += count * tau * tau / 2.0
        return max(xi, 0.0), rho

    def zcdp_totals(self) -> tuple[float, float]:
        """(xi, rho) of the whole profile read as (approximate) zCDP: PureDP and
        conditioned ApproxDP -> eps^2/2 [BS16], BR -> eps^2/8 [CR] §3, plus
        :meth:`zcdp_totals_without_pure`. The deltas are :attr:`conditional_delta_total`."""
        xi, rho = self.zcdp_totals_without_pure()
        with np.errstate(over="ignore"):    # epsilon ~ 1e154+: rho = inf (no guarantee)
            rho += float(np.sum(self.conditional_dp_epsilons ** 2)) / 2.0
            rho += float(np.sum(self.br_epsilons ** 2)) / 8.0
        return xi, rho


# --------------------------------------------------------------------------
# neighbouring relations and parallel composition
# --------------------------------------------------------------------------

def check_relations(atoms) -> None:
    """Refuse a profile whose subsampled atoms declare different neighbouring relations.

    Poisson subsampling amplifies under add/remove-one neighbours, sampling without
    replacement under replace-one neighbours (as dp-accounting); one composition is
    about one neighbouring relation, so mixing them has no meaning. Raises
    ``ValueError`` naming both (before any state changes: profiles are built first).
    """
    seen: dict[str, Event] = {}
    for event, _ in atoms:
        if isinstance(event, SAMPLED_EVENTS):
            seen.setdefault(event.relation, event)
            if len(seen) > 1:
                (first, a), (second, b) = list(seen.items())[:2]
                raise ValueError(
                    f"relation: cannot compose events under different neighbouring relations: "
                    f"{type(a).__name__} uses {first!r} and {type(b).__name__} uses {second!r}")


def _parameters(event: Event) -> dict:
    return {name: value for name, value in vars(event).items() if name != "count"}


def _dominating_atom(atoms: list[Event]) -> Event | None:
    """One event of the same kind that dominates every one of ``atoms`` (count 1), or None.

    Monotone families: a mechanism with a larger parameter is a valid description of
    one with a smaller one (pure DP, BR, RR, approximate DP, zCDP, CDP by definition;
    Laplace and Gaussian shifts by the worst-case sensitivity/scale ratio, the exact
    worst case of the PLD constructors). Discrete mechanisms and subsampled events
    dominate only when they differ in one monotone field (sensitivity; probability).
    """
    from privloss.events import (DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace,
                                 PoissonSampled, RandomizedResponse, SampledWithoutReplacement)

    kind = type(atoms[0])
    if any(type(atom) is not kind for atom in atoms):
        return None
    first = _parameters(atoms[0])
    if all(_parameters(atom) == first for atom in atoms):
        return kind(**first)
    if kind in (PureDP, BoundedRange, RandomizedResponse):
        return kind(max(atom.epsilon for atom in atoms))
    if kind is ApproxDP:
        return ApproxDP(max(a.epsilon for a in atoms), max(a.delta for a in atoms))
    if kind is ZCDP:
        return ZCDP(max(a.rho for a in atoms), xi=max(a.xi for a in atoms))
    if kind is ApproxZCDP:
        return ApproxZCDP(max(a.rho for a in atoms), max(a.delta for a in atoms),
                          xi=max(a.xi for a in atoms))
    if kind is ConcentratedDP:
        return ConcentratedDP(max(a.mu for a in atoms), max(a.tau for a in atoms))
    if kind is Laplace:
        return Laplace(1.0, sensitivity=max(a.sensitivity / a.scale for a in atoms))
    if kind is Gaussian:
        return Gaussian(1.0, sensitivity=max(a.sensitivity / a.sigma for a in atoms))
    if kind in (DiscreteLaplace, DiscreteGaussian):
        noise = "scale" if kind is DiscreteLaplace else "sigma"
        if len({getattr(a, noise) for a in atoms}) == 1:
            return kind(getattr(atoms[0], noise), sensitivity=max(a.sensitivity for a in atoms))
        return None
    if kind is PoissonSampled and len({a.event for a in atoms}) == 1:
        return PoissonSampled(atoms[0].event, max(a.probability for a in atoms))
    if kind is SampledWithoutReplacement and len({(a.event, a.population_size) for a in atoms}) == 1:
        return SampledWithoutReplacement(atoms[0].event, max(a.sample_size for a in atoms),
                                         atoms[0].population_size)
    return None


def _common_currency(branches) -> tuple[tuple[Event, int], ...]:
    """One atom dominating every branch, read in a common currency.

    Pure branches (every atom has a pure-DP or BR guarantee): PureDP(max over branches of
    the sum of epsilons) (basic composition inside a branch). Otherwise: the
    delta-approximate (xi, rho)-zCDP reading of each branch (eps-DP -> eps^2/2,
    eps-BR -> eps^2/8, (eps, delta)-DP -> delta-approximately eps^2/2, CDP (mu, tau)
    -> (mu - tau^2/2, tau^2/2), as :meth:`Profile.zcdp_totals`), maxima over branches.
    """
    if any(any(isinstance(atom, NonPrivate) for atom, _ in branch) for branch in branches):
        return ((NonPrivate(), 1),)
    profiles = [Profile(tuple(branch)) for branch in branches]
    if all(profile.only_pure for profile in profiles):
        total = max(math.fsum(atom.epsilon * count for atom, count in profile.generic_atoms)
                    for profile in profiles)
        return ((PureDP(total * (1 + 1e-15)), 1),)
    readings = [(*profile.zcdp_totals(), profile.conditional_delta_total) for profile in profiles]
    xi = max(r[0] for r in readings)
    rho = max(r[1] for r in readings) * (1 + 1e-15)
    delta = min(1.0, max(r[2] for r in readings) * (1 + 1e-15))
    if delta > 0:
        return ((ApproxZCDP(rho, delta, xi=xi), 1),)
    return ((ZCDP(rho, xi=xi), 1),)


def dominating_branch(branches) -> tuple[tuple[Event, int], ...]:
    """Atoms of one mechanism that dominates every branch of a parallel composition.

    Definition
        ``branches``: flattened atoms of mechanisms run on disjoint sets of users.
        For neighbours that differ in one user, only that user's branch changes
        distribution; the other branches are identical and independent, so the
        pair is the branch's pair plus noise that carries no information: the
        parallel composition has exactly the worst branch's privacy profile
        [McSherry 2009, Thm 4; the PLD of identical factors is the identity].
    Reduction
        Branches with the same shape (same kinds and counts, position by position)
        become that shape with each parameter at its maximum over the branches
        (exact when the branches are equal, e.g. Parallel of one event). Other
        branches are read in a common currency (:func:`_common_currency`).
    Assumptions
        A neighbour changes one branch only (add/remove one user); replace-one
        subsampled atoms are refused (a replacement may move a user between branches).
    """
    for branch in branches:
        for atom, _ in branch:
            if isinstance(atom, SAMPLED_EVENTS) and atom.relation != "add-remove":
                raise ValueError(f"events: Parallel assumes a neighbour changes one branch "
                                 f"(add/remove one user); {type(atom).__name__} uses the "
                                 f"{atom.relation!r} relation")
    branches = [tuple(branch) for branch in branches]
    if len(branches) == 1:
        return branches[0]
    shape = [(type(atom), count) for atom, count in branches[0]]
    if all([(type(atom), count) for atom, count in branch] == shape for branch in branches):
        merged = []
        for position, (_, count) in enumerate(shape):
            atom = _dominating_atom([branch[position][0] for branch in branches])
            if atom is None:
                break
            merged.append((atom, count))
        else:
            return tuple(merged)
    return _common_currency(branches)
