"""``privloss.rollup(...)``: a private ``GROUP BY ROLLUP(a, b, c)``: subtotals
at every level that add up, with 95% intervals, and its dry run
:func:`plan_rollup`.

>>> import privloss                                                      # doctest: +SKIP
>>> release = privloss.rollup("orders.csv.gz", privacy_unit="CustomerID",
...                           by=["Country", "Year"], aggregations=["count"], epsilon=1.0,
...                           delta=1e-6, max_groups=1, max_rows_per_group=5,
...                           consistent=True)
>>> release.rows[0]            # the grand total: group [None, None]           # doctest: +SKIP

Definition
----------
The release protocol of :mod:`privloss.api.protocol`, as
:func:`privloss.aggregate`: the public parameters are checked and the events
fixed (:func:`privloss.releases.rollup.plan_rollup`); with a ledger a
read-only check (a refusal raises before anything is read); the data is
snapshotted and its schema bound; the events are charged at once (one release
unit) and only then does the engine compute the bounded statistics of the
finest groups (one :class:`~privloss.query.plan.QueryPlan` with ``by`` all
the columns: the bounding is on the finest level) and
:func:`privloss.releases.rollup.release_rollup` select the groups of every
level (without ``keys``), add the noise on every node, project and round.

Rows have SQL's ROLLUP shape: ``group`` holds ``None`` for the columns rolled
up (level 0: the grand total, all ``None``); ``others`` are the nodes that
make a parent add up when some of its children were not selected.  Rows with
a null in a ``by`` column are dropped (so a ``None`` always means a
subtotal).

Privacy guarantee
-----------------
See :mod:`privloss.releases.rollup`; user level, events composed by the
accountant, charged once.  ``seed`` is INSECURE (reproducible bounding and
noise).

Citation
--------
Hay et al., VLDB 2010; Wilson et al., PoPETs 2020.

Runtime
-------
One read of the data (fingerprint), one engine query, O(nodes log nodes).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from privloss._lazy import optional_import

__all__ = ["rollup", "plan_rollup", "make_rollup", "RollupQuery", "RollupRelease"]


@dataclass(frozen=True)
class RollupQuery:
    """A checked rollup and its budget (public parameters only)."""

    privacy_unit: str
    by: tuple
    aggregations: tuple
    epsilon: float
    delta: float
    keys: list | None
    max_groups: int
    max_rows_per_group: int
    noise: str
    selection_share: float
    budget: object           # privloss.releases.rollup.RollupBudget
    where: object = None

    @property
    def events(self) -> tuple:
        return self.budget.events

    @property
    def value_columns(self) -> tuple:
        """Columns whose values are read (none: counts only)."""
        return ()

    @property
    def where_text(self) -> str | None:
        if self.where is None:
            return None
        from privloss.query.filters import describe
        return describe(self.where)

    def key(self, data, seed) -> dict:
        keys_digest = None if self.keys is None else hashlib.sha256(
            json.dumps([list(map(str, k)) for k in self.keys]).encode()).hexdigest()
        return {"command": "rollup", "privacy_unit": self.privacy_unit, "by": list(self.by),
                "aggregations": [a.name for a in self.aggregations], "epsilon": self.epsilon,
                "delta": self.delta, "keys": keys_digest, "max_groups": self.max_groups,
                "max_rows_per_group": self.max_rows_per_group, "noise": self.noise,
                "selection_share": self.selection_share, "seed": seed, "data": data,
                **({} if self.where is None else {"where": self.where_text})}

    def query_plan(self, data, seed: int):
        """The engine's plan: the bounding on the finest groups (all of ``by``)."""
        from privloss.query.plan import Bounding, QueryPlan

        return QueryPlan(source=data, privacy_unit=self.privacy_unit, by=self.by,
                         bounding=Bounding(self.max_groups, self.max_rows_per_group),
                         seed=seed,
                         keys=None if self.keys is None else
                         tuple(tuple(map(str, key)) for key in self.keys),
                         measurements=tuple(f"rollup:{a.name}" for a in self.aggregations),
                         where=self.where, noise=self.noise)

    def describe(self) -> dict:
        """The cost and the split (public): the selection and each measure's
        budget; with keys also the split across levels, the mean exact
        variance and the largest 95% half-width of each level's nodes (the
        keys' tree)."""
        from privloss.releases._levels import Z95

        out = self.budget.describe()
        if self.keys is None:
            out["level_split"] = ("chosen on the selected tree: the least sum over levels of "
                                  "the mean variance (post-processing of the selection)")
            return out
        from privloss.releases.rollup import rollup_tree, tree_variances

        tree = rollup_tree([], self.budget, keys=self.keys)       # the keys' structure only
        out["level_split"] = {}
        for a in self.aggregations:
            plan = self.budget.plan(a.name, tree.parents, tree.sizes)
            variances = tree_variances(plan.noise.variances(), tree.parents, tree.sizes)
            out["level_split"][a.name] = {
                "sizes": list(tree.sizes), "budget_shares": list(plan.shares),
                "mean_variance_by_level": [float(v.mean()) for v in variances],
                "ci95_half_width_by_level": [float(Z95 * v.max() ** 0.5) for v in variances]}
        return out


