"""``privloss.client.Client``: the query service (``privloss serve``) from Python.

>>> from privloss.client import Client                                 # doctest: +SKIP
>>> client = Client("http://127.0.0.1:8000", token)                    # doctest: +SKIP
>>> client.plan("engagements", column="article", epsilon=0.1, delta=1e-7, k=5, l0=3,
...             d_bar=20)["fits"]                                      # doctest: +SKIP
True
>>> release = client.topk("engagements", column="article", epsilon=0.1, delta=1e-7, k=5,
...                       l0=3, d_bar=20)                               # doctest: +SKIP

Definition
----------
One method per endpoint of ``/v1`` (docs/service.md): :meth:`Client.datasets`,
:meth:`Client.budget`, :meth:`Client.history`, :meth:`Client.plan` (a dict, the
dry run), :meth:`Client.accuracy` (the plan for a ``target_half_width`` or
``min_release_users``, free), :meth:`Client.running` / ``running_plan``, :meth:`Client.topk` and :meth:`Client.histogram`, which return the
library's :class:`~privloss.releases.release.Release` (``spent`` is the
budget afterwards, ``receipt`` in ``parameters["receipt"]``), and
:meth:`Client.sql`, which returns what ``privloss.sql`` returns, an
:class:`~privloss.api.aggregate.AggregateRelease` (``to_arrow``,
``to_polars``, ``to_pandas``), with the response body in ``raw``.  Errors (RFC
9457 problem details) raise :class:`ServiceRequestError` with the HTTP
``status``, the server's ``detail`` and the offending ``field`` / ``value``;
a refused budget (409) is :class:`BudgetRefused`.  Every release takes
``target_half_width`` or ``min_release_users`` instead of ``epsilon``: the
server plans the epsilon (public parameters only) and the release carries
the plan as ``accuracy_plan``.

Privacy guarantee
-----------------
None by itself: the service charges its ledger before it computes.

Runtime
-------
One HTTP request per call (httpx; keep-alive across calls).
"""

from __future__ import annotations

__all__ = ["Client", "ServiceRequestError", "BudgetRefused", "release_from_response",
           "aggregate_release_from_response"]


class ServiceRequestError(RuntimeError):
    """The service answered with an error ``status`` (``field`` / ``value`` for a 422)."""

    def __init__(self, status: int, message: str, field=None, value=None):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.field, self.value = status, message, field, value


class BudgetRefused(ServiceRequestError):
    """409: the dataset's budget, the analyst's cap or the plan refuses (nothing charged)."""


def _spent(body: dict) -> dict:
    """The budget after a release, as the library's ``spent`` (plus the receipt)."""
    budget = body.get("budget", {})
    receipt = body.get("receipt", {})
    spent = {"dataset": receipt.get("dataset"), **budget.get("dataset", {}),
             "mine": budget.get("mine"), "receipt": receipt,
             "repeated_query_free": bool(receipt.get("cached"))}
    spent["epsilon"] = spent.get("spent_epsilon")
    spent["delta"] = spent.get("spent_delta")
    return spent


def release_from_response(body: dict):
    """The :class:`~privloss.releases.release.Release` of a ``/topk`` or
    ``/histogram`` response."""
    import numpy as np

    from privloss.serialize import event_from_json
    from privloss.releases.release import Release

    rows = body["items"]
    counts = [row["count"] for row in rows]
    dtype = np.int64 if all(isinstance(value, int) for value in counts) else np.float64
    events = tuple(event_from_json(value) for value in body.get("event_objects", ()))
    receipt = body.get("receipt", {})
    return Release(tuple(row["item"] for row in rows), np.array(counts, dtype=dtype),
                   tuple(tuple(row["ci95"]) for row in rows), events, body["algorithm"],
                   {**body.get("parameters", {}), "receipt": receipt}, spent=_spent(body),
                   guarantee=None, cached=bool(receipt.get("cached")),
                   accuracy_plan=_accuracy_plan(body))


def _accuracy_plan(body: dict):
    """The :class:`~privloss.api.accuracy_plan.AccuracyPlan` of a response to a
    ``target_half_width`` / ``min_release_users`` request (else None)."""
    if not isinstance(body.get("accuracy"), dict):
        return None
    from privloss.api.accuracy_plan import AccuracyPlan
    return AccuracyPlan.from_dict(body["accuracy"])


def aggregate_release_from_response(body: dict):
    """The :class:`~privloss.api.aggregate.AggregateRelease` of a ``/sql``
    response, as ``privloss.sql`` returns it (groups as tuples, intervals as
    pairs), with the body itself in ``raw`` (``release["receipt"]`` still
    reads it)."""
    from privloss.serialize import event_from_json

    rows = [{**row, "group": tuple(row["group"]),
             "ci95": {name: tuple(pair) for name, pair in row.get("ci95", {}).items()}}
            for row in body["rows"]]
    events = tuple(event_from_json(value) for value in body.get("event_objects", ()))
    receipt = body.get("receipt", {})
    return _remote_aggregate_release()(
        rows, list(body["columns"]), events, {**body.get("parameters", {}), "receipt": receipt},
        spent=_spent(body), guarantee=None, cached=bool(receipt.get("cached")),
        totals=body.get("totals"), accuracy_plan=_accuracy_plan(body), raw=body)


_REMOTE_AGGREGATE_RELEASE = None


