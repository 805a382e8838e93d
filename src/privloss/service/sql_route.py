"""The service's DP SQL endpoint: ``POST /v1/datasets/{name}/sql`` and its dry
run ``POST /v1/datasets/{name}/sql/plan``.

Definition
----------
The analyst sends one ``SELECT g.., COUNT(*), SUM(x), AVG(x), MEDIAN(x), ...
FROM <dataset> GROUP BY g..`` (the subset of
:mod:`privloss.query.sql`) with the public parameters of
:func:`privloss.aggregate`: ``epsilon`` (or instead ``target_half_width`` /
``min_release_users``: the epsilon is planned,
:mod:`privloss.service.accuracy_goals`), ``delta``,
``bounds`` (``{"x": [low, high]}`` for every aggregated column),
``max_groups``, ``max_rows_per_group``, ``keys`` (public group labels; without
them the groups go through the noisy threshold), ``noise``, ``budget_split``,
``consistent`` and ``label``.  ``GROUP BY ROLLUP(...)`` goes on to
:mod:`privloss.service.rollup_route` after step 3.  In this order, nothing
charged or read before the last step:

1. the text is parsed with sqlglot (422 naming the unsupported part);
2. the FROM name must be the dataset's own name (422): it only confirms which
   declared dataset is meant, the rows always come from the configuration's
   source; a ``JOIN`` may name only the dataset's public tables (the
   configuration's ``public_tables``; 422 otherwise), whose columns are
   public (joins of two private tables are not offered here);
3. every column the query or ``bounds`` names must be declared for analysts
   (403, as for top-k); the privacy unit only inside
   ``COUNT(DISTINCT <unit>)``;
4. the query is checked and calibrated (:func:`~privloss.api.aggregate.make_query`,
   422 naming the field) and the source's schema bound (no rows computed);
5. the whole query's events are charged at once to the dataset's ledger with
   the analyst's cap (409 when refused), then the bounded aggregation runs.

Privacy guarantee
-----------------
The SQL text never reaches an engine: only the parsed column names, checked
against the configuration, are used as quoted identifiers by the engine's
relational API.  The release is :func:`~privloss.aggregate`'s
(user-level, composed events of :mod:`privloss.releases.calibration`),
charged as one release unit before the data is read, so a refusal reveals
nothing about the data.

Runtime
-------
Parsing is linear in the query's length; a plan is one calibration and one
ledger read; a release one schema bind, one engine query and the noise per group.
"""

from __future__ import annotations

import os
import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator

from privloss.service.app import ServiceError
from privloss.service.routes import (Delta, Epsilon, MinReleaseUsers, TargetHalfWidth, Text,
                                     call_ledger, current_analyst, granted_dataset,
                                     note_release)

__all__ = ["router", "SqlParameters", "checked_query", "plan_sql", "run_sql", "SQL_LIMITS"]

router = APIRouter(prefix="/v1")

#: documented ranges (docs/service.md): a bound's magnitude, groups per unit,
#: rows per (unit, group), budget shares; checked before anything is charged
SQL_LIMITS = {"bound": 1e12, "max_groups": (1, 1_000), "max_rows_per_group": (1, 10_000),
              "keys": 10_000, "budget_split": (1e-6, 1e6)}

ColumnName = Text(200)
KeyValue = Text(200, min_length=0) | Annotated[int, Field(ge=-(1 << 63), lt=1 << 63)]
Bound = Annotated[float, Field(ge=-SQL_LIMITS["bound"], le=SQL_LIMITS["bound"])]
Share = Annotated[float, Field(ge=SQL_LIMITS["budget_split"][0],
                               le=SQL_LIMITS["budget_split"][1])]


