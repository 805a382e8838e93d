"""Immutable descriptions of privacy mechanisms (*events*).

An event says what guarantee a mechanism has, not how it runs: accountants
consume events, mechanisms emit them (the dp-accounting split). Every event is
a frozen dataclass validated at construction; ``count`` repeats it. Events nest
into trees with :class:`Composed`.

This module imports nothing else of privloss but :mod:`privloss._exact`
(standard library only: exact rounding of a ratio).
"""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import dataclass, field

from privloss._exact import quotient_upper


class Interaction(str, enum.Enum):
    """How the analyst may choose mechanisms (main document, sections 2-3).

    * ``NON_ADAPTIVE``: the whole sequence of mechanisms is fixed in advance.
    * ``ADAPTIVE``: privacy parameters and their order are fixed in advance;
      each mechanism may be chosen from earlier outputs.
    * ``SETWISE``: the parameters are preregistered as a set; which one (and
      which mechanism class) is used next is chosen adaptively.
    * ``FULLY_ADAPTIVE``: mechanisms, their privacy parameters and their number
      may all depend on earlier outputs; only privacy-filter rules are valid
      (privloss.accounting.fully_adaptive).
    """

    NON_ADAPTIVE = "non-adaptive"
    ADAPTIVE = "adaptive"
    SETWISE = "setwise"
    FULLY_ADAPTIVE = "fully-adaptive"

    @classmethod
    def parse(cls, value: "Interaction | str") -> "Interaction":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().lower().replace("_", "-"))
        except ValueError:
            allowed = ", ".join(member.value for member in cls)
            raise ValueError(f"interaction must be one of {allowed}, got {value!r}") from None


