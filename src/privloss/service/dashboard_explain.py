"""The dashboard's explanations, in words, from public numbers only: why a
preview's charge differs from the epsilon asked for, why a release came back
empty, and how accuracy would change with epsilon.

Definition
----------
* :func:`release_events`: the events of a query (the same objects the service
  charges: :func:`privloss.service.queries.build_request` or
  :func:`privloss.service.sql_route.checked_query`).
* :func:`cost_explanation`: the release's own guarantee (its steps composed
  tightly inside the release) against what the ledger adds: under
  ``fully-adaptive`` interaction the ledger composes releases with filter rules
  fixed at the budget's creation, which take each release as its conditioned
  pure epsilon (the sum over its steps, each step's delta set aside) and its
  zCDP / Renyi curves (:func:`privloss.accounting.fully_adaptive.release_guarantee`)
  and report the smallest rule's total.  E.g. top-k with k = 10, epsilon 0.1,
  delta 1e-7 is 0.1 on its own (Renyi, exact), but 10 selection steps of
  0.0071 plus 10 noisy counts of 0.0071 sum to 0.142, and for a first
  release the sum (rule ``basic``) is the smallest rule (docs/accounting.md).
* :func:`accuracy_plan`: the query's
  :func:`privloss.api.accuracy_plan.plan_accuracy` at its epsilon (the
  preview's accuracy-against-epsilon picture is its ``accuracy_figure``).
* :func:`accuracy_points`: the planned 95% half-widths (per measurement) and
  threshold of the same query at a few larger epsilons (plans only: nothing
  read or charged), for an empty answer's explanation.
* :func:`empty_explanation`: an empty answer's threshold, against what the
  same query would have needed at larger epsilons.

Privacy guarantee
-----------------
None needed: every number is a public parameter, a plan of public parameters
or the caller's own budget; an empty answer is explained from its parameters,
never from data.

Runtime
-------
A calibration per (query, epsilon), cached per process; the rest O(events).
"""

from __future__ import annotations

import collections
import json
import math
import threading

__all__ = ["release_events", "cost_explanation", "accuracy_plan", "accuracy_points",
           "empty_explanation", "EPSILON_FACTORS"]

#: the epsilons an accuracy curve plans at, as multiples of the asked epsilon
EPSILON_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)

_RULES = {
    "basic": "basic composition: the sum of the releases' pure epsilons",
    "zcdp": "the zCDP filter: the releases' zCDP rho summed, then converted",
    "renyi": "the Renyi filter: Renyi divergences summed at fixed orders, then converted",
    "advanced": "advanced composition: grows with the root of the sum of squared epsilons",
}


#: plans already computed, per (dataset's public description, command, parameters)
_CACHE: collections.OrderedDict = collections.OrderedDict()
_CACHE_LIMIT = 1024
_LOCK = threading.Lock()


def _freeze(dataset, command: str, parameters: dict) -> tuple:
    return (dataset.name, dataset.user_column, tuple(dataset.columns), dataset.interaction,
            command, json.dumps(parameters, sort_keys=True))


def _cached(kind: str, compute, key: tuple, dataset):
    """``compute(key, dataset)``, computed once per process (least recently used
    dropped first); the calibration runs unlocked."""
    with _LOCK:
        if (kind, key) in _CACHE:
            _CACHE.move_to_end((kind, key))
            return _CACHE[(kind, key)]
    value = compute(key, dataset)
    with _LOCK:
        _CACHE[(kind, key)] = value
        while len(_CACHE) > _CACHE_LIMIT:
            _CACHE.popitem(last=False)
    return value


def _events(key: tuple, dataset) -> tuple:
    from privloss.service.queries import build_request
    from privloss.service.sql_route import checked_query

    from privloss.service.rollup_route import is_rollup

    command, parameters = key[4], json.loads(key[5])
    if command == "running":
        from privloss.service.running_route import checked_running
        return tuple(checked_running(dataset, parameters).events)
    if command == "sql":
        query = checked_query(dataset, parameters)
        return tuple(query.events if is_rollup(query) else query.plan.events)
    return tuple(build_request(command, parameters, dataset, dataset.interaction).events())


def release_events(dataset, command: str, parameters: dict) -> tuple:
    """The events the service charges for this query (a ``ServiceError`` or
    ``ValueError`` for bad parameters, before anything is charged)."""
    return _cached("events", _events, _freeze(dataset, command, parameters), dataset)


def _number(value: float) -> str:
    return "infinite" if not math.isfinite(value) else f"{value:.4g}"


