"""The service's release path: parameters in, a charged release out.

Definition
----------
:func:`build_request` checks an analyst's parameters (the column against the
dataset's declared list, everything else with
:func:`privloss.api.request.make_request`, which names the field, its
value and the allowed range).  :func:`plan_release` is the dry run: the
release's events, its own guarantee, noise, threshold and the ledger's
read-only verdict for this analyst (``Ledger.would_admit`` with the analyst's
cap).  :func:`run_release` charges the ledger (``release_with_receipt`` with
``analyst`` and ``analyst_budget``: the dataset's budget and the analyst's cap
are checked in one transaction) and only then reads the data: the engine
aggregation and the algorithm run inside ``compute``.

The query every release reads is built from the operator's configuration
alone: the source (a file, the operator's SQL, a Spark table) and the
privacy-unit column come from the config; the analyst chooses only which
declared column to count (checked against the list, and a plain identifier).

The repeated-query key is the library's (:meth:`ReleaseRequest.query_key`)
plus the analyst's name and optional label: an identical query by the same
analyst returns the stored answer at no cost; another analyst's identical
query is a new release (otherwise one analyst would learn what another asked).

Budget windows (``window_days``): the ledger dataset of a release is
``"<dataset>@<window start>"`` (windows of ``window_days`` days counted from
1970-01-01 UTC), created on first use with the dataset's full budget.

Privacy guarantee
-----------------
Each ledger dataset (each window) is (epsilon, delta)-DP for the privacy unit
under its interaction model; every analyst's releases in it fit their cap.
Over ``n`` windows the loss composes: at most ``n * epsilon``, ``n * delta``
by basic composition (valid for fully adaptive choices).  Nothing data-dependent
is computed before the charge, so a refusal reveals nothing about the data.

Runtime
-------
See :mod:`privloss.api.protocol`: one engine aggregation and two short ledger
transactions per release; a plan is one calibration and one ledger read.
"""

from __future__ import annotations

import collections
import secrets
import threading
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

__all__ = ["ColumnNotGranted", "window_name", "ensure_dataset", "build_request", "plan_release",
           "run_release", "data_input", "fingerprint", "analyst_view", "refusal_saying_what_fits"]

_EPOCH = date(1970, 1, 1)
#: (ledger path, dataset) pairs known to exist (a ledger never deletes a dataset)
_EXISTING: set = set()


class ColumnNotGranted(PermissionError):
    """The analyst asked for a column the dataset does not declare (HTTP 403)."""


def window_name(dataset, now: datetime | None = None) -> str:
    """The ledger dataset charged now: the dataset's name, or ``name@YYYY-MM-DD``
    (the start of the current window)."""
    if dataset.window_days is None:
        return dataset.name
    today = (now or datetime.now(timezone.utc)).date()
    days = (today - _EPOCH).days
    start = _EPOCH + timedelta(days=days - days % dataset.window_days)
    return f"{dataset.name}@{start.isoformat()}"


def _plan_items(dataset):
    from privloss.api.plan_file import read_plan_file

    try:
        return read_plan_file(str(dataset.plan), dataset.interaction)
    except ValueError as error:         # PlanFileError, or an unreadable file
        raise ValueError(f"dataset {dataset.name!r}: plan {dataset.plan}: {error}") from None


def check_plan(dataset) -> None:
    """A dataset's plan file reads (ValueError naming the dataset and the file)."""
    if dataset.plan is not None:
        _plan_items(dataset)


def ensure_dataset(ledger, dataset, name: str | None = None) -> str:
    """Create the ledger dataset ``name`` (default: the current window) with the
    dataset's budget if it is missing; return its name.  Another process
    creating it first is fine (the budget is the same)."""
    from privloss.budget import DatasetExistsError

    name = window_name(dataset) if name is None else name
    if (ledger.path, name) in _EXISTING:       # ledger datasets are never deleted
        return name
    if name in ledger.datasets():
        _EXISTING.add((ledger.path, name))
        return name
    plan = None if dataset.plan is None else _plan_items(dataset)
    try:
        ledger.create_dataset(name, epsilon=dataset.epsilon, delta=dataset.delta,
                              interaction=dataset.interaction, plan=plan,
                              mix=dataset.mix)
    except DatasetExistsError:
        pass
    _EXISTING.add((ledger.path, name))
    return name


def data_input(dataset, snapshot=None):
    """What the engine reads: the dataset's snapshot
    (:mod:`privloss.service.snapshots`; with its loaded tables, so the engine
    reads the file once per version), or a Spark table."""
    from dataclasses import replace

    from privloss.query.inputs import SparkTable, resolve_input

    if snapshot is not None and snapshot.path is not None:
        return replace(resolve_input(Path(snapshot.path)), tables=snapshot.tables)
    if dataset.spark_table is not None:
        return SparkTable(dataset.spark_table)
    raise RuntimeError(f"dataset {dataset.name!r} has no snapshot (the service loads one "
                       f"at start-up)")