def _check_real(name: str, value, *, low: float, low_open: bool, high: float = math.inf,
                high_open: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    x = float(value)
    ok = (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
    if math.isnan(x) or not ok:
        interval = ("(" if low_open else "[") + f"{low:g}, {high:g}" + (")" if high_open else "]")
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return x


def _check_count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"count must be an integer >= 1, got {value!r}")
    return int(value)


#: allowed ranges of event fields: (low, low_open, high, high_open)
_NONNEGATIVE = (0.0, False, math.inf, True)
_PROBABILITY = (0.0, False, 1.0, True)
_POSITIVE = (0.0, True, math.inf, True)


@dataclass(frozen=True)
class Event:
    """Base class of all events."""

    def _validate(self, **ranges) -> None:
        """Check and normalise the named float fields and ``count`` (frozen-safe)."""
        for name, (low, low_open, high, high_open) in ranges.items():
            value = _check_real(name, getattr(self, name), low=low, low_open=low_open,
                                high=high, high_open=high_open)
            object.__setattr__(self, name, value)
        if hasattr(self, "count"):
            object.__setattr__(self, "count", _check_count(self.count))

    def __mul__(self, count: int) -> "Composed":
        """``event * 3`` composes three copies."""
        return Composed((self,) * _check_count(count))

    __rmul__ = __mul__


@dataclass(frozen=True)
class NoOp(Event):
    """A step that touches no private data: costs nothing."""


@dataclass(frozen=True)
class NonPrivate(Event):
    """A step with no privacy guarantee: any bound that sees it is infinite."""


@dataclass(frozen=True)
class PureDP(Event):
    """An epsilon-DP mechanism (e.g. a Laplace count), repeated ``count`` times."""

    epsilon: float
    count: int = 1

    def __post_init__(self):
        self._validate(epsilon=_NONNEGATIVE)


@dataclass(frozen=True)
class BoundedRange(Event):
    """An epsilon-bounded-range mechanism (e.g. the exponential mechanism with
    range-based scaling), repeated ``count`` times. epsilon-BR implies epsilon-DP."""

    epsilon: float
    count: int = 1

    def __post_init__(self):
        self._validate(epsilon=_NONNEGATIVE)


@dataclass(frozen=True)
class ApproxDP(Event):
    """An (epsilon, delta)-DP mechanism, repeated ``count`` times."""

    epsilon: float
    delta: float
    count: int = 1

    def __post_init__(self):
        self._validate(epsilon=_NONNEGATIVE, delta=_PROBABILITY)


@dataclass(frozen=True)
class ZCDP(Event):
    """A (xi, rho)-zCDP mechanism (rho-zCDP when xi = 0), repeated ``count`` times."""

    rho: float
    xi: float = 0.0
    count: int = 1

    def __post_init__(self):
        self._validate(rho=_NONNEGATIVE, xi=_NONNEGATIVE)


@dataclass(frozen=True)
class ApproxZCDP(Event):
    """A delta-approximately (xi, rho)-zCDP mechanism, repeated ``count`` times."""

    rho: float
    delta: float
    xi: float = 0.0
    count: int = 1

    def __post_init__(self):
        self._validate(rho=_NONNEGATIVE, delta=_PROBABILITY, xi=_NONNEGATIVE)


@dataclass(frozen=True)
class ConcentratedDP(Event):
    """A (mu, tau)-CDP mechanism [Dwork–Rothblum 2016], e.g. a Gaussian with
    (mu, tau) = (Delta^2 / (2 sigma^2), Delta / sigma); repeated ``count`` times."""

    mu: float
    tau: float
    count: int = 1

    def __post_init__(self):
        self._validate(mu=_NONNEGATIVE, tau=_NONNEGATIVE)


# --------------------------------------------------------------------------
# named mechanisms: their exact privacy-loss distribution is known (privloss.pld),
# and each also states the generic guarantee it implies (``guarantee``), so it
# mixes with every bound that takes PureDP / ZCDP events.
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Laplace(Event):
    """Laplace noise of ``scale`` on a query of l1-sensitivity ``sensitivity``;
    (sensitivity/scale)-DP."""

    scale: float
    sensitivity: float = 1.0
    count: int = 1

    def __post_init__(self):
        self._validate(scale=_POSITIVE, sensitivity=_POSITIVE)

    @property
    def guarantee(self) -> Event:
        return PureDP(quotient_upper(self.sensitivity, self.scale))   # never below the ratio


@dataclass(frozen=True)
class Gaussian(Event):
    """Gaussian noise N(0, sigma^2) on a query of l2-sensitivity ``sensitivity``;
    rho-zCDP with rho = sensitivity^2 / (2 sigma^2)."""

    sigma: float
    sensitivity: float = 1.0
    count: int = 1

    def __post_init__(self):
        self._validate(sigma=_POSITIVE, sensitivity=_POSITIVE)

    @property
    def guarantee(self) -> Event:
        return ZCDP(self.sensitivity ** 2 / (2.0 * self.sigma ** 2))


@dataclass(frozen=True)
class RandomizedResponse(Event):
    """Binary randomized response reporting the truth with probability
    e^eps / (1 + e^eps); epsilon-DP."""

    epsilon: float
    count: int = 1

    def __post_init__(self):
        self._validate(epsilon=_NONNEGATIVE)

    @property
    def guarantee(self) -> Event:
        return PureDP(self.epsilon)


@dataclass(frozen=True)
class DiscreteLaplace(Event):
    """Discrete Laplace noise of scale t on an integer query of sensitivity Delta;
    (Delta/t)-DP [CKS]."""

    scale: float
    sensitivity: int = 1
    count: int = 1

    def __post_init__(self):
        self._validate(scale=_POSITIVE)
        _check_integer_sensitivity(self)

    @property
    def guarantee(self) -> Event:
        return PureDP(quotient_upper(self.sensitivity, self.scale))   # never below the ratio


@dataclass(frozen=True)
class DiscreteGaussian(Event):
    """Discrete Gaussian noise N_Z(0, sigma^2) on an integer query of sensitivity
    Delta; (Delta^2 / (2 sigma^2))-zCDP [CKS] Theorem 4."""

    sigma: float
    sensitivity: int = 1
    count: int = 1

    def __post_init__(self):
        self._validate(sigma=_POSITIVE)
        _check_integer_sensitivity(self)

    @property
    def guarantee(self) -> Event:
        return ZCDP(self.sensitivity ** 2 / (2.0 * self.sigma ** 2))


def _check_integer_sensitivity(event) -> None:
    value = event.sensitivity
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"sensitivity must be an integer >= 1, got {value!r}")
    object.__setattr__(event, "sensitivity", int(value))


