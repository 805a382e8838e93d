"""``privloss.aggregate(...)``: DP group-by with counts,
sums, means and quantiles, and its dry run :func:`plan_aggregate`.

>>> from privloss.api.aggregate import aggregate              # doctest: +SKIP
>>> release = aggregate("orders.csv", privacy_unit="CustomerID", by=["Country"],
...                     aggregations=["count", "mean:Price:0:100"], epsilon=1.0,
...                     delta=1e-6, max_groups=1, max_rows_per_group=10)

Definition
----------
The release protocol of :mod:`privloss.api.protocol`, in this order:

1. every public parameter is checked and the query calibrated
   (:func:`privloss.releases.calibration.build_plan`): the events are
   fixed before any data is read;
2. with a ledger, a read-only ``would_admit`` check: a refusal raises here;
3. the data is snapshotted and fingerprinted (``api.prepare_data``) and its
   schema checked (columns exist, value columns numeric): bad input raises
   with the ledger unchanged;
4. the whole query's events are charged at once (one release unit,
   ``Ledger.release_with_receipt``) and only then is the bounded aggregation
   run in the engine (:mod:`.engine_duckdb`) and the noise added
   (:mod:`.mechanisms`).

Privacy guarantee
-----------------
User-level (add/remove one privacy unit) with the composed events of
:mod:`.budget`; ``seed`` is INSECURE (reproducible bounding and noise).

Citation
--------
Wilson et al., PoPETs 2020; Rogers et al., arXiv:2002.05839.

Runtime
-------
One read of the data files (fingerprint), one engine query, the noise per group.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from privloss._lazy import optional_import
from privloss.query.keys import check_keys
from privloss.query.spec import (check_aggregations, check_budget, check_max_groups,
                                 check_positive_integer)

__all__ = ["aggregate", "plan_aggregate", "max_epsilon_aggregate", "AggregateRelease",
           "AggregateQuery", "make_query"]



@dataclass(frozen=True)
class AggregateQuery:
    """A checked query and its calibrated plan (public parameters only)."""

    privacy_unit: str
    by: tuple
    aggregations: tuple
    epsilon: float
    delta: float
    keys: list | None
    max_groups: int
    max_rows_per_group: int
    noise: str
    budget_split: dict | None
    plan: object
    where: object = None
    joins: tuple = ()
    join_truncation: int | None = None

    def key(self, data, seed) -> dict:
        keys_digest = None if self.keys is None else hashlib.sha256(
            json.dumps([list(map(str, k)) for k in self.keys]).encode()).hexdigest()
        return {"command": "aggregate", "privacy_unit": self.privacy_unit, "by": list(self.by),
                "aggregations": [[a.kind, a.column, a.low, a.high, list(a.quantiles)]
                                 for a in self.aggregations],
                "epsilon": self.epsilon, "delta": self.delta, "keys": keys_digest,
                "max_groups": self.max_groups, "max_rows_per_group": self.max_rows_per_group,
                "noise": self.noise, "budget_split": self.budget_split, "seed": seed,
                "data": data, **({} if self.where is None else {"where": self.where_text}),
                **({"joins": self.joins_described} if self.joins else {})}

    @property
    def joins_described(self) -> list:
        """The joins' public description (tables, keys, columns, stability)."""
        from privloss.query.joins import describe_joins
        return describe_joins(self.joins, self.join_truncation)

    @property
    def where_text(self) -> str | None:
        """The row filter's canonical text (None without one)."""
        if self.where is None:
            return None
        from privloss.query.filters import describe
        return describe(self.where)

    def query_plan(self, data, seed: int, join_data: tuple = ()):
        """The :class:`~privloss.query.plan.QueryPlan` the engine runs: this
        query's bounding and statistics over ``data`` with bounding ``seed``
        (``join_data``: each join's prepared data, else its own source)."""
        import dataclasses

        from privloss.query.plan import Bounding, QueryPlan

        joins = tuple(join if data_ is None else dataclasses.replace(join, source=data_)
                      for join, data_ in zip(self.joins, tuple(join_data) +
                                             (None,) * len(self.joins)))

        return QueryPlan(source=data, privacy_unit=self.privacy_unit, by=self.by,
                         bounding=Bounding(self.max_groups, self.max_rows_per_group),
                         seed=seed, value_columns=self.value_columns, grids=self.plan.grids,
                         quantile_columns=self.quantile_columns,
                         quantile_bins=self.plan.quantile_bins,
                         keys=None if self.keys is None else
                         tuple(tuple(map(str, key)) for key in self.keys),
                         measurements=tuple(a.name for a in self.aggregations),
                         where=self.where, noise=self.noise, joins=joins,
                         join_truncation=self.join_truncation,
                         budget_split={m.name: str(self.plan.strengths[m.name])
                                       for m in self.plan.measurements})

    @property
    def value_columns(self) -> tuple:
        seen = []
        for a in self.aggregations:
            if a.column is not None and a.column not in seen:
                seen.append(a.column)
        return tuple(seen)

    @property
    def quantile_columns(self) -> tuple:
        return tuple(dict.fromkeys(a.column for a in self.aggregations if a.kind == "quantile"))


