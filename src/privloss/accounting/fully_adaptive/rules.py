"""Filter policies and the admission check (fully-adaptive interaction).

A :class:`FilterPolicy` is fixed when the budget is created: the budget
(epsilon, delta), the rules, each rule's share of delta and the Renyi orders.
:func:`check` decides whether a history of release guarantees plus a candidate
fits. docs/accounting.md ("Interaction models and filters") restates each rule's
theorem and proves that the combination is a valid filter.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from privloss._exact import floor_difference, sum_upper
from privloss.accounting.errors import exactness_note
from privloss.accounting.fully_adaptive import filters
from privloss.accounting.fully_adaptive.release import RENYI_ORDERS, ReleaseGuarantee
from privloss.bounds._numeric import check_nonnegative, check_probability

#: rule name -> :class:`filters.Rule`
RULES = filters.RULES
#: shares of delta the default ("mixed") policy reserves for the Renyi and zCDP rules'
#: conversions; the rest (half) is the releases' own delta cap
DEFAULT_RENYI_SHARE = 0.05
MIXED_ZCDP_SHARE = 0.05


@dataclass(frozen=True)
class FilterPolicy:
    """A fully-adaptive budget, fixed when the budget is created.

    ``rules``: names in :data:`RULES`; ``delta_shares[i]``: the part of ``delta``
    reserved for rule i's conversion (0 for ``basic``); the releases' own deltas
    may sum to at most ``delta - sum(delta_shares)`` (:attr:`release_delta_cap`).
    ``renyi_orders``: the orders of the ``renyi`` rule (a subset of
    :data:`RENYI_ORDERS`; chosen from epsilon and the share when left empty).
    The rules combine: a release is admitted if any of them certifies the budget
    epsilon for the whole history with it (docs/accounting.md, "Combining rules").
    """

    epsilon: float
    delta: float
    rules: tuple = ("basic",)
    delta_shares: tuple = (0.0,)
    renyi_orders: tuple = ()

    def __post_init__(self):
        epsilon = check_nonnegative("epsilon", self.epsilon)
        delta = check_probability("delta", self.delta, closed_upper=False)
        if isinstance(self.rules, str):
            raise ValueError(f"rules must be a sequence of rule names, got {self.rules!r}")
        rules = tuple(str(name) for name in self.rules)
        shares = tuple(check_probability(f"delta_shares[{i}]", share)
                       for i, share in enumerate(self.delta_shares))
        if not rules:
            raise ValueError("rules must name at least one filter rule")
        for name in rules:
            if name not in RULES:
                raise ValueError(f"rules: unknown filter rule {name!r}; allowed: {', '.join(RULES)}")
        if len(set(rules)) != len(rules):
            raise ValueError(f"rules must not repeat a rule, got {rules!r}")
        if len(shares) != len(rules):
            raise ValueError(f"delta_shares must have one share per rule ({len(rules)}), "
                             f"got {len(shares)}")
        if sum(map(Fraction, shares), Fraction(0)) > Fraction(delta):      # exact
            raise ValueError(f"delta_shares sum to {math.fsum(shares):g}, more than delta = {delta:g}")
        for name, share in zip(rules, shares):
            if RULES[name].needs_share and share <= 0:
                raise ValueError(f"delta_shares: rule {name!r} needs a positive share of delta, "
                                 f"got {share!r}")
        orders = tuple(float(order) for order in self.renyi_orders)
        for order in orders:
            if order not in RENYI_ORDERS:
                raise ValueError(f"renyi_orders: {order!r} is not one of the stored orders "
                                 f"{RENYI_ORDERS}")
        if "renyi" in rules and not orders:
            share = shares[rules.index("renyi")]
            orders = filters.renyi_orders_for(epsilon, share)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "delta_shares", shares)
        object.__setattr__(self, "renyi_orders", tuple(sorted(set(orders))))

    @functools.cached_property          # exact rational arithmetic: once per policy
    def release_delta_cap(self) -> float:
        """The most the releases' own deltas may sum to: the largest binary64 number
        that, added exactly to the shares, stays within delta."""
        return floor_difference(self.delta, self.delta_shares)

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "rules": list(self.rules),
                "delta_shares": list(self.delta_shares), "renyi_orders": list(self.renyi_orders)}

    @classmethod
    def from_dict(cls, data: dict) -> "FilterPolicy":
        if not isinstance(data, dict):
            raise ValueError(f"a filter policy must be a JSON object, got {type(data).__name__}")
        missing = [name for name in ("epsilon", "delta") if name not in data]
        if missing:
            raise ValueError(f"filter policy is missing {', '.join(missing)}")
        rules = tuple(data.get("rules", ("basic",)))
        shares = tuple(data.get("delta_shares", (0.0,) * len(rules)))
        return cls(data["epsilon"], data["delta"], rules, shares,
                   tuple(data.get("renyi_orders", ())))


#: the declared mechanism mixes of :func:`default_policy`
MIXES = ("mixed", "pure", "gaussian")


def default_policy(epsilon: float, delta: float, mix: str = "mixed") -> FilterPolicy:
    """The filter policy for a budget, its delta split chosen from the declared mix.

    ``mix`` (issue 23; docs/accounting.md, "Choosing the delta split"):

    * ``"pure"``: releases without a delta of their own (pure DP, bounded range,
      Laplace, randomized response, ...): basic composition plus the zCDP filter
      with ALL of delta (no release delta cap is needed: a release with a delta
      of its own is refused, and the refusal says so);
    * ``"gaussian"``: Gaussian mechanisms: the Gaussian-DP filter of Smith and
      Thakurta with 99% of delta (exact for Gaussian streams: it admits what the
      fixed-parameter optimum admits), the zCDP filter with the rest (discrete
      Gaussians and other zCDP releases);
    * ``"mixed"`` (default): any release: basic composition, the zCDP filter
      with 5% of delta (all Renyi orders at once: no union over orders), the
      Renyi filter at four orders with 5% (releases with xi > 0, subsampled
      Gaussians), and 90% for the releases' own deltas (as before issue 23).

    ``delta = 0``: basic composition alone whatever the mix. Each rule is a valid
    filter and the shares plus the release cap sum to at most delta exactly, so
    the combination is a valid filter (docs/accounting.md, "Combining rules").
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_probability("delta", delta, closed_upper=False)
    if mix not in MIXES:
        raise ValueError(f"mix must be one of {', '.join(MIXES)}, got {mix!r}")
    if delta == 0:
        return FilterPolicy(epsilon, 0.0, ("basic",), (0.0,))
    if mix == "pure":
        return FilterPolicy(epsilon, delta, ("basic", "zcdp"), (0.0, delta))
    if mix == "gaussian":
        gdp = 0.99 * delta
        return FilterPolicy(epsilon, delta, ("gdp", "zcdp"), (gdp, floor_difference(delta, [gdp])))
    zcdp, renyi = MIXED_ZCDP_SHARE * delta, DEFAULT_RENYI_SHARE * delta
    return FilterPolicy(epsilon, delta, ("basic", "zcdp", "renyi"), (0.0, zcdp, renyi))


def mix_of(policy: dict) -> str:
    """The declared mix a stored :func:`default_policy` was made for (``mixed``
    for any other policy: its split holds for any release)."""
    rules = tuple(policy.get("rules", ())) if isinstance(policy, dict) else ()
    if rules == ("gdp", "zcdp"):
        return "gaussian"
    if rules == ("basic", "zcdp"):
        return "pure"
    return "mixed"


@dataclass(frozen=True)
class FilterStatus:
    """The answer of :func:`check`.

    ``rows``: per rule, (name, admitted, epsilon, delta, reason).
    """

    admitted: bool
    rule: str
    spent_epsilon: float
    spent_delta: float
    message: str
    rows: tuple = field(default=())

    def to_dict(self) -> dict:
        def number(value):
            return "inf" if math.isinf(value) else float(value)
        return {"admitted": self.admitted, "rule": self.rule,
                "spent_epsilon": number(self.spent_epsilon), "spent_delta": number(self.spent_delta),
                "message": self.message,
                "rows": [{"rule": name, "admitted": ok, "epsilon": number(eps), "delta": number(dlt),
                          "reason": reason} for name, ok, eps, dlt, reason in self.rows]}


def _delta_message(deltas: np.ndarray, used: float, cap: float, policy: FilterPolicy) -> str:
    """Names the binding delta constraint, e.g. '4 releases of delta 2.5e-07 reach ...'."""
    positive = deltas[deltas > 0]
    reserved = policy.delta - cap
    tail = (f" (budget delta {policy.delta:g}" +
            (f", of which {reserved:.3g} is reserved for the rules' conversions)" if reserved > 0
             else ")"))
    if positive.size and float(positive.max() - positive.min()) <= 1e-9 * float(positive.max()):
        return (f"{positive.size} releases of delta {float(positive[0]):.3g} reach {used:.3g}, "
                f"over the releases' delta cap {cap:.3g}{tail}")
    return (f"{positive.size} releases with deltas summing to {used:.3g} exceed the releases' "
            f"delta cap {cap:.3g}{tail}")


