"""``GROUP BY ROLLUP(...)`` through the service's DP SQL endpoint
(``POST /v1/datasets/{name}/sql`` and ``.../sql/plan``).

Definition
----------
:mod:`privloss.service.sql_route` parses and checks the text (columns
granted, FROM the dataset's name) as for any query; when the parsed query is a
ROLLUP it hands over here:

1. :func:`checked_rollup`: the public parameters are checked and the events
   fixed (:func:`privloss.api.rollup.make_rollup`); ``bounds`` and
   ``budget_split`` do not apply (a rollup releases COUNT(*) and
   COUNT(DISTINCT unit) only) and are refused; every refusal is a 422 naming
   the field, before anything is charged or read; ranges: those of
   :class:`~privloss.service.sql_route.SqlParameters` and
   :func:`privloss.releases.rollup.plan_rollup` (epsilon in [0.001, 100],
   delta in [0, 0.5], at most 8 GROUP BY columns);
2. :func:`plan_rollup_sql`: the dry run (cost, the selection / measurement
   split, per-level shares and 95% half-widths with keys, the ledger's
   read-only verdict for this analyst);
3. :func:`run_rollup_sql`: the schema is bound (no rows computed), the events
   are charged once to the dataset's ledger with the analyst's cap (409 when
   refused), then the engine computes the finest groups and the release
   selects, noises, projects and rounds.

Privacy guarantee
-----------------
That of :func:`privloss.rollup` (:mod:`privloss.releases.rollup`), charged
as one release unit before the data is read.

Runtime
-------
As a ``/sql`` release: one calibration, one ledger transaction, one engine
query, then O(nodes log nodes).
"""

from __future__ import annotations

from privloss.service.app import ServiceError
from privloss.service.routes import call_ledger

__all__ = ["checked_rollup", "plan_rollup_sql", "run_rollup_sql", "is_rollup"]

#: SqlParameters fields that a ROLLUP query does not use
_NOT_FOR_ROLLUP = ("bounds", "budget_split")
#: fields an error message may name first (the numeric ones are echoed back)
_NUMERIC = ("epsilon", "delta", "max_groups", "max_rows_per_group", "noise")
_FIELDS = _NUMERIC + ("keys", "query")


def is_rollup(query) -> bool:
    """Whether a checked query is a rollup (:class:`~privloss.api.rollup.RollupQuery`)."""
    from privloss.api.rollup import RollupQuery
    return isinstance(query, RollupQuery)


def _refuse(message: str, field: str | None, value=None):
    raise ServiceError(422, message, field=field, value=value, outcome="bad-parameters")


def checked_rollup(dataset, body: dict, parsed):
    """The :class:`~privloss.api.rollup.RollupQuery` of a parsed ROLLUP, or a
    422 naming the field (nothing read or charged)."""
    from privloss.api.rollup import make_rollup

    for field in _NOT_FOR_ROLLUP:
        if body.get(field):
            _refuse(f"{field} does not apply to GROUP BY ROLLUP (it releases COUNT(*) and "
                    f"COUNT(DISTINCT {dataset.user_column}) only)", field)
    try:
        return make_rollup(privacy_unit=dataset.user_column, by=list(parsed.by),
                           aggregations=list(parsed.aggregations), epsilon=body["epsilon"],
                           delta=body.get("delta", 0.0), keys=body.get("keys"),
                           max_groups=body.get("max_groups", 1),
                           max_rows_per_group=body.get("max_rows_per_group", 1),
                           noise=body.get("noise", "laplace"), where=parsed.where)
    except ArithmeticError:
        _refuse("the parameters are outside the range the calibration can compute (see the "
                "documented ranges)", None)
    except (ValueError, TypeError) as error:
        message = str(error)
        field = message.split(" ", 1)[0] if message else None
        if message.startswith(("a rollup releases", "by must")):
            field, message = "query", f"query: {message}"
        elif field not in _FIELDS:
            field = None
        _refuse(message, field, body.get(field) if field in _NUMERIC else None)


