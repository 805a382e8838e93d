"""Releases at a planned epsilon: ``privloss.topk`` / ``histogram`` /
``aggregate`` / ``sql`` / ``rollup`` / ``running`` with ``target_half_width=W``
or ``min_release_users=N`` instead of ``epsilon``.

>>> release = privloss.histogram("views.parquet", privacy_unit="user_id",   # doctest: +SKIP
...                              item="country", l0=1, domain=["DE", "FR"],
...                              target_half_width=25)
>>> print(release.accuracy_plan)                                          # doctest: +SKIP

Definition
----------
:func:`goal_of` checks that exactly one of ``epsilon``, ``target_half_width``
and ``min_release_users`` is given (ValueError naming the field otherwise).
:func:`call` plans the epsilon from the release's public parameters
(:func:`privloss.api.accuracy_plan.plan_accuracy`; for a group-by with a
target also the ``budget_split``, unless one is given), then makes the
release at it through the ordinary call, and returns the release with its
plan as ``accuracy_plan`` (an
:class:`~privloss.api.accuracy_plan.AccuracyPlan`: ``epsilon``,
``half_widths``, the plan in words).  For top-k / histograms the plan is made
under the ledger dataset's interaction model (the one the release is
calibrated for).

Privacy guarantee
-----------------
The planned epsilon is a deterministic function of public parameters only
(no data, no ledger state), so the release is the ordinary release at that
epsilon: its guarantee, its charge and its repeated-query key (an identical
later call plans the same epsilon and gets the stored answer, free).

Citation
--------
Issue 22 item 1; OpenDP's accuracy-to-scale helpers.

Runtime
-------
The plan (about 30 calibrations), then the release.
"""

from __future__ import annotations

import dataclasses
import inspect

__all__ = ["GOALS", "goal_of", "call", "public_parameters"]

#: the goals that replace ``epsilon``
GOALS = ("target_half_width", "min_release_users")

#: per release kind: the arguments that are no public parameter of the plan
_NOT_PLANNED = {"data", "ledger", "dataset", "seed", "engine", "progress", "label",
                "consistent", "user", "item", "where", "privacy_unit", "epsilon", "call",
                *GOALS}


def goal_of(epsilon, target_half_width=None, min_release_users=None) -> dict | None:
    """``{goal: value}`` for a planned release, None when ``epsilon`` is given;
    ValueError naming the field unless exactly one of the three is given."""
    given = [name for name, value in (("epsilon", epsilon),
                                      ("target_half_width", target_half_width),
                                      ("min_release_users", min_release_users))
             if value is not None]
    if not given:
        raise ValueError("epsilon is required (or target_half_width / min_release_users "
                         "instead: the epsilon is then planned)")
    if len(given) > 1:
        raise ValueError(f"{given[-1]} and {given[0]}: give exactly one of epsilon, "
                         f"target_half_width and min_release_users (a target plans the "
                         f"epsilon)")
    if given[0] == "epsilon":
        return None
    return {given[0]: target_half_width if given[0] == "target_half_width"
            else min_release_users}


def public_parameters(command: str, arguments: dict) -> dict:
    """The plan's parameters among a release call's ``arguments``."""
    if command in ("topk", "histogram"):
        names = ("delta", "k", "l0", "linf", "domain", "d_bar", "interaction",
                 "algorithm" if command == "topk" else "noise")
        return {name: arguments.get(name) for name in names if name in arguments}
    out = {name: value for name, value in arguments.items() if name not in _NOT_PLANNED}
    out["privacy_unit"] = arguments["privacy_unit"]
    return out


def _release_request(command: str, arguments: dict):
    """The checked top-k / histogram request at epsilon 1, under the ledger
    dataset's interaction model when a ledger is given."""
    from privloss.api.protocol import ledger_interaction, resolve_ledger
    from privloss.api.request import make_request

    if isinstance(arguments.get("l0"), str):
        raise ValueError("l0 'auto' cannot be combined with target_half_width or "
                         "min_release_users (the estimate spends part of an epsilon given "
                         "in advance; give l0)")
    request = make_request(command, epsilon=1.0, **public_parameters(command, arguments))
    ledger, dataset = resolve_ledger(arguments.get("ledger"), arguments.get("dataset"))
    return ledger_interaction(request, ledger, dataset, arguments.get("interaction"))


def plan_goal(command: str, goal: dict, arguments: dict):
    """The :class:`~privloss.api.accuracy_plan.AccuracyPlan` of ``goal`` for a
    release call's ``arguments`` (public parameters only)."""
    from privloss.api.accuracy_plan import plan_accuracy

    if command in ("topk", "histogram"):
        return plan_accuracy(command, request=_release_request(command, arguments),
                             curve=False, **goal)
    if command == "aggregate" and isinstance(arguments.get("max_groups"), str):
        raise ValueError("max_groups 'auto' cannot be combined with target_half_width or "
                         "min_release_users (give max_groups)")
    return plan_accuracy(command, curve=False, **goal, **public_parameters(command, arguments))


def call(command: str, arguments: dict):
    """The release of ``command`` (``topk``, ``histogram``, ``aggregate``,
    ``rollup``, ``running``) for a call's ``arguments`` (its ``locals()``) with
    a goal instead of ``epsilon``: plan, release at the planned epsilon, and
    the release with ``accuracy_plan`` set (module docstring)."""
    arguments = dict(arguments)
    goal = goal_of(arguments.get("epsilon"), arguments.get("target_half_width"),
                   arguments.get("min_release_users"))
    if goal is None:
        raise ValueError("call() is for a release with a goal instead of epsilon")
    plan = plan_goal(command, goal, arguments)
    arguments.update(epsilon=plan.epsilon, target_half_width=None, min_release_users=None)
    if plan.budget_split is not None and arguments.get("budget_split") is None:
        arguments["budget_split"] = plan.budget_split
    function = _function(command)
    accepted = inspect.signature(function).parameters
    release = function(arguments.pop("data"), **{
        name: value for name, value in arguments.items()
        if name in accepted and name not in GOALS})
    return dataclasses.replace(release, accuracy_plan=plan) \
        if dataclasses.is_dataclass(release) else release._replace(accuracy_plan=plan)


def _function(command: str):
    if command in ("topk", "histogram"):
        from privloss.api import protocol
        return getattr(protocol, command)
    if command == "aggregate":
        from privloss.api.aggregate import aggregate
        return aggregate
    if command == "rollup":
        from privloss.api.rollup import rollup
        return rollup
    from privloss.api.running import running
    return running