def check(policy: FilterPolicy, guarantees: Sequence[ReleaseGuarantee]) -> FilterStatus:
    """Do all ``guarantees`` (the history plus the candidate) fit ``policy``'s budget?

    Definition
        Admitted iff the releases' own deltas sum to at most
        ``policy.release_delta_cap`` and at least one rule certifies an epsilon
        within the budget (each rule with its share of delta).
    Privacy guarantee
        A filter that runs each proposed release only if :func:`check` of the
        admitted history plus that release admits it is (policy.epsilon,
        policy.delta)-DP in the fully-adaptive model: the releases' bad events
        cost at most the cap (one coupling), and partitioning the final
        transcripts by the first rule that admits them costs the sum of the
        rules' shares (docs/accounting.md, "Combining rules"). ``spent_delta`` is
        that total for the releases so far.
    Runtime
        O(n) numpy sums over n guarantees (O(1) given an incremental
        :class:`filters.Table`, except the ``advanced`` rule); no accountant call.
    """
    if not isinstance(policy, FilterPolicy):
        raise TypeError(f"policy must be a FilterPolicy, got {type(policy).__name__}")
    # a Table (e.g. a ledger's incremental one) is read as it is
    table = guarantees if isinstance(guarantees, filters.Table) else filters.Table(guarantees)
    used_delta = table.total("delta")          # rounded up: the comparison is exact
    cap = policy.release_delta_cap
    delta_ok = used_delta <= cap
    spent_delta = min(1.0, sum_upper([used_delta, *policy.delta_shares]))
    rows = []
    for name, share in zip(policy.rules, policy.delta_shares):
        epsilon, reason = RULES[name].certify(table, policy, share)
        admitted = filters.fits(epsilon, policy.epsilon)
        if not admitted and math.isfinite(epsilon):
            reason = f"{reason}: certifies epsilon {epsilon:.6g} > budget {policy.epsilon:g}"
        rows.append(filters.RuleRow(name, admitted, epsilon, min(1.0, used_delta + share), reason))
    best = min(rows, key=lambda row: (row.epsilon, policy.rules.index(row.name)))   # ties: first rule
    size = table.size
    if not delta_ok:
        message = "refused: " + _delta_message(table.column("delta"), used_delta, cap, policy)
        return FilterStatus(False, "delta-cap", best.epsilon, spent_delta, message,
                            tuple(row.as_tuple() for row in rows))
    if best.admitted:
        message = (f"admitted by rule {best.name}: {size} release(s) certified at epsilon "
                   f"{best.epsilon:.6g} <= {policy.epsilon:g} and delta {spent_delta:.3g} "
                   f"<= {policy.delta:g}")
        return FilterStatus(True, best.name, best.epsilon, spent_delta, message,
                            tuple(row.as_tuple() for row in rows))
    message = (f"refused: no rule certifies these {size} release(s) within epsilon "
               f"{policy.epsilon:g}; closest rule {best.name}: {best.reason}"
               f"{exactness_note(best.epsilon, policy.epsilon)}")
    return FilterStatus(False, best.name, best.epsilon, spent_delta, message,
                        tuple(row.as_tuple() for row in rows))


__all__ = ["FilterPolicy", "FilterStatus", "check", "default_policy", "RULES", "MIXES"]
