"""What every mechanism shares: it states its guarantee as accountant events,
and it can charge a budget before its output is returned.

A mechanism object is configured once (epsilon, sensitivity, ...), validated at
construction, and then released on data any number of times. ``events`` is the
immutable description of one release (``privloss.events``), so accountants and
ledgers never need to know how the mechanism works.
"""

from __future__ import annotations

import numbers
from typing import Protocol

from privloss.events import Composed, Event


def check_integer(name: str, value, minimum: int, maximum: int | None = None) -> int:
    """``value`` as int if it is an integer in [minimum, maximum] (no upper end if None)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value!r}")
    return int(value)


class Budget(Protocol):
    """Anything that can be charged: ``PrivacyFilter`` (and later the ledger)."""

    def spend(self, event: Event): ...


class Mechanism:
    """Base class: subclasses set ``self._events`` in ``__init__`` and implement
    ``_release``. ``release`` computes the output, then charges ``budget`` (if
    given) and only then returns it: a refused charge raises and the output is
    discarded, so nothing unaccounted ever leaves."""

    _events: tuple[Event, ...] = ()

    @property
    def events(self) -> tuple[Event, ...]:
        """The guarantee of one release, as accountant events."""
        return self._events

    @property
    def event(self) -> Event:
        """The guarantee of one release as a single (possibly composed) event."""
        return self._events[0] if len(self._events) == 1 else Composed(self._events)

    def release(self, *args, budget: Budget | None = None, **kwargs):
        output = self._release(*args, **kwargs)
        if budget is not None:
            budget.spend(self.event)
        return output

    def _release(self, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError
