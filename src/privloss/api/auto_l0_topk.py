"""Private contribution bound ``l0="auto"`` for top-k and histograms
(``privloss topk/histogram --l0 auto``): a charged pre-pass that picks the
distinct items kept per privacy unit with a DP quantile, inside the release.

Definition
----------
1. **Budget.**  :data:`~privloss.api.auto_l0.L0_SHARE` (10%) of epsilon
   goes to one estimate of strength ``s`` (rounded down to a multiple of
   ``2^-30``).  For every public candidate ``L`` of
   :data:`~privloss.api.auto_l0.GROUP_CANDIDATES` (``1, 2, 4, .., 256``) the
   release is planned with ``l0 = L`` for the rest ``epsilon_r``
   (:func:`~privloss.api.request.make_request`); its events compose (at the
   release's delta, one adaptive unit) to ``(epsilon_L, delta)``.  A candidate
   whose request fails is dropped (public; the smallest must succeed).  The
   charged events, fixed before anything is read: ``BoundedRange(s)`` and
   ``ApproxDP(max_L epsilon_L, delta)`` (the release, whichever ``L`` is chosen).
2. **Pre-pass** (after the charge): per unit its number of distinct items
   (after the filter, before bounding); the engine returns the number of units
   and, per candidate, the units with at most that many items
   (:func:`privloss.query.engines.groups_per_unit`, the statistic of
   ``max_groups="auto"``); the exponential mechanism draws ``L`` at the 95%
   level (:func:`draw_interval`: the score is the distance of the quantile
   from the counts between the previous candidate and ``L``).
3. **Release**: the request planned for the drawn ``L`` (post-processing of a
   DP output); the drawn ``L`` is reported (``parameters["l0_estimated"]``).

Privacy guarantee
-----------------
User-level.  The estimate is ``s``-bounded-range hence ``s``-DP; for each
``L`` the release is ``(epsilon_L, delta)``-DP, so the release with a
data-chosen ``L`` is ``(max_L epsilon_L, delta)``-DP given the estimate
(adaptive composition, Dwork-Roth Theorem 3.16); the ledger composes the two
charged events in one release.

Citation
--------
Smith, STOC 2011 (DP quantiles); Wilson et al., PoPETs 2020; Amin et al.,
ICML 2019 (choosing contribution bounds).

Runtime
-------
``len(GROUP_CANDIDATES)`` request plans before the charge (milliseconds);
one extra engine query (distinct (unit, item) pairs).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["AutoL0", "is_auto", "auto_l0_plan", "release_auto_l0", "call"]

_STRENGTH_BITS = 30


def is_auto(l0) -> bool:
    """Whether ``l0`` asks for the estimate; any other string is refused with
    one line (``ValueError``), before anything is read or charged."""
    if not isinstance(l0, str):
        return False
    if l0.strip().lower() != "auto":
        raise ValueError(f"l0 must be an integer >= 1, None or 'auto', got {l0!r}")
    return True


@dataclass(frozen=True)
class AutoL0:
    """The public plan: ``epsilon`` (total), ``strength`` (the estimate's),
    ``requests`` (the planned request per candidate) and the charged ``events``."""

    command: str
    parameters: dict
    epsilon: float
    strength: Fraction
    requests: dict
    events: tuple

    @property
    def first(self):
        """The smallest candidate's request (the key's and the checks' template)."""
        return next(iter(self.requests.values()))

    def describe(self) -> dict:
        from privloss.api.auto_l0 import L0_LEVEL, L0_SHARE
        return {"share_of_epsilon": float(L0_SHARE), "epsilon": float(self.strength),
                "level": float(L0_LEVEL), "candidates": list(self.requests),
                "mechanism": "exponential mechanism over the public candidates (exact), "
                             "distinct items per unit",
                "events": [repr(event) for event in self.events]}

    def query_key(self, fingerprint, **columns) -> dict:
        from privloss.api.auto_l0 import L0_LEVEL, L0_SHARE
        key = self.first.query_key(fingerprint, **columns)
        return {**key, "epsilon": self.epsilon, "l0": "auto",
                "auto_l0": {"candidates": list(self.requests), "share": str(L0_SHARE),
                            "level": str(L0_LEVEL)}}

    def with_interaction(self, interaction: str) -> "AutoL0":
        return auto_l0_plan(self.command, epsilon=self.epsilon,
                            **{**self.parameters, "interaction": interaction})


def auto_l0_plan(command: str, **parameters) -> AutoL0:
    """The plan of ``l0="auto"`` (see the module docstring); ``parameters``
    are :func:`~privloss.api.request.make_request`'s (``l0`` left out).
    Raises ValueError / TypeError for bad input, before anything is read."""
    from privloss.api.request import make_request

    parameters = {name: value for name, value in parameters.items() if name != "l0"}
    epsilon = parameters.pop("epsilon")
    if isinstance(epsilon, str):
        raise ValueError(f"epsilon {epsilon!r} cannot be combined with l0 'auto'")
    first = make_request(command, epsilon=epsilon, l0=1, **parameters)   # every parameter
    parameters["interaction"] = first.interaction
    return _plan(command, parameters, first.epsilon, first.delta,
                 lambda **kw: make_request(command, **{**parameters, **kw}))


def _plan(command, parameters, epsilon, delta, make) -> AutoL0:
    from privloss.accounting import compose
    from privloss.api.auto_l0 import GROUP_CANDIDATES, L0_SHARE
    from privloss.events import ApproxDP, BoundedRange
    from privloss.releases.algorithms._common import float_at_least

    strength = Fraction(math.floor(Fraction(epsilon) * L0_SHARE * (1 << _STRENGTH_BITS)),
                        1 << _STRENGTH_BITS)
    if strength <= 0:
        raise ValueError(f"epsilon {epsilon!r} is too small for l0 'auto'")
    rest = math.nextafter(float(Fraction(epsilon) - strength), 0.0)
    requests, worst = {}, 0.0
    for l0 in GROUP_CANDIDATES:
        try:
            request = make(epsilon=rest, l0=l0)
            spent = compose(tuple(request.events()), target_delta=delta,
                            interaction="adaptive").epsilon
        except (ValueError, ArithmeticError):
            if l0 == GROUP_CANDIDATES[0]:
                raise                   # bad input: the smallest candidate says why
            continue
        requests[l0], worst = request, max(worst, float(spent))
    events = (BoundedRange(float_at_least(strength), count=1), ApproxDP(worst, float(delta)))
    return AutoL0(command, parameters, float(epsilon), strength, requests, events)


def _estimate(auto: AutoL0, data, *, user, item, engine, where, noise_source) -> int:
    """After the charge: the drawn candidate (see the module docstring)."""
    from privloss.query import engines

    candidates = tuple(auto.requests)
    plan = engines.histogram_plan(data, user_column=user, item_column=item, where=where)
    units, counts = engines.groups_per_unit(plan, candidates, engine)
    return candidates[draw_interval(counts, units, auto.strength, noise_source)]


def draw_interval(counts: list, units: int, strength: Fraction, source) -> int:
    """The index of the drawn candidate: exponential mechanism (exact sampler)
    with score ``-dist(q N, [c_{j-1}, c_j])``, ``c_j = #{u : k_u <= t_j}``,
    ``c_{-1} = 0``, ``q = L0_LEVEL``, scaled to integers: zero exactly for the
    candidate that rounds the ``q``-quantile up, so equal counts above the
    quantile (every unit below the candidate) do not tie with it (the score
    ``-|c_j - q N|`` of :func:`privloss.api.auto_l0._draw` ties them).

    Privacy guarantee: one unit added or removed moves every ``c_j`` by at
    most 1 and ``q N`` by ``q``, so each of ``q N - c_j``, ``c_{j-1} - q N``
    and 0 moves by at most ``max(q, 1 - q)``, and so does their maximum: the
    same sensitivity and score range ``2 max(q, 1 - q)`` as ``_draw``
    (McSherry-Talwar 2007; bounded range, Durfee-Rogers 2019)."""
    import numpy as np

    from privloss.api.auto_l0 import L0_LEVEL
    from privloss.mechanisms.exponential import ExponentialMechanism

    level = L0_LEVEL
    target = level.numerator * units
    below = [0] + [count * level.denominator for count in counts[:-1]]
    scores = [-max(0, target - count * level.denominator, low - target)
              for count, low in zip(counts, below)]
    mechanism = ExponentialMechanism(strength, score_range=2 * max(level, 1 - level)
                                     * level.denominator)
    return int(mechanism.release(np.array(scores, dtype=np.int64), source=source))


def release_auto_l0(auto: AutoL0, data=None, *, user: str, item: str, engine: str = "duckdb",
                    ledger=None, dataset=None, seed=None, interaction_given=None,
                    progress=None, nonnegative: bool = True, prepare=None, label=None,
                    where=None):
    """:func:`privloss.api.protocol.release` for ``l0="auto"``: the same
    protocol (check, budget check, fingerprint, one charge of ``auto.events``,
    then compute: the estimate, then the release for the drawn ``l0``)."""
    from privloss.api import protocol
    from privloss.query.engines import check_input

    owned = not isinstance(data, protocol.DataSource)
    raw_input = prepare is None and owned
    if prepare is None:
        def prepare():
            return protocol.prepare_data(data, engine=engine) if owned else data
    try:
        protocol.check_seed_and_label(seed, label)
        if engine != "duckdb":
            raise ValueError(f"l0 'auto' runs on the duckdb engine only, got engine {engine!r}")
        where, where_text = protocol.row_filter(where)
        ledger, dataset = protocol.resolve_ledger(ledger, dataset)
        if ledger is not None:
            recorded = protocol.ledger_interaction(auto.first, ledger, dataset,
                                                   interaction_given).interaction
            auto = auto.with_interaction(recorded)
        columns = dict(user_column=user, item_column=item, seed=seed)
        extra = {**({} if label is None else {"label": label}),
                 **({} if where_text is None else {"where": where_text})}
        if raw_input:
            protocol.check_paths(data)
        with protocol.Progress(progress) as status:
            if ledger is not None:
                status.step("checking the budget")
                verdict = ledger.would_admit(
                    dataset, {**auto.query_key({"dry-run": secrets.token_hex(8)}, **columns),
                              **extra}, auto.events)
                if not verdict["admitted"] and not protocol.may_be_stored(
                        ledger, dataset, {**auto.query_key(None, **columns), **extra}):
                    raise protocol.refusal(ledger, dataset, verdict)
            status.step("reading the data (fingerprint)")
            source = prepare()
            try:
                check_input(source.input, user_column=user, item_column=item, engine=engine,
                            where=where)
                return _charge(auto, source, status, columns=columns, extra=extra,
                               engine=engine, ledger=ledger, dataset=dataset,
                               nonnegative=nonnegative, where=(where, where_text))
            finally:
                source.close()
    finally:
        if not owned:
            data.close()


def _charge(auto, source, status, *, columns, extra, engine, ledger, dataset, nonnegative,
            where):
    from privloss.api import protocol
    from privloss.query.errors import ComputationFailed, computation_failed
    from privloss.query.engines import bounded_histogram

    seed = columns["seed"]
    noise_source = None
    if seed is not None:
        from privloss.samplers import InsecureSeededSource
        noise_source = InsecureSeededSource(seed)
    user, item = columns["user_column"], columns["item_column"]

    def compute() -> dict:
        """Everything that reads the data; runs after the charge."""
        status.step("estimating l0")
        try:
            l0 = _estimate(auto, source.input, user=user, item=item, engine=engine,
                           where=where[0], noise_source=noise_source)
        except ComputationFailed:
            raise
        except (ValueError, TypeError, LookupError, ArithmeticError, OSError,
                RuntimeError) as error:       # never echo a data-dependent message
            raise computation_failed(error, "l0 estimate") from None
        # the release for the drawn l0, without a ledger (charged here, once)
        request = auto.requests[l0]
        result = protocol._charge_and_compute(
            request, request.events(), source, status, user=user, item=item, engine=engine,
            ledger=None, dataset=None, seed=seed, nonnegative=nonnegative, label=None,
            where=where, bounded_histogram=bounded_histogram,
            failed=(ComputationFailed, computation_failed))
        payload = protocol.payload_of(result)
        payload["parameters"] = {**payload["parameters"], "l0_estimated": l0,
                                 "auto_l0": auto.describe()}
        return {name: payload[name] for name in ("items", "algorithm", "parameters", "events")}

    if ledger is None:
        payload = compute()
        spent, guarantee = protocol._own_spending(auto.events, auto.first.delta,
                                                  auto.first.interaction)
        return protocol._release_of(payload, auto.events, spent=spent, guarantee=guarantee,
                                    cached=False)
    key = {**auto.query_key(source.fingerprint, **columns), **extra}
    status.step("charging the ledger")
    receipt = ledger.release_with_receipt(dataset, key, compute, auto.events)
    return protocol._release_of(receipt.result, auto.events,
                                spent=protocol._ledger_spending(ledger, dataset, receipt.cached),
                                guarantee=None, cached=receipt.cached)


def call(command: str, arguments: dict):
    """:func:`privloss.topk` / :func:`privloss.histogram` with a string ``l0``
    (their ``arguments``): ``"auto"`` runs :func:`release_auto_l0`; any other
    string is refused (``ValueError``, nothing read or charged)."""
    from privloss.api.request import unit_column

    is_auto(arguments["l0"])
    parameters = {name: arguments[name] for name in ("epsilon", "delta", "k", "linf", "domain",
                                                     "d_bar", "interaction")}
    parameters.update({"algorithm": arguments["algorithm"]} if command == "topk"
                      else {"noise": arguments["noise"]})
    auto = auto_l0_plan(command, **parameters)
    return release_auto_l0(auto, arguments["data"],
                           user=unit_column(arguments["privacy_unit"], arguments["user"]),
                           item=arguments["item"], engine=arguments["engine"],
                           ledger=arguments["ledger"], dataset=arguments["dataset"],
                           seed=arguments["seed"], interaction_given=arguments["interaction"],
                           progress=arguments["progress"], label=arguments["label"],
                           where=arguments["where"])
