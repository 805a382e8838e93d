"""The dashboard's four query forms (top-k, histogram, DP SQL, running totals)
read into the JSON API's parameters.

Definition
----------
:func:`form_parameters` turns a posted form (text fields) into
``(command, parameters)`` for the same service functions the JSON routes call:
``topk`` and ``histogram`` -> :func:`privloss.service.queries.plan_release` /
``run_release`` with :class:`privloss.service.routes.QueryParameters`'
checks; ``sql`` -> :func:`privloss.service.sql_route.plan_sql` / ``run_sql``
with :class:`privloss.service.sql_route.SqlParameters`' checks.  Each form
sends only its own fields: the histogram form has no ``k`` (a histogram
releases every item over its threshold; a ``k`` posted anyway is dropped), the
SQL form passes the query text unchanged (the dashboard never writes SQL;
``GROUP BY ROLLUP`` and joins with the configuration's public tables go on
as in the ``/sql`` route), its ``keys`` field a comma-separated list where
``DE|web`` is one group of several columns; ``running`` ->
:func:`privloss.service.running_route.plan_running` / ``run_running`` with
:class:`~privloss.service.running_route.RunningParameters`' checks
(``sum_column``, ``low`` and ``high`` sent only with the statistic ``sum``).

Every form asks for ``epsilon`` or, instead, ``target_half_width`` (the 95%
half-width to reach) or, for a thresholded release (top-k, histogram, SQL;
not running totals), ``min_release_users`` (:data:`GOALS`): the service then
plans the epsilon (:mod:`privloss.service.accuracy_goals`).  The radio
``plan_by`` says which of the three the form means (the other two fields are
then ignored, as the browser still sends them); a form without ``plan_by``
must give exactly one of them.  Either way a missing or doubled one is a
``ValueError`` naming the field, before anything is planned or charged.

Privacy guarantee
-----------------
None needed: public parameters only, checked before anything is charged or
read (a ``ValueError`` naming the field).

Runtime
-------
O(size of the form).
"""

from __future__ import annotations

__all__ = ["COMMANDS", "FIELDS", "GOALS", "form_parameters"]

#: the form kinds, in the order the page shows them
COMMANDS = ("topk", "histogram", "sql", "running")

#: the fields each form sends (everything else posted is ignored)
FIELDS = {
    "topk": ("column", "epsilon", "target_half_width", "min_release_users", "delta", "k", "l0", "linf", "d_bar", "domain", "algorithm",
             "label"),
    "histogram": ("column", "epsilon", "target_half_width", "min_release_users", "delta", "l0", "linf", "domain", "noise", "label"),
    "sql": ("query", "epsilon", "target_half_width", "min_release_users", "delta", "bounds", "max_groups", "max_rows_per_group", "keys",
            "noise", "consistent", "label"),
    "running": ("time_column", "period", "start", "end", "statistic", "sum_column", "low", "high",
                "max_periods_per_unit", "max_rows_per_period", "epsilon", "target_half_width", "delta",
                "noise", "label"),
}

#: the running form's fields that only a sum uses (dropped for the other statistics)
_SUM_ONLY = ("sum_column", "low", "high")

#: what a form may plan by instead of an epsilon, per kind (running totals
#: have no threshold, so no ``min_release_users``)
GOALS = {command: tuple(key for key in ("epsilon", "target_half_width", "min_release_users")
                        if key in FIELDS[command]) for command in COMMANDS}

_NUMBERS = {"epsilon": float, "target_half_width": float, "min_release_users": int, "delta": float, "k": int, "l0": int, "linf": int, "d_bar": int,
            "max_groups": int, "max_rows_per_group": int, "low": int, "high": int,
            "max_periods_per_unit": int, "max_rows_per_period": int}


def _text(form, key: str) -> str:
    value = form.get(key)
    return value.strip() if isinstance(value, str) else ""


def _number(form, key: str):
    text = _text(form, key)
    if not text:
        return None
    try:
        return _NUMBERS[key](text)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {text[:64]!r}") from None


def _list(text: str) -> list:
    return [item.strip() for item in text.split(",") if item.strip()]


def _bounds(text: str) -> dict:
    """``"x=0:100, y=-1:1"`` -> ``{"x": [0.0, 100.0], "y": [-1.0, 1.0]}``."""
    bounds = {}
    for item in _list(text):
        column, equals, span = item.partition("=")
        low, colon, high = span.partition(":")
        try:
            if not (equals and colon):
                raise ValueError
            bounds[column.strip()] = [float(low), float(high)]
        except ValueError:
            raise ValueError(f"bounds must be column=low:high separated by commas, got "
                             f"{item[:64]!r}") from None
    return bounds


def form_parameters(form) -> tuple[str, dict]:
    """(command, checked parameters) of a posted form; ``ValueError`` naming
    the field (nothing is charged or read before this returns)."""
    command = _text(form, "command") or "topk"
    if command not in COMMANDS:
        raise ValueError(f"command must be one of {', '.join(COMMANDS)}, got {command[:64]!r}")
    plan_by = _text(form, "plan_by")
    if plan_by and plan_by not in GOALS[command]:
        raise ValueError(f"plan_by must be one of {', '.join(GOALS[command])} for {command}, "
                         f"got {plan_by[:64]!r}")
    parameters: dict = {}
    for key in FIELDS[command]:
        if key in _SUM_ONLY and _text(form, "statistic") != "sum":
            continue
        if plan_by and key in GOALS[command] and key != plan_by:
            continue            # the radio chose another of the three
        if key in _NUMBERS:
            value = _number(form, key)
        elif key == "domain":
            value = _list(_text(form, key)) or None
        elif key == "keys":         # "DE|web": one group of several columns (a ROLLUP's)
            value = [item.split("|") if "|" in item else item
                     for item in _list(_text(form, key))] or None
        elif key == "bounds":
            value = _bounds(_text(form, key)) or None
        elif key == "consistent":
            value = True if _text(form, key) in ("on", "true", "1") else None
        elif key == "query":
            value = form.get(key) if isinstance(form.get(key), str) else ""
        else:
            value = _text(form, key) or None
        if value is not None:
            parameters[key] = value
    if plan_by and plan_by not in parameters:
        raise ValueError(f"{plan_by}: {_GOAL_WORDS[plan_by]} is required (chosen under "
                         f"'plan by'; or choose another)")
    return command, _checked(command, parameters)


_GOAL_WORDS = {"epsilon": "an epsilon", "target_half_width": "a target 95% half-width",
               "min_release_users": "a number of users"}


def _checked(command: str, parameters: dict) -> dict:
    """The API's own checks and ranges (the JSON routes' pydantic models)."""
    from pydantic import ValidationError

    from privloss.service.routes import QueryParameters
    from privloss.service.sql_route import SqlParameters

    from privloss.service.running_route import RunningParameters

    model = {"sql": SqlParameters, "running": RunningParameters}.get(command, QueryParameters)
    from privloss.api.accuracy_target import goal_of

    # exactly one of epsilon, target_half_width, min_release_users (naming the field)
    goal_of(*(parameters.get(key) for key in ("epsilon", "target_half_width",
                                              "min_release_users")))
    try:
        return model.model_validate(parameters).model_dump(exclude_none=True)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "form"
        raise ValueError(f"{field}: {first.get('msg', 'invalid')}") from None