def cost_explanation(events, guarantee: dict, verdict: dict, spent_before: float,
                     interaction: str) -> dict:
    """Why the ledger charges what it charges (see the module docstring):
    ``{"alone", "steps", "pure_epsilon", "delta", "rule", "before", "after",
    "lines"}``; ``lines`` are the sentences shown."""
    from privloss.accounting.fully_adaptive import release_guarantee
    from privloss.api.planning import describe_event

    whole = release_guarantee(tuple(events))
    steps = []
    for event in events:
        part = release_guarantee((event,))
        steps.append({"step": describe_event(event), "epsilon": part.epsilon,
                      "rho": part.rho, "delta": part.delta})
    after = verdict.get("spent_epsilon_after")
    rule = verdict.get("bound")
    lines = [f"On its own this release is ({_number(guarantee['epsilon'])}, "
             f"{guarantee['delta']:.3g})-DP: its {len(steps)} step(s) composed tightly "
             f"({guarantee.get('bound', 'its calibration')}), which is valid because the query "
             f"fixes every step before it reads the data."]
    if interaction == "fully-adaptive":
        lines.append("The budget must also hold for releases chosen after seeing earlier "
                     "answers (interaction: fully adaptive). That is only valid with filter "
                     "rules fixed when the budget was created, and they take each release "
                     "as separate numbers: its pure epsilon, the sum over its steps with "
                     "each step's delta set aside (below), and its zCDP / Renyi curves.")
    else:
        lines.append(f"The ledger composes this release with the others on the dataset "
                     f"under interaction {interaction!r}; it needs this release's steps "
                     f"(below).")
    if math.isfinite(whole.epsilon):
        sum_text = " + ".join(_number(step["epsilon"]) for step in steps
                              if step["epsilon"] != 0 or step["delta"] == 0)
        lines.append(f"Pure epsilon of this release: {sum_text} = {_number(whole.epsilon)}, "
                     f"with delta {whole.delta:.3g} set aside (zCDP rho "
                     f"{_number(whole.rho)}).")
    else:
        lines.append(f"This release has no pure epsilon (Gaussian noise), so only the zCDP "
                     f"and Renyi rules can take it: its zCDP rho is {_number(whole.rho)}, "
                     f"with delta {whole.delta:.3g} set aside.")
    if after is not None:
        lines.append(f"The rule that certifies the least now is {rule!r}"
                     f"{' (' + _RULES[rule] + ')' if rule in _RULES else ''}: the dataset's "
                     f"epsilon goes from {_number(spent_before)} to {_number(after)} "
                     f"(+{_number(after - spent_before)}), against {_number(guarantee['epsilon'])} "
                     f"for this release alone.")
        if math.isfinite(whole.epsilon) and after - spent_before > whole.epsilon * (1 + 1e-9):
            lines.append("The increase is more than this release's pure epsilon because the "
                         "ledger reports the smallest total over all the dataset's releases, "
                         "not a sum of per-release charges: the rule that was smallest before "
                         "grows faster with this release than another rule does.")
        if interaction == "fully-adaptive" and rule == "basic":
            lines.append("For few releases the plain sum is the smallest rule (the others pay "
                         "a conversion); over many small releases the zCDP rule grows more "
                         "slowly, so later releases can add less than their pure epsilon.")
    else:
        lines.append(f"It does not fit: {verdict.get('reason') or 'refused by the ledger'}.")
    return {"alone": guarantee, "steps": steps, "pure_epsilon": whole.epsilon,
            "rho": whole.rho, "delta": whole.delta, "rule": rule, "before": spent_before,
            "after": after,
            "lines": lines}


def _point(key: tuple, dataset) -> dict:
    """``{"epsilon", "half_widths": {measurement: width}, "threshold"}`` of one
    plan (public numbers only)."""
    command, parameters = key[4], json.loads(key[5])
    if command == "running":
        from privloss.service.running_route import checked_running

        summary = checked_running(dataset, parameters).plan_summary()
        return {"epsilon": parameters["epsilon"], "threshold": None,
                "half_widths": {"a running total (largest)":
                                float(summary["ci95_half_width_max"])}}
    if command == "sql":
        from privloss.api.aggregate import describe_plan
        from privloss.service.rollup_route import is_rollup
        from privloss.service.sql_route import checked_query

        query = checked_query(dataset, parameters)
        if is_rollup(query):
            return _rollup_point(query)
        described = describe_plan(query)
        widths = {f"{m['aggregation']} ({m['measurement']})": float(m["ci95_half_width"])
                  for m in described["measurements"]
                  if m.get("ci95_half_width") is not None and m["aggregation"] != "selection"}
        threshold = described["threshold"]
        return {"epsilon": parameters["epsilon"], "half_widths": widths,
                "threshold": None if threshold is None else float(threshold)}
    from privloss.api.planning import plan_request
    from privloss.service.queries import build_request

    view = plan_request(build_request(command, parameters, dataset, dataset.interaction))
    threshold = view.threshold
    width = view.noise.get("ci95_half_width")
    return {"epsilon": parameters["epsilon"],
            "half_widths": {} if width is None else {"a count": float(width)},
            "threshold": None if threshold is None else float(threshold["offset"])}


def _rollup_point(query) -> dict:
    """A ROLLUP's point: each measure's largest 95% half-width over the levels
    (known with public keys only: the level split is chosen on the keys' tree)
    and the selection's threshold (without keys)."""
    described = query.describe()
    levels = described["level_split"] if isinstance(described["level_split"], dict) else {}
    selection = described.get("selection") or {}
    threshold = selection.get("threshold")
    return {"epsilon": query.epsilon,
            "half_widths": {f"{name} (largest over levels)": max(split["ci95_half_width_by_level"])
                            for name, split in levels.items()},
            "threshold": None if threshold is None else float(threshold)}