def _column(name: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty column name, got {value!r}")
    return value


def make_query(*, privacy_unit, by, aggregations, epsilon, delta=0.0, keys=None,
               max_groups=1, max_rows_per_group=1, noise="laplace", budget_split=None,
               grid_exponents=None, where=None, joins=(),
               join_truncation=None) -> AggregateQuery:
    """Check every public parameter and calibrate (raises ValueError / TypeError)."""
    from privloss.releases.calibration import build_plan

    privacy_unit = _column("privacy_unit", privacy_unit)
    if isinstance(by, str):
        by = [by]
    by = tuple(_column("by", b) for b in by)
    if not by:
        raise ValueError("by must name at least one column, got none")
    if len(set(by)) != len(by) or privacy_unit in by:
        raise ValueError(f"by columns must be distinct and differ from privacy_unit, got "
                         f"by={list(by)}, privacy_unit={privacy_unit!r}")
    aggregations = check_aggregations(aggregations)
    for a in aggregations:
        if a.column in by or a.column == privacy_unit:
            raise ValueError(f"{a.name} aggregates a by / privacy_unit column")
    epsilon, delta = check_budget(epsilon, delta)
    keys = check_keys(keys, by)
    max_groups = check_max_groups(max_groups)
    max_rows_per_group = check_positive_integer("max_rows_per_group", max_rows_per_group)
    plan = build_plan(aggregations, epsilon=epsilon, delta=delta, max_groups=max_groups,
                      max_rows_per_group=max_rows_per_group, unknown_keys=keys is None,
                      noise=noise, budget_split=budget_split, grid_exponents=grid_exponents)
    if where is not None:
        from privloss.query.filters import check_filter
        where = check_filter(where)
    from privloss.query.joins import check_joins
    joins, join_truncation = check_joins(joins, join_truncation, privacy_unit)
    return AggregateQuery(privacy_unit, by, aggregations, epsilon, delta, keys, max_groups,
                          max_rows_per_group, noise, budget_split, plan, where, joins,
                          join_truncation)


@dataclass(frozen=True)
class AggregateRelease:
    """Released groups: ``rows`` (``group``, ``values``, ``ci95`` per output
    column), ``columns``, ``events``, ``parameters`` (public), ``spent``,
    ``guarantee`` (without a ledger), ``cached``; ``accuracy_plan``: the plan
    of a ``target_half_width`` / ``min_release_users`` call."""

    rows: list
    columns: list
    events: tuple
    parameters: dict
    spent: dict | None = None
    guarantee: dict | None = None
    cached: bool = False
    totals: dict | None = None
    accuracy_plan: object = None

    def to_dict(self) -> dict:
        return {"rows": self.rows, "columns": self.columns, "totals": self.totals,
                "parameters": self.parameters,
                "events": [repr(e) for e in self.events], "spent": self.spent,
                "guarantee": self.guarantee, "cached": self.cached,
                **({} if self.accuracy_plan is None
                   else {"accuracy": self.accuracy_plan.to_dict()})}

    def columns_of(self) -> dict:
        """The release as columns: ``by0..`` (the group values), then each
        output column and its 95% interval (``<name>_ci95_low`` / ``_high``)."""
        width = len(self.rows[0]["group"]) if self.rows else len(self.parameters.get("by", ()))
        out = {f"by{i}": [row["group"][i] for row in self.rows] for i in range(width)}
        for name in self.columns:
            out[name] = [row["values"][name] for row in self.rows]
            out[f"{name}_ci95_low"] = [row["ci95"][name][0] for row in self.rows]
            out[f"{name}_ci95_high"] = [row["ci95"][name][1] for row in self.rows]
        return out

    def to_pandas(self):
        """A pandas DataFrame (:meth:`columns_of`: the same columns as
        :meth:`to_arrow` and :meth:`to_polars`, intervals included)."""
        pd = optional_import("pandas")
        return pd.DataFrame(self.columns_of())

    def to_arrow(self):
        """A pyarrow Table (:meth:`columns_of`)."""
        pa = optional_import("pyarrow")
        return pa.table(self.columns_of())

    def to_polars(self):
        """A Polars DataFrame (:meth:`columns_of`)."""
        pl = optional_import("polars")
        return pl.DataFrame(self.columns_of())


def auto_query(**parameters) -> tuple:
    """``(query, auto, events)``: :func:`make_query` after the auto-bounded
    columns (``COL:auto``, :mod:`privloss.api.auto_bounds`) are split off:
    ``auto`` their pre-pass plan (None without any), ``events`` the release's
    and the pre-pass's, charged together."""
    from privloss.api.auto_bounds import split_auto

    if isinstance(parameters.get("max_groups"), str):     # "auto": privloss.api.auto_l0
        from privloss.api.auto_l0 import auto_groups_query
        return auto_groups_query(parameters, make_query)
    aggregations, grid_exponents, epsilon, auto = split_auto(
        parameters.get("aggregations"), epsilon=parameters.get("epsilon"),
        grid_exponents=parameters.get("grid_exponents"),
        max_groups=parameters.get("max_groups", 1),
        max_rows_per_group=parameters.get("max_rows_per_group", 1))
    if auto is None:
        query = make_query(**parameters)
        return query, None, query.plan.events
    query = make_query(**{**parameters, "aggregations": aggregations,
                          "grid_exponents": grid_exponents, "epsilon": epsilon})
    return query, auto, tuple(query.plan.events) + auto.events


def describe_plan(query: AggregateQuery) -> dict:
    """Per measurement: its event, strength, noise and 95% half-width (public)."""
    from privloss.releases.aggregate import BETA, _half_width
    from privloss.api.planning import describe_event

    plan = query.plan
    out = []
    for m in plan.measurements:
        event = plan.event_of(m.name)
        entry = {"measurement": m.name, "aggregation": m.owner, "event": repr(event),
                 "step": describe_event(event),
                 "epsilon_alone": _alone(event),
                 "share": plan.shares.get(m.name)}
        if m.is_quantile:
            from privloss.mechanisms.exponential import ExponentialMechanism
            mech = ExponentialMechanism(plan.strengths[m.name], score_range=m.linf)
            entry["noise"] = "exponential mechanism (exact), per group"
            entry["ci95_rank_error"] = mech.utility_gap(BETA,
                                                        n_candidates=plan.quantile_bins + 1)
        else:
            noise = plan.noises[m.name]
            width = _half_width(noise, BETA)
            grid = plan.grids.get(m.column)
            unit = float(grid.step) if grid is not None and m.kind in ("sum", "csum") else 1
            entry["noise"] = f"discrete-{noise.kind}"
            entry["noise_parameter"] = float(noise.parameter)
            entry["ci95_half_width"] = width * unit
        out.append(entry)
    return {"measurements": out, "split": {
                "given": query.budget_split is not None,
                "rule": "budget_split as given" if query.budget_split is not None else
                        "error-balancing, each measurement at least 1/(4m) of the budget",
                "shares": dict(plan.shares)},
            "guarantee": plan.guarantee, "threshold": plan.threshold,
            "delta_selection": plan.delta_selection,
            "grids": {c: {"grid": f"2^-{g.exponent}", "low_units": g.lo, "high_units": g.hi}
                      for c, g in plan.grids.items()}}


def _alone(event) -> float:
    from privloss.accounting import compose
    return compose((event,), target_delta=0.0, interaction="adaptive").epsilon


def plan_aggregate(*, ledger=None, dataset=None, target_half_width=None,
                   min_release_users=None, **parameters) -> dict:
    """The dry run: what :func:`aggregate` with these parameters would spend and
    how accurate it would be, and whether the ledger would admit it (read-only).
    Reads no data.  Instead of ``epsilon``: ``target_half_width`` /
    ``min_release_users`` plan it (and, for a target, the ``budget_split``),
    :mod:`privloss.api.accuracy_plan`; the answer's ``accuracy`` says how."""
    from privloss.api.protocol import resolve_ledger

    accuracy = None
    if target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_plan import plan_accuracy
        if parameters.get("epsilon") is not None:
            raise ValueError("give epsilon or a target (target_half_width / "
                             "min_release_users), not both")
        parameters.pop("epsilon", None)
        accuracy = plan_accuracy("aggregate", target_half_width=target_half_width,
                                 min_release_users=min_release_users, **parameters)
        parameters["epsilon"] = accuracy.epsilon
        if accuracy.budget_split is not None:
            parameters["budget_split"] = accuracy.budget_split
    query, auto, events = auto_query(**parameters)
    out = {"dry_run": True, "command": "aggregate", "where": query.where_text,
           **({"joins": query.joins_described} if query.joins else {}),
           **describe_plan(query),
           "events": [repr(e) for e in events], "ledger": None,
           **({} if accuracy is None else {"accuracy": accuracy.to_dict()}),
           **({} if auto is None else {"auto_bounds": auto.describe()})}
    if auto is not None:      # the guarantee of the whole release, bounds included
        from privloss.accounting import compose
        total = compose(tuple(events), target_delta=query.delta, interaction="adaptive")
        out["guarantee"] = {"epsilon": total.epsilon, "delta": query.delta,
                            "bound": total.bound}
    ledger, dataset = resolve_ledger(ledger, dataset)
    if ledger is not None:
        verdict = ledger.would_admit(dataset, _key(query, auto, {"dry-run": secrets.token_hex(8)},
                                                   None), events)
        out["ledger"] = {"dataset": dataset, "fits": bool(verdict["admitted"]),
                         "spent_epsilon_after": verdict["spent_epsilon"],
                         "reason": verdict["reason"] or None}
    return out


def max_epsilon_aggregate(*, ledger, dataset, tolerance: float = 1e-3, **parameters) -> float:
    """The largest epsilon of this group-by (``parameters`` as :func:`aggregate`'s,
    without ``epsilon``) that the ledger's fully adaptive dataset still admits,
    to relative ``tolerance``; raises the ledger's refusal when nothing fits.
    Reads no data (:func:`privloss.api.planning.largest_admitted`)."""
    from privloss.api.planning import largest_admitted
    from privloss.api.protocol import resolve_ledger

    if isinstance(parameters.get("max_groups"), str):
        raise ValueError("epsilon 'max' cannot be combined with max_groups 'auto' (give "
                         "epsilon)")
    auto_query(epsilon=1.0, **parameters)            # every other parameter checked first
    ledger, dataset = resolve_ledger(ledger, dataset)
    if ledger is None:
        raise ValueError("epsilon 'max' needs a ledger and a dataset (the budget to fit)")
    summary = ledger.show(dataset)
    if summary["interaction"] != "fully-adaptive":
        raise ValueError(f"epsilon 'max' for a group-by needs a fully-adaptive dataset; "
                         f"dataset {dataset!r} composes as {summary['interaction']}, whose "
                         f"plan fixes each release's epsilon")
    return largest_admitted(ledger, dataset, _admission(ledger, dataset, parameters), summary,
                            tolerance=tolerance, epsilon_range=EPSILON_RANGE)


#: the epsilons a group-by calibrates for (the search range of epsilon 'max')
EPSILON_RANGE = (1e-3, 100.0)


def _admission(ledger, dataset, parameters: dict):
    """epsilon -> the ledger's read-only verdict on this group-by at that epsilon."""
    import math

    nonce = secrets.token_hex(8)

    def admitted(epsilon: float) -> dict:
        try:
            query, auto, events = auto_query(epsilon=epsilon, **parameters)
        except (ValueError, ArithmeticError):    # no calibration reaches so small an epsilon
            return {"admitted": False, "reason": "the parameters cannot be calibrated",
                    "spent_epsilon": math.inf}
        return ledger.would_admit(dataset, _key(query, auto, {"dry-run": nonce}, None), events)

    return admitted


def aggregate(data, *, privacy_unit: str, by, aggregations, epsilon=None, delta: float = 0.0,
              keys=None, max_groups: int = 1, max_rows_per_group: int = 1, ledger=None,
              dataset: str | None = None, seed: int | None = None, engine: str = "duckdb",
              noise: str = "laplace", budget_split=None, grid_exponents=None,
              consistent: bool = False, where=None, joins=(), join_truncation=None,
              target_half_width=None, min_release_users=None):
    """A private group-by (see the module docstring); returns an
    :class:`AggregateRelease`.  ``aggregations``: CLI-style strings
    (``"count"``, ``"count_distinct"``, ``"sum:COL:LOW:HIGH"``,
    ``"mean:COL:LOW:HIGH"``, ``"quantile:COL:LOW:HIGH:Q[,Q]"``) or
    :class:`~.spec.Aggregation` objects.  ``consistent``: post-process the
    count columns (non-negative integers adding up to a released total,
    :mod:`.consistency`).  Raises ``ValueError`` / ``TypeError``
    for bad input before anything is charged, ``LedgerBudgetError`` when the
    ledger refuses, ``ComputationFailed`` if the engine fails after the charge.
    Instead of ``epsilon``: ``target_half_width=W`` (the smallest epsilon, and
    split, whose 95% half-width is at most ``W`` for every measurement) or
    ``min_release_users=N`` (without keys: a group of ``N`` users released with
    probability 95%); the release then carries the plan as ``accuracy_plan``
    (:mod:`privloss.api.accuracy_target`)."""
    if epsilon is None or target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_target import call
        return call("aggregate", locals())
    from privloss.api import protocol as api
    from privloss.releases.aggregate import release_payload
    from privloss.query.bounding import draw_seed
    from privloss.query.errors import ComputationFailed, computation_failed

    from privloss.query import engines

    engines.engine_module(engine)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}")
    if not isinstance(consistent, bool):
        raise TypeError(f"consistent must be True or False, got {consistent!r}")
    if isinstance(epsilon, str) and epsilon.strip().lower() == "max":
        epsilon = max_epsilon_aggregate(
            ledger=ledger, dataset=dataset, privacy_unit=privacy_unit, by=by,
            aggregations=aggregations, delta=delta, keys=keys, max_groups=max_groups,
            max_rows_per_group=max_rows_per_group, noise=noise, budget_split=budget_split,
            grid_exponents=grid_exponents, where=where, joins=joins,
            join_truncation=join_truncation)
    query, auto, events = auto_query(
        privacy_unit=privacy_unit, by=by, aggregations=aggregations, epsilon=epsilon,
        delta=delta, keys=keys, max_groups=max_groups, max_rows_per_group=max_rows_per_group,
        noise=noise, budget_split=budget_split, grid_exponents=grid_exponents, where=where,
        joins=joins, join_truncation=join_truncation)
    if auto is not None:
        auto.check_engine(engine)
    ledger, dataset = api.resolve_ledger(ledger, dataset)
    api.check_paths(data)
    for join in query.joins:
        api.check_paths(join.source)
    if ledger is not None:      # refuse before reading, unless a stored answer may exist
        verdict = ledger.would_admit(dataset, _key(query, auto,
                                                   {"dry-run": secrets.token_hex(8)}, seed),
                                     events)
        wanted = {**_key(query, auto, None, seed), "consistent": consistent}
        if not verdict["admitted"] and not api.may_be_stored(ledger, dataset, wanted):
            parameters = dict(privacy_unit=privacy_unit, by=by, aggregations=aggregations,
                              delta=delta, keys=keys, max_groups=max_groups,
                              max_rows_per_group=max_rows_per_group, noise=noise,
                              budget_split=budget_split, grid_exponents=grid_exponents,
                              where=where)
            raise api.refusal(ledger, dataset, verdict,     # no search over 9 calibrations
                              admitted=None if isinstance(max_groups, str) else
                              _admission(ledger, dataset, parameters),
                              epsilon_range=EPSILON_RANGE)
    source = api.prepare_data(data, engine=engine)
    joined: list = []
    try:
        for join in query.joins:
            joined.append(api.prepare_data(join.source, engine=engine))
        fingerprint = source.fingerprint if not joined else \
            {"from": source.fingerprint, "joins": [j.fingerprint for j in joined]}
        noise_source = None
        if seed is not None:
            from privloss.samplers import InsecureSeededSource
            noise_source = InsecureSeededSource(seed)
        plan = query.query_plan(source.input, draw_seed() if seed is None else seed,
                                tuple(j.input for j in joined))
        engines.check(plan, engine)

        def compute() -> dict:
            try:
                release_plan, calibrated, estimated = plan, query.plan, None
                if auto is not None:      # after the charge: the pre-pass(es)
                    release_plan, calibrated, estimated = auto.apply(
                        plan, query.plan, engine, noise_source)
                exact = engines.run(release_plan, engine).groups
                payload = release_payload(calibrated, query.aggregations, exact,
                                          keys=query.keys, source=noise_source,
                                          consistent=consistent)
                if estimated is not None:
                    payload["auto_bounds"] = estimated
            except ComputationFailed:
                raise
            except (ValueError, TypeError, LookupError, ArithmeticError, MemoryError,
                    OSError, RuntimeError) as error:
                raise computation_failed(error, "aggregate release") from None
            return payload

        parameters = {**_parameters(query), "consistent": consistent}
        if auto is not None:
            parameters["epsilon"] = auto.epsilon
        if ledger is None:
            payload = compute()
            _report_bounds(parameters, auto, payload)
            spent, guarantee = api._own_spending(events, query.delta, "fully-adaptive")
            return AggregateRelease(payload["rows"], payload["columns"], events, parameters,
                                    spent=spent, guarantee=guarantee,
                                    totals=payload.get("totals"))
        key = {**_key(query, auto, fingerprint, seed), "consistent": consistent}
        receipt = ledger.release_with_receipt(dataset, key, compute, events)
        payload = receipt.result
        _report_bounds(parameters, auto, payload)
        return AggregateRelease(payload["rows"], payload["columns"], events, parameters,
                                spent=api._ledger_spending(ledger, dataset, receipt.cached),
                                cached=receipt.cached, totals=payload.get("totals"))
    finally:
        for prepared in joined:
            prepared.close()
        source.close()