class SqlParameters(BaseModel):
    """An SQL release's text and public parameters (see the module docstring);
    ranges: :data:`SQL_LIMITS` and :data:`privloss.service.routes.LIMITS`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    query: Text(4000)
    epsilon: Epsilon | None = None
    # instead of epsilon (privloss.service.accuracy_goals; exactly one of the three)
    target_half_width: TargetHalfWidth | None = None
    min_release_users: MinReleaseUsers | None = None
    delta: Delta = 0.0
    bounds: dict[ColumnName, tuple[Bound, Bound]] = Field(default_factory=dict, max_length=64)
    max_groups: Annotated[int, Field(ge=SQL_LIMITS["max_groups"][0],
                                     le=SQL_LIMITS["max_groups"][1])] = 1
    max_rows_per_group: Annotated[int, Field(ge=SQL_LIMITS["max_rows_per_group"][0],
                                             le=SQL_LIMITS["max_rows_per_group"][1])] = 1
    keys: list[list[KeyValue] | KeyValue] | None = Field(default=None,
                                                         max_length=SQL_LIMITS["keys"])
    noise: Text(40) = "laplace"
    budget_split: dict[ColumnName, Share] | None = Field(default=None, max_length=64)
    consistent: bool = False
    label: Text(200) | None = None

    @model_validator(mode="after")
    def _ordered_bounds(self):
        for column, (low, high) in self.bounds.items():
            if not low < high:
                raise ValueError(f"bounds of {column[:64]!r} must be [low, high] with low < "
                                 f"high, got [{low!r}, {high!r}]")
        return self


def _refuse(message: str, field: str | None, value=None, *, status: int = 422,
            outcome: str = "bad-parameters"):
    raise ServiceError(status, message, field=field, value=value, outcome=outcome)


def _field_of(message: str) -> str:
    """The body field an unsupported-SQL message is about: ``bounds`` when it
    names bounds nothing reads, else ``query``."""
    return "bounds" if message.startswith("bounds ") else "query"


def _shown(name: str) -> str:
    return name if len(name) <= 64 else name[:64] + "..."


#: deepest parenthesis nesting parsed (the supported subset needs 3)
MAX_NESTING = 32


def _nesting(text: str) -> int:
    """The deepest parenthesis nesting of ``text`` (parentheses inside quotes
    count too: an over-estimate only refuses more)."""
    depth = deepest = 0
    for character in text:
        if character == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif character == ")":
            depth = max(0, depth - 1)
    return deepest


def _columns_named(text: str) -> list:
    """Every column name in the text (empty if it does not parse: the parser's
    own message then says why)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = sqlglot.parse(text, read="duckdb")
        return [(column.table or None, column.name) for statement in statements
                if statement is not None for column in statement.find_all(exp.Column)]
    except SqlglotError:
        return []
    except RecursionError:      # e.g. NOT NOT NOT ...: refused as such, not a 500
        _refuse("query: the expression is nested too deeply to parse", "query")


