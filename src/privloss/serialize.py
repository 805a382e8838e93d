"""Exact JSON forms of privacy events, query keys and release results (used by
the ledger, :mod:`privloss.budget`).

Definition: an event becomes ``{"type": <class name>, <field>: <value>, ...}``
with every dataclass field written out; a :class:`~privloss.events.Composed`
becomes ``{"type": "Composed", "events": [...]}`` (recursively). Floats are
written by ``float.__repr__`` (what :mod:`json` uses), the shortest text that
reads back as the same double, so ``event_from_json(event_to_json(e)) == e``
bit for bit; integer fields (``count``, discrete sensitivities) stay integers.
Only the event classes of :mod:`privloss.events` are known; any other type,
subclasses included (they may mean something else), is refused with a
``TypeError`` naming it, before anything is stored.

Privacy guarantee: none by itself; the ledger relies on the round trip being
exact, so the budget re-checked from stored events is the one that was charged.
Citation: none. Runtime: linear in the size of the event tree / result.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers

import numpy as np

from privloss import events as _events

#: every event class the ledger can store, by name (exact types only)
EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (_events.NoOp, _events.NonPrivate, _events.PureDP, _events.BoundedRange,
                _events.ApproxDP, _events.ZCDP, _events.ApproxZCDP, _events.ConcentratedDP,
                _events.Laplace, _events.Gaussian, _events.RandomizedResponse,
                _events.DiscreteLaplace, _events.DiscreteGaussian, _events.Composed,
                _events.PoissonSampled, _events.SampledWithoutReplacement, _events.Group,
                _events.Parallel)
}
#: events whose ``events`` field is a sequence of events
_SEQUENCE_EVENTS = (_events.Composed, _events.Parallel)


def event_to_json(event) -> dict:
    """The JSON object of one event (tree); ``TypeError`` for unknown types."""
    kind = type(event)
    if EVENT_TYPES.get(kind.__name__) is not kind:
        known = ", ".join(EVENT_TYPES)
        raise TypeError(f"cannot store event {event!r} of type {kind.__module__}.{kind.__qualname__}: "
                        f"the ledger stores only {known}")
    if kind in _SEQUENCE_EVENTS:
        return {"type": kind.__name__, "events": [event_to_json(child) for child in event.events]}
    out = {"type": kind.__name__}
    for item in dataclasses.fields(event):
        value = getattr(event, item.name)
        if isinstance(value, _events.Event):       # the inner event of Group / sampled events
            out[item.name] = event_to_json(value)
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"cannot store event {event!r}: field {item.name} is {value!r}")
        out[item.name] = value
    return out


def event_from_json(value) -> _events.Event:
    """Inverse of :func:`event_to_json`; validates through the event constructors."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise ValueError(f"a stored event must be an object with a string 'type', got {value!r}")
    name = value["type"]
    cls = EVENT_TYPES.get(name)
    if cls is None:
        raise ValueError(f"unknown stored event type {name!r}; known: {', '.join(EVENT_TYPES)}")
    fields = {key: item for key, item in value.items() if key != "type"}
    if cls in _SEQUENCE_EVENTS:
        children = fields.get("events")
        if set(fields) != {"events"} or not isinstance(children, list):
            raise ValueError(f"a stored {name} event must have exactly an 'events' list, got {value!r}")
        return cls(tuple(event_from_json(child) for child in children))
    expected = {item.name for item in dataclasses.fields(cls)}
    if set(fields) != expected:
        raise ValueError(f"stored {name} event must have the fields {sorted(expected)}, "
                         f"got {sorted(fields)}")
    if "event" in fields:                           # Group, PoissonSampled, SampledWithoutReplacement
        fields["event"] = event_from_json(fields["event"])
    return cls(**fields)


def events_to_text(events) -> str:
    """Compact JSON array of a sequence of events."""
    return json.dumps([event_to_json(event) for event in events], separators=(",", ":"),
                      allow_nan=False)


def events_from_text(text: str) -> tuple:
    """Inverse of :func:`events_to_text`."""
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError(f"stored events must be a JSON array, got {text[:80]!r}")
    return tuple(event_from_json(item) for item in value)


def canonical_query_key(key) -> str:
    """The canonical text of a query key: JSON with sorted object keys, no spaces.

    ``key`` is any JSON-like value (str, int, float, bool, None, list/tuple,
    dict with str keys; numpy scalars and arrays are converted). Two keys are the
    same query exactly when their canonical texts are equal; ``1`` and ``1.0``
    differ (a stricter key only costs budget, never returns a wrong answer).
    NaN and infinities are refused (NaN is not equal to itself).
    """
    try:
        return json.dumps(to_json_value(key), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False, allow_nan=False)
    except ValueError as error:
        raise ValueError(f"query_key must not contain NaN or infinity: {error}") from None


def to_json_value(value):
    """``value`` as plain JSON types: named tuples -> objects (their fields),
    tuples -> arrays, numpy arrays and scalars -> lists and Python numbers,
    privloss events -> their JSON objects. ``TypeError`` names anything else."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, _events.Event):
        return event_to_json(value)
    if isinstance(value, np.ndarray):
        return to_json_value(value.tolist())
    if isinstance(value, np.generic):
        return to_json_value(value.item())
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {key!r}")
            out[key] = to_json_value(item)
        return out
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return to_json_value(dict(value._asdict()))
    if isinstance(value, (list, tuple)):
        return [to_json_value(item) for item in value]
    raise TypeError(f"cannot store a value of type {type(value).__name__} as JSON: {value!r}")


def result_to_text(result) -> str:
    """The stored JSON text of a release result (see :func:`to_json_value`).

    Non-finite floats are kept (as JSON's common ``NaN`` / ``Infinity``
    extension, which :mod:`json` reads back), because an interval may be unbounded.
    """
    return json.dumps(to_json_value(result), separators=(",", ":"), ensure_ascii=False)


def result_from_text(text: str):
    return json.loads(text)