def fingerprint(dataset, snapshot=None) -> dict:
    """The data's identity in the repeated-query key: the snapshot's version (a
    keyed MAC of its bytes) and the operator's ``version`` if given; a Spark
    table without ``version`` gets a fresh nonce (every release is new)."""
    import secrets

    key = {"dataset": dataset.name}
    if dataset.version is not None:
        key["version"] = dataset.version
    if snapshot is not None and snapshot.path is not None:
        key["snapshot"] = snapshot.version
    elif dataset.version is None:
        key["unfingerprinted"] = secrets.token_hex(16)
    return key


def build_request(command: str, body: dict, dataset, interaction: str):
    """The checked :class:`~privloss.api.request.ReleaseRequest` of an
    analyst's parameters (``ColumnNotGranted`` for an undeclared column,
    ``ValueError`` naming the field for anything else)."""
    from privloss.api.request import make_request

    column = body.get("column")
    if column not in dataset.columns:
        shown = column if not isinstance(column, str) or len(column) <= 64 \
            else column[:64] + "..."
        raise ColumnNotGranted(f"column {shown!r} is not granted on dataset {dataset.name!r} "
                               f"(allowed: {', '.join(dataset.columns)})")
    options = dict(epsilon=body.get("epsilon"), delta=body.get("delta", 0.0), k=body.get("k"),
                   l0=body.get("l0"), linf=body.get("linf", 1), domain=body.get("domain"),
                   d_bar=body.get("d_bar"), interaction=interaction)
    if command == "topk":
        options["algorithm"] = body.get("algorithm")
    else:
        options["noise"] = body.get("noise") or "laplace"
    return make_request(command, **options)


def analyst_view(ledger, name: str, analyst: str, cap) -> dict:
    """The dataset's and the analyst's own spending (``Ledger.show``)."""
    summary = ledger.show(name, analyst=analyst, analyst_budget=cap)
    mine = summary["mine"]
    return {"ledger_dataset": name, "interaction": summary["interaction"],
            "dataset": {key: summary[key] for key in
                        ("budget_epsilon", "budget_delta", "spent_epsilon", "spent_delta",
                         "remaining_epsilon", "remaining_delta", "releases")},
            "mine": {key: mine[key] for key in
                     ("budget_epsilon", "budget_delta", "spent_epsilon", "spent_delta",
                      "remaining_epsilon", "remaining_delta", "releases")}}


#: dry-run views already computed, per frozen request (least recently used first)
_PLANS: collections.OrderedDict = collections.OrderedDict()
_PLANS_LIMIT = 1024
_PLANS_LOCK = threading.Lock()


def _request_plan(request) -> dict:
    """The data- and ledger-free part of a dry run: a pure function of the
    public parameters (a frozen request), so it is computed once per process."""
    from privloss.api.planning import plan_request

    with _PLANS_LOCK:
        view = _PLANS.get(request)
        if view is not None:
            _PLANS.move_to_end(request)
            return view
    view = plan_request(request).to_dict()       # calibrations: up to ~0.2 s, unlocked
    view.pop("ledger", None)
    with _PLANS_LOCK:
        _PLANS[request] = view
        while len(_PLANS) > _PLANS_LIMIT:
            _PLANS.popitem(last=False)
    return view


def plan_is_quick(dataset, command: str, body: dict) -> bool:
    """Whether :func:`plan_release` for these parameters needs no calibration
    (its view is cached): then it is a short read-only ledger transaction,
    cheap enough to run in the event loop. Bad parameters answer False (the
    regular path reports them)."""
    try:
        request = build_request(command, body, dataset, dataset.interaction)
    except (ColumnNotGranted, ValueError, TypeError):
        return False
    with _PLANS_LOCK:
        return request in _PLANS


def plan_release(ledger, dataset, analyst, command: str, body: dict) -> dict:
    """The dry run (nothing read, charged or computed)."""
    import secrets

    name = ensure_dataset(ledger, dataset)
    request = build_request(command, body, dataset, dataset.interaction)
    view = dict(_request_plan(request))      # top-level keys are added; nested ones shared, read-only
    cap = analyst.cap(dataset)
    key = {**request.query_key({"dry-run": secrets.token_hex(8)},
                               user_column=dataset.user_column, item_column=body["column"],
                               seed=None), "analyst": analyst.name}
    if body.get("label") is not None:
        key["label"] = body["label"]
    # the key holds a random dry-run token: no stored answer can match it
    verdict = ledger.would_admit(name, key, request.events(), analyst=analyst.name,
                                 analyst_budget=cap, fresh=True)
    view["column"] = body["column"]
    view["fits"] = bool(verdict["admitted"])
    view["verdict"] = {"fits": bool(verdict["admitted"]),
                       "spent_epsilon_after": verdict["spent_epsilon"]
                       if verdict["admitted"] else None,
                       "spent_delta_after": verdict["spent_delta"] if verdict["admitted"] else None,
                       "bound": verdict["bound"], "plan_item": verdict["plan_item"],
                       "reason": verdict["reason"] or None}
    view["ledger_dataset"] = name
    return view