def make_rollup(*, privacy_unit, by, aggregations=("count",), epsilon, delta=0.0, keys=None,
                max_groups=1, max_rows_per_group=1, noise="laplace", selection_share=0.5,
                where=None) -> RollupQuery:
    """Check every public parameter and fix the events (ValueError / TypeError)."""
    from privloss.api.aggregate import _column
    from privloss.query.keys import check_keys
    from privloss.query.spec import (check_aggregations, check_max_groups,
                                     check_positive_integer)
    from privloss.releases.rollup import MAX_LEVELS, MEASURES, plan_rollup as plan_budget

    privacy_unit = _column("privacy_unit", privacy_unit)
    if isinstance(by, str):
        by = [by]
    by = tuple(_column("by", b) for b in by)
    if not 1 <= len(by) <= MAX_LEVELS:
        raise ValueError(f"by must name 1 to {MAX_LEVELS} columns for a rollup, got {len(by)}")
    if len(set(by)) != len(by) or privacy_unit in by:
        raise ValueError(f"by columns must be distinct and differ from privacy_unit, got "
                         f"by={list(by)}, privacy_unit={privacy_unit!r}")
    if isinstance(aggregations, str):
        aggregations = [aggregations]
    aggregations = check_aggregations(aggregations)
    for a in aggregations:
        if a.kind not in MEASURES:
            raise ValueError(f"a rollup releases count and count_distinct (sums of children "
                             f"equal their parent), got {a.name}")
    keys = check_keys(keys, by)
    if keys is not None and not keys:
        raise ValueError("keys must list at least one group (or be None: private selection)")
    max_groups = check_max_groups(max_groups)
    max_rows_per_group = check_positive_integer("max_rows_per_group", max_rows_per_group)
    budget = plan_budget(levels=len(by), measures=[a.kind for a in aggregations],
                         epsilon=epsilon, delta=delta, max_groups=max_groups,
                         max_rows=max_rows_per_group, noise=noise, select=keys is None,
                         selection_share=selection_share)
    if where is not None:
        from privloss.query.filters import check_filter
        where = check_filter(where)
    return RollupQuery(privacy_unit, by, aggregations, float(epsilon), float(delta), keys,
                       max_groups, max_rows_per_group, noise, float(selection_share), budget,
                       where)


@dataclass(frozen=True)
class RollupRelease:
    """``rows`` (ROLLUP's shape: ``group`` with ``None`` for rolled-up columns,
    ``level``, ``values``, ``ci95``, ``ci95_guaranteed``, ``variance`` per
    column), ``others``, ``columns``, ``events``, ``parameters`` (public),
    ``spent``, ``guarantee`` (without a ledger), ``cached``, ``accuracy_plan``
    (the plan of a ``target_half_width`` / ``min_release_users`` call)."""

    rows: list
    others: list
    columns: list
    events: tuple
    parameters: dict
    spent: dict | None = None
    guarantee: dict | None = None
    cached: bool = False
    accuracy_plan: object = None

    def to_dict(self) -> dict:
        return {"rows": self.rows, "others": self.others, "columns": self.columns,
                "parameters": self.parameters, "events": [repr(e) for e in self.events],
                "spent": self.spent, "guarantee": self.guarantee, "cached": self.cached,
                **({} if self.accuracy_plan is None
                   else {"accuracy": self.accuracy_plan.to_dict()})}

    def columns_of(self) -> dict:
        """The rows as columns: ``by0..`` (None where rolled up), ``level``, then
        each output column and its 95% interval (``<name>_ci95_low`` / ``_high``)."""
        width = len(self.parameters.get("by", ()))
        out = {f"by{i}": [row["group"][i] for row in self.rows] for i in range(width)}
        out["level"] = [row["level"] for row in self.rows]
        for name in self.columns:
            out[name] = [row["values"][name] for row in self.rows]
            out[f"{name}_ci95_low"] = [row["ci95"][name][0] for row in self.rows]
            out[f"{name}_ci95_high"] = [row["ci95"][name][1] for row in self.rows]
        return out

    def to_pandas(self):
        pd = optional_import("pandas")
        return pd.DataFrame(self.columns_of())

    def to_arrow(self):
        pa = optional_import("pyarrow")
        return pa.table(self.columns_of())

    def to_polars(self):
        pl = optional_import("polars")
        return pl.DataFrame(self.columns_of())


def plan_rollup(*, ledger=None, dataset=None, **parameters) -> dict:
    """The dry run: cost, split and accuracy, and whether the ledger would admit
    it (read-only).  Reads no data."""
    from privloss.api.protocol import resolve_ledger

    query = make_rollup(**parameters)
    out = {"dry_run": True, "command": "rollup", "by": list(query.by),
           "where": query.where_text, **query.describe(), "ledger": None}
    ledger, dataset = resolve_ledger(ledger, dataset)
    if ledger is not None:
        verdict = ledger.would_admit(dataset, query.key({"dry-run": secrets.token_hex(8)}, None),
                                     query.events)
        out["ledger"] = {"dataset": dataset, "fits": bool(verdict["admitted"]),
                         "spent_epsilon_after": verdict["spent_epsilon"],
                         "reason": verdict["reason"] or None}
    return out


