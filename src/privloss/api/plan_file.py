"""Plan files for ``privloss ledger create --interaction adaptive|setwise --plan FILE``.

A plan lists the releases that will be made, before any of them is made
(TOML or JSON, by the file's ending; JSON may be a bare array)::

    # plan.toml: one [[release]] table per planned release, in order
    [[release]]
    command = "topk"                 # topk | histogram
    algorithm = "unknown-gumbel"     # topk: the --algorithm; histogram: noise = "laplace"|"gaussian"
    epsilon = 0.1
    delta = 1e-7
    k = 10
    l0 = 5
    d_bar = 50

    [[release]]
    command = "histogram"
    noise = "laplace"
    epsilon = 0.05
    l0 = 5
    domain_size = 6                  # a known domain (--domain) of 6 labels

A release then matches an item when it was asked with exactly those flags
(``--linf`` defaults to 1, ``--delta`` to 0) and so spends exactly the item's
events. ``events = [{type = "PureDP", epsilon = 0.1}]`` plans a release made
through the Python API instead (its events, in the ledger's JSON form).
"""

from __future__ import annotations

import json
import tomllib

from privloss._files import read_regular_file
from privloss.api.request import histogram_algorithm, l0_sensitivity

__all__ = ["read_plan_file", "plan_item", "MAX_PLAN_BYTES", "PlanFileError"]


class PlanFileError(ValueError):
    """A plan file that cannot be used: one line naming the release and the field."""

#: largest plan file read
MAX_PLAN_BYTES = 1 << 20
_FIELDS = {"command", "algorithm", "noise", "epsilon", "delta", "k", "l0", "linf", "d_bar",
           "domain_size", "events"}
#: fields a CLI release's query key must equal (the rest only shape the events)
_MATCHED = ("command", "algorithm", "epsilon", "delta", "k", "l0", "linf", "d_bar")


def _read_text(path: str) -> str:
    data = read_regular_file(path, "--plan", MAX_PLAN_BYTES, f"{MAX_PLAN_BYTES} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise PlanFileError(f"--plan: {path!r} is not UTF-8 text") from error


def _parse(path: str, text: str) -> list:
    try:
        if path.lower().endswith(".json"):
            value = json.loads(text)
        else:
            value = tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise PlanFileError(f"--plan: {path!r} is not valid "
                           f"{'JSON' if path.lower().endswith('.json') else 'TOML'}: {error}") \
            from None
    if isinstance(value, dict):
        value = value.get("release")
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise PlanFileError(f"--plan: {path!r} must list releases as [[release]] tables "
                           f"(TOML) or a JSON array of objects")
    return value


def plan_item(fields: dict, interaction: str, number: int):
    """The :class:`~privloss.budget.PlanItem` of one planned release."""
    from privloss.serialize import events_from_text
    from privloss.budget import PlanItem

    where = f"--plan: release #{number}"
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise PlanFileError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: "
                           f"{', '.join(sorted(_FIELDS))}")
    if "events" in fields:
        if set(fields) != {"events"}:
            raise PlanFileError(f"{where}: 'events' plans a Python release and goes alone")
        try:
            return PlanItem(events_from_text(json.dumps(fields["events"])))
        except (ValueError, TypeError) as error:
            raise PlanFileError(f"{where}: bad events: {error}") from None
    command = fields.get("command")
    if command not in ("topk", "histogram"):
        raise PlanFileError(f"{where}: command must be 'topk' or 'histogram', got {command!r}")
    domain_size = fields.get("domain_size")
    algorithm = _algorithm(fields, command, domain_size, where)
    spec = _spec(algorithm)
    arguments = dict(epsilon=fields.get("epsilon"), delta=fields.get("delta", 0.0),
                     k=fields.get("k"),
                     l0_sensitivity=l0_sensitivity(fields.get("l0"), domain_size),
                     linf_sensitivity=fields.get("linf", 1), d_bar=fields.get("d_bar"),
                     known_domain=domain_size is not None, domain_size=domain_size,
                     interaction=interaction)
    if arguments["epsilon"] is None:
        raise PlanFileError(f"{where}: epsilon is required")
    try:
        events = spec.events(**arguments)
    except (ValueError, TypeError) as error:
        raise PlanFileError(f"{where}: {error}") from None
    match = {"command": command, "algorithm": algorithm}
    match.update({key: fields[key] for key in _MATCHED if key in fields and key not in match})
    match.setdefault("delta", 0.0)
    match.setdefault("linf", 1)
    return PlanItem(events, match)


def _algorithm(fields: dict, command: str, domain_size, where: str) -> str:
    if command == "histogram":
        if "algorithm" in fields:
            raise PlanFileError(f"{where}: a histogram takes noise = 'laplace' or 'gaussian', "
                               f"not an algorithm")
        noise = fields.get("noise", "laplace")
        if noise not in ("laplace", "gaussian"):
            raise PlanFileError(f"{where}: noise must be 'laplace' or 'gaussian', got {noise!r}")
        return histogram_algorithm(noise, domain_size is not None)
    if "noise" in fields:
        raise PlanFileError(f"{where}: noise is for histograms; a top-k takes an algorithm")
    return fields.get("algorithm") or ("known-gumbel" if domain_size is not None
                                       else "unknown-gumbel")


def _spec(algorithm: str):
    from privloss.releases.algorithms import ALGORITHMS, KNOWN_GAUSSIAN
    if algorithm == KNOWN_GAUSSIAN.name:
        return KNOWN_GAUSSIAN
    if algorithm not in ALGORITHMS:
        raise PlanFileError(f"--plan: unknown algorithm {algorithm!r}; known: "
                           f"{', '.join(ALGORITHMS)}")
    return ALGORITHMS[algorithm]


def read_plan_file(path: str, interaction: str) -> tuple:
    """Every planned release of a plan file, as PlanItems (PlanFileError: exit 2)."""
    entries = _parse(path, _read_text(path))
    if not entries:
        raise PlanFileError(f"--plan: {path!r} lists no releases")
    return tuple(plan_item(entry, interaction, number)
                 for number, entry in enumerate(entries, start=1))