def checked_query(dataset, body: dict):
    """The calibrated :class:`~privloss.api.aggregate.AggregateQuery`
    of an analyst's SQL, or a :class:`ServiceError` (422 / 403) before anything
    is read or charged."""
    import importlib.util

    if importlib.util.find_spec("sqlglot") is None:      # an operator's install, not the analyst
        raise ServiceError(503, "the sql endpoint is not available on this server (the "
                                "operator must install sqlglot: pip install "
                                "'privloss[analytics]')", outcome="sql-unavailable")
    from sqlglot.errors import SqlglotError

    from privloss.api.aggregate import make_query
    from privloss.query.sql import UnsupportedSql, parse_sql

    depth = _nesting(body["query"])
    if depth > MAX_NESTING:       # sqlglot's recursive descent would hit Python's limit
        _refuse(f"query: parentheses nested {depth} deep; at most {MAX_NESTING} allowed",
                "query")
    declared = set(dataset.columns)
    public = _public_schemas(dataset, body["query"])
    readable = declared | {c for columns in public.values() for c in columns}
    for column in body.get("bounds", {}):      # names first: nothing undeclared is echoed
        if column not in readable:
            _refuse(f"column {_shown(column)!r} (in bounds) is not granted on dataset "
                    f"{dataset.name!r} (allowed: {', '.join(dataset.columns)})", "bounds",
                    status=403, outcome="forbidden-column")
    named = _columns_named(body["query"])
    for _, column in named:       # anywhere in the text, before its form
        if column not in readable and column != dataset.user_column:
            _refuse(f"column {_shown(column)!r} is not granted on dataset {dataset.name!r} "
                    f"(allowed: {', '.join(dataset.columns)})", "query", status=403,
                    outcome="forbidden-column")
    try:
        parsed = parse_sql(body["query"], bounds={c: tuple(b) for c, b in
                                                  body.get("bounds", {}).items()},
                           privacy_unit=dataset.user_column)
    except UnsupportedSql as error:      # the CLI's hint, in this API's words
        message = re.sub(r"pass --bounds (\w+)=LOW:HIGH", r'add "bounds": {"\1": [low, high]}',
                         str(error))
        _refuse(f"query: unsupported SQL: {message}", _field_of(message))
    except RecursionError:
        _refuse("query: the expression is nested too deeply to parse", "query")
    except SqlglotError:       # the parser only maps ParseError; a TokenError lands here
        _refuse("query: unsupported SQL: the SQL query does not tokenize (an unterminated "
                "string or quoted name?)", "query")
    if parsed.table != dataset.name:
        _refuse(f"query: FROM names table {_shown(parsed.table)!r}; this endpoint queries "
                f"dataset {dataset.name!r} only (write FROM \"{dataset.name}\")", "query")
    if parsed.joins:
        return _joined_query(dataset, body, parsed, named, public)
    # a filter may name the privacy unit too (still DP: it only selects whose rows enter)
    filtered = set() if parsed.where is None else parsed.where.columns()
    for column in parsed.columns:
        if column not in declared and not (column == dataset.user_column
                                           and column in filtered):
            _refuse(f"column {_shown(column)!r} is not granted on dataset {dataset.name!r} "
                    f"(allowed: {', '.join(dataset.columns)})", "query", status=403,
                    outcome="forbidden-column")
    if parsed.rollup:           # GROUP BY ROLLUP(...): privloss.service.rollup_route
        from privloss.service.rollup_route import checked_rollup
        return checked_rollup(dataset, body, parsed)
    try:
        return make_query(privacy_unit=dataset.user_column, by=list(parsed.by),
                          aggregations=list(parsed.aggregations), epsilon=body["epsilon"],
                          delta=body.get("delta", 0.0), keys=body.get("keys"),
                          max_groups=body.get("max_groups", 1),
                          max_rows_per_group=body.get("max_rows_per_group", 1),
                          noise=body.get("noise", "laplace"),
                          budget_split=body.get("budget_split"), where=parsed.where)
    except ArithmeticError:          # a calibration that over- or underflows
        _refuse("the parameters are outside the range the calibration can compute (see the "
                "documented ranges)", None)
    except (ValueError, TypeError) as error:
        message = str(error)
        field = message.split(" ", 1)[0] if message else None
        if field not in SqlParameters.model_fields:
            field = None
        _refuse(message, field, body.get(field) if field in ("epsilon", "delta", "max_groups",
                                                              "max_rows_per_group", "noise")
                else None)


def _public_schemas(dataset, text: str) -> dict:
    """The column names of the dataset's public tables (all public) when the
    text may join one (it says JOIN), else none: nothing is read otherwise."""
    if not dataset.public_tables or not re.search(r"(?i)\bjoin\b", text):
        return {}
    from privloss.query import engines

    out = {}
    for name, path in dataset.public_tables.items():
        try:
            out[name] = tuple(engines.columns(path, dataset.engine))
        except (OSError, ValueError, TypeError):    # the operator's file, not the analyst
            raise ServiceError(503, f"public table {name!r} of dataset {dataset.name!r} is not "
                                    f"readable on this server (the operator must fix "
                                    f"public_tables)", outcome="public-table-unavailable") \
                from None
    return out


