"""The filter rules: each certifies an epsilon for a sequence of release guarantees.

Each rule is a valid privacy filter on its own (its theorem is restated in the
docstring). Several rules combine: a release is admitted if at least one rule
admits the whole history with it, and the total delta is the releases' own deltas
plus the sum of the rules' shares (proof in docs/accounting.md, "Combining
rules": partition the final transcripts by the first rule that admits them).

Every rule reads a column :class:`Table` of the stored guarantees (numpy columns,
math.fsum sums) and returns the epsilon it certifies at its share of delta.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter

import numpy as np

from privloss._exact import sum_upper
from privloss.accounting.errors import fits_budget
from privloss.accounting.fully_adaptive.release import RENYI_ORDERS, ReleaseGuarantee

#: relative slack added to values computed with transcendental functions (logs,
#: square roots: a few ulps of error), so that the exact budget comparison is sound
OUTWARD = 1e-12


class Table:
    """Columns of n release guarantees, built on demand (float arrays of length n)."""

    def __init__(self, guarantees: Sequence[ReleaseGuarantee]):
        items = list(guarantees)
        if not set(map(type, items)) <= {ReleaseGuarantee}:      # one C-level pass
            for index, item in enumerate(items):
                if not isinstance(item, ReleaseGuarantee):
                    raise TypeError(f"guarantees[{index}] must be a ReleaseGuarantee, got "
                                    f"{type(item).__name__}")
        self._items = items
        self._columns: dict = {}

    of = classmethod(lambda cls, guarantees: cls(guarantees))

    @property
    def size(self) -> int:
        return len(self._items)

    def column(self, name: str) -> np.ndarray:
        if name not in self._columns:
            self._columns[name] = np.fromiter(map(attrgetter(name), self._items),
                                              dtype=float, count=len(self._items))
        return self._columns[name]

    def renyi(self, order_index: int) -> np.ndarray:
        key = ("renyi", order_index)
        if key not in self._columns:
            values = map(itemgetter(order_index), map(attrgetter("renyi"), self._items))
            self._columns[key] = np.fromiter(values, dtype=float, count=len(self._items))
        return self._columns[key]

    # ---- the aggregates the rules read (an incremental table gives the same values
    # in O(1): privloss.budget keeps one per dataset, tested equal bit for bit) ----
    def total(self, name: str) -> float:
        """:func:`total` of a column."""
        return total(self.column(name))

    def renyi_total(self, order_index: int) -> float:
        """:func:`total` of the Renyi column at ``RENYI_ORDERS[order_index]``."""
        return total(self.renyi(order_index))

    def square_total(self, name: str) -> float:
        """:func:`total` of a column's squares (each rounded to binary64)."""
        values = self.column(name)
        return total(values * values)

    def nonfinite(self, name: str) -> int:
        """How many values of a column are infinite (no guarantee in that currency)."""
        return int(np.count_nonzero(~np.isfinite(self.column(name))))

    def positive(self, name: str) -> int:
        """How many values of a column are positive (inf included)."""
        return int(np.count_nonzero(self.column(name) > 0))


@dataclass(frozen=True)
class RuleRow:
    """One rule's verdict. ``epsilon``: the epsilon the rule certifies for these
    releases with its share of delta (inf if none); ``admitted``: epsilon within
    the budget (the releases' delta cap is checked once, by :func:`check`)."""

    name: str
    admitted: bool
    epsilon: float
    delta: float
    reason: str

    def as_tuple(self) -> tuple:
        return (self.name, self.admitted, self.epsilon, self.delta, self.reason)


@dataclass(frozen=True)
class Rule:
    name: str
    citation: str
    #: the rule's conversion to (epsilon, delta) needs a positive share of delta
    needs_share: bool
    #: (table, policy, share) -> certified epsilon (inf if none) and a reason
    certify: Callable


def total(values: np.ndarray) -> float:
    """Sum of non-negative values rounded up to the next binary64 number if inexact
    (:func:`privloss._exact.sum_upper`: never below the exact sum, so budget
    comparisons are exact); inf if any term is inf."""
    if values.size == 0:
        return 0.0
    if not np.all(np.isfinite(values)):
        return math.inf
    return sum_upper(values)


