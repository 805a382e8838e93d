"""``privloss tradeoff``: tradeoff curves (f-DP) of compositions, as a table, CSV or figure.

Each mechanism flag draws one curve: the K-fold composition of that mechanism
(``--rr 0.2x25 --gaussian 1`` compares 25-fold randomized response with one
Gaussian release, as in Dong's blog post). Closed forms are used where they
exist (randomized response / pure DP: exact vertices; Gaussian: G_mu); the
K-fold Laplace curve comes from the certified PLD (lower and upper curve).

Ranges (checked before any curve is built): at most ``MAX_CURVES`` curves and
10^6 mechanisms in total; epsilons (--rr, --dp, and sensitivity / scale of
--laplace) in [0, 700] (the curves use e^epsilon); a K-fold Laplace with epsilon0 x K <= 2000 and a PLD grid
of at most ``MAX_GRID_POINTS`` points (about 2 epsilon0 min(K, 4 + 10 sqrt(K)) /
--step; --step in [1e-6, 1]); Gaussian sensitivity / sigma in [1e-100, 1e5];
--points in [2, 10^5]. NumPy and the f-DP package load when the command runs.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import dataclass

from privloss.cli._common import CommandError
from privloss.cli._parse import (GAUSSIAN_RATIO, OrderedAppend, check_total, in_range,
                                 nonnegative, power_text, split_repeat)

TABLE_ALPHAS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5)
#: largest per-mechanism epsilon of a curve (e^epsilon must stay a finite double)
MAX_EPSILON = 700.0
#: most curves on one figure / table
MAX_CURVES = 20
#: largest alpha grid (--points)
MAX_POINTS = 10 ** 5
#: largest K-fold Laplace: epsilon0 x K (the PLD's loss range)
MAX_LAPLACE_TOTAL = 2000.0
#: largest estimated PLD grid of a K-fold Laplace (a few seconds of FFTs)
MAX_GRID_POINTS = 2 * 10 ** 6
#: --step range
STEP_RANGE = (1e-6, 1.0)


@dataclass
class Curve:
    label: str
    kind: str                 # "exact" or "certified bracket"
    lower: object             # TradeoffCurve (certified lower curve)
    upper: object             # TradeoffCurve (equal to lower for exact curves)
    clt_mu: float | None      # CLT approximation parameter (None when not applicable)


def _positive_spec(what: str):
    def parse(text: str):
        base, count = split_repeat(text)
        value = nonnegative(base, f"{what} in {text!r}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{what} in {text!r} must be in (0, inf), got {base!r}")
        return value, count
    return parse


def _epsilon_spec(text: str):
    base, count = split_repeat(text)
    return in_range(base, f"epsilon in {text!r}", 0.0, MAX_EPSILON), count


def _positive(what: str):
    def parse(text: str) -> float:
        value = nonnegative(text, what)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{what} must be in (0, inf), got {text!r}")
        return value
    return parse


def _points(text: str) -> int:
    allowed = f"points must be an integer in [2, {power_text(MAX_POINTS)}]"
    from privloss.cli._vocabulary import count_value
    try:
        value = count_value(text, "points", MAX_POINTS)       # also 1e3
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{allowed}, got {text[:40]!r}") from None
    if not 2 <= value <= MAX_POINTS:
        raise argparse.ArgumentTypeError(f"{allowed}, got {text[:40]!r}")
    return value


def _step(text: str) -> float:
    return in_range(text, "step", STEP_RANGE[0], STEP_RANGE[1])


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tradeoff", help="tradeoff curves (f-DP) of compositions: table, CSV or figure",
        description="One curve per flag: the K-fold composition of that mechanism. "
                    "beta(alpha) is the smallest type II error of any attack with type I error alpha.")
    group = parser.add_argument_group(
        f"mechanisms (repeatable, one curve each; 0.2x25 = 25 copies; at most {MAX_CURVES} curves "
        f"and 10^6 mechanisms; each epsilon in [0, {MAX_EPSILON:g}])")
    group.add_argument("--laplace", action=OrderedAppend, kind="laplace", type=_positive_spec("scale"),
                       metavar="SCALE[xK]", help="Laplace noise of this scale")
    group.add_argument("--gaussian", action=OrderedAppend, kind="gaussian", type=_positive_spec("sigma"),
                       metavar="SIGMA[xK]", help="Gaussian noise of this standard deviation")
    group.add_argument("--rr", action=OrderedAppend, kind="rr", type=_epsilon_spec,
                       metavar="EPS[xK]", help="binary randomized response with this epsilon")
    group.add_argument("--dp", action=OrderedAppend, kind="dp", type=_epsilon_spec,
                       metavar="EPS[xK]", help="worst-case pure epsilon-DP mechanism")
    parser.add_argument("--sensitivity", type=_positive("sensitivity"), default=1.0, metavar="S",
                        help="sensitivity of the Laplace / Gaussian queries (default 1)")
    parser.add_argument("--plot", metavar="PATH", help="write a figure (PNG, SVG or PDF; needs matplotlib)")
    parser.add_argument("--csv", metavar="PATH", help="write curve,alpha,beta,beta_upper rows ('-' = stdout)")
    parser.add_argument("-n", "--count", dest="points", type=_points, default=501, metavar="N",
                        help=f"alpha grid size for CSV and plot, 2 to {power_text(MAX_POINTS)} "
                             "(default 501)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (each curve at the table's alphas) instead "
                             "of the table")
    from privloss.cli._vocabulary import add_deprecated      # old spelling, one more release
    add_deprecated(parser, "--points", dest="points", new="-n/--count", where="tradeoff",
                   type=_points)
    parser.add_argument("--clt", action="store_true",
                        help="also show the CLT approximation G_mu of each composition (not a guarantee)")
    parser.add_argument("--step", type=_step, default=1e-3, metavar="H",
                        help="PLD grid step for Laplace compositions, 1e-6 to 1 (default 1e-3)")
    parser.set_defaults(handler=run, mechanisms=[])


def _aligned_step(epsilon0: float, target: float) -> float:
    """Largest step <= target that divides epsilon0 (atoms then sit on grid points)."""
    return epsilon0 / max(1, math.ceil(epsilon0 / target - 1e-9))


def _build(kind: str, value: float, count: int, sensitivity: float, step: float) -> Curve:
    from privloss import fdp

    suffix = f" x{count}" if count > 1 else ""
    if kind == "gaussian":
        mu = sensitivity / value
        curve = fdp.GaussianTradeoff(math.sqrt(count) * mu)
        return Curve(f"Gaussian(sigma={value:g}){suffix}", "exact", curve, curve, curve.mu)
    if kind in ("rr", "dp"):
        curve = fdp.rr_composition_tradeoff(value, count)
        name = "RR" if kind == "rr" else "pure-DP"
        clt = fdp.clt_approximation(fdp.randomized_response_moments(value).times(count)).mu
        return Curve(f"{name}(eps={value:g}){suffix}", "exact", curve, curve, clt)
    # Laplace
    epsilon0 = sensitivity / value
    label = f"Laplace(scale={value:g}){suffix}"
    clt = fdp.clt_approximation(fdp.laplace_moments(epsilon0).times(count)).mu
    if count == 1:
        curve = fdp.LaplaceTradeoff(epsilon0)
        return Curve(label, "exact", curve, curve, clt)
    from privloss.pld import laplace_pld

    pld = laplace_pld(value, sensitivity=sensitivity, step=_aligned_step(epsilon0, step)).self_compose(count)
    bracket = fdp.mechanism_tradeoff(pld, label=label)
    return Curve(label, "certified bracket", bracket.lower, bracket.upper, clt)


def _laplace_grid_points(epsilon0: float, count: int, step: float) -> float:
    """Estimated PLD grid of a K-fold Laplace: its loss range (all of [-K e0, K e0]
    for small K; the tail-truncated law spans about 10 sqrt(K) e0 for large K)."""
    return 2 * epsilon0 * min(count, 4 + 10 * math.sqrt(count)) / _aligned_step(epsilon0, step)


def _check(args) -> None:
    """Ranges that involve several flags; a CommandError naming them, before any work."""
    if not args.mechanisms:
        raise CommandError("give at least one mechanism: --laplace, --gaussian, --rr or --dp")
    if len(args.mechanisms) > MAX_CURVES:
        raise CommandError(f"--laplace, --gaussian, --rr, --dp: at most {MAX_CURVES} curves, "
                           f"got {len(args.mechanisms)}")
    used = ", ".join(dict.fromkeys(f"--{kind}" for kind, _ in args.mechanisms))
    try:
        check_total(args.mechanisms, used)
    except ValueError as error:
        raise CommandError(str(error)) from None
    for kind, (value, count) in args.mechanisms:
        shown = f"--{kind} {value:g}" + (f"x{count}" if count > 1 else "")
        if kind == "gaussian" and not (GAUSSIAN_RATIO[0] <= args.sensitivity / value
                                       <= GAUSSIAN_RATIO[1]):
            raise CommandError(f"{shown} with --sensitivity {args.sensitivity:g}: sensitivity / "
                               f"sigma = {args.sensitivity / value:g} must be in "
                               f"[{GAUSSIAN_RATIO[0]:g}, {GAUSSIAN_RATIO[1]:g}]")
        if kind != "laplace":
            continue
        epsilon0 = args.sensitivity / value
        if epsilon0 > MAX_EPSILON:
            raise CommandError(f"{shown} with --sensitivity {args.sensitivity:g}: epsilon0 = "
                               f"sensitivity / scale = {epsilon0:g} is too large (at most "
                               f"{MAX_EPSILON:g})")
        if count > 1 and epsilon0 * count > MAX_LAPLACE_TOTAL:
            raise CommandError(f"{shown}: total epsilon0 x K = {epsilon0 * count:g} is too large "
                               f"for a tradeoff figure (at most {MAX_LAPLACE_TOTAL:g})")
        if count > 1 and _laplace_grid_points(epsilon0, count, args.step) > MAX_GRID_POINTS:
            raise CommandError(f"--step {args.step:g} is too fine for {shown}: about "
                               f"{_laplace_grid_points(epsilon0, count, args.step):.3g} grid "
                               f"points (at most {MAX_GRID_POINTS:.0e}); use a larger --step")


def _curves(args) -> list[Curve]:
    _check(args)
    return [_build(kind, value, count, args.sensitivity, args.step)
            for kind, (value, count) in args.mechanisms]


def _alpha_grid(points: int):
    import numpy as np

    # uniform plus geometric near 0, where curves are steep
    return np.unique(np.concatenate((np.linspace(0.0, 1.0, points),
                                     np.geomspace(1e-6, 1.0, max(2, points // 5)))))


def _write_csv(path: str, curves: list[Curve], points: int, clt: bool) -> None:
    alpha = _alpha_grid(points)
    handle = sys.stdout if path == "-" else open(path, "w", newline="", encoding="utf-8")
    try:
        writer = csv.writer(handle)
        writer.writerow(["curve", "alpha", "beta", "beta_upper"])
        for curve in curves:
            lower, upper = curve.lower(alpha), curve.upper(alpha)
            for a, lo, hi in zip(alpha, lower, upper):
                writer.writerow([curve.label, f"{a:.12g}", f"{lo:.12g}", f"{hi:.12g}"])
            if clt and curve.clt_mu is not None:
                from privloss.fdp import GaussianTradeoff

                approx = GaussianTradeoff(curve.clt_mu)(alpha)
                for a, value in zip(alpha, approx):
                    writer.writerow([f"CLT approximation of {curve.label}", f"{a:.12g}",
                                     f"{value:.12g}", f"{value:.12g}"])
    finally:
        if handle is not sys.stdout:
            handle.close()


def _plot(path: str, curves: list[Curve], points: int, clt: bool) -> None:
    try:
        import matplotlib
    except ImportError:
        raise CommandError("--plot needs matplotlib: install the 'plot' extra (pip install '.[plot]' from a privloss checkout)") from None
    del matplotlib      # only checked here; privloss.fdp.plot imports it itself
    from privloss.fdp.plot import plot_tradeoffs
    from privloss.fdp import GaussianTradeoff, TradeoffBracket

    items, labels, dashed = [], [], []
    for curve in curves:
        items.append(curve.lower if curve.kind == "exact"
                     else TradeoffBracket(curve.lower, curve.upper, curve.label))
        labels.append(curve.label)
        dashed.append(False)
        # the CLT curve of a Gaussian composition is the exact curve itself: skip it
        if clt and curve.clt_mu is not None and not curve.label.startswith("Gaussian"):
            items.append(GaussianTradeoff(curve.clt_mu))
            labels.append(f"CLT approx. of {curve.label} (mu={curve.clt_mu:.3g})")
            dashed.append(True)
    try:
        plot_tradeoffs(items, labels=labels, dashed=dashed, path=path, points=points)
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot write --plot {path}: {error}") from None


def _print_table(curves: list[Curve], clt: bool) -> None:
    rows = []
    for curve in curves:
        cells = []
        for a in TABLE_ALPHAS:
            low, high = curve.lower(a), curve.upper(a)
            # a bracket shows its certified lower end and its width
            cells.append(f"{low:.6f}" if high - low < 5e-7 else f"{low:.6f}(+{high - low:.0e})")
        rows.append(cells)
    titles = [f"beta({a:g})" for a in TABLE_ALPHAS]
    column = max(len(text) for text in titles + [c for cells in rows for c in cells])
    width = max(len(curve.label) for curve in curves)
    print(f"{'curve':<{width}}  {'kind':<17}" + "".join(f"  {t:>{column}}" for t in titles)
          + ("  CLT mu (approx.)" if clt else ""))
    for curve, cells in zip(curves, rows):
        extra = f"  {curve.clt_mu:.6g}" if clt and curve.clt_mu is not None else ""
        print(f"{curve.label:<{width}}  {curve.kind:<17}" + "".join(f"  {c:>{column}}" for c in cells) + extra)
    print("beta(alpha): smallest type II error (missed detection) of any attack whose type I error"
          " (false accusation) is alpha; 1 - alpha = perfect privacy. Brackets: certified lower end (+width).")


def run(args) -> int:
    curves = _curves(args)
    if args.csv:
        try:
            _write_csv(args.csv, curves, args.points, args.clt)
        except OSError as error:
            raise CommandError(f"cannot write --csv {args.csv}: {error.strerror or error}") from None
    if args.plot:
        _plot(args.plot, curves, args.points, args.clt)
    if args.json:
        if args.csv == "-":
            raise CommandError("--json and --csv - both write to stdout; write the CSV to a file")
        _print_json(curves, args.clt)
    elif not args.csv or args.csv != "-":
        _print_table(curves, args.clt)
    return 0


def _print_json(curves: list[Curve], clt: bool) -> None:
    from privloss.cli._common import print_json

    print_json({"alphas": list(TABLE_ALPHAS), "curves": [
        {"label": curve.label, "kind": curve.kind,
         "beta_lower": [curve.lower(alpha) for alpha in TABLE_ALPHAS],
         "beta_upper": [curve.upper(alpha) for alpha in TABLE_ALPHAS],
         **({"clt_mu": curve.clt_mu} if clt else {})} for curve in curves]})