def _joined_query(dataset, body: dict, parsed, named: list, public: dict):
    """:func:`checked_query` for a query with JOINs: only the dataset's public
    tables may be joined (their columns are public), every column of the
    dataset itself must be granted (403), the privacy unit only as in a query
    without joins (counted distinct, filtered or a join key)."""
    from privloss.api.aggregate import make_query
    from privloss.api.sql import sql_parameters
    from privloss.query.sql import UnsupportedSql

    for join in parsed.joins:
        if join.table not in public:
            _refuse(f"query: JOIN names table {_shown(join.table)!r}, which is not a public "
                    f"table of dataset {dataset.name!r} (public tables: "
                    f"{', '.join(sorted(public)) or 'none'}; joins of private tables are not "
                    f"available on the service)", "query")
    declared = set(dataset.columns) | {dataset.user_column}
    for table, column in named:
        if table == parsed.alias and column not in declared:
            _refuse(f"column {_shown(column)!r} is not granted on dataset {dataset.name!r} "
                    f"(allowed: {', '.join(dataset.columns)})", "query", status=403,
                    outcome="forbidden-column")
    schemas = {dataset.name: tuple(dataset.columns) + (dataset.user_column,), **public}
    try:
        prepared = sql_parameters(
            body["query"], tables={dataset.name: None},
            public_tables={name: dataset.public_tables[name] for name in public},
            privacy_unit=dataset.user_column, engine=dataset.engine, schemas=schemas,
            bounds={c: tuple(b) for c, b in body.get("bounds", {}).items()})
    except UnsupportedSql as error:
        message = re.sub(r"pass --bounds (\w+)=LOW:HIGH", r'add "bounds": {"\1": [low, high]}',
                         str(error))
        _refuse(f"query: unsupported SQL: {message}", _field_of(message))
    joined = {name for join in prepared["joins"] for name in join.outputs}
    filtered = set() if prepared["where"] is None else prepared["where"].columns()
    keys = {key for join in prepared["joins"] for key in join.left_keys}
    used = list(prepared["by"]) + [a.column for a in prepared["aggregations"] if a.column]
    for column in used + sorted(filtered) + sorted(keys):
        if column in joined:
            continue
        if column not in dataset.columns and not (column == dataset.user_column
                                                  and column in filtered | keys):
            _refuse(f"column {_shown(column)!r} is not granted on dataset {dataset.name!r} "
                    f"(allowed: {', '.join(dataset.columns)})", "query", status=403,
                    outcome="forbidden-column")
    try:
        return make_query(privacy_unit=dataset.user_column, by=prepared["by"],
                          aggregations=prepared["aggregations"], epsilon=body["epsilon"],
                          delta=body.get("delta", 0.0), keys=body.get("keys"),
                          max_groups=body.get("max_groups", 1),
                          max_rows_per_group=body.get("max_rows_per_group", 1),
                          noise=body.get("noise", "laplace"),
                          budget_split=body.get("budget_split"), where=prepared["where"],
                          joins=prepared["joins"])
    except ArithmeticError:
        _refuse("the parameters are outside the range the calibration can compute (see the "
                "documented ranges)", None)
    except (ValueError, TypeError) as error:
        _refuse(str(error), None)


def _public_marker(query, dataset) -> dict | None:
    """What identifies the joined public tables' contents in a release's key
    (size and modification time): a changed public table is a new query."""
    if not query.joins:
        return None
    out = {}
    for join in query.joins:
        try:
            status = os.stat(join.source)
            out[join.table] = [str(join.source), status.st_size, status.st_mtime_ns]
        except OSError:
            out[join.table] = [str(join.source), None, None]
    return out


