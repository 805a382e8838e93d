"""Flatten an event tree into a *profile*: the multiset (and order) of atomic
guarantees that the bound functions take as input."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from privloss.events import (MECHANISM_EVENTS, ApproxDP, ApproxZCDP, BoundedRange, Composed,
                             ConcentratedDP, Event, NonPrivate, NoOp, PureDP, ZCDP)


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
        elif isinstance(event, (PureDP, BoundedRange, ApproxDP, ZCDP, ApproxZCDP, ConcentratedDP)
                        + MECHANISM_EVENTS):
            out.append((event, multiplier * event.count))
        else:
            raise UnsupportedEventError(
                f"event must be one of PureDP, BoundedRange, ApproxDP, ZCDP, ApproxZCDP, "
                f"ConcentratedDP, Laplace, Gaussian, RandomizedResponse, DiscreteLaplace, "
                f"DiscreteGaussian, Composed, NoOp, NonPrivate; got {event!r}")

    if isinstance(events, Event):
        events = (events,)
    for event in events:
        visit(event, 1)
    return tuple(out)


@dataclass(frozen=True)
class Profile:
    """Atomic guarantees of a composition. ``atoms`` keeps order and counts.

    Named mechanisms (Laplace, Gaussian, ...) are kept as given in ``atoms`` (the
    PLD bound uses them) and read through their ``guarantee`` (PureDP / ZCDP)
    everywhere else: see :attr:`generic_atoms`.
    """

    atoms: tuple[tuple[Event, int], ...] = ()

    @cached_property
    def generic_atoms(self) -> tuple[tuple[Event, int], ...]:
        return tuple((event.guarantee if isinstance(event, MECHANISM_EVENTS) else event, count)
                     for event, count in self.atoms)

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
        return self.approx_zcdp_delta_total + float(np.sum(self.approx_deltas))

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
        return sum(count for event, count in self.generic_atoms if isinstance(event, kinds))

    @property
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