@dataclass(frozen=True)
class Composed(Event):
    """A sequence of events, in order of use; nests into trees."""

    events: tuple = field(default_factory=tuple)

    def __post_init__(self):
        events = tuple(self.events)
        for index, event in enumerate(events):
            if not isinstance(event, Event):
                raise TypeError(f"events[{index}] must be a privloss event, got {event!r}")
        object.__setattr__(self, "events", events)


ATOMIC_EVENTS = (PureDP, BoundedRange, ApproxDP, ZCDP, ApproxZCDP, ConcentratedDP)
#: named mechanisms with a known privacy-loss distribution and a ``guarantee``
MECHANISM_EVENTS = (Laplace, Gaussian, RandomizedResponse, DiscreteLaplace, DiscreteGaussian)


# --------------------------------------------------------------------------
# subsampling, group privacy and parallel composition (issue #12)
# --------------------------------------------------------------------------

#: neighbouring relations (dp-accounting's NeighboringRelation names in brackets)
ADD_OR_REMOVE_ONE = "add-remove"      # [ADD_OR_REMOVE_ONE]: add or remove one user's records
REPLACE_ONE = "replace-one"           # [REPLACE_ONE]: replace one user's records, size public

#: mechanisms that the subsampling events accept as their inner event
SUBSAMPLABLE_EVENTS = (Laplace, Gaussian, DiscreteLaplace, DiscreteGaussian)


def _check_subsampled_inner(event) -> None:
    if not isinstance(event, SUBSAMPLABLE_EVENTS) or type(event) not in SUBSAMPLABLE_EVENTS:
        raise TypeError(f"event must be a Laplace, Gaussian, DiscreteLaplace or DiscreteGaussian "
                        f"event, got {event!r}")
    if event.count != 1:
        raise ValueError(f"event.count must be 1 (the inner mechanism runs once per sample; "
                         f"repeat the sampled event with count=k), got {event.count!r}")


def _check_relation(event, allowed: str) -> None:
    if event.relation != allowed:
        raise ValueError(f"relation must be {allowed!r} for {type(event).__name__} "
                         f"(the neighbouring relation its amplification theorem holds for), "
                         f"got {event.relation!r}")


def _amplified_guarantee(inner, probability: float) -> Event:
    """Generic guarantee of a subsampled mechanism: eps-DP -> log(1 + q (e^eps - 1))-DP
    [Balle, Barthe, Gaboardi 2018, Thms 8 (Poisson, add/remove) and 9 (without
    replacement, replace-one)]; zCDP mechanisms keep their rho (Renyi divergences
    are jointly convex, so subsampling never increases them)."""
    base = inner.guarantee
    if isinstance(base, PureDP):
        return PureDP(math.log1p(probability * math.expm1(base.epsilon))
                      if base.epsilon < 700 else base.epsilon + math.log(probability))
    return base


@dataclass(frozen=True)
class PoissonSampled(Event):
    """``event`` run on a Poisson sample (each record kept independently with
    ``probability``), repeated ``count`` times (a fresh sample each time).

    Neighbouring relation: add or remove one record (``relation="add-remove"``,
    dp-accounting's ADD_OR_REMOVE_ONE); the inner event's sensitivity is for that
    relation. The inner event is a Laplace, Gaussian, DiscreteLaplace or
    DiscreteGaussian event with count 1.
    """

    event: Event
    probability: float
    count: int = 1
    relation: str = ADD_OR_REMOVE_ONE

    def __post_init__(self):
        _check_subsampled_inner(self.event)
        self._validate(probability=(0.0, True, 1.0, False))
        _check_relation(self, ADD_OR_REMOVE_ONE)

    @property
    def guarantee(self) -> Event:
        return _amplified_guarantee(self.event, self.probability)


