"""See the cost before paying: ``privloss.plan(...)`` (``--dry-run``) and
``privloss.max_epsilon(...)`` (``--epsilon max``).

Definition
----------
:func:`plan` computes, from the public parameters alone, what a release would
do: its events (each step's privacy spend), its own guarantee, the noise
distribution and scale, the exact 95% half-width of a released count, the
unknown-domain threshold, and, with a ledger, what the ledger would say
afterwards (fits or not, the binding constraint) by the ledger's read-only
``would_admit``.  It reads neither the data nor changes any state.

:func:`max_epsilon` is the largest per-release epsilon of a release that the
ledger still admits under its interaction model.  Fully adaptive: found by
bracketing on the (monotone) admission check, in log space, to a relative
``tolerance``, and re-checked, so the answer is always admitted at the time
of the check.  Under a plan (adaptive / setwise) the epsilon of a release is
fixed by the plan: the answer is the next matching item's epsilon if it
fits, else the ledger's refusal is raised.

Privacy guarantee
-----------------
Nothing here reads data: everything is a function of public parameters and
the caller's own budget (the ledger's totals).  Another process may spend
between a plan and a release; the release re-checks under the ledger's lock.

Citation
--------
OpenDP's ``summarize()`` (noise scale and accuracy before a release).

Runtime
-------
``plan``: one calibration and one ledger check.  ``max_epsilon``: about
``log2(log(budget / lowest) / tolerance)`` (~20) calibrations and ledger checks.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
from dataclasses import dataclass, field

from privloss.api.request import ReleaseRequest, make_request, unit_column

__all__ = ["ReleasePlan", "plan", "plan_request", "max_epsilon", "max_epsilon_of",
           "describe_event", "bounding_note"]

#: relative precision of max_epsilon's bracket
TOLERANCE = 1e-4


def describe_event(event) -> str:
    """One line saying what one step spends."""
    from privloss.events import (ApproxDP, ApproxZCDP, BoundedRange, DiscreteGaussian,
                                 DiscreteLaplace)
    if isinstance(event, BoundedRange):
        return (f"{event.count} selection step(s), each {event.epsilon:.6g}-bounded-range "
                f"(exponential mechanism)")
    if isinstance(event, DiscreteLaplace):
        return (f"{event.count} noisy count(s), discrete Laplace scale {event.scale:.6g}, "
                f"sensitivity {event.sensitivity} (epsilon "
                f"{event.sensitivity / event.scale:.6g} each)")
    if isinstance(event, DiscreteGaussian):
        rho = event.sensitivity ** 2 / (2 * event.sigma ** 2)
        return (f"{event.count} noisy count(s), discrete Gaussian sigma {event.sigma:.6g}, "
                f"sensitivity {event.sensitivity} (rho {rho:.6g} each)")
    if isinstance(event, ApproxDP) and event.epsilon == 0:
        return f"threshold: failure probability delta {event.delta:.3g}"
    if isinstance(event, ApproxDP):
        return f"({event.epsilon:.6g}, {event.delta:.3g})-DP release"
    if isinstance(event, ApproxZCDP):
        return f"delta-approximate zCDP: rho {event.rho:.6g}, delta {event.delta:.3g}"
    return repr(event)


def _noise(request: ReleaseRequest, algorithm_plan) -> dict:
    noise = getattr(algorithm_plan, "noise", None)
    if noise is not None:
        described = dict(noise.describe())
        if request.algorithm == "gauss-ordered":
            described["note"] = ("half-width of a measured count; the released counts are "
                                 "fitted to the noisy order")
        return described
    if request.algorithm == "trunc-gauss":
        from privloss.releases.algorithms.truncated_gaussian import (rounded_half_width,
                                                                      rounded_variance)
        return {"noise": "truncated-gaussian (float, rounded to integers)",
                "sigma": algorithm_plan.sigma, "truncation": algorithm_plan.bound,
                "noise_variance": rounded_variance(algorithm_plan.sigma, algorithm_plan.bound),
                "ci95_half_width": rounded_half_width(algorithm_plan.sigma,
                                                      algorithm_plan.bound)}
    return {}


def _threshold(request: ReleaseRequest, algorithm_plan) -> dict | None:
    """The unknown-domain threshold in count units (contribution-bounded counts)."""
    discovery = getattr(algorithm_plan, "discovery", None)
    if discovery is not None:
        offset, base = float(discovery.offset), "h_next + "
    elif request.algorithm == "unknown-laplace":
        offset, base = float(algorithm_plan.offset), "h_next + "
    elif request.algorithm == "trunc-gauss":
        offset, base = float(algorithm_plan.threshold), ""
    else:
        return None
    unit = "distinct users" if request.linf == 1 else f"users x at most {request.linf}"
    text = (f"an item is released with probability about 1/2 when its bounded count is "
            f"{base}{offset:.6g} ({unit})")
    if base:
        text += (f"; h_next is the bounded count just below the top d_bar"
                 f"{'' if request.d_bar is None else ' = ' + str(request.d_bar)} "
                 f"(0 when there are fewer items)")
    text += (f". Bounding only lowers counts, so an item with fewer than {offset:.6g} "
             f"{unit} before bounding is (almost) never released")
    return {"offset": offset, "relative_to_next_count": bool(base), "unit": unit,
            "text": text}


@dataclass(frozen=True)
class ReleasePlan:
    """What a release would do (see :func:`plan`); ``to_dict()`` is the
    ``--dry-run --json`` object, ``str()`` the human text."""

    request: ReleaseRequest
    events: tuple
    guarantee: dict
    noise: dict
    threshold: dict | None
    ledger: dict | None
    notes: tuple = field(default_factory=tuple)
    #: the accuracy plan (:mod:`privloss.api.accuracy_plan`) when a target was given
    accuracy: object = None

    def to_dict(self) -> dict:
        request = self.request
        return {"dry_run": True, "command": request.command, "algorithm": request.algorithm,
                "epsilon": request.epsilon, "delta": request.delta, "k": request.k,
                "l0": request.l0, "l0_sensitivity": request.l0_sensitivity,
                "linf": request.linf, "d_bar": request.d_bar,
                "domain_size": request.domain_size, "interaction": request.interaction,
                "events": [repr(event) for event in self.events],
                "steps": [describe_event(event) for event in self.events],
                "guarantee": self.guarantee, "noise": self.noise,
                "threshold": self.threshold, "ledger": self.ledger, "notes": list(self.notes),
                "split": step_split(self.events),
                **({} if self.accuracy is None else {"accuracy": self.accuracy.to_dict()})}

    def __str__(self) -> str:
        request = self.request
        lines = [f"dry run: {request.command} with {request.algorithm} (nothing was read, "
                 f"charged or computed)",
                 f"  asked      epsilon = {request.epsilon:.10g}, delta = {request.delta:g}",
                 f"  guarantee  epsilon = {self.guarantee['epsilon']:.10g} at delta = "
                 f"{self.guarantee['delta']:g} (bound: {self.guarantee['bound']})"]
        lines += [f"  step       {describe_event(event)}" for event in self.events]
        split = step_split(self.events)
        if len(split) > 1:
            lines.append("  split      " + "; ".join(
                f"{entry['step'].split(',')[0]}: epsilon {entry['epsilon_alone']:.4g} alone "
                f"({100 * entry['share']:.1f}%)" for entry in split))
        if self.noise:
            scale = next((f"{name} {self.noise[name]:.6g}" for name in
                          ("scale", "sigma_squared", "sigma") if name in self.noise), "")
            lines.append(f"  noise      {self.noise.get('noise', '?')} {scale}; a released "
                         f"count is within +-{self.noise.get('ci95_half_width')} of its "
                         f"bounded count with probability 95%")
        if self.threshold is not None:
            lines.append(f"  threshold  {self.threshold['text']}")
        for note in self.notes:
            lines.append(f"  note       {note}")
        if self.ledger is not None:
            ledger = self.ledger
            lines.append(f"  ledger     dataset {ledger['dataset']} ({ledger['interaction']}): "
                         f"budget epsilon = {ledger['budget_epsilon']:g}, delta = "
                         f"{ledger['budget_delta']:g}; spent now epsilon = "
                         f"{ledger['spent_epsilon_before']:.10g}")
            if ledger["fits"]:
                lines.append(f"  afterwards fits: spent epsilon = "
                             f"{ledger['spent_epsilon_after']:.10g} of "
                             f"{ledger['budget_epsilon']:g} (bound: {ledger['bound']})")
            else:
                lines.append(f"  afterwards does NOT fit: {ledger['reason']}")
        if self.accuracy is not None:
            lines.append(str(self.accuracy))
        return "\n".join(lines)


def step_split(events) -> list:
    """How a release's epsilon is split over its steps: each step's epsilon
    alone (pure-DP composition of that step, delta 0) and its share of their
    sum; empty when a step has no finite pure-DP epsilon (Gaussian noise: its
    cost is a rho) or when no step spends epsilon (a threshold's delta alone)."""
    from privloss.accounting import compose
    from privloss.events import ApproxDP

    # a threshold's failure probability spends delta only: not part of the split
    events = [event for event in events if not (isinstance(event, ApproxDP)
                                                and event.epsilon == 0)]
    alone = []
    for event in events:
        epsilon = compose((event,), target_delta=0.0, interaction="adaptive").epsilon
        if not math.isfinite(epsilon):
            return []
        alone.append(epsilon)
    total = sum(alone)
    if total <= 0:
        return []
    return [{"step": describe_event(event), "epsilon_alone": epsilon, "share": epsilon / total}
            for event, epsilon in zip(events, alone)]


def bounding_note(request: ReleaseRequest) -> str:
    """What the counts and their intervals are of (said with every release)."""
    kept = "every item of a user" if request.l0 is None else \
        f"at most {request.l0} item(s) per user"
    return (f"counts and 95% intervals are of contribution-bounded counts ({kept}, each "
            f"user counted at most {request.linf} time(s) per item), not of raw counts")


def _ledger_view(ledger, dataset, request: ReleaseRequest, events, *, user, item, seed) -> dict:
    summary = ledger.show(dataset)
    key = request.query_key({"dry-run": secrets.token_hex(8)}, user_column=user,
                            item_column=item, seed=seed)
    verdict = ledger.would_admit(dataset, key, events)
    return {"dataset": dataset, "interaction": summary["interaction"],
            "budget_epsilon": summary["budget_epsilon"],
            "budget_delta": summary["budget_delta"],
            "spent_epsilon_before": summary["spent_epsilon"],
            "spent_delta_before": summary["spent_delta"], "fits": bool(verdict["admitted"]),
            "spent_epsilon_after": verdict["spent_epsilon"] if verdict["admitted"] else None,
            "spent_delta_after": verdict["spent_delta"] if verdict["admitted"] else None,
            "bound": verdict["bound"], "plan_item": verdict["plan_item"],
            "reason": verdict["reason"] or None}


def plan_request(request: ReleaseRequest, *, ledger=None, dataset=None, user=None, item=None,
                 seed=None, interaction_given=None) -> ReleasePlan:
    """:func:`plan` for a checked request (the CLI's ``--dry-run``)."""
    from privloss.accounting import compose
    from privloss.api.protocol import ledger_interaction, resolve_ledger

    ledger, dataset = resolve_ledger(ledger, dataset)
    request = ledger_interaction(request, ledger, dataset, interaction_given)
    events = request.events()
    algorithm_plan = request.algorithm_plan()
    own = compose(tuple(events), target_delta=request.delta, interaction="adaptive")
    guarantee = {"epsilon": own.epsilon, "delta": request.delta, "bound": own.bound}
    notes = []
    if request.l0_capped:
        notes.append(f"the noise is scaled for l0 = {request.l0_sensitivity} = the number of "
                     f"domain items (a user touches at most every listed item)"
                     + ("" if request.l0 is None else f", not --l0 {request.l0}"))
    notes.append(bounding_note(request))
    view = None if ledger is None else _ledger_view(ledger, dataset, request, events,
                                                    user=user, item=item, seed=seed)
    return ReleasePlan(request, tuple(events), guarantee, _noise(request, algorithm_plan),
                       _threshold(request, algorithm_plan), view, tuple(notes))


def plan(command: str = "topk", *, epsilon=None, delta: float = 0.0, k=None, l0=None,
         linf: int = 1, domain=None, d_bar=None, algorithm=None, noise: str = "laplace",
         interaction=None, ledger=None, dataset=None, privacy_unit=None, item=None, seed=None,
         user=None, target_half_width=None, min_release_users=None) -> ReleasePlan:
    """What ``privloss.topk`` / ``privloss.histogram`` with these parameters
    would spend and release, without reading data or changing a ledger.

    ``command``: ``"topk"`` or ``"histogram"``; ``domain``: the label list or
    just its size; ``epsilon="max"`` plans the largest epsilon that fits the
    ledger (:func:`max_epsilon`); the other arguments as
    :func:`privloss.api.protocol.topk` (``privacy_unit`` / ``item`` / ``seed``
    only complete the query key a plan-based ledger matches; ``user`` is the
    deprecated spelling of ``privacy_unit``).  Instead of ``epsilon``:
    ``target_half_width=W`` (the smallest epsilon whose 95% half-width is at
    most W) or ``min_release_users=N`` (the epsilon at which a group of N
    users is released with probability 95%), :mod:`privloss.api.accuracy_plan`;
    the plan's ``accuracy`` says it in words.  Returns a :class:`ReleasePlan`
    (print it, or ``.to_dict()``).
    """
    user = unit_column(privacy_unit, user, required=False)
    if target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_plan import plan_accuracy
        if epsilon is not None:
            raise ValueError("give epsilon or a target (target_half_width / "
                             "min_release_users), not both")
        request = make_request(command, epsilon=1.0, delta=delta, k=k, l0=l0, linf=linf,
                               domain=domain, d_bar=d_bar, algorithm=algorithm, noise=noise,
                               interaction=interaction)
        accuracy = plan_accuracy(command, request=request, target_half_width=target_half_width,
                                 min_release_users=min_release_users)
        planned = plan_request(request.with_epsilon(accuracy.epsilon), ledger=ledger,
                               dataset=dataset, user=user, item=item, seed=seed,
                               interaction_given=interaction)
        return dataclasses.replace(planned, accuracy=accuracy)
    if epsilon is None:
        raise ValueError("give epsilon, target_half_width or min_release_users")
    if isinstance(epsilon, str) and epsilon == "max":
        epsilon = max_epsilon(command, delta=delta, k=k, l0=l0, linf=linf, domain=domain,
                              d_bar=d_bar, algorithm=algorithm, noise=noise,
                              interaction=interaction, ledger=ledger, dataset=dataset,
                              privacy_unit=user, item=item, seed=seed)
    request = make_request(command, epsilon=epsilon, delta=delta, k=k, l0=l0, linf=linf,
                           domain=domain, d_bar=d_bar, algorithm=algorithm, noise=noise,
                           interaction=interaction)
    return plan_request(request, ledger=ledger, dataset=dataset, user=user, item=item,
                        seed=seed, interaction_given=interaction)


# ----------------------------------------------------------------------------------
# max_epsilon
# ----------------------------------------------------------------------------------

def _verdict(ledger, dataset, request: ReleaseRequest, *, user, item, seed) -> dict:
    key = request.query_key({"dry-run": secrets.token_hex(8)}, user_column=user,
                            item_column=item, seed=seed)
    try:
        events = request.events()
    except (ValueError, ArithmeticError):    # e.g. no calibration reaches so small an epsilon
        return {"admitted": False, "reason": "the parameters cannot be calibrated",
                "spent_epsilon": math.inf}
    return ledger.would_admit(dataset, key, events)


def _planned_epsilon(ledger, dataset, request: ReleaseRequest, summary: dict, *, user, item,
                     seed) -> float:
    from privloss.api.protocol import refusal
    from privloss.budget import LedgerPlanError

    unused = [entry for entry in summary["plan"] or () if not entry["used"]]
    if not unused:             # every planned release was made: the ledger's own refusal
        raise refusal(ledger, dataset, _verdict(ledger, dataset, request, user=user,
                                                item=item, seed=seed))
    if summary["interaction"] == "adaptive":
        unused = unused[:1]
    fixed = {"command": request.command, "algorithm": request.algorithm, "k": request.k,
             "l0": request.l0, "linf": request.linf, "d_bar": request.d_bar,
             "delta": request.delta}
    candidates = [entry for entry in unused if "epsilon" in entry["match"]
                  and all(entry["match"].get(name, value) == value
                          for name, value in fixed.items())]
    if not candidates:
        raise LedgerPlanError(
            f"no {'next' if summary['interaction'] == 'adaptive' else 'unused'} planned "
            f"release of dataset {dataset!r} matches this {request.command} "
            f"({request.algorithm}); under a plan the epsilon of each release is fixed by "
            f"the plan")
    verdict = None
    for entry in candidates:
        epsilon = float(entry["match"]["epsilon"])
        verdict = _verdict(ledger, dataset, request.with_epsilon(epsilon), user=user,
                           item=item, seed=seed)
        if verdict["admitted"]:
            return epsilon
    raise refusal(ledger, dataset, verdict)


def max_epsilon_of(request: ReleaseRequest, *, ledger, dataset, user=None, item=None, seed=None,
                   interaction_given=None, tolerance: float = TOLERANCE) -> float:
    """:func:`max_epsilon` for a checked request (its ``epsilon`` is ignored)."""
    from privloss.api.protocol import ledger_interaction, resolve_ledger

    if not (isinstance(tolerance, float) and 0 < tolerance < 1):
        raise ValueError(f"tolerance must be a float in (0, 1), got {tolerance!r}")
    ledger, dataset = resolve_ledger(ledger, dataset)
    if ledger is None:
        raise ValueError("epsilon 'max' needs a ledger and a dataset (the budget to fit)")
    request = ledger_interaction(request, ledger, dataset, interaction_given)
    summary = ledger.show(dataset)
    if summary["interaction"] != "fully-adaptive":
        return _planned_epsilon(ledger, dataset, request, summary, user=user, item=item,
                                seed=seed)

    def admitted(epsilon: float) -> dict:
        return _verdict(ledger, dataset, request.with_epsilon(epsilon), user=user, item=item,
                        seed=seed)

    return largest_admitted(ledger, dataset, admitted, summary, tolerance=tolerance)


def largest_admitted(ledger, dataset, admitted, summary: dict, *, tolerance: float = TOLERANCE,
                     epsilon_range=None) -> float:
    """The largest epsilon in ``epsilon_range`` (default one top-k release's
    documented range) whose ``admitted(epsilon)`` verdict (``Ledger.would_admit``'s
    dict) admits, to relative ``tolerance``, by a geometric search then
    bisection in log space; the answer is re-checked.  Raises the ledger's
    refusal when even the smallest epsilon does not fit.  Every release kind's
    ``epsilon='max'`` uses this one search."""
    from privloss.api.protocol import refusal
    from privloss.api.request import EPSILON_RANGE

    lowest, largest = epsilon_range or EPSILON_RANGE
    high = min(float(summary["budget_epsilon"]), largest)
    if high >= lowest and admitted(high)["admitted"]:
        return high
    low = max(high / 2, lowest)
    verdict = admitted(low)
    while not verdict["admitted"]:
        if low <= lowest:
            raise refusal(ledger, dataset, verdict)
        high, low = low, max(low / 16, lowest)
        verdict = admitted(low)
    # invariant: low admitted, high refused; bisect in log space
    while high / low - 1 > tolerance:
        middle = math.sqrt(low * high)
        if admitted(middle)["admitted"]:
            low = middle
        else:
            high = middle
    verdict = admitted(low)           # re-check the answer
    if not verdict["admitted"]:
        raise refusal(ledger, dataset, verdict)
    return low


def max_epsilon(command: str = "topk", *, delta: float = 0.0, k=None, l0=None, linf: int = 1,
                domain=None, d_bar=None, algorithm=None, noise: str = "laplace",
                interaction=None, ledger, dataset, privacy_unit=None, item=None, seed=None,
                tolerance: float = TOLERANCE, user=None) -> float:
    """The largest epsilon of one release with these parameters that the
    ledger's dataset still admits (see the module docstring); ``tolerance`` is
    the relative precision (the answer is admitted, and at most that far below
    the largest admitted value if admission is monotone in epsilon).  Raises
    ``LedgerBudgetError`` / ``LedgerPlanError`` when nothing fits."""
    user = unit_column(privacy_unit, user, required=False)
    # any epsilon to check the rest: the search replaces it
    request = make_request(command, epsilon=1.0, delta=delta, k=k, l0=l0, linf=linf,
                           domain=domain, d_bar=d_bar, algorithm=algorithm, noise=noise,
                           interaction=interaction)
    return max_epsilon_of(request, ledger=ledger, dataset=dataset, user=user, item=item,
                          seed=seed, interaction_given=interaction, tolerance=tolerance)


# ----------------------------------------------------------------------------------
# what still fits (a refusal's first words)
# ----------------------------------------------------------------------------------

def what_fits(ledger, dataset, verdict: dict, admitted, *, epsilon_range=None) -> str | None:
    """One phrase saying what still fits after the refused ``verdict``: "at most
    epsilon 0.081 fits; the budget's epsilon is the binding limit" (the exact
    search :func:`largest_admitted` over ``admitted``, epsilon -> verdict of
    the same release at that epsilon), or "no epsilon fits; ..." .  The
    binding limit is delta when the releases' deltas reach the delta cap, else
    epsilon.  None when the ledger follows a plan (the plan fixes epsilon) or
    keeps an odometer (no epsilon budget; its refusal names the delta that fits).
    Reads no data: a function of public parameters and the ledger's totals."""
    from privloss.budget import LedgerBudgetError, LedgerPlanError

    summary = ledger.show(dataset)
    if summary["interaction"] != "fully-adaptive":
        return None
    if summary.get("odometer") is not None:
        # no fixed epsilon to fit under: only a release's delta can make an
        # odometer's reading infinite, and the refusal's reason says what delta fits
        return None
    binding = ("delta is the binding limit (lower --delta / delta)"
               if verdict.get("bound") == "delta-cap" else
               "the budget's epsilon is the binding limit")
    try:
        epsilon = largest_admitted(ledger, dataset, admitted, summary,
                                   epsilon_range=epsilon_range)
    except (LedgerBudgetError, LedgerPlanError):
        return f"refused: no epsilon of this release fits; {binding}"
    return f"refused: at most epsilon {_down(epsilon)} fits; {binding}"


def _down(epsilon: float) -> str:
    """``epsilon`` to 2 significant digits, rounded DOWN (the shown value fits)."""
    if epsilon <= 0:
        return "0"
    exponent = math.floor(math.log10(epsilon)) - 1
    shown = math.floor(epsilon / 10 ** exponent) * 10 ** exponent
    return f"{shown:.{max(0, -exponent)}f}" if exponent < 0 else f"{shown:g}"


def request_refusal(ledger, dataset, verdict: dict, request: ReleaseRequest, *, user=None,
                    item=None, seed=None) -> Exception:
    """:func:`privloss.api.protocol.refusal` of a top-k / histogram request,
    saying first what still fits."""
    from privloss.api.protocol import refusal

    def admitted(epsilon: float) -> dict:
        return _verdict(ledger, dataset, request.with_epsilon(epsilon), user=user, item=item,
                        seed=seed)

    return refusal(ledger, dataset, verdict, admitted=admitted)