def _accuracy_plan(key: tuple, dataset):
    command, parameters = key[4], json.loads(key[5])
    from privloss.api.accuracy_plan import plan_accuracy

    epsilon = parameters["epsilon"]
    if command == "running":
        from privloss.service.running_route import checked_running, running_parameters

        checked_running(dataset, parameters)          # the route's checks, 403 / 422
        return plan_accuracy("running", epsilon=epsilon,
                             **running_parameters(dataset, parameters))
    if command == "sql":
        from privloss.service.rollup_route import is_rollup
        from privloss.service.sql_route import checked_query

        query = checked_query(dataset, parameters)
        if is_rollup(query):          # no accuracy plan of a rollup: its levels are shown
            return None
        return plan_accuracy(
            "aggregate", epsilon=epsilon, privacy_unit=query.privacy_unit, by=list(query.by),
            aggregations=list(query.aggregations), delta=query.delta, keys=query.keys,
            max_groups=query.max_groups, max_rows_per_group=query.max_rows_per_group,
            noise=query.noise, budget_split=query.budget_split, where=query.where,
            joins=query.joins, join_truncation=query.join_truncation)
    from privloss.service.queries import build_request

    return plan_accuracy(command, epsilon=epsilon,
                         request=build_request(command, parameters, dataset,
                                               dataset.interaction))


def accuracy_plan(dataset, command: str, parameters: dict):
    """The :class:`~privloss.api.accuracy_plan.AccuracyPlan` of a form's query
    at its epsilon (the curve of its largest 95% half-width against epsilon;
    :func:`~privloss.api.accuracy_plan.accuracy_figure` draws it), None for a
    ROLLUP (its per-level half-widths are in the preview); a ``ServiceError``
    or ``ValueError`` for bad parameters.  Plans only: nothing read or charged."""
    return _cached("accuracy-plan", _accuracy_plan, _freeze(dataset, command, parameters),
                   dataset)


def accuracy_points(dataset, command: str, parameters: dict,
                    factors=EPSILON_FACTORS) -> list[dict]:
    """The planned 95% half-width and threshold at ``epsilon * factor`` (within
    the API's epsilon range), smallest epsilon first; a factor whose plan the
    calibration refuses is left out."""
    from privloss.service.app import ServiceError
    from privloss.service.routes import LIMITS

    low, high = LIMITS["epsilon"]
    points = []
    for factor in factors:
        epsilon = parameters["epsilon"] * factor
        if not low <= epsilon <= high:
            continue
        try:
            points.append(_cached("point", _point, _freeze(dataset, command,
                                                           {**parameters, "epsilon": epsilon}),
                                  dataset))
        except (ServiceError, ValueError, ArithmeticError):
            continue
    return points


def empty_explanation(command: str, epsilon: float, result: dict,
                      alternatives: list[dict]) -> list[str]:
    """Sentences explaining an empty answer from its public parameters
    (``epsilon``: the one asked for) and the thresholds the same query would
    have at other epsilons."""
    parameters = result.get("parameters") or {}
    if command == "sql":
        threshold = parameters.get("threshold")
        lines = [f"No group was released. Without public keys a group is released only when "
                 f"its noisy count of distinct {parameters.get('privacy_unit', 'units')} "
                 f"passes the threshold {threshold}; no group's did. This empty answer is "
                 f"itself private: it does not say how small any group was."]
        remedy = "Public keys (the groups you know exist) need no threshold."
    else:
        threshold = parameters.get("threshold_offset")
        d_bar = parameters.get("d_bar")
        next_count = (f"the bounded count just below the top d_bar = {d_bar}" if d_bar else
                      "the bounded count just below the released ones")
        lines = [f"Nothing was released: an item is released (with probability about 1/2) "
                 f"only when its bounded count reaches h_next + {_number(float(threshold))} "
                 f"distinct users, where h_next is {next_count} (0 when there are fewer "
                 f"items), after each user is bounded to at most "
                 f"{parameters.get('l0_sensitivity')} item(s). No item's noisy count was that far "
                 f"ahead. This empty answer is itself private: it does not say how far "
                 f"behind any item was."] if threshold is not None else [
                 "Nothing was released (no item passed the algorithm's selection)."]
        remedy = ("A public domain (the items you know exist, in the histogram form) needs "
                  "no threshold; a smaller l0 lowers the noise when users touch few items.")
    wider = [point for point in alternatives if point.get("threshold") is not None
             and point["epsilon"] > epsilon * 1.0001]
    if wider and threshold is not None:
        needed = ", ".join(f"{_number(point['threshold'])} at epsilon "
                           f"{_number(point['epsilon'])}" for point in wider)
        lines.append(f"What a larger budget would have needed: a threshold of {needed} "
                     f"(against {_number(float(threshold))} at this release's epsilon).")
    lines.append(remedy)
    return lines