def _remote_aggregate_release():
    """The class, made on first use (``privloss.api`` is imported only when
    needed, so ``privloss.client`` stays light)."""
    global _REMOTE_AGGREGATE_RELEASE
    if _REMOTE_AGGREGATE_RELEASE is None:
        from dataclasses import dataclass, field

        from privloss.api.aggregate import AggregateRelease

        @dataclass(frozen=True)
        class RemoteAggregateRelease(AggregateRelease):
            """An :class:`AggregateRelease` from the service; ``raw``: the
            response body (``release["receipt"]`` reads it, as the dict
            ``Client.sql`` returned before)."""

            raw: dict = field(default_factory=dict, repr=False, compare=False)

            def __getitem__(self, key):
                return self.raw[key]

        RemoteAggregateRelease.__module__ = __name__
        _REMOTE_AGGREGATE_RELEASE = RemoteAggregateRelease
    return _REMOTE_AGGREGATE_RELEASE


class Client:
    """A connection to ``url`` (``http://host:port``) with an analyst ``token``."""

    def __init__(self, url: str, token: str, *, timeout: float = 120.0, transport=None):
        import httpx

        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        if not isinstance(token, str) or not token.strip():
            raise ValueError("token must be a non-empty string (privloss serve add-analyst)")
        options = {} if transport is None else {"transport": transport}
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout,
                                  headers={"Authorization": f"Bearer {token.strip()}"},
                                  **options)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        response = self._http.request(method, "/v1" + path, json=body)
        try:
            data = response.json()
        except ValueError:
            data = {"detail": response.text[:200]}
        if response.status_code >= 400:
            kind = BudgetRefused if response.status_code == 409 else ServiceRequestError
            if not isinstance(data, dict):
                data = {"detail": str(data)[:200]}
            # RFC 9457 problem details ("detail"); older servers sent "error"
            message = data.get("detail", data.get("error", data))
            raise kind(response.status_code, str(message), data.get("field"),
                       data.get("value"))
        return data

    def _dataset(self, method: str, dataset: str, tail: str, body: dict | None = None) -> dict:
        from urllib.parse import quote

        if not isinstance(dataset, str) or not dataset:
            raise ValueError(f"dataset must be a non-empty name, got {dataset!r}")
        return self._call(method, f"/datasets/{quote(dataset, safe='')}{tail}", body)

    def datasets(self) -> list[dict]:
        """The datasets granted to me: columns, the dataset's and my budget."""
        return self._call("GET", "/datasets")["datasets"]

    def budget(self, dataset: str) -> dict:
        return self._dataset("GET", dataset, "/budget")["budget"]

    def history(self, dataset: str) -> list[dict]:
        """My releases on ``dataset`` (receipts and stored answers)."""
        return self._dataset("GET", dataset, "/history")["releases"]

    def plan(self, dataset: str, command: str = "topk", **parameters) -> dict:
        """The dry run: events, guarantee, noise, threshold, ``fits`` and the verdict."""
        return self._dataset("POST", dataset, "/plan", {"command": command, **parameters})

    def accuracy(self, dataset: str, command: str = "topk", **parameters) -> dict:
        """Plan for an accuracy (free, nothing read or charged): ``command``
        ``topk``, ``histogram``, ``sql`` or ``running``, the parameters of its
        dry run without ``epsilon`` and one goal, ``target_half_width`` or
        ``min_release_users``; the plan (``epsilon``, ``half_widths_95``,
        ``text``).  Every release method also takes either goal instead of
        ``epsilon`` and releases at the planned epsilon (the release's
        ``accuracy_plan``, or the body's ``accuracy``)."""
        return self._dataset("POST", dataset, "/accuracy", {"command": command, **parameters})

    def running_plan(self, dataset: str, **parameters) -> dict:
        """The dry run of running totals (``time_column``, ``period``, ``start``,
        ``end``, ``statistic``, ...): cost, interval widths, ``fits``."""
        return self._dataset("POST", dataset, "/running/plan", parameters)

    def running(self, dataset: str, **parameters) -> dict:
        """Private running totals (the response body: ``periods``, ``receipt``,
        ``budget``; ``accuracy`` with a goal instead of ``epsilon``)."""
        return self._dataset("POST", dataset, "/running", parameters)

    def topk(self, dataset: str, **parameters):
        """A private top-k (parameters as ``privloss.topk``, plus ``column``)."""
        return release_from_response(self._dataset("POST", dataset, "/topk", parameters))

    def histogram(self, dataset: str, **parameters):
        """A private histogram (parameters as ``privloss.histogram``, plus ``column``)."""
        return release_from_response(self._dataset("POST", dataset, "/histogram", parameters))

    def sql_plan(self, dataset: str, **parameters) -> dict:
        """The dry run of a DP SQL query (``query``, ``epsilon``, ``bounds``, ...):
        measurements, noise, 95% half-widths, ``fits`` and the verdict."""
        return self._dataset("POST", dataset, "/sql/plan", parameters)

    def sql(self, dataset: str, **parameters):
        """A DP group-by written as SQL (``query``: ``SELECT g, COUNT(*), AVG(x)
        FROM <dataset> GROUP BY g``; ``epsilon``, ``delta``, ``bounds``
        ``{"x": [low, high]}``, ``max_groups``, ``max_rows_per_group``, ``keys``,
        ...): an :class:`~privloss.api.aggregate.AggregateRelease`, as
        ``privloss.sql`` returns (``rows``, ``columns``, ``to_arrow()``,
        ``to_polars()``; ``spent`` is the budget afterwards with the receipt;
        the JSON body in ``raw``); raises :class:`BudgetRefused` (409) or
        :class:`ServiceRequestError`."""
        return aggregate_release_from_response(self._dataset("POST", dataset, "/sql",
                                                             parameters))
