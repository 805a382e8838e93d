"""What the reading and writing halves of the ledger share: argument checks,
the receipt, small helpers."""

from __future__ import annotations

import datetime
import functools
import json
from typing import Any, NamedTuple

from privloss.accounting.profile import Profile
from privloss.bounds._numeric import check_positive, check_probability
from privloss.events import Event, Interaction

__all__ = ["Receipt", "check_dataset_name", "LEDGER_INTERACTIONS", "DEFAULT_TIMEOUT",
           "MAX_NAME_LENGTH"]


#: seconds a call waits for another process's write lock before failing
DEFAULT_TIMEOUT = 60.0
#: interaction models a ledger accepts (non-adaptive cannot hold for queries that
#: arrive over time); adaptive and setwise need a preregistered plan
LEDGER_INTERACTIONS = (Interaction.FULLY_ADAPTIVE.value, Interaction.ADAPTIVE.value,
                       Interaction.SETWISE.value)
MAX_NAME_LENGTH = 200


class Receipt(NamedTuple):
    """What :meth:`Ledger.release_with_receipt` returns."""

    result: Any
    #: True if the stored answer of an identical earlier query was returned (no cost)
    cached: bool
    release_id: int
    #: epsilon of the dataset's history right after that release was recorded
    spent_epsilon: float
    bound: str
    time: str
    #: number (1-based, as ``show``/``history`` list them) of the plan item the
    #: release used (None without a plan)
    plan_item: int | None = None


def _check_name(kind: str, name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{kind} must be a string, got {name!r}")
    if not name.strip() or name != name.strip() or len(name) > MAX_NAME_LENGTH \
            or any(ord(char) < 32 for char in name):
        raise ValueError(f"{kind} must be a non-empty name of at most {MAX_NAME_LENGTH} "
                         f"characters without control characters or surrounding spaces, "
                         f"got {name!r}")
    return name


def check_dataset_name(name) -> str:
    return _check_name("dataset", name)


def _check_interaction(interaction) -> str:
    try:
        value = Interaction.parse(interaction).value
    except ValueError:
        value = None
    if value not in LEDGER_INTERACTIONS:
        raise ValueError(f"interaction must be one of {', '.join(LEDGER_INTERACTIONS)} "
                         f"(queries reach a ledger over time), got {interaction!r}")
    return value


def _check_events(events) -> tuple[Event, ...]:
    if isinstance(events, Event):
        events = (events,)
    try:
        events = tuple(events)
    except TypeError:
        raise TypeError(f"events must be a privloss event or a sequence of events, "
                        f"got {events!r}") from None
    if not events:
        raise ValueError("events must name at least one event (use NoOp() for a release "
                         "that touches no private data)")
    for index, event in enumerate(events):
        if not isinstance(event, Event):
            raise TypeError(f"events[{index}] must be a privloss event, got {event!r}")
    Profile.of(events)               # the accountant's own check of the types
    return events


def _check_analyst(analyst, analyst_budget) -> tuple:
    """(analyst name or None, (epsilon, delta) cap or None), validated."""
    if analyst is not None:
        _check_name("analyst", analyst)
    if analyst_budget is None:
        return analyst, None
    if analyst is None:
        raise ValueError("analyst_budget needs analyst: a cap is per analyst")
    try:
        epsilon, delta = analyst_budget
    except (TypeError, ValueError):
        raise TypeError(f"analyst_budget must be a pair (epsilon, delta), "
                        f"got {analyst_budget!r}") from None
    return analyst, (check_positive("analyst_budget epsilon", epsilon),
                     check_probability("analyst_budget delta", delta, closed_upper=False))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def _identity(value):
    return value


def _guarantee_text(events) -> str:
    """The stored JSON of one release's guarantee (cached: a dry run and the
    release itself, or repeated releases of one query shape, compute it once)."""
    from privloss.serialize import events_to_text
    return _guarantee_of_text(events_to_text(events))


@functools.lru_cache(maxsize=1024)
def _guarantee_of_text(events_text: str) -> str:
    # keyed by the exact JSON of the events (bit for bit), never by equality of floats
    from privloss.accounting.fully_adaptive import release_guarantee
    from privloss.serialize import events_from_text
    return json.dumps(release_guarantee(events_from_text(events_text)).to_dict())




@functools.lru_cache(maxsize=1024)
def _guarantee_of_json(text: str):
    """A stored guarantee's JSON parsed (immutable, so shared): a candidate's
    guarantee is read once, not at every re-check."""
    from privloss.accounting.fully_adaptive import ReleaseGuarantee
    return ReleaseGuarantee.from_dict(json.loads(text))


class _Checked:
    """Context manager: a connection whose file identity is re-checked."""

    def __init__(self, ledger, *, read_only: bool):
        self._context = ledger._connect(read_only=read_only)
        self._file = ledger._file

    def __enter__(self):
        conn = self._context.__enter__()
        try:
            self._file.check_identity(conn)
        except BaseException:
            self._context.__exit__(None, None, None)
            raise
        return conn

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)