def outward(value: float) -> float:
    """A value computed with logs and square roots, pushed up by :data:`OUTWARD`."""
    return value * (1.0 + OUTWARD) if math.isfinite(value) and value > 0 else value


def fits(value: float, budget: float) -> bool:
    """Exact comparison of a certified value with the budget (no tolerance)."""
    return fits_budget(value, budget)


def _no_guarantee(table: Table, name: str, currency: str) -> str | None:
    bad = table.nonfinite(name)
    if bad:
        return f"{bad} release(s) have no {currency} guarantee"
    return None


# --------------------------------------------------------------------------
# Renyi orders fixed at creation
# --------------------------------------------------------------------------

def zcdp_order(epsilon: float, share: float) -> tuple[float, float]:
    """(alpha*, R*): the largest total rho R* whose simple conversion at delta
    ``share`` meets ``epsilon`` ([BS16] Prop. 1.3: R* + 2 sqrt(R* L) = epsilon,
    L = log(1/share), so R* = (sqrt(L + epsilon) - sqrt(L))^2) and the order
    alpha* = 1 + sqrt(L / R*) at which alpha* R* + L / (alpha* - 1) = epsilon.
    Used to pick the Renyi orders where a budget runs out."""
    log_inv = -math.log(share)
    # (a - b) computed as epsilon / (a + b): no cancellation for small epsilon
    root = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))
    r_star = root * root
    if r_star <= 0:
        return math.inf, 0.0
    return 1.0 + math.sqrt(log_inv / r_star), r_star


def renyi_orders_for(epsilon: float, share: float, count: int = 4) -> tuple[float, ...]:
    """The ``count`` orders of :data:`RENYI_ORDERS` nearest (in log(alpha - 1)) to the
    order at which a budget (epsilon, share / count) runs out: fixed at creation."""
    if epsilon <= 0 or share <= 0:
        return RENYI_ORDERS[:count]
    alpha, _ = zcdp_order(epsilon, share / count)
    if not math.isfinite(alpha) or alpha <= 1.0:          # huge budgets: alpha* rounds to 1
        if math.isfinite(alpha):
            return RENYI_ORDERS[:count]
        return RENYI_ORDERS[-count:]
    target = math.log(alpha - 1.0)
    ranked = sorted(RENYI_ORDERS, key=lambda order: abs(math.log(order - 1.0) - target))
    return tuple(sorted(ranked[:count]))


def renyi_conversion_term(order: float, log_inv_delta: float) -> float:
    """epsilon - R of the conversion "D_alpha <= R implies (R + term, delta)-DP":
    (log(1/delta) + (alpha - 1) log(1 - 1/alpha) - log alpha) / (alpha - 1)
    ([CKS] Prop. 12; Balle et al. 2020 Thm 21; any pair of distributions)."""
    return (log_inv_delta + (order - 1.0) * math.log1p(-1.0 / order) - math.log(order)) / (order - 1.0)


# --------------------------------------------------------------------------
# the rules
# --------------------------------------------------------------------------

def basic_rule(table: Table, policy, share: float) -> tuple[float, str]:
    """Basic composition filter for pure and approximate DP.

    Definition
        Certified epsilon: sum_t epsilon_t over the releases' conditioned pure
        epsilons (their deltas are charged once, by :func:`check`, against the cap).
    Privacy guarantee
        With epsilon_t and delta_t chosen adaptively (each fixed before release t
        runs) and sum_t epsilon_t <= epsilon, sum_t delta_t <= delta at every time,
        the interaction is (epsilon, delta)-DP: conditioned on no release's bad
        event, every transcript's privacy loss is at most sum_t epsilon_t. Needs
        no share of delta.
    Citation
        Rogers, Roth, Ullman, Vadhan 2016 ("Privacy odometers and filters:
        pay-as-you-go composition", arXiv:1605.08294): basic composition is a
        valid privacy filter with adaptively chosen parameters (numbered
        Theorem 3.6, 3.4 or, odometer form, Lemma 3.5 depending on the arXiv
        version; the proof is given in docs/accounting.md); decomposition [KOV]
        Thm 2.1.
    Runtime
        O(n).
    """
    reason = _no_guarantee(table, "epsilon", "pure-DP (conditioned)")
    if reason:
        return math.inf, reason + " (e.g. Gaussian noise)"
    value = table.total("epsilon")
    return value, f"sum of epsilons {value:.6g}"


