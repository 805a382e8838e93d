"""Speed of issue 21's releases: hierarchies and running totals.

Measurements, each in its own child process (CPU seconds of that process, all
threads; best and median of ``--repeat`` runs inside it):

* ``hierarchy_postprocess``: a hierarchy 1 -> 100 -> 10,000 -> ``--leaves``
  (default 100,000) leaves: the least-squares projection, exact variances and
  both intervals (noisy values given);
* ``hierarchy_consistent``: the same plus non-negative integers adding up;
* ``hierarchy_release``: noise on every node, projection and intervals;
* ``running_totals``: ``privloss running``'s work on ``--rows`` synthetic rows
  (default 10 million; units with 1..50 rows, dates uniform over ``--days``
  days, default 3,650) in a Parquet file: the bounded per-day totals in DuckDB
  (at most 30 periods per unit, 5 rows per period) plus the tree release;
* ``bounded_aggregation``: one bounded aggregation of the same rows, the
  existing engine's per-user bounded histogram with the day as the item
  (``l0 = 30``, ``linf = 5``), the yardstick of the issue's speed target.

Targets (issue 21): the projection of 10^5 leaves < 1 s; running totals over
3,650 days on 10 million rows <= 1.5x one bounded aggregation.

Run:  python benchmarks/releases.py [--rows 10000000] [--leaves 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(function, repeat: int) -> dict:
    times = []
    for _ in range(repeat):
        start = _cpu()
        function()
        times.append(_cpu() - start)
    return {"best_cpu_s": min(times), "median_cpu_s": statistics.median(times)}


def _hierarchy(leaves: int):
    rng = np.random.default_rng(1)
    sizes = (1, 100, 10_000, leaves)
    parents = [None, np.zeros(100, dtype=np.int64), np.repeat(np.arange(100), 100),
               np.sort(rng.integers(0, 10_000, leaves))]
    values = [None, None, None, rng.integers(0, 50, leaves)]
    for level in (2, 1, 0):
        values[level] = np.bincount(parents[level + 1], weights=values[level + 1],
                                    minlength=sizes[level]).astype(np.int64)
    return sizes, parents, values


def generate(path: str, rows: int, days: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 51, size=rows // 25 + 1000)
    sizes = sizes[:np.searchsorted(np.cumsum(sizes), rows) + 1]
    units = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)[:rows]
    day = rng.integers(0, days, rows)
    dates = np.datetime64("2015-01-01") + day.astype("timedelta64[D]")
    pq.write_table(pa.table({"unit": units, "day": dates, "day_index": day}), path)


def child(args) -> dict:
    name = args.child
    if name.startswith("hierarchy"):
        from privloss.releases import LevelBound, plan_hierarchy
        from privloss.releases.hierarchy import _project
        from privloss.samplers import InsecureSeededSource

        sizes, parents, values = _hierarchy(args.leaves)
        plan = plan_hierarchy(sizes, LevelBound(1, 1), noise="laplace", budget=1.0)
        source = InsecureSeededSource(3)
        plan.noise.variances()                         # mpmath once (cached)
        if name == "hierarchy_release":
            return _timed(lambda: plan.release(values, parents, source=source), args.repeat)
        measured = [v + plan.noise.sample(level, v.size, source)
                    for level, v in enumerate(values)]
        consistent = name == "hierarchy_consistent"
        return _timed(lambda: _project(plan, measured, parents, consistent=consistent,
                                       nonnegative=True), args.repeat)
    if name == "running_totals":
        from privloss.query.inputs import resolve_input
        from privloss.api.running import make_running_request
        from privloss.query.running_source import bounded_period_totals
        from privloss.samplers import InsecureSeededSource

        request = make_running_request(
            privacy_unit="unit", time_column="day", period="day", start="2015-01-01",
            end=str(np.datetime64("2015-01-01") + np.timedelta64(args.days - 1, "D")),
            count=True, max_periods_per_unit=30, max_rows_per_period=5, epsilon=1.0)
        inp = resolve_input(args.data)
        source = InsecureSeededSource(1)

        def work():
            totals = bounded_period_totals(inp, request.query, unit="unit", time="day")
            request.plan.release(totals, source)
        return _timed(work, args.repeat)
    if name == "bounded_aggregation":
        from privloss.query.engines import bounded_histogram

        return _timed(lambda: bounded_histogram(args.data, user_column="unit",
                                                item_column="day_index", l0=30, linf=5,
                                                seed=1), args.repeat)
    raise ValueError(f"unknown measurement {name!r}")


def run_child(args, name: str) -> dict:
    command = [sys.executable, __file__, "--child", name, "--data", args.data or "",
               "--repeat", str(args.repeat), "--leaves", str(args.leaves),
               "--days", str(args.days)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=3650)
    parser.add_argument("--leaves", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=None, help="reuse a Parquet file written before")
    parser.add_argument("--only", default=None, help="comma-separated measurement names")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    names = ["hierarchy_postprocess", "hierarchy_consistent", "hierarchy_release",
             "running_totals", "bounded_aggregation"]
    if args.only:
        names = [name for name in names if name in args.only.split(",")]
    with tempfile.TemporaryDirectory() as directory:
        if args.data is None and any(not n.startswith("hierarchy") for n in names):
            args.data = os.path.join(directory, "rows.parquet")
            start = time.perf_counter()
            generate(args.data, args.rows, args.days)
            print(f"wrote {args.rows:,} rows in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr)
        results = {"load_average": os.getloadavg(), "cpus": os.cpu_count(),
                   "rows": args.rows, "days": args.days, "leaves": args.leaves}
        for name in names:
            results[name] = run_child(args, name)
            print(f"{name:<24} best {results[name]['best_cpu_s']:.3f} s  median "
                  f"{results[name]['median_cpu_s']:.3f} s (CPU)", file=sys.stderr)
        if "running_totals" in results and "bounded_aggregation" in results:
            results["running_over_aggregation"] = (results["running_totals"]["median_cpu_s"]
                                                   / results["bounded_aggregation"]["median_cpu_s"])
            print(f"running totals / bounded aggregation = "
                  f"{results['running_over_aggregation']:.2f}", file=sys.stderr)
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