def parameters_of(query: RollupQuery, consistent: bool) -> dict:
    """The public parameters a release reports."""
    return {"privacy_unit": query.privacy_unit, "by": list(query.by), "rollup": True,
            "epsilon": query.epsilon, "delta": query.delta, "noise": query.noise,
            "max_groups": query.max_groups, "max_rows_per_group": query.max_rows_per_group,
            "keys": "known" if query.keys is not None else "unknown (noisy threshold per level)",
            "consistent": consistent, "nulls": "dropped", "where": query.where_text,
            **query.budget.describe()}


def compute_rollup(query: RollupQuery, plan, engine: str, *, consistent: bool,
                   noise_source=None, what: str = "rollup release") -> dict:
    """Engine, then release: the payload (runs only after the charge; any
    failure becomes the fixed ``ComputationFailed``)."""
    from privloss.query import engines
    from privloss.query.errors import ComputationFailed, computation_failed
    from privloss.releases.rollup import release_rollup

    try:
        leaves = engines.run(plan, engine).groups
        return release_rollup(query.budget, leaves, keys=query.keys, consistent=consistent,
                              source=noise_source)
    except ComputationFailed:
        raise
    except (ValueError, TypeError, LookupError, ArithmeticError, MemoryError, OSError,
            RuntimeError) as error:
        raise computation_failed(error, what) from None


def rollup(data, *, privacy_unit: str, by, aggregations=("count",), epsilon=None,
           delta: float = 0.0, keys=None, max_groups: int = 1, max_rows_per_group: int = 1,
           ledger=None, dataset: str | None = None, seed: int | None = None,
           engine: str = "duckdb", noise: str = "laplace", consistent: bool = False,
           selection_share: float = 0.5, where=None, target_half_width=None,
           min_release_users=None) -> RollupRelease:
    """A private ``GROUP BY ROLLUP(by...)`` (module docstring).  ``aggregations``:
    ``"count"`` and / or ``"count_distinct"``; ``keys``: public full group
    tuples, else each level's groups are selected privately (needs ``delta``);
    ``consistent``: non-negative integers adding up at every level.  Raises
    ``ValueError`` / ``TypeError`` before anything is charged,
    ``LedgerBudgetError`` when the ledger refuses, ``ComputationFailed`` after
    the charge.  Instead of ``epsilon``: ``target_half_width=W`` (with keys: every
    node's 95% half-width at most ``W``) or ``min_release_users=N`` (without
    keys: a finest group of ``N`` users released with probability at least
    95%), :mod:`privloss.api.accuracy_rollup`; the release carries the plan as
    ``accuracy_plan``."""
    if epsilon is None or target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_target import call
        return call("rollup", locals())
    from privloss.api import protocol as api
    from privloss.query import engines
    from privloss.query.bounding import draw_seed

    engines.engine_module(engine)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}")
    if not isinstance(consistent, bool):
        raise TypeError(f"consistent must be True or False, got {consistent!r}")
    query = make_rollup(privacy_unit=privacy_unit, by=by, aggregations=aggregations,
                        epsilon=epsilon, delta=delta, keys=keys, max_groups=max_groups,
                        max_rows_per_group=max_rows_per_group, noise=noise,
                        selection_share=selection_share, where=where)
    events = query.events
    ledger, dataset = api.resolve_ledger(ledger, dataset)
    api.check_paths(data)
    if ledger is not None:      # refuse before reading, unless a stored answer may exist
        verdict = ledger.would_admit(dataset, query.key({"dry-run": secrets.token_hex(8)}, seed),
                                     events)
        wanted = {**query.key(None, seed), "consistent": consistent}
        if not verdict["admitted"] and not api.may_be_stored(ledger, dataset, wanted):
            raise api.refusal(ledger, dataset, verdict)
    source = api.prepare_data(data, engine=engine)
    try:
        noise_source = None
        if seed is not None:
            from privloss.samplers import InsecureSeededSource
            noise_source = InsecureSeededSource(seed)
        plan = query.query_plan(source.input, draw_seed() if seed is None else seed)
        engines.check(plan, engine)
        parameters = parameters_of(query, consistent)
        parameters["seed"] = "INSECURE" if seed is not None else None

        def compute() -> dict:
            return compute_rollup(query, plan, engine, consistent=consistent,
                                  noise_source=noise_source)

        if ledger is None:
            payload = compute()
            spent, guarantee = api._own_spending(events, query.delta, "fully-adaptive")
            return RollupRelease(payload["rows"], payload["others"], payload["columns"],
                                 events, parameters, spent=spent, guarantee=guarantee)
        key = {**query.key(source.fingerprint, seed), "consistent": consistent}
        receipt = ledger.release_with_receipt(dataset, key, compute, events)
        payload = receipt.result
        return RollupRelease(payload["rows"], payload["others"], payload["columns"], events,
                             parameters,
                             spent=api._ledger_spending(ledger, dataset, receipt.cached),
                             cached=receipt.cached)
    finally:
        source.close()