def _key(query, dataset, analyst, body: dict, data) -> dict:
    key = {**query.key(data, None), "command": "sql", "analyst": analyst.name,
           "consistent": bool(body.get("consistent", False))}
    if body.get("label") is not None:
        key["label"] = body["label"]
    return key


def plan_sql(ledger, dataset, analyst, body: dict, snapshot=None) -> dict:
    """The dry run: events, noise and 95% half-widths per measurement, threshold,
    and the ledger's read-only verdict for this analyst (nothing read or
    charged; the snapshot's column types are checked as for a release)."""
    import secrets

    from privloss.api.aggregate import describe_plan
    from privloss.service.queries import ensure_dataset

    query = checked_query(dataset, body)
    _check_types(query, dataset, snapshot)
    from privloss.service.rollup_route import is_rollup, plan_rollup_sql
    if is_rollup(query):
        return plan_rollup_sql(ledger, dataset, analyst, query, body)
    name = call_ledger(ensure_dataset, ledger, dataset)
    key = _key(query, dataset, analyst, body, {"dry-run": secrets.token_hex(8)})
    verdict = call_ledger(ledger.would_admit, name, key, query.plan.events,
                          analyst=analyst.name, analyst_budget=analyst.cap(dataset))
    return {"dry_run": True, "command": "sql", **describe_plan(query),
            **({"joins": query.joins_described} if query.joins else {}),
            "by": list(query.by), "aggregations": [a.name for a in query.aggregations],
            "events": [repr(event) for event in query.plan.events],
            "fits": bool(verdict["admitted"]),
            "verdict": {"fits": bool(verdict["admitted"]),
                        "spent_epsilon_after": verdict["spent_epsilon"]
                        if verdict["admitted"] else None,
                        "bound": verdict["bound"], "reason": verdict["reason"] or None},
            "ledger_dataset": name}


#: DuckDB type names SUM / AVG / quantiles accept (the snapshot's column types)
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
            "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL")


def _check_types(query, dataset, snapshot) -> None:
    """Value columns must be numeric in the dataset's snapshot (its schema, not
    its rows)."""
    types = snapshot.columns if snapshot is not None else {}
    for column in query.value_columns:
        kind = types.get(column)
        if kind is not None and not kind.upper().startswith(_NUMERIC):
            _refuse(f"column {column!r} of dataset {dataset.name!r} has type {kind}; SUM, AVG "
                    f"and quantiles need a numeric column (the operator can cast it in the "
                    f"dataset's sql)", "query")


def _check_schema(engine: str, plan, query, dataset, snapshot) -> None:
    """:func:`_check_types`, then the engine's own check, answered without its
    text (which would name the snapshot's file or the operator's SQL)."""
    from privloss.query import engines

    _check_types(query, dataset, snapshot)
    try:
        engines.check(plan, engine)
    except (ValueError, TypeError):
        _refuse(f"the columns {', '.join(map(repr, query.by + query.value_columns))} cannot "
                f"be aggregated on dataset {dataset.name!r} (SUM, AVG and quantiles need "
                f"numeric columns)", "query")