def advanced_rule(table: Table, policy, share: float) -> tuple[float, str]:
    """Advanced-composition filter (adaptively chosen epsilons).

    Definition
        V = sum_t epsilon_t^2; certified epsilon V/2 + sqrt(2 V log(1/share)).
    Privacy guarantee
        Admitting releases while V/2 + sqrt(2 V log(1/share)) <= epsilon (and the
        releases' deltas within the cap) gives (epsilon, share + cap)-DP, with
        every epsilon_t chosen from earlier outputs. Same constants as advanced
        composition (sum eps_t (e^eps_t - 1)/(e^eps_t + 1) <= V/2).
    Citation
        Whitehouse, Ramdas, Rogers, Wu, "Fully-adaptive composition in
        differential privacy", ICML 2023 (arXiv:2203.05481), the advanced
        composition filter (their Theorem 2 per a summary of the text: halt
        before sqrt(2 log(1/delta') sum eps_t^2) + sum eps_t^2 / 2 exceeds
        epsilon). Validity does not rest on that number: it is their Theorem 1
        (filter for approximate zCDP) with rho_t = eps_t^2/2 [BS16 Prop. 1.4]
        and the conversion [BS16] Prop. 1.3.
    Runtime
        O(n).
    """
    reason = _no_guarantee(table, "epsilon", "pure-DP (conditioned)")
    if reason:
        return math.inf, reason
    eps = table.column("epsilon")
    largest = float(eps.max()) if eps.size else 0.0
    if largest == 0:
        return 0.0, "sum of squared epsilons 0"
    # the l2 norm scaled by the largest epsilon: no underflow for eps < 1e-154, no overflow
    norm = largest * math.sqrt(total((eps / largest) ** 2)) * (1.0 + 1e-12)
    value = outward(norm * norm / 2.0 + norm * math.sqrt(2.0 * -math.log(share)))
    return value, f"sum of squared epsilons {norm * norm:.6g}"


def zcdp_rule(table: Table, policy, share: float) -> tuple[float, str]:
    """zCDP filter with the tight conversion.

    Definition
        Certified epsilon: the tight conversion of sum_t rho_t at delta ``share``;
        a release with xi > 0 is not admitted by this rule (the renyi rule takes it).
    Privacy guarantee
        Stopping before sum_t rho_t exceeds R (R fixed at creation from the budget)
        makes the stopped transcript, conditioned on no release's bad event,
        R-zCDP: the Renyi filter theorem holds at every order alpha with budget
        alpha R, and the stopping rule is the same for all orders. [CKS] Cor. 13
        is a statement about any pair of distributions with that Renyi curve, so
        it applies to the transcript: (epsilon, share)-DP.
    Citation
        Feldman and Zrnic 2021, "Individual privacy accounting via a Renyi
        filter", Theorem 3.1 (Renyi filter at a fixed order) and Remark 4.4
        (all orders at once: zCDP); Whitehouse, Ramdas, Rogers, Wu 2023,
        Theorem 1 (filter for approximate zCDP: the same with the deltas, here
        the releases' cap); Canonne, Kamath, Steinke 2020, Cor. 13 (Prop. 12 at
        each order).
    Runtime
        O(n) plus one conversion.
    """
    from privloss.bounds.zcdp import zcdp_epsilon_tight

    reason = _no_guarantee(table, "rho", "zCDP")
    if reason:
        return math.inf, reason
    if table.positive("xi"):
        return math.inf, "a release has xi > 0 (the renyi rule accounts it)"
    rho_total = table.total("rho")
    return zcdp_epsilon_tight(rho_total, share), f"rho {rho_total:.6g}"