def run_release(ledger, dataset, analyst, command: str, body: dict, snapshot=None) -> dict:
    """Charge, then compute; the response body (release, receipt, budget).
    ``snapshot``: what to read (:meth:`SnapshotStore.current`, taken before
    the charge)."""
    from privloss.query.engines import bounded_histogram, check_input
    from privloss.query.errors import ComputationFailed, computation_failed

    name = ensure_dataset(ledger, dataset)
    request = build_request(command, body, dataset, dataset.interaction)
    events = request.events()
    column = body["column"]
    key = {**request.query_key(fingerprint(dataset, snapshot), user_column=dataset.user_column,
                               item_column=column, seed=None), "analyst": analyst.name}
    if body.get("label") is not None:
        key["label"] = body["label"]
    source = data_input(dataset, snapshot)
    spec = request.spec

    def compute() -> dict:
        """Everything that reads the data; runs only after the charge."""
        try:
            # the whole file parsed first: a malformed row fails here (charged, fixed
            # text) wherever it is, also in a column the release does not read
            check_input(source, user_column=dataset.user_column, item_column=column,
                        engine=dataset.engine)
            histogram = bounded_histogram(source, user_column=dataset.user_column,
                                          item_column=column, l0=request.l0, linf=request.linf,
                                          engine=dataset.engine, **request.engine_request())
            result = spec.run(histogram, **request.calibration(), domain=request.domain,
                              nonnegative=True)
        except ComputationFailed:
            raise
        except (ValueError, TypeError, LookupError, ArithmeticError, MemoryError, OSError,
                RuntimeError) as error:      # never echo a data-dependent message
            raise computation_failed(error, f"service {request.algorithm} release") from None
        return {**result.to_dict(), "events": [repr(event) for event in result.events]}

    from privloss.budget import LedgerBudgetError

    try:
        receipt = ledger.release_with_receipt(name, key, compute, events, analyst=analyst.name,
                                              analyst_budget=analyst.cap(dataset))
    except LedgerBudgetError as error:
        def events_at(epsilon):
            return build_request(command, {**body, "epsilon": epsilon}, dataset,
                                 dataset.interaction).events()
        raise refusal_saying_what_fits(ledger, name, analyst, analyst.cap(dataset), events,
                                       events_at, error) from None
    from privloss.serialize import event_to_json

    payload = dict(receipt.result)
    payload["event_objects"] = [event_to_json(event) for event in events]
    payload["receipt"] = receipt_view(receipt, dataset, name)
    payload["budget"] = analyst_view(ledger, name, analyst.name, analyst.cap(dataset))
    payload["column"] = column
    return payload


def refusal_saying_what_fits(ledger, name: str, analyst, cap, events, events_at, error,
                             epsilon_range=None):
    """``error`` (a refused release) with first, in one phrase, the largest
    epsilon of the same release that still fits the dataset's budget and the
    analyst's cap ("refused: at most epsilon 0.081 fits; ...", by the exact
    search of ``--epsilon max``); ``events``: the refused ones (their verdict
    names the binding limit); ``events_at(epsilon)``: the release's events
    at that epsilon (a :class:`ServiceError` or ``ValueError`` there counts as
    "does not fit").  A function of public parameters and the ledger's totals
    only: no data is read."""
    from privloss.api.planning import what_fits
    from privloss.budget import LedgerBudgetError

    def admitted(epsilon: float) -> dict:
        try:
            events = events_at(epsilon)
        except (ValueError, ArithmeticError, LookupError) as failure:
            return {"admitted": False, "reason": str(failure), "bound": None}
        return ledger.would_admit(name, {"dry-run": secrets.token_hex(8)}, events,
                                  analyst=analyst.name, analyst_budget=cap, fresh=True)

    verdict = ledger.would_admit(name, {"dry-run": secrets.token_hex(8)}, events,
                                 analyst=analyst.name, analyst_budget=cap, fresh=True)
    fits = what_fits(ledger, name, verdict, admitted, epsilon_range=epsilon_range)
    if fits is None:
        return error
    return LedgerBudgetError(f"{fits}; {error}", dataset=error.dataset, spent=error.spent,
                             budget_epsilon=error.budget_epsilon,
                             budget_delta=error.budget_delta, would_spend=error.would_spend)


def receipt_view(receipt, dataset, name: str) -> dict:
    """The JSON receipt of a ledger release (plan items numbered from 1, as in history)."""
    return {"release_id": receipt.release_id, "cached": receipt.cached,
            "dataset": dataset.name, "ledger_dataset": name,
            "spent_epsilon_after": receipt.spent_epsilon, "bound": receipt.bound,
            "time": receipt.time, "plan_item": receipt.plan_item}