def run_sql(ledger, dataset, analyst, body: dict, snapshot=None) -> dict:
    """Check, charge, then compute; the response body (release, receipt, budget).
    ``snapshot``: what to read (taken before the charge)."""
    from privloss.serialize import event_to_json
    from privloss.api.aggregate import _parameters
    from privloss.query import engines
    from privloss.releases.aggregate import release_payload
    from privloss.query.bounding import draw_seed
    from privloss.query.errors import ComputationFailed, computation_failed
    from privloss.service.queries import (analyst_view, data_input, ensure_dataset,
                                          fingerprint, receipt_view)

    query = checked_query(dataset, body)
    from privloss.service.rollup_route import is_rollup, run_rollup_sql
    if is_rollup(query):
        return run_rollup_sql(ledger, dataset, analyst, query, body, snapshot,
                              lambda plan: _check_schema(dataset.engine, plan, query, dataset,
                                                         snapshot))
    name = call_ledger(ensure_dataset, ledger, dataset)
    plan = query.query_plan(data_input(dataset, snapshot), draw_seed())
    _check_schema(dataset.engine, plan, query, dataset, snapshot)
    consistent = bool(body.get("consistent", False))
    events = query.plan.events

    def compute() -> dict:
        """Everything that reads the data; runs only after the charge."""
        try:
            exact = engines.run(plan, dataset.engine).groups
            return release_payload(query.plan, query.aggregations, exact, keys=query.keys,
                                   source=None, consistent=consistent)
        except ComputationFailed:
            raise
        except (ValueError, TypeError, LookupError, ArithmeticError, MemoryError, OSError,
                RuntimeError) as error:      # never echo a data-dependent message
            raise computation_failed(error, "service sql release") from None

    data = fingerprint(dataset, snapshot)
    public = _public_marker(query, dataset)
    key = _key(query, dataset, analyst, body,
               data if public is None else {"from": data, "public": public})
    receipt = call_ledger(_charged, ledger, name, key, compute, events, analyst,
                          analyst.cap(dataset), dataset, body)
    payload = dict(receipt.result)
    return {**payload, "by": list(query.by),
            "aggregations": [a.name for a in query.aggregations],
            "parameters": {**_parameters(query), "consistent": consistent},
            "events": [repr(event) for event in events],
            "event_objects": [event_to_json(event) for event in events],
            "receipt": receipt_view(receipt, dataset, name),
            "budget": call_ledger(analyst_view, ledger, name, analyst.name,
                                  analyst.cap(dataset))}


def _charged(ledger, name, key, compute, events, analyst, cap, dataset, body: dict):
    """The ledger's charge; a budget refusal says first what epsilon still fits."""
    from privloss.budget import LedgerBudgetError
    from privloss.service.queries import refusal_saying_what_fits

    try:
        return ledger.release_with_receipt(name, key, compute, events, analyst=analyst.name,
                                           analyst_budget=cap)
    except LedgerBudgetError as error:
        def events_at(epsilon):
            try:
                return checked_query(dataset, {**body, "epsilon": epsilon}).plan.events
            except ServiceError as refused:
                raise ValueError(refused.message) from None
        raise refusal_saying_what_fits(ledger, name, analyst, cap, events, events_at, error,
                                       epsilon_range=(1e-3, 1e6)) from None


@router.post("/datasets/{name}/sql/plan",
             summary="dry run of a DP SQL query: cost, noise, interval widths, fits or not")
def sql_plan(name: str, body: SqlParameters, request: Request,
             analyst=Depends(current_analyst)):
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    parameters = body.model_dump(exclude_none=True)
    request.state.audit["parameters"] = {"command": "sql-plan", **parameters}
    from privloss.service.accuracy_goals import answered, planned
    parameters, plan = planned("sql", dataset, parameters,      # a goal's epsilon
                               audit=request.state.audit)
    result = answered(plan, plan_sql, state.ledger, dataset, analyst, parameters,
                      snapshot=state.snapshots.latest(dataset))
    request.state.outcome = "planned" if result["fits"] else "planned-refused"
    return result


@router.post("/datasets/{name}/sql",
             summary="a DP group-by written as SQL (COUNT, SUM, AVG, quantiles), charged")
def sql_release(name: str, body: SqlParameters, request: Request,
                analyst=Depends(current_analyst)):
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    parameters = body.model_dump(exclude_none=True)
    request.state.audit["parameters"] = {"command": "sql", **parameters}
    from privloss.service.accuracy_goals import answered, planned
    parameters, plan = planned("sql", dataset, parameters,      # a goal's epsilon
                               audit=request.state.audit)
    result = answered(plan, run_sql, state.ledger, dataset, analyst, parameters,
                      snapshot=state.snapshots.current(dataset))
    note_release(request, result)
    return result
