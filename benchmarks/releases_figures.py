"""The pictures of docs/releases.md (issue 21), written to docs/figures/.

* ``running-totals.png``: distinct customers since 2010-12-01 per day and
  rows per week of the Online Retail data (``../shared/data``), privately
  (epsilon = 1 each, Laplace), with the 95% intervals and the non-decreasing
  fit, against the bounded truth;
* ``running-error-growth.png``: the exact RMSE of the running totals against
  the number of periods T = 64 ... 4096, offline (all periods at once) and
  continual estimates (and sqrt(T) for scale);
* ``hierarchy-error-by-level.png``: a 1 -> 10 -> 100 -> 1,000 -> 10,000
  hierarchy, RMSE by level of the raw noisy totals, the least-squares
  projection and the consistent integers (measured over repeated runs, with
  the exact values as markers).

All noise uses an INSECURE fixed seed (reproducible pictures).

Run:  python benchmarks/releases_figures.py [--data ../shared/data/online_retail.csv.gz]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def running_totals(data: str, out: Path) -> dict:
    from privloss.query.inputs import resolve_input
    from privloss.query.running_source import bounded_period_totals
    from privloss.api.running import make_running_request
    from privloss.samplers import InsecureSeededSource

    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    summary = {}
    cases = [("count_distinct", "day", "2010-12-01", 1, 1, "distinct customers so far (per day)"),
             ("count", "week", "2010-11-29", 10, 20, "rows so far (per week; <= 10 weeks "
                                                     "and 20 rows a week per customer)")]
    for axis, (statistic, period, start, periods, rows, title) in zip(axes, cases):
        request = make_running_request(
            privacy_unit="CustomerID", time_column="InvoiceDate", period=period, start=start,
            end="2011-12-09", max_periods_per_unit=periods, max_rows_per_period=rows,
            epsilon=1.0, **{statistic: True})
        truth = np.cumsum(bounded_period_totals(resolve_input(Path(data)), request.query,
                                                unit="CustomerID", time="InvoiceDate"))
        totals = np.diff(np.concatenate([[0], truth]))
        release = request.plan.release(totals, InsecureSeededSource(21))
        days = [dt.date.fromisoformat(label) for label in request.labels()]
        axis.fill_between(days, release.ci95[0], release.ci95[1], alpha=0.25,
                          label="95% interval")
        axis.plot(days, release.estimates, lw=0.8, label="private estimate")
        axis.plot(days, release.monotone, lw=1.2, label="non-decreasing fit")
        axis.plot(days, truth, "k--", lw=0.8, label="bounded truth (not private)")
        axis.set_title(title, fontsize=10)
        axis.tick_params(axis="x", labelrotation=30)
        axis.legend(fontsize=8)
        inside = (release.ci95[0] <= truth) & (truth <= release.ci95[1])
        summary[statistic] = {"periods": int(truth.size), "covered": float(inside.mean()),
                              "rmse": float(np.sqrt(np.mean((release.estimates - truth) ** 2))),
                              "rmse_monotone": float(np.sqrt(np.mean((release.monotone - truth)
                                                                     ** 2))),
                              "half_width_last": float(release.ci95[1][-1]
                                                       - release.estimates[-1])}
    figure.suptitle("Running totals of Online Retail, epsilon = 1 each (binary tree, "
                    "discrete Laplace)", fontsize=11)
    figure.tight_layout()
    figure.savefig(out / "running-totals.png", dpi=110)
    plt.close(figure)
    return summary


def running_error_growth(out: Path) -> dict:
    from privloss.releases import plan_running

    plt = _pyplot()
    horizons = 2 ** np.arange(6, 13)
    figure, axis = plt.subplots(figsize=(6, 4))
    summary = {}
    for noise, budget, label in (("laplace", 1.0, "discrete Laplace, epsilon = 1"),
                                 ("gaussian", 0.5, "discrete Gaussian, rho = 0.5")):
        plans = [plan_running(int(t), max_periods=1, per_period=1, noise=noise, budget=budget)
                 for t in horizons]
        summary[noise] = {}
        for estimator, style in (("offline", "o-"), ("continual", "s--")):
            rmse = np.array([np.sqrt(plan.expected_variances(estimator=estimator).mean())
                             for plan in plans])
            axis.plot(horizons, rmse, style, label=f"{label}, {estimator}")
            summary[noise][estimator] = {
                "rmse": rmse.tolist(),
                "slope_in_log_T": float(np.polyfit(np.log(horizons), np.log(rmse), 1)[0]),
                "power_of_log_T": float(np.polyfit(np.log(np.log2(horizons)), np.log(rmse),
                                                   1)[0])}
    reference = summary["laplace"]["continual"]["rmse"][0] * np.sqrt(horizons / horizons[0])
    axis.plot(horizons, reference, "k:", label="sqrt(T) growth (for scale)")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("number of periods T")
    axis.set_ylabel("RMSE of the running totals (exact)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "running-error-growth.png", dpi=110)
    plt.close(figure)
    return summary


def hierarchy_error(out: Path, runs: int = 200) -> dict:
    from privloss.releases import LevelBound, plan_hierarchy
    from privloss.samplers import InsecureSeededSource

    plt = _pyplot()
    rng = np.random.default_rng(0)
    sizes = (1, 10, 100, 1000, 10_000)
    parents = [None] + [np.repeat(np.arange(sizes[level - 1]), 10) for level in range(1, 5)]
    values = [None] * 5
    values[4] = rng.poisson(rng.gamma(0.6, 8.0, sizes[4])).astype(np.int64)
    for level in range(3, -1, -1):
        values[level] = np.bincount(parents[level + 1], weights=values[level + 1],
                                    minlength=sizes[level]).astype(np.int64)
    plan = plan_hierarchy(sizes, LevelBound(1, 1), noise="laplace", budget=1.0)
    source = InsecureSeededSource(7)
    squares = {"raw": np.zeros(5), "blue": np.zeros(5), "consistent": np.zeros(5)}
    covered = {"ci95": np.zeros(5), "consistent": np.zeros(5)}
    for _ in range(runs):
        release = plan.release(values, parents, source=source, consistent=True)
        for level, truth in enumerate(values):
            squares["raw"][level] += np.mean((release.measured[level] - truth) ** 2)
            squares["blue"][level] += np.mean((release.estimates[level] - truth) ** 2)
            squares["consistent"][level] += np.mean((release.consistent[level] - truth) ** 2)
            low, high = release.ci95[level]
            covered["consistent"][level] += np.mean((low <= truth) & (truth <= high))
    rmse = {name: np.sqrt(total / runs) for name, total in squares.items()}
    exact_raw = np.sqrt(plan.noise.variances())
    exact_blue = np.sqrt([v.mean() for v in release.variances])
    figure, axis = plt.subplots(figsize=(7, 4))
    positions = np.arange(5)
    for offset, (name, label) in zip((-0.27, 0.0, 0.27),
                                     (("raw", "noisy totals (before)"),
                                      ("blue", "least-squares projection (after)"),
                                      ("consistent", "consistent non-negative integers"))):
        axis.bar(positions + offset, rmse[name], width=0.26, label=label)
    axis.plot(positions - 0.27, exact_raw, "k_", markersize=14, label="exact")
    axis.plot(positions, exact_blue, "k_", markersize=14)
    axis.set_xticks(positions, [f"level {i}\n({s:,} nodes)" for i, s in enumerate(sizes)])
    axis.set_ylabel("RMSE per node")
    axis.set_title(f"A 5-level hierarchy, epsilon = 1 (discrete Laplace), {runs} runs",
                   fontsize=10)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "hierarchy-error-by-level.png", dpi=110)
    plt.close(figure)
    return {"rmse": {name: values.tolist() for name, values in rmse.items()},
            "exact_raw": exact_raw.tolist(), "exact_blue": exact_blue.tolist(),
            "coverage_consistent": (covered["consistent"] / runs).tolist(),
            "shares": list(plan.shares)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"
                                              / "online_retail.csv.gz"))
    parser.add_argument("--out", default=str(FIGURES))
    args = parser.parse_args()
    out = Path(args.out)
    os.makedirs(out, exist_ok=True)
    import json
    results = {"running_totals": running_totals(args.data, out),
               "running_error_growth": running_error_growth(out),
               "hierarchy_error": hierarchy_error(out)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