def _key(query, analyst, body: dict, data) -> dict:
    key = {**query.key(data, None), "command": "sql", "analyst": analyst.name,
           "consistent": bool(body.get("consistent", False))}
    if body.get("label") is not None:
        key["label"] = body["label"]
    return key


def plan_rollup_sql(ledger, dataset, analyst, query, body: dict) -> dict:
    """The dry run of a checked rollup (nothing read or charged)."""
    import secrets

    from privloss.service.queries import ensure_dataset

    name = call_ledger(ensure_dataset, ledger, dataset)
    key = _key(query, analyst, body, {"dry-run": secrets.token_hex(8)})
    verdict = call_ledger(ledger.would_admit, name, key, query.events,
                          analyst=analyst.name, analyst_budget=analyst.cap(dataset))
    return {"dry_run": True, "command": "sql", "rollup": True, **query.describe(),
            "by": list(query.by), "aggregations": [a.name for a in query.aggregations],
            "fits": bool(verdict["admitted"]),
            "verdict": {"fits": bool(verdict["admitted"]),
                        "spent_epsilon_after": verdict["spent_epsilon"]
                        if verdict["admitted"] else None,
                        "bound": verdict["bound"], "reason": verdict["reason"] or None},
            "ledger_dataset": name}


def run_rollup_sql(ledger, dataset, analyst, query, body: dict, snapshot, check_schema) -> dict:
    """Bind, charge once, then compute; the response body.  ``check_schema(plan)``:
    the endpoint's schema check (a 422 without the engine's text)."""
    from privloss.api.rollup import compute_rollup, parameters_of
    from privloss.query.bounding import draw_seed
    from privloss.serialize import event_to_json
    from privloss.service.queries import (analyst_view, data_input, ensure_dataset,
                                          fingerprint, receipt_view)

    name = call_ledger(ensure_dataset, ledger, dataset)
    plan = query.query_plan(data_input(dataset, snapshot), draw_seed())
    check_schema(plan)
    consistent = bool(body.get("consistent", False))
    events = query.events

    def compute() -> dict:
        """Everything that reads the data; runs only after the charge."""
        return compute_rollup(query, plan, dataset.engine, consistent=consistent,
                              what="service rollup release")

    key = _key(query, analyst, body, fingerprint(dataset, snapshot))
    receipt = call_ledger(_charged, ledger, name, key, compute, query, analyst,
                          analyst.cap(dataset))
    return {**dict(receipt.result), "by": list(query.by),
            "aggregations": [a.name for a in query.aggregations],
            "parameters": parameters_of(query, consistent),
            "events": [repr(event) for event in events],
            "event_objects": [event_to_json(event) for event in events],
            "receipt": receipt_view(receipt, dataset, name),
            "budget": call_ledger(analyst_view, ledger, name, analyst.name,
                                  analyst.cap(dataset))}


def _charged(ledger, name, key, compute, query, analyst, cap):
    """The ledger's charge; a budget refusal says first what epsilon still fits
    (the same rollup at other epsilons: public parameters only)."""
    import dataclasses

    from privloss.api.rollup import make_rollup
    from privloss.budget import LedgerBudgetError
    from privloss.service.queries import refusal_saying_what_fits

    def events_at(epsilon: float) -> tuple:
        fields = {f.name: getattr(query, f.name) for f in dataclasses.fields(query)
                  if f.name not in ("epsilon", "budget")}
        return make_rollup(epsilon=epsilon, **fields).events

    try:
        return ledger.release_with_receipt(name, key, compute, query.events,
                                           analyst=analyst.name, analyst_budget=cap)
    except LedgerBudgetError as error:
        raise refusal_saying_what_fits(ledger, name, analyst, cap, query.events, events_at,
                                       error, epsilon_range=(1e-3, 100.0)) from None
