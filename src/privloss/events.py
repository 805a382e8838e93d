"""Immutable descriptions of privacy mechanisms (*events*).

An event says what guarantee a mechanism has, not how it runs: accountants
consume events, mechanisms emit them (the dp-accounting split). Every event is
a frozen dataclass validated at construction; ``count`` repeats it. Events nest
into trees with :class:`Composed`.

This module imports nothing else of privloss.
"""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import dataclass, field


class Interaction(str, enum.Enum):
    """How the analyst may choose mechanisms (main document, sections 2-3).

    * ``NON_ADAPTIVE``: the whole sequence of mechanisms is fixed in advance.
    * ``ADAPTIVE``: privacy parameters and their order are fixed in advance;
      each mechanism may be chosen from earlier outputs.
    * ``SETWISE``: the parameters are preregistered as a set; which one (and
      which mechanism class) is used next is chosen adaptively.
    """

    NON_ADAPTIVE = "non-adaptive"
    ADAPTIVE = "adaptive"
    SETWISE = "setwise"

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
        return PureDP(self.sensitivity / self.scale)


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
        return PureDP(self.sensitivity / self.scale)


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
