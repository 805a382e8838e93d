"""The high-level API: ``privloss.topk(...)`` and ``privloss.histogram(...)``.

>>> import privloss                                                       # doctest: +SKIP
>>> release = privloss.topk("orders.csv.gz", privacy_unit="CustomerID", item="Description", k=5,
...                         epsilon=1.0, delta=1e-6, l0=50, d_bar=100,
...                         ledger="budget.sqlite", dataset="retail")
>>> release.to_pandas()                                                   # doctest: +SKIP

Definition
----------
One call runs the whole release protocol, in this order, so nothing that
depends on the data happens before the budget is charged:

1. check every public parameter (:func:`~privloss.api.request.make_request`)
   and fix the release's events from them alone (``AlgorithmSpec.events``);
2. with a ledger: the dataset's interaction model, then a read-only budget
   check (``Ledger.would_admit``); a refusal raises here, before any data is
   read, unless an earlier release of the same query may have stored an
   answer (then the data must be fingerprinted to find it);
3. fingerprint the data (:mod:`privloss.query.fingerprint`: files are
   read once into private copies under a keyed MAC; frames are MAC'ed in
   Arrow form; a DuckDB relation, a Spark DataFrame or a query on the caller's
   own connection cannot be fingerprinted, so every such release is new and
   charged) and check its schema (columns exist, a query is one SELECT);
4. ``Ledger.release_with_receipt`` charges the events (or returns the stored
   answer of an identical query at no cost) and only then calls ``compute``,
   which builds the bounded histogram inside the engine and runs the
   algorithm; without a ledger ``compute`` runs directly;
5. return a :class:`~privloss.releases.release.Release` built from what was
   recorded, with ``spent`` (the budget after it) and ``cached``.

``data``: a CSV / Parquet path (or directory of Parquet files), a SQL query
(:class:`~privloss.query.inputs.SqlQuery`, or a string starting with
SELECT / WITH / FROM), a pandas / Polars / Arrow frame, a DuckDB relation or
a Spark DataFrame.

Privacy guarantee
-----------------
The release is the algorithm's (see its docstring in
:mod:`privloss.releases.algorithms`), user-level under the contribution bounds
``l0`` / ``linf``; with a ledger the whole history fits the dataset's budget
under its interaction model (:mod:`privloss.budget`).  The returned
object holds only noisy outputs and public parameters.  ``seed`` is
INSECURE (predictable noise; the release is still charged).

Citation
--------
Rogers et al., arXiv:2002.05839 (LinkedIn's Audience Engagements API);
Cesar and Rogers, arXiv:2004.07223.

Runtime
-------
One read of the data files (fingerprint), one engine aggregation, the
algorithm on at most ``d_bar + 1`` (or every positive) counts, and two short
ledger transactions.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from privloss.api.progress import Progress  # noqa: F401  (re-exported)
from privloss.api.request import ReleaseRequest, make_request, unit_column

__all__ = ["topk", "histogram", "release", "DataSource", "prepare_data", "snapshot_path",
           "payload_of", "resolve_ledger", "NULL_RULE"]

#: said in every release's parameters (the rule, never how many rows)
NULL_RULE = "dropped"
#: failures inside ``compute`` that become the fixed "computation failed" error
#: (the engine's own errors already are ComputationFailed)
_COMPUTE_ERRORS = (ValueError, TypeError, LookupError, ArithmeticError, MemoryError, OSError,
                   RuntimeError)


# ----------------------------------------------------------------------------------
# data sources
# ----------------------------------------------------------------------------------

@dataclass
class DataSource:
    """What the engine reads (``input``), the data's keyed fingerprint for the
    repeated-query key, and the private snapshots to delete afterwards."""

    input: object
    fingerprint: object
    snapshots: list = field(default_factory=list)

    def close(self) -> None:
        for snapshot in self.snapshots:
            snapshot.close()
        self.snapshots.clear()


def snapshot_path(path, snapshots: list):
    """A ``FileInput`` over private copies of the file(s) at ``path`` (each read
    once, MAC'ed) and the MAC; the snapshot is appended to ``snapshots``.
    Raises ``FileNotFoundError``, ``OSError`` (unreadable) or ``ValueError``
    (not a regular file, unsupported format)."""
    from privloss.query.fingerprint import snapshot_files
    from privloss.query.inputs import FileInput, resolve_input

    path = Path(path)
    resolved = resolve_input(path)
    snapshot = snapshot_files(resolved.names, root=path if resolved.is_directory else None)
    snapshots.append(snapshot)
    return (FileInput(resolved.path, resolved.format, resolved.is_directory, snapshot.files,
                      tables=snapshot.tables), snapshot.mac)


def check_paths(data) -> None:
    """Raise ``FileNotFoundError`` / ``ValueError`` for a missing or unusable
    data file (of a path, or of a query's tables) without reading it."""
    from privloss.query.inputs import FileInput, QueryInput, SqlQuery, resolve_input

    if isinstance(data, str) and not isinstance(resolve_input(data), QueryInput):
        data = Path(data)
    if isinstance(data, os.PathLike):
        resolve_input(Path(data))
    elif isinstance(data, SqlQuery):
        for path in (data.tables or {}).values():
            if not isinstance(path, FileInput):
                resolve_input(Path(path))


def _unfingerprinted(kind: str) -> dict:
    # the result may depend on anything the caller's connection or session can
    # read: a fresh nonce makes every release a new, charged query
    return {"input": kind, "unfingerprinted": secrets.token_hex(16)}


def _frame_mac(frame, kind: str) -> str | None:
    """Keyed MAC of a frame's Arrow IPC stream (None: cannot be fingerprinted
    without computing, e.g. a Polars LazyFrame)."""
    import pyarrow as pa

    from privloss.query.fingerprint import keyed_mac

    if kind == "pandas":
        table = pa.Table.from_pandas(frame, preserve_index=False)
    elif kind == "polars":
        table = frame.to_arrow()
    elif kind == "arrow":
        table = frame if isinstance(frame, pa.Table) else pa.Table.from_batches([frame])
    else:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return keyed_mac("frame", sink.getvalue().to_pybytes())


def prepare_data(data, *, engine: str = "duckdb") -> DataSource:
    """Classify ``data`` (:func:`privloss.query.inputs.resolve_input`),
    snapshot and fingerprint it (see the module docstring).  Close the result
    (or use :func:`release`, which does)."""
    from privloss.query.fingerprint import keyed_mac
    from privloss.query.inputs import (FileInput, FrameInput, QueryInput, SqlQuery,
                                           resolve_input)

    if isinstance(data, str) and not isinstance(resolve_input(data), QueryInput):
        data = Path(data)
    if isinstance(data, os.PathLike):
        source = DataSource(None, None)
        source.input, mac = snapshot_path(data, source.snapshots)
        source.fingerprint = {"file": os.path.abspath(data), "mac": mac}
        return source
    if isinstance(data, str):
        data = SqlQuery(data)
    if isinstance(data, SqlQuery):
        source = DataSource(None, None)
        try:
            tables, macs = {}, []
            for name, path in (data.tables or {}).items():
                if isinstance(path, FileInput):     # already a private snapshot
                    tables[name] = path
                    macs += [name, keyed_mac("snapshot", *path.names)]
                    continue
                tables[name], mac = snapshot_path(path, source.snapshots)
                macs += [name, mac]
            source.input = SqlQuery(data.text, data.connection, tables or None)
            if data.connection is not None or engine == "spark":
                source.fingerprint = {"sql": data.text, "tables": sorted(tables),
                                      **_unfingerprinted("sql")}
            else:
                source.fingerprint = {"sql": data.text, "tables": sorted(tables),
                                      "mac": keyed_mac("sql", data.text, *macs)}
        except BaseException:
            source.close()
            raise
        return source
    resolved = resolve_input(data)
    if isinstance(resolved, FrameInput):
        mac = _frame_mac(data, resolved.kind)
        if mac is not None:
            return DataSource(data, {"frame": resolved.kind, "mac": mac})
        return DataSource(data, _unfingerprinted(resolved.kind))
    return DataSource(data, _unfingerprinted(type(resolved).__name__))


# ----------------------------------------------------------------------------------
# ledgers
# ----------------------------------------------------------------------------------

def resolve_ledger(ledger, dataset):
    """``(Ledger or None, dataset)``: ``ledger`` is a Ledger or a path to an
    existing ledger file (never created here); both or neither must be given."""
    if ledger is None and dataset is None:
        return None, None
    if ledger is None or dataset is None:
        raise ValueError("give both ledger and dataset (the budget to charge), or neither")
    from privloss.budget import Ledger, check_dataset_name
    check_dataset_name(dataset)
    if not isinstance(ledger, Ledger):
        ledger = Ledger(ledger, create=False)
    return ledger, dataset


def ledger_interaction(request: ReleaseRequest, ledger, dataset, given) -> ReleaseRequest:
    """The request under the dataset's interaction model; ``given`` (the
    caller's explicit choice, or None) must agree with it."""
    if ledger is None:
        return request
    recorded = ledger.show(dataset)["interaction"]
    if given is not None and request.interaction != recorded:
        raise ValueError(f"interaction {request.interaction} disagrees with dataset "
                         f"{dataset!r}, whose releases compose as {recorded}")
    return request.with_interaction(recorded)


def may_be_stored(ledger, dataset, wanted: dict) -> bool:
    """Whether an earlier release asked the query ``wanted`` (its key with
    ``data`` None; compared in the stored JSON form): only then can a stored
    answer make a refused budget irrelevant.  Every release kind asks this."""
    import json

    wanted = json.loads(json.dumps(wanted))
    for row in ledger.history(dataset):
        query = row["query"]
        if row["status"] == "done" and isinstance(query, dict) \
                and {**query, "data": None} == wanted:
            return True
    return False


def _may_be_stored(ledger, dataset, request: ReleaseRequest, user_column, item_column,
                   seed, label=None, where=None) -> bool:
    wanted = request.query_key(None, user_column=user_column, item_column=item_column, seed=seed)
    if label is not None:
        wanted["label"] = label
    if where is not None:
        wanted["where"] = where
    return may_be_stored(ledger, dataset, wanted)


def row_filter(where) -> tuple:
    """(filter tree or None, its canonical text or None) of ``where``: a
    condition's text (:func:`privloss.query.sql.parse_where`) or a
    :mod:`privloss.query.filters` tree."""
    if where is None:
        return None, None
    from privloss.query.filters import check_filter, describe
    if isinstance(where, str):
        from privloss.query.sql import parse_where
        where = parse_where(where)
    check_filter(where)
    return where, describe(where)


def check_budget_first(ledger, dataset, request: ReleaseRequest, events, *, user_column,
                       item_column, seed, label=None, where=None) -> None:
    """Refuse at once, before any data is read, a release the ledger would
    refuse (read-only ``would_admit`` with a data-free key), unless a stored
    answer of the same query may exist."""
    key = request.query_key({"dry-run": secrets.token_hex(8)}, user_column=user_column,
                            item_column=item_column, seed=seed)
    verdict = ledger.would_admit(dataset, key, events)
    if verdict["admitted"]:
        return
    if _may_be_stored(ledger, dataset, request, user_column, item_column, seed, label, where):
        return
    from privloss.api.planning import request_refusal
    raise request_refusal(ledger, dataset, verdict, request, user=user_column,
                          item=item_column, seed=seed)


def check_seed_and_label(seed, label) -> None:
    """A release's ``seed`` (an integer >= 0 or None) and ``label`` (a string or
    None), before anything is read."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a string or None, got {label!r}")


def refusal(ledger, dataset, verdict: dict, *, admitted=None, epsilon_range=None) -> Exception:
    """The error :meth:`Ledger.release` would raise for a refused ``would_admit``
    verdict: ``LedgerPlanError`` for a plan mismatch, else ``LedgerBudgetError``
    naming the binding constraint and what remains (first what still fits, with
    ``admitted``: :func:`privloss.api.planning.what_fits`)."""
    from privloss.budget import LedgerBudgetError, LedgerPlanError

    reason = verdict["reason"] or "the release does not fit"
    if verdict.get("refusal") == "plan":
        return LedgerPlanError(reason)
    fits = None
    if admitted is not None:
        from privloss.api.planning import what_fits
        fits = what_fits(ledger, dataset, verdict, admitted, epsilon_range=epsilon_range)
    summary = ledger.show(dataset)
    if summary.get("odometer") is not None and not reason.startswith("dataset"):
        reason = (f"dataset {dataset!r} refused the release: {reason} (spent epsilon "
                  f"{summary['spent_epsilon']:.6g}); nothing was read, recorded or computed")
    elif not reason.startswith("privacy budget"):
        reason = (f"privacy budget of dataset {dataset!r} exceeded: {reason} (spent epsilon "
                  f"{summary['spent_epsilon']:.6g}, delta {summary['spent_delta']:.3g}; "
                  f"remaining epsilon {summary['remaining_epsilon']:.6g} of "
                  f"{summary['budget_epsilon']:g}, delta budget {summary['budget_delta']:g}); "
                  f"nothing was read, recorded or computed")
    if fits is not None:
        reason = f"{fits}; {reason}"
    return LedgerBudgetError(reason, dataset=dataset, spent=summary["spent_epsilon"],
                             budget_epsilon=summary["budget_epsilon"],
                             budget_delta=summary["budget_delta"],
                             would_spend=verdict["spent_epsilon"])


# ----------------------------------------------------------------------------------
# progress
# ----------------------------------------------------------------------------------

# ----------------------------------------------------------------------------------
# the release
# ----------------------------------------------------------------------------------

def _plain(value):
    """JSON-safe copy of algorithm parameters (Fractions -> str)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def _own_spending(events, delta: float, interaction: str) -> tuple[dict, dict]:
    """Without a ledger: what the release costs under the budget's model, and
    its own guarantee (one release is one unit: the adaptive bounds hold inside it)."""
    from privloss.accounting import compose

    spent = compose(tuple(events), target_delta=delta, interaction=interaction)
    own = compose(tuple(events), target_delta=delta, interaction="adaptive")
    return ({"epsilon": spent.epsilon, "delta": delta, "bound": spent.bound,
             "interaction": interaction},
            {"epsilon": own.epsilon, "delta": delta, "bound": own.bound,
             "interaction": "adaptive",
             "note": "this release's own guarantee, composed as one unit"})


def _ledger_spending(ledger, dataset, cached: bool) -> dict:
    summary = ledger.show(dataset)
    return {"dataset": dataset, "epsilon": summary["spent_epsilon"],
            "delta": summary["spent_delta"], "budget_epsilon": summary["budget_epsilon"],
            "budget_delta": summary["budget_delta"], "releases": summary["releases"],
            "repeated_query_free": cached}


def _release_of(payload: dict, events, *, spent, guarantee, cached: bool):
    from privloss.releases.release import Release

    rows = payload["items"]
    counts = [row["count"] for row in rows]
    dtype = np.int64 if all(isinstance(value, int) for value in counts) else np.float64
    return Release(tuple(row["item"] for row in rows), np.array(counts, dtype=dtype),
                   tuple(tuple(row["ci95"]) for row in rows), tuple(events),
                   payload["algorithm"], dict(payload["parameters"]), spent=spent,
                   guarantee=guarantee, cached=cached)


def payload_of(result) -> dict:
    """The ``--json`` object of a release: ``items``, ``algorithm``,
    ``parameters``, ``events`` (reprs), ``spent`` and, without a ledger,
    ``guarantee``.  The CLI prints exactly this."""
    payload = {"items": result.rows(), "algorithm": result.algorithm,
               "parameters": _plain(result.parameters),
               "events": [repr(event) for event in result.events], "spent": result.spent}
    if result.guarantee is not None:
        payload["guarantee"] = result.guarantee
    return payload


def release(request: ReleaseRequest, data=None, *, user: str, item: str,
            engine: str = "duckdb", ledger=None, dataset=None, seed=None,
            interaction_given=None, progress: bool | None = None, nonnegative: bool = True,
            prepare=None, label: str | None = None, largest_epsilon: bool = False,
            where=None):
    """Run one release of ``request`` on ``data`` (a value :func:`prepare_data`
    accepts, or a prepared :class:`DataSource`, which is closed afterwards).
    ``prepare``: instead of ``data``, a callable returning a :class:`DataSource`,
    called only after the budget check (the CLI's own snapshots, with flag
    names in their errors).  ``label``: a caller's name for the question, part
    of the repeated-query key (the same question under a new label is a new,
    charged release with fresh noise).  ``where``: a row filter (a condition's
    text, or a :mod:`privloss.query.filters` tree; 1-stable, no extra cost),
    part of the repeated-query key.  See the module docstring; :func:`topk` and
    :func:`histogram` call this."""
    from privloss.query.engines import bounded_histogram, check_input
    from privloss.query.errors import ComputationFailed, computation_failed

    owned = not isinstance(data, DataSource)
    raw_input = prepare is None and owned       # a value the API itself prepares
    if prepare is None:
        def prepare():
            return prepare_data(data, engine=engine) if owned else data
    try:
        check_seed_and_label(seed, label)
        where, where_text = row_filter(where)
        ledger, dataset = resolve_ledger(ledger, dataset)
        request = ledger_interaction(request, ledger, dataset, interaction_given)
        if largest_epsilon:         # epsilon="max": the largest that still fits, data-free
            from privloss.api.planning import max_epsilon_of
            request = request.with_epsilon(max_epsilon_of(
                request, ledger=ledger, dataset=dataset, user=user, item=item, seed=seed))
        events = request.events()
        if raw_input:
            check_paths(data)           # a missing file is bad input, not a refusal
        with Progress(progress) as status:
            if ledger is not None:
                status.step("checking the budget")
                check_budget_first(ledger, dataset, request, events, user_column=user,
                                   item_column=item, seed=seed, label=label,
                                   where=where_text)
            status.step("reading the data (fingerprint)")
            source = prepare()
            try:
                check_input(source.input, user_column=user, item_column=item, engine=engine,
                            where=where)
                return _charge_and_compute(request, events, source, status, user=user,
                                           item=item, engine=engine, ledger=ledger,
                                           dataset=dataset, seed=seed, nonnegative=nonnegative,
                                           label=label, where=(where, where_text),
                                           bounded_histogram=bounded_histogram,
                                           failed=(ComputationFailed, computation_failed))
            finally:
                source.close()
    finally:
        if not owned:
            data.close()


def _charge_and_compute(request, events, source, status, *, user, item, engine, ledger,
                        dataset, seed, nonnegative, label, where, bounded_histogram, failed):
    computation_failed_type, computation_failed = failed
    spec = request.spec
    noise_source = None
    if seed is not None:
        from privloss.samplers import InsecureSeededSource
        noise_source = InsecureSeededSource(seed)
    engine_request = request.engine_request()

    def compute() -> dict:
        """Everything that reads the data; runs after the charge."""
        try:
            status.step(f"reading and bounding the data in {engine}")
            histogram = bounded_histogram(source.input, user_column=user, item_column=item,
                                          l0=request.l0, linf=request.linf, engine=engine,
                                          seed=seed, source=noise_source, where=where[0],
                                          measurement="top-k" if request.command == "topk"
                                          else "histogram", noise=request.algorithm,
                                          **engine_request)
            status.step(f"releasing ({request.algorithm})")
            result = spec.run(histogram, **request.calibration(), domain=request.domain,
                              nonnegative=nonnegative, source=noise_source)
        except computation_failed_type:
            raise
        except _COMPUTE_ERRORS as error:     # never echo a data-dependent message
            raise computation_failed(error, f"{request.algorithm} release") from None
        return {"items": result.rows(), "algorithm": result.algorithm,
                "parameters": {**_plain(result.parameters), "nulls": NULL_RULE},
                "events": [repr(event) for event in result.events]}

    if ledger is None:
        payload = compute()
        spent, guarantee = _own_spending(events, request.delta, request.interaction)
        return _release_of(payload, events, spent=spent, guarantee=guarantee, cached=False)
    key = request.query_key(source.fingerprint, user_column=user, item_column=item, seed=seed)
    if label is not None:
        key["label"] = label
    if where[1] is not None:
        key["where"] = where[1]
    status.step("charging the ledger")
    receipt = ledger.release_with_receipt(dataset, key, compute, events)
    return _release_of(receipt.result, events,
                       spent=_ledger_spending(ledger, dataset, receipt.cached), guarantee=None,
                       cached=receipt.cached)


def _is_max(epsilon) -> bool:
    """``epsilon="max"``: the largest epsilon the ledger's dataset still admits."""
    return isinstance(epsilon, str) and epsilon.strip().lower() == "max"


def topk(data, *, privacy_unit: str | None = None, item: str, k: int, epsilon=None,
         delta: float = 0.0, l0: int | None = None, linf: int = 1, domain=None,
         d_bar: int | None = None, algorithm: str | None = None, engine: str = "duckdb",
         ledger=None, dataset: str | None = None, seed: int | None = None,
         interaction: str | None = None, progress: bool | None = None,
         label: str | None = None, where=None, user: str | None = None,
         target_half_width: float | None = None, min_release_users: int | None = None):
    """The ``k`` most frequent items of ``data`` (distinct users per item after
    per-user bounding), privately; returns a
    :class:`~privloss.releases.release.Release`.

    ``privacy_unit`` / ``item``: column names (``user=`` is the deprecated spelling
    of ``privacy_unit``); ``epsilon`` / ``delta``: the total spend
    of this release (``epsilon="max"``: the largest that the ledger's dataset still
    admits, found without reading data; or instead of ``epsilon``:
    ``target_half_width=W``, the smallest epsilon whose 95% half-width is at most
    ``W``, or ``min_release_users=N``, the epsilon at which a group of ``N`` users
    is released with probability 95%: the release then carries its plan as
    ``accuracy_plan``, :mod:`privloss.api.accuracy_target`); ``l0``: at most that many distinct items per user (chosen
    at random; ``"auto"``: a DP 95th percentile for 10% of epsilon,
    :mod:`privloss.api.auto_l0_topk`), ``linf``: each user's count per item capped; ``domain``: the
    public list of items (known domain; the noise is then scaled for
    ``min(l0, len(domain))``); ``d_bar``: unknown domain, how many top items the
    algorithm reads; ``algorithm``: one of
    :data:`~privloss.api.request.TOPK_ALGORITHMS` (default known-gumbel
    with a domain, unknown-gumbel without); ``engine``: ``"duckdb"`` or
    ``"spark"``; ``ledger`` (a :class:`~privloss.budget.Ledger` or the
    path of an existing ledger file) and ``dataset``: charge that budget first;
    ``seed``: INSECURE reproducible noise; ``interaction``: the budget's model
    (default the ledger's, else fully-adaptive); ``progress``: a status line on
    stderr (default: when stderr is a terminal); ``label``: a name for the
    question in the repeated-query key (same data, parameters and label: the
    stored answer, free; a new label: a new release with fresh noise, charged);
    ``where``: keep only the rows where this condition holds (SQL text such as
    ``"Quantity > 0"``, or a :mod:`privloss.query.filters` tree; no privacy cost).

    Raises ``ValueError`` / ``TypeError`` for bad parameters before anything
    is read, :class:`~privloss.budget.LedgerBudgetError` /
    ``LedgerPlanError`` when the ledger refuses (nothing read, computed or
    charged), :class:`~privloss.query.errors.ComputationFailed` when the
    engine fails after the charge (the charge stays).
    """
    if epsilon is None or target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_target import call     # a planned epsilon
        return call("topk", locals())
    if isinstance(l0, str):          # l0="auto" (the estimate): privloss.api.auto_l0_topk
        from privloss.api.auto_l0_topk import call
        return call("topk", locals())
    largest = _is_max(epsilon)
    request = make_request("topk", epsilon=1.0 if largest else epsilon, delta=delta, k=k,
                           l0=l0, linf=linf, domain=domain, d_bar=d_bar, algorithm=algorithm,
                           interaction=interaction)
    return release(request, data, user=unit_column(privacy_unit, user), item=item,
                   engine=engine, ledger=ledger, dataset=dataset, seed=seed,
                   interaction_given=interaction, progress=progress, label=label,
                   largest_epsilon=largest, where=where)


def histogram(data, *, privacy_unit: str | None = None, item: str, epsilon=None,
              delta: float = 0.0, l0: int | None = None, linf: int = 1, domain=None,
              d_bar: int | None = None, noise: str = "laplace", k: int | None = None,
              engine: str = "duckdb", ledger=None, dataset: str | None = None,
              seed: int | None = None, interaction: str | None = None,
              progress: bool | None = None, label: str | None = None, where=None,
              user: str | None = None, target_half_width: float | None = None,
              min_release_users: int | None = None):
    """A private histogram of ``item`` (distinct users per item after per-user
    bounding): every item of ``domain`` (known domain), or the items above a
    noisy threshold (unknown domain; needs ``delta > 0``).  ``noise``:
    ``"laplace"`` (known-laplace / unknown-laplace) or ``"gaussian"``
    (known-gaussian / trunc-gauss); ``k`` keeps the top k (post-processing).
    Other arguments, the result and the errors as :func:`topk`."""
    if epsilon is None or target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_target import call     # a planned epsilon
        return call("histogram", locals())
    if isinstance(l0, str):          # l0="auto" (the estimate): privloss.api.auto_l0_topk
        from privloss.api.auto_l0_topk import call
        return call("histogram", locals())
    largest = _is_max(epsilon)
    request = make_request("histogram", epsilon=1.0 if largest else epsilon, delta=delta, k=k,
                           l0=l0, linf=linf, domain=domain, d_bar=d_bar, noise=noise,
                           interaction=interaction)
    return release(request, data, user=unit_column(privacy_unit, user), item=item,
                   engine=engine, ledger=ledger, dataset=dataset, seed=seed,
                   interaction_given=interaction, progress=progress, label=label,
                   largest_epsilon=largest, where=where)