def renyi_rule(table: Table, policy, share: float) -> tuple[float, str]:
    """Renyi filters at several orders fixed at creation, each with share/k of delta.

    Definition
        For the k orders alpha_j of ``policy.renyi_orders``: certified epsilon
        min_j [sum_t R_t(alpha_j) + (log(k/share) + (alpha_j - 1) log(1 - 1/alpha_j)
        - log alpha_j) / (alpha_j - 1)], R_t the release's (conditioned) Renyi
        divergence at alpha_j.
    Privacy guarantee
        Each order j alone is a filter: stopping before sum_t R_t(alpha_j) exceeds
        its budget bounds the Renyi divergence of the stopped transcript by that
        budget (Renyi filter theorem), and the conversion holds for any pair of
        distributions with that divergence: (epsilon, share/k)-DP. The k orders
        combine like any rules (union, docs/accounting.md): share in all.
    Citation
        Feldman and Zrnic 2021, Theorem 3.1 (Renyi filter at a fixed order);
        Lecuyer 2021, "Practical privacy filters and odometers with Renyi
        differential privacy" (several orders; the per-order filters also
        combine as in docs/accounting.md "Combining rules"); [CKS] Prop. 12
        conversion (= Balle et al. 2020, Thm 21); curves [Mironov 2017] and
        privloss.bounds.rdp.
    Runtime
        O(n k).
    """
    orders = policy.renyi_orders
    log_inv = math.log(len(orders) / share)
    best, best_order = math.inf, None
    for order in orders:
        value = outward(table.renyi_total(RENYI_ORDERS.index(order))
                        + renyi_conversion_term(order, log_inv))
        if value < best:
            best, best_order = value, order
    if best_order is None:
        return math.inf, "some release has no Renyi guarantee at the policy's orders"
    return best, f"best order {best_order:g} (of {len(orders)} orders)"


def gdp_rule(table: Table, policy, share: float) -> tuple[float, str]:
    """Gaussian-DP filter for Gaussian-only sequences.

    Definition
        mu = sqrt(sum_t mu_t^2) over releases made only of continuous Gaussian
        mechanisms; certified epsilon: the GDP conversion of mu at delta ``share``.
    Privacy guarantee
        Adaptively chosen Gaussian mechanisms (mu_t = sensitivity_t / sigma_t),
        stopped before sum mu_t^2 exceeds mu^2 (mu fixed at creation by the
        budget): the stopped transcript is mu-GDP, hence (epsilon, delta(epsilon))
        -DP with delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
    Citation
        Smith and Thakurta 2022, "Fully adaptive composition for Gaussian
        differential privacy" (arXiv:2210.17520; its main result: mu_i-GDP
        mechanisms with adaptively chosen mu_i, halted before sum mu_i^2 exceeds
        mu^2, give mu-GDP); Dong, Roth, Su 2022, Cor. 2.13.
    Runtime
        O(n) plus one conversion.
    """
    from privloss.bounds.gaussian_dp import gdp_epsilon

    reason = _no_guarantee(table, "gdp_mu", "Gaussian-DP (Gaussian mechanisms only)")
    if reason:
        return math.inf, reason
    mu = math.sqrt(table.square_total("gdp_mu"))
    return gdp_epsilon(mu, share), f"mu {mu:.6g}"


RULES: dict[str, Rule] = {
    "basic": Rule("basic", "Rogers-Roth-Ullman-Vadhan 2016, basic composition filter",
                  False, basic_rule),
    "advanced": Rule("advanced", "Whitehouse-Ramdas-Rogers-Wu 2023, advanced composition filter",
                     True, advanced_rule),
    "zcdp": Rule("zcdp", "Feldman-Zrnic 2021 / Whitehouse et al. 2023 zCDP filter + [CKS] Cor. 13",
                 True, zcdp_rule),
    "renyi": Rule("renyi", "Feldman-Zrnic 2021 / Lecuyer 2021 Renyi filters + [CKS] Prop. 12",
                  True, renyi_rule),
    "gdp": Rule("gdp", "Smith-Thakurta 2022 Gaussian DP filter + [DRS] Cor. 2.13",
                True, gdp_rule),
}