@dataclass(frozen=True)
class SampledWithoutReplacement(Event):
    """``event`` run on ``sample_size`` records drawn without replacement from
    ``population_size``, repeated ``count`` times (a fresh sample each time).

    Neighbouring relation: replace one record (``relation="replace-one"``,
    dp-accounting's REPLACE_ONE; the population size is public); the inner
    event's sensitivity is for that relation.
    """

    event: Event
    sample_size: int
    population_size: int
    count: int = 1
    relation: str = REPLACE_ONE

    def __post_init__(self):
        _check_subsampled_inner(self.event)
        for name in ("population_size", "sample_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.sample_size > self.population_size:
            raise ValueError(f"sample_size must be an integer in [1, population_size="
                             f"{self.population_size}], got {self.sample_size!r}")
        object.__setattr__(self, "count", _check_count(self.count))
        _check_relation(self, REPLACE_ONE)

    @property
    def probability(self) -> float:
        """The sampling fraction m / n."""
        return self.sample_size / self.population_size

    @property
    def guarantee(self) -> Event:
        return _amplified_guarantee(self.event, self.probability)


#: subsampled events: atoms of a profile that carry a neighbouring relation
SAMPLED_EVENTS = (PoissonSampled, SampledWithoutReplacement)


def group_guarantee(event: Event, size: int) -> Event:
    """The guarantee of ``event`` for groups of ``size`` users (neighbours at distance ``size``).

    Definition and theorems, per event kind (k = size):

    * PureDP(eps) -> PureDP(k eps); ApproxDP(eps, delta) -> ApproxDP(k eps,
      k e^{(k-1) eps} delta) [Dwork–Roth 2014, Thm 2.2; Vadhan 2017, Lemma 2.2], or
      NonPrivate when that delta reaches 1;
    * BoundedRange(eps) -> BoundedRange(k eps): eps-BR means the log-ratio
      log P(y|D)/P(y|D') lies in an interval [t - eps, t] for each pair of neighbours
      [Durfee–Rogers 2019, Def. 3.1]; along a chain D_0, ..., D_k the log-ratios add,
      so it lies in [sum t_i - k eps, sum t_i] (derived, telescoping);
    * ZCDP(rho) -> ZCDP(k^2 rho) [Bun–Steinke 2016, Prop. 1.9]; ZCDP with xi > 0,
      ApproxZCDP and CDP with mu > tau^2/2 are refused (no group theorem used here);
      ConcentratedDP(mu, tau) with mu <= tau^2/2 reads as ZCDP(tau^2/2) first;
    * Gaussian(sigma, s) -> Gaussian(sigma, k s): l2-sensitivity grows by the triangle
      inequality; mu-GDP -> k mu-GDP exactly [Dong–Roth–Su 2022, Thm 2.14];
      Laplace, DiscreteLaplace, DiscreteGaussian likewise scale their sensitivity;
      RandomizedResponse(eps) -> PureDP(k eps); subsampled events: their generic guarantee;
    * Composed: every part; NoOp, NonPrivate: unchanged.

    Raises ``ValueError`` naming the field for the refused kinds.
    """
    k = size
    if k == 1 or isinstance(event, (NoOp, NonPrivate)):
        return event
    if isinstance(event, Composed):
        return Composed(tuple(group_guarantee(child, k) for child in event.events))
    if isinstance(event, Group):
        return group_guarantee(event.event, k * event.size)
    if isinstance(event, Parallel):
        # a group may span several branches: the composition of all branches covers every split
        return group_guarantee(Composed(event.events), k)
    count = event.count
    if isinstance(event, PureDP):
        return PureDP(k * event.epsilon, count=count)
    if isinstance(event, BoundedRange):
        return BoundedRange(k * event.epsilon, count=count)
    if isinstance(event, ApproxDP):
        log_delta = math.log(k) + (k - 1) * event.epsilon + math.log(event.delta) \
            if event.delta > 0 else -math.inf
        if log_delta >= 0:         # delta >= 1: no guarantee left for such groups
            return NonPrivate()
        return ApproxDP(k * event.epsilon, math.exp(log_delta), count=count)
    if isinstance(event, ConcentratedDP):
        if event.mu > event.tau * event.tau / 2.0:
            raise ValueError(f"Group of ConcentratedDP needs mu <= tau^2/2 (read as tau^2/2-zCDP), "
                             f"got mu={event.mu!r}, tau={event.tau!r}")
        event = ZCDP(event.tau * event.tau / 2.0, count=count)
    if isinstance(event, ZCDP):
        if event.xi > 0:
            raise ValueError(f"Group of ZCDP needs xi = 0 (group privacy of (xi, rho)-zCDP is not "
                             f"supported), got xi={event.xi!r}")
        return ZCDP(k * k * event.rho, count=count)
    if isinstance(event, ApproxZCDP):
        raise ValueError("Group of ApproxZCDP is not supported (no group theorem for approximate "
                         f"zCDP is used here), got {event!r}")
    if isinstance(event, Gaussian):
        return Gaussian(event.sigma, sensitivity=k * event.sensitivity, count=count)
    if isinstance(event, Laplace):
        return Laplace(event.scale, sensitivity=k * event.sensitivity, count=count)
    if isinstance(event, DiscreteLaplace):
        return DiscreteLaplace(event.scale, sensitivity=k * event.sensitivity, count=count)
    if isinstance(event, DiscreteGaussian):
        return DiscreteGaussian(event.sigma, sensitivity=k * event.sensitivity, count=count)
    if isinstance(event, RandomizedResponse):
        return PureDP(k * event.epsilon, count=count)
    if isinstance(event, SAMPLED_EVENTS):
        base = event.guarantee
        return group_guarantee(type(base)(**{**vars(base), "count": count}), k)
    raise TypeError(f"event must be a privloss event, got {event!r}")


@dataclass(frozen=True)
class Group(Event):
    """``event`` accounted for groups of ``size`` users (group privacy).

    The guarantee is :func:`group_guarantee` (pure DP: size * eps; approximate DP:
    (k eps, k e^{(k-1) eps} delta); Gaussian DP: k mu; zCDP: k^2 rho; BR: k eps as BR).
    Unsupported kinds are refused when the event is built.
    """

    event: Event
    size: int

    def __post_init__(self):
        if not isinstance(self.event, Event):
            raise TypeError(f"event must be a privloss event, got {self.event!r}")
        size = self.size
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
            raise ValueError(f"size must be an integer >= 1 (the group size), got {size!r}")
        object.__setattr__(self, "size", int(size))
        group_guarantee(self.event, self.size)       # refuse unsupported kinds now

    @property
    def guarantee(self) -> Event:
        return group_guarantee(self.event, self.size)


@dataclass(frozen=True)
class Parallel(Event):
    """Mechanisms run on disjoint sets of users (parallel composition).

    One user's records sit in one branch, so for each pair of neighbours only one
    branch's output distribution changes: the whole costs the worst branch
    (docs/accounting.md, "Group privacy and parallel composition"; the accountant
    replaces it by a dominating branch, see ``privloss.accounting.profile``).
    Assumes neighbours change one branch only (add/remove one user, or a replacement
    within its branch); branches with replace-one subsampling are refused.
    """

    events: tuple = field(default_factory=tuple)

    def __post_init__(self):
        events = tuple(self.events) if not isinstance(self.events, Event) else (self.events,)
        if not events:
            raise ValueError("events must be a non-empty sequence of events (one per disjoint "
                             "set of users), got an empty sequence")
        for index, event in enumerate(events):
            if not isinstance(event, Event):
                raise TypeError(f"events[{index}] must be a privloss event, got {event!r}")
        object.__setattr__(self, "events", events)