def _key(query: AggregateQuery, auto, data, seed) -> dict:
    """The ledger key; with auto bounds their public plan too (the placeholder
    range of an auto column is not a given range)."""
    return {**query.key(data, seed), **({} if auto is None else auto.key())}


def _report_bounds(parameters: dict, auto, payload: dict) -> None:
    """The estimated bounds (noisy outputs) and their plan, in the parameters."""
    if auto is not None:
        estimated = payload.get("auto_bounds") or {}
        parameters["auto_bounds"] = {**auto.describe(), "estimated": estimated}
        if "max_groups" in estimated:
            parameters["max_groups"] = estimated["max_groups"]


def _parameters(query: AggregateQuery) -> dict:
    plan = query.plan
    return {"privacy_unit": query.privacy_unit, "by": list(query.by),
            "epsilon": query.epsilon, "delta": query.delta, "noise": query.noise,
            "max_groups": query.max_groups, "max_rows_per_group": query.max_rows_per_group,
            "keys": "known" if query.keys is not None else "unknown (noisy threshold)",
            "threshold": plan.threshold, "delta_selection": plan.delta_selection,
            "strengths": {name: str(value) for name, value in plan.strengths.items()},
            "grids": {c: f"2^-{g.exponent}" for c, g in plan.grids.items()},
            "quantile_candidates": plan.quantile_bins + 1, "nulls": "dropped",
            "guarantee": plan.guarantee, "where": query.where_text,
            **({"joins": query.joins_described} if query.joins else {})}
