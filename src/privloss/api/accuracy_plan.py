"""Plan for an accuracy: the smallest epsilon (and split) whose 95% half-width
meets a target, or at which a group of N users is released; and the picture.

>>> from privloss.api.accuracy_plan import accuracy_figure, plan_accuracy  # doctest: +SKIP
>>> plan = plan_accuracy("aggregate", target_half_width=50, privacy_unit="u",
...                      by=["country"], aggregations=["count", "count_distinct"],
...                      delta=1e-6, max_rows_per_group=5)
>>> print(plan); png = accuracy_figure(plan)

Definition
----------
A release is a *subject*: a function from epsilon to the 95% half-widths of
its measurements (the exact half-widths the dry run shows: discrete Laplace /
Gaussian tails in mpmath, :mod:`privloss.mechanisms.accuracy`; a quantile's
rank error; a running total's largest half-width), and, for a thresholded
release (top-k / histogram over an unknown domain, a group-by without keys),
the threshold a group's noisy count must pass.

* ``target_half_width=W``: the smallest epsilon in the release kind's range
  at which every measurement's 95% half-width is at most ``W`` (in the
  measurement's units: counts, the value column's units for sums, ranks for
  quantiles), by a geometric bracket then bisection in log space to relative
  ``1e-4``; the answer is re-checked, so it always meets ``W``.  For a group-by
  the split is chosen with it: each measurement's weight is proportional to
  the strength it needs (its change-by-one-unit times its unit, or a
  quantile's score range times log of its candidates), so all measurements
  reach ``W`` together; the plan's ``budget_split`` (per measurement name)
  reproduces the release.
* ``min_release_users=N``: the epsilons at which a group with ``N`` distinct
  users (after bounding) is released with probability 1/2 and 95%: ``P[N + Z
  >= T(epsilon)]`` with ``Z`` the threshold's noise and ``T`` the threshold
  (for top-k / histograms: the offset above ``h_next``, taken as 0, i.e. the
  group competes only with the threshold).

Privacy guarantee
-----------------
Nothing here reads data or a ledger or charges anything: every number is a
function of public parameters.

Citation
--------
OpenDP's ``summarize()`` / accuracy-to-scale helpers (plan from a target).

Runtime
-------
About 30 calibrations of the release for a target, and ``CURVE_POINTS`` more
for the accuracy curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# the picture lives beside (matplotlib is imported only when one is drawn)
from privloss.api.accuracy_picture import accuracy_figure, save_accuracy_plot

__all__ = ["AccuracyPlan", "plan_accuracy", "accuracy_figure", "save_accuracy_plot",
           "CURVE_POINTS"]

#: points of the accuracy-against-epsilon curve
CURVE_POINTS = 13
#: relative precision of the epsilon search (an integer half-width is met at
#: the answer and missed 0.1% below it)
TOLERANCE = 5e-4
#: confidence of the "almost never released" statement (one-sided)
RARELY = 0.05


@dataclass(frozen=True)
class AccuracyPlan:
    """What a release at ``epsilon`` will likely give (public parameters only).

    ``goal``: ``"half-width"`` (``target`` = W), ``"release"`` (``target`` =
    N users) or ``"epsilon"`` (``epsilon`` given, no target); ``half_widths``
    per measurement at ``epsilon``; ``budget_split`` (group-by) the split that
    goes with ``epsilon``; ``shares`` each measurement's share of the cost;
    ``curve``: ``(epsilon, value)`` points, the value being the largest 95%
    half-width, or for ``goal="release"`` the release probability of a group
    of ``target`` users; ``lines``: the plan in words."""

    command: str
    goal: str
    target: float | None
    epsilon: float
    half_widths: dict
    shares: dict
    budget_split: dict | None
    curve: tuple
    measure: str
    lines: tuple
    release_epsilons: dict = field(default_factory=dict)
    threshold: float | None = None

    def to_dict(self) -> dict:
        return {"command": self.command, "goal": self.goal, "target": self.target,
                "epsilon": self.epsilon, "half_widths_95": dict(self.half_widths),
                "shares": dict(self.shares), "budget_split": self.budget_split,
                "threshold_users": self.threshold, "release_epsilons": self.release_epsilons,
                "curve": {"measure": self.measure, "points": [list(p) for p in self.curve]},
                "text": list(self.lines), "charged": False}

    @classmethod
    def from_dict(cls, data: dict) -> "AccuracyPlan":
        """The plan of a :meth:`to_dict` object (e.g. a dry run's ``accuracy``),
        to draw it again with :func:`accuracy_figure`."""
        return cls(data["command"], data["goal"], data["target"], float(data["epsilon"]),
                   dict(data["half_widths_95"]), dict(data["shares"]), data["budget_split"],
                   tuple(tuple(point) for point in data["curve"]["points"]),
                   data["curve"]["measure"], tuple(data["text"]),
                   dict(data["release_epsilons"]), data["threshold_users"])

    def __str__(self) -> str:
        return "\n".join(["accuracy plan (nothing was read or charged):",
                          *(f"  {line}" for line in self.lines)])


# ----------------------------------------------------------------------------------
# subjects: epsilon -> accuracy
# ----------------------------------------------------------------------------------

class ByEpsilon:
    """A subject whose knob is epsilon itself (the rollup's subject derives from it too)."""

    @property
    def epsilon_range(self) -> tuple:
        return self.range

    def guess(self) -> float:
        return 1.0

    def epsilon_of(self, epsilon: float) -> float:
        return epsilon

    def knob_of(self, epsilon: float) -> float:
        return epsilon

    def settle(self, epsilon: float, meets) -> float:
        return epsilon


class _Release(ByEpsilon):
    """A top-k / histogram request."""

    def __init__(self, request):
        self.request = request
        self.command = request.command
        # the searches stop at epsilon 100 (a release's EPSILON_RANGE reaches 10^6)
        self.range = (_release_range()[0], 100.0)

        self._plans = {}

    def _plan(self, epsilon):
        """(request, its algorithm plan) at ``epsilon`` (calibrated once)."""
        if epsilon not in self._plans:
            request = self.request.with_epsilon(epsilon)
            self._plans[epsilon] = request, request.algorithm_plan()
        return self._plans[epsilon]

    def half_widths(self, epsilon) -> dict:
        from privloss.api.planning import _noise
        noise = _noise(*self._plan(epsilon))
        return {"count": float(noise["ci95_half_width"])}

    def shares(self, epsilon) -> dict:
        return {}

    def threshold_noise(self, epsilon):
        """(threshold in users, the noise as (kind, parameter)) or None."""
        from privloss.api.planning import _noise, _threshold
        request, algorithm_plan = self._plan(epsilon)
        threshold = _threshold(request, algorithm_plan)
        if threshold is None:
            return None
        noise = _noise(request, algorithm_plan)
        if noise["noise"] == "discrete-laplace":
            return threshold["offset"], ("laplace", noise["scale_exact"])
        if noise["noise"] == "discrete-gaussian":
            return threshold["offset"], ("gaussian", noise["sigma_squared_exact"])
        return threshold["offset"], ("normal", noise["sigma"])


def _release_range() -> tuple:
    from privloss.api.request import EPSILON_RANGE
    return EPSILON_RANGE


class _Aggregate:
    """A group-by: ``parameters`` as :func:`privloss.api.aggregate.make_query`'s.

    Its knob is the calibration's scale ``lambda`` (strengths ``lambda * w_i``,
    :mod:`privloss.releases.calibration`), not epsilon: the half-widths and the
    threshold are cheap functions of it, and its epsilon is one accountant
    call (the check ``build_plan``'s bisection makes), where a calibration at
    a given epsilon is ~20."""

    command = "aggregate"
    range = (1e-9, 1e6)

    def __init__(self, parameters: dict):
        from privloss.api.aggregate import make_query
        from privloss.releases.calibration import _weights

        self.parameters = dict(parameters)
        self.base = make_query(epsilon=1.0, **self.parameters)     # every parameter checked
        plan = self.base.plan
        self.weights = _weights(plan.measurements, plan.noise, self.base.budget_split)
        self._at = {}

    @property
    def epsilon_range(self) -> tuple:
        from privloss.api.aggregate import EPSILON_RANGE
        return EPSILON_RANGE

    def guess(self) -> float:
        return 1.0 / self.base.max_groups

    def at(self, scale: float):
        """(strengths, noises, events) at ``scale`` (computed once)."""
        from privloss.releases.calibration import _events_at

        if scale not in self._at:
            plan = self.base.plan
            strengths, noises, events = _events_at(plan.measurements, self.weights, scale,
                                                   plan.noise, plan.max_groups)
            if self.base.keys is None:
                from privloss.events import ApproxDP
                events = events + [ApproxDP(0.0, plan.delta_selection)]
            self._at[scale] = strengths, noises, tuple(events)
        return self._at[scale]

    def epsilon_of(self, scale: float) -> float:
        """The epsilon the release's calibration checks ``scale`` against."""
        from privloss.accounting import PrivacyAccountant
        from privloss.releases.algorithms._calibrate import SEARCH_CANDIDATES, within_release

        accountant = PrivacyAccountant(self.at(scale)[2], interaction=within_release("adaptive"),
                                       candidates=SEARCH_CANDIDATES)
        return float(accountant.epsilon(self.base.delta).value)

    def knob_of(self, epsilon: float) -> float:
        """The scale the calibration at ``epsilon`` chooses (``make_query``)."""
        from privloss.api.aggregate import make_query

        strengths = make_query(epsilon=epsilon, **self.parameters).plan.strengths
        return max(float(strengths[name]) / weight for name, weight in self.weights.items())

    def half_widths(self, scale: float) -> dict:
        from privloss.mechanisms.exponential import ExponentialMechanism
        from privloss.releases.aggregate import BETA, _half_width

        plan = self.base.plan
        strengths, noises, _ = self.at(scale)
        out = {}
        for m in plan.measurements:
            if m.is_quantile:
                mechanism = ExponentialMechanism(strengths[m.name], score_range=m.linf)
                out[m.name] = float(mechanism.utility_gap(
                    BETA, n_candidates=plan.quantile_bins + 1))
                continue
            grid = plan.grids.get(m.column)
            unit = float(grid.step) if grid is not None and m.kind in ("sum", "csum") else 1
            out[m.name] = _half_width(noises[m.name], BETA) * unit
        return out

    def shares(self, scale: float) -> dict:
        return dict(self.base.plan.shares)

    def balanced(self):
        """The same query with the split under which every measurement reaches
        a common half-width together (module docstring)."""
        plan = self.base.plan
        split = {}
        for m in plan.measurements:
            grid = plan.grids.get(m.column)
            unit = float(grid.step) if grid is not None and m.kind in ("sum", "csum") else 1.0
            need = float(m.linf) * unit
            if m.is_quantile:
                need *= math.log((plan.quantile_bins + 1) / 0.05)
            split[m.name] = need
        return _Aggregate({**self.parameters, "budget_split": split})

    def threshold_noise(self, scale: float):
        from privloss.releases.calibration import _threshold

        plan = self.base.plan
        if self.base.keys is not None:
            return None
        noise = self.at(scale)[1]["distinct"]
        return float(_threshold(noise, plan.max_groups, plan.delta_selection)), \
            (noise.kind, noise.parameter)

    def settle(self, epsilon: float, meets) -> float:
        """The epsilon, at or just above ``epsilon``, whose real calibration
        (``make_query``, bisection to 1e-6) meets ``meets(half_widths, threshold)``."""
        from privloss.api.aggregate import describe_plan, make_query

        for _ in range(20):
            described = describe_plan(make_query(epsilon=epsilon, **self.parameters))
            widths = {m["measurement"]: float(m.get("ci95_half_width", m.get("ci95_rank_error")))
                      for m in described["measurements"]}
            if meets(widths):
                return epsilon
            epsilon = math.nextafter(epsilon * (1 + 2e-6), math.inf)
        raise ArithmeticError("the calibration does not reach the planned accuracy")


class _Running(ByEpsilon):
    """A running total: ``parameters`` as :func:`make_running_request`'s."""

    command = "running"
    range = (1e-3, 100.0)

    def __init__(self, parameters: dict):
        self.parameters = dict(parameters)

    def half_widths(self, epsilon) -> dict:
        from privloss.api.running import make_running_request
        request = make_running_request(epsilon=epsilon, **self.parameters)
        return {request.query.statistic: float(request.plan_summary()["ci95_half_width_max"])}

    def shares(self, epsilon) -> dict:
        return {}

    def threshold_noise(self, epsilon):
        return None


def _subject(command: str, parameters: dict):
    if command in ("topk", "histogram"):
        from privloss.api.request import make_request
        request = parameters.pop("request", None)
        if request is None:
            request = make_request(command, epsilon=1.0, **parameters)
        return _Release(request)
    if command in ("aggregate", "sql"):
        return _Aggregate(parameters)
    if command == "running":
        return _Running(parameters)
    if command == "rollup":
        from privloss.api.accuracy_rollup import RollupSubject
        return RollupSubject(parameters)
    raise ValueError(f"command must be one of topk, histogram, aggregate, sql, rollup, "
                     f"running, got {command!r}")


# ----------------------------------------------------------------------------------
# the searches
# ----------------------------------------------------------------------------------

def _smallest(meets, epsilon_range, what: str, guess: float = 1.0) -> float:
    """The smallest epsilon in ``epsilon_range`` with ``meets(epsilon)`` (monotone:
    false below, true above), to relative TOLERANCE, searched from ``guess``
    (doubling or halving to a bracket, then bisection in log space); the
    answer meets."""
    lowest, largest = epsilon_range
    test = meets

    def meets(epsilon: float) -> bool:
        try:
            return test(epsilon)
        except (ValueError, ArithmeticError):     # no calibration reaches so small an epsilon
            return False

    guess = min(max(guess, lowest), largest)
    if meets(guess):
        high = guess
        low = max(high / 2, lowest)
        while meets(low):
            if low <= lowest:
                return lowest
            high, low = low, max(low / 2, lowest)
    else:
        low = guess
        high = min(low * 2, largest)
        while not meets(high):
            if high >= largest:
                raise ValueError(f"no epsilon up to {largest:g} gives {what}")
            low, high = high, min(high * 2, largest)
    while high / low - 1 > TOLERANCE:      # invariant: low fails, high meets
        middle = math.sqrt(low * high)
        if meets(middle):
            high = middle
        else:
            low = middle
    return high


def _largest_width(subject, epsilon: float) -> float:
    return max(subject.half_widths(epsilon).values())


def _at_least(noise, m: int) -> float:
    """P[Z >= m] for the threshold's noise ``(kind, parameter)``."""
    from privloss.mechanisms.accuracy import discrete_gaussian_tail, discrete_laplace_tail

    kind, parameter = noise
    if kind == "normal":            # a float Gaussian rounded to integers
        return 0.5 * math.erfc((m - 0.5) / (float(parameter) * math.sqrt(2)))
    if m <= 0:
        return 1.0 - _at_least(noise, 1 - m)
    tail = discrete_laplace_tail if kind == "laplace" else discrete_gaussian_tail
    return float(tail(m - 1, parameter)) / 2


def _release_probability(subject, epsilon: float, users: int) -> float:
    threshold, noise = subject.threshold_noise(epsilon)
    one_node = _at_least(noise, math.ceil(threshold - users))
    if hasattr(subject, "release_probability"):       # a rollup: the path of nodes
        return subject.release_probability(epsilon, users, one_node)
    return one_node


def _rarely_below(subject, epsilon: float) -> int:
    """About the fewest users a group needs to be released with probability >= RARELY."""
    threshold, noise = subject.threshold_noise(epsilon)
    low, high = 0, max(1, math.ceil(threshold))     # P(high users) >= 1/2 > RARELY
    while high - low > 1:
        middle = (low + high) // 2
        if _at_least(noise, math.ceil(threshold - middle)) >= RARELY:
            high = middle
        else:
            low = middle
    return high


def _about(value: float) -> str:
    """``value`` to two significant digits with thousands separators: 2,700."""
    if value <= 0:
        return "0"
    digits = max(0, math.floor(math.log10(value)) - 1)
    rounded = round(value / 10 ** digits) * 10 ** digits
    return f"{rounded:,.0f}" if value >= 10 else f"{value:.2g}"


def _curve(subject, knob: float, measure, span: float = 10.0) -> tuple:
    """(epsilon, measure) at CURVE_POINTS knobs from knob / span to knob * span."""
    lowest, largest = subject.epsilon_range
    points = []
    for index in range(CURVE_POINTS):
        point = knob / span * (span * span) ** (index / (CURVE_POINTS - 1))
        try:
            epsilon = subject.epsilon_of(point)
            if lowest <= epsilon <= largest:
                points.append((epsilon, measure(point)))
        except (ValueError, ArithmeticError):        # not calibratable there
            continue
    return tuple(points)


def plan_accuracy(command: str = "topk", *, epsilon=None, target_half_width=None,
                  min_release_users=None, curve: bool = True, **parameters) -> AccuracyPlan:
    """The accuracy plan of one release (module docstring).  ``command``:
    ``topk``, ``histogram``, ``aggregate`` (or ``sql``: the same group-by),
    ``rollup`` (:mod:`privloss.api.accuracy_rollup`), ``running``; ``parameters``: the release's public parameters without
    ``epsilon`` (or ``request=`` a checked top-k / histogram request).  Give
    ``target_half_width`` or ``min_release_users`` (the epsilon is planned) or
    ``epsilon`` (only the curve and the words).  ``curve=False`` skips the
    curve (``CURVE_POINTS`` calibrations; no picture then).  Charges nothing."""
    if target_half_width is None and min_release_users is None and epsilon is None:
        raise ValueError("give target_half_width, min_release_users or epsilon")
    if target_half_width is not None and min_release_users is not None:
        raise ValueError("give target_half_width or min_release_users, not both")
    if target_half_width is not None and (
            isinstance(target_half_width, bool) or not isinstance(target_half_width, (int, float))
            or not 0 < target_half_width < math.inf):
        raise ValueError(f"target_half_width must be a number in (0, inf), got "
                         f"{target_half_width!r}")
    if min_release_users is not None and (isinstance(min_release_users, bool) or not isinstance(
            min_release_users, int) or min_release_users < 1):
        raise ValueError(f"min_release_users must be an integer >= 1, got "
                         f"{min_release_users!r}")
    subject = _subject(command, dict(parameters))
    if hasattr(subject, "check_goal"):
        subject.check_goal(target_half_width, min_release_users)
    if target_half_width is not None and isinstance(subject, _Aggregate) \
            and parameters.get("budget_split") is None:
        subject = subject.balanced()
    lines, release_epsilons = [], {}
    lowest, largest = subject.epsilon_range
    start = subject.guess()

    def in_range(knob: float) -> float:
        value = subject.epsilon_of(knob)
        if value > largest * (1 + 1e-9):
            raise ValueError(f"the plan needs epsilon {value:.6g}, above the largest "
                             f"supported {largest:g}")
        return max(value, lowest)

    if target_half_width is not None:
        width = float(target_half_width)
        guess = start * max(_largest_width(subject, start), 1.0) / width
        knob = _smallest(lambda k: _largest_width(subject, k) <= width, subject.range,
                         f"a 95% half-width of at most {width:g}", guess)
        epsilon = subject.settle(in_range(knob), lambda widths: max(widths.values()) <= width)
        goal, target = "half-width", width
        lines.append(f"smallest epsilon whose 95% half-width is at most {width:g} for every "
                     f"measurement: {epsilon:.6g}")
    elif min_release_users is not None:
        if subject.threshold_noise(start) is None:
            raise ValueError("min_release_users needs a thresholded release (top-k or a "
                             "histogram over an unknown domain, a group-by without keys)")
        users = min_release_users
        guess = start * subject.threshold_noise(start)[0] / users
        for probability in (0.5, 0.95):
            guess = _smallest(lambda k: _release_probability(subject, k, users) >= probability,
                              subject.range, f"a group of {users} users released with "
                                             f"probability {probability:g}", guess)
            release_epsilons[str(probability)] = in_range(guess)
        knob = guess
        epsilon, goal, target = release_epsilons["0.95"], "release", float(users)
        lines.append(f"a group of {users:,} distinct users is released with probability 1/2 "
                     f"at epsilon {release_epsilons['0.5']:.3g} and with probability 95% at "
                     f"epsilon {release_epsilons['0.95']:.3g} (planned: the latter)")
    else:
        epsilon, goal, target = float(epsilon), "epsilon", None
        knob = subject.knob_of(epsilon)
    half_widths = subject.half_widths(knob)
    shares = subject.shares(knob)
    for name, width in half_widths.items():
        share = "" if name not in shares else f" (share {100 * shares[name]:.1f}% of the budget)"
        lines.append(f"at epsilon {epsilon:.6g}: {name} within +-{width:.6g} with probability "
                     f"95%{share}")
    threshold = None
    if subject.threshold_noise(knob) is not None:
        threshold = subject.threshold_noise(knob)[0]
        other = min(subject.range[1], 4 * knob)
        lines.append(f"groups with fewer than about {_about(_rarely_below(subject, knob))} "
                     f"distinct users are almost never released (under {RARELY:.0%}); at "
                     f"epsilon {subject.epsilon_of(other):.3g} that falls to about "
                     f"{_about(_rarely_below(subject, other))}")
    split = getattr(subject, "parameters", {}).get("budget_split")
    if isinstance(subject, _Aggregate):
        lines.append("split: " + ", ".join(f"{name} {100 * share:.1f}%"
                                           for name, share in shares.items())
                     + (" (budget_split: " + ", ".join(f"{name}={weight:.6g}" for name, weight
                                                        in split.items()) + ")"
                        if split else " (default: error-balancing, each at least 1/(4m))"))
    if goal == "release":
        measure = "release probability"

        def value(k):
            return _release_probability(subject, k, int(target))
    else:
        measure = "largest 95% half-width"

        def value(k):
            return _largest_width(subject, k)
    return AccuracyPlan(subject.command, goal, target, float(epsilon), half_widths, shares,
                        split, () if not curve else
                        _curve(subject, knob, value, 3.0 if goal == "release" else 10.0),
                        measure, tuple(lines),
                        release_epsilons, threshold)
