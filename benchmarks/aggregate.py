"""DP group-by (COUNT + SUM + MEAN per group) against non-private SQL on DuckDB.

Data: ``--rows`` synthetic rows (default 10 million): users with 1..``--max-per-user``
rows (uniform, default 50), ``country`` uniform over ``--groups`` int64 labels
(default 100), ``price`` uniform in [0, 150) (float64), written once to a
Parquet file (``--data`` reuses one).  Every measurement runs in its own child
process (its peak RSS, ``VmHWM``, is its own); times are the best and the
median of ``--repeat`` runs inside that process.

Measured:

* ``raw_groupby``        SELECT country, count(*), sum(price), avg(price) GROUP BY
                         country (no bounding, no noise);
* ``hand_bounded``       the same non-private aggregates after the same
                         bounding written by hand in SQL (``max_groups`` groups
                         per user by a hash order, ``max_rows_per_group`` rows
                         per user and group, prices clamped to [0, 100]), on a
                         connection with DuckDB's default memory limit (80% of RAM);
* ``hand_bounded_capped`` the same SQL under privloss's own DuckDB memory limit
                         (``DEFAULT_MEMORY_LIMIT``, 500 MB; context, not a target);
* ``privloss_duckdb``    ``aggregate(..., aggregations=["count",
                         "sum:price:0:100", "mean:price:0:100"])`` with known
                         keys (bounding, exact noise, calibration included);
* ``pipelinedp_local``   PipelineDP's ``DPEngine.aggregate`` on its ``LocalBackend``
                         (COUNT, SUM, MEAN, the same contribution bounds, public
                         partitions) over a list of tuples read beforehand;
* ``opendp_polars``      OpenDP's Polars API: each user truncated to
                         ``max_groups * max_rows_per_group`` rows, known keys;
  both only when ``pipeline_dp`` / ``opendp`` are installed (the ``bench``
  extra).  OpenDP 0.16 needs polars 1.36.1 exactly: ``--opendp-python`` runs
  its child with another interpreter that has it.

PipelineDP runs once (minutes at 10 million rows); the others ``--repeat`` times.
Known keys for every system (PipelineDP: ``public_partitions``; OpenDP: a
``keys`` margin), so no partition selection is timed anywhere.

Run:  python benchmarks/aggregate.py [--rows 10000000] [--only a,b] [--json out.json]
      [--rounds N]  (N rounds of the chosen measurements in turn, each a fresh child:
      on a shared machine the load falls on all of them alike; PipelineDP is
      minutes per round, leave it out with --only)
Targets (issue 15): privloss within 2x of hand_bounded, at least 20x faster
than PipelineDP, peak memory under 1 GB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

MEASUREMENTS = ("raw_groupby", "hand_bounded", "hand_bounded_capped", "privloss_duckdb",
                "pipelinedp_local", "opendp_polars")
MAX_GROUPS, MAX_ROWS = 2, 5

RAW_SQL = ("SELECT country, count(*), sum(price), avg(price) FROM read_parquet(?) "
           "GROUP BY country")
HAND_SQL = f"""
WITH t AS (SELECT user_id, country, price FROM read_parquet(?)),
pairs AS (SELECT DISTINCT user_id, country FROM t),
gsel AS (SELECT user_id, country FROM pairs QUALIFY row_number() OVER
         (PARTITION BY user_id ORDER BY hash(user_id, country, 42)) <= {MAX_GROUPS}),
kept AS (SELECT t.* FROM t SEMI JOIN gsel USING (user_id, country) QUALIFY row_number()
         OVER (PARTITION BY user_id, country ORDER BY hash(price, 7)) <= {MAX_ROWS})
SELECT country, count(*), sum(least(greatest(price, 0), 100)),
       avg(least(greatest(price, 0), 100)) FROM kept GROUP BY country
"""


def generate(path: str, rows: int, max_per_user: int, groups: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_per_user + 1, size=rows // ((1 + max_per_user) // 2) + 1000)
    users = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)[:rows]
    table = pa.table({"user_id": users,
                      "country": rng.integers(0, groups, size=users.size, dtype=np.int64),
                      "price": rng.uniform(0, 150, size=users.size)})
    pq.write_table(table, path)


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _run_one(name: str, path: str, groups: int):
    if name in ("raw_groupby", "hand_bounded", "hand_bounded_capped"):
        import duckdb
        connection = duckdb.connect()
        if name == "hand_bounded_capped":
            from privloss.query.engines.duckdb_engine import DEFAULT_MEMORY_LIMIT
            connection.execute("SET memory_limit = ?", [DEFAULT_MEMORY_LIMIT]).fetchall()
        sql = RAW_SQL if name == "raw_groupby" else HAND_SQL
        return lambda: connection.execute(sql, [path]).fetchall()
    if name == "privloss_duckdb":
        from privloss.api.aggregate import aggregate
        return lambda: aggregate(path, privacy_unit="user_id", by=["country"],
                                 aggregations=["count", "sum:price:0:100", "mean:price:0:100"],
                                 epsilon=1.0, delta=1e-6, keys=list(range(groups)),
                                 max_groups=MAX_GROUPS, max_rows_per_group=MAX_ROWS, seed=1)
    if name == "pipelinedp_local":
        return _pipelinedp(path, groups)
    if name == "opendp_polars":
        return _opendp(path, groups)
    raise ValueError(name)


def _pipelinedp(path: str, groups: int):
    import pipeline_dp
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["user_id", "country", "price"])
    # tuples, not dicts: PipelineDP's local backend iterates Python objects either way,
    # and tuples are its cheapest input (about a third of the memory of dicts)
    rows = list(zip(*(table.column(name).to_pylist() for name in table.column_names)))
    del table

    def run():
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM,
                     pipeline_dp.Metrics.MEAN], max_partitions_contributed=MAX_GROUPS,
            max_contributions_per_partition=MAX_ROWS, min_value=0, max_value=100)
        extractors = pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
            value_extractor=lambda r: r[2])
        result = engine.aggregate(rows, params, extractors,
                                  public_partitions=list(range(groups)))
        accountant.compute_budgets()
        return list(result)
    return run


def _opendp(path: str, groups: int):
    """User-level bounding inside OpenDP: at most MAX_GROUPS * MAX_ROWS rows per
    user (``truncate_per_group``; OpenDP 0.16's ``truncate_num_groups`` fails on
    one integer ``by`` column: "multiple fields with name 'country'"), known keys
    (``with_keys``)."""
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    frame = pl.scan_parquet(path)
    keys = pl.LazyFrame({"country": list(range(groups))})
    per_user = MAX_GROUPS * MAX_ROWS

    def run():
        context = dp.Context.compositor(
            data=frame,
            privacy_unit=dp.unit_of(contributions=per_user, identifier=pl.col("user_id")),
            privacy_loss=dp.loss_of(epsilon=1.0, delta=1e-6), split_evenly_over=1,
            margins=[dp.polars.Margin(by=["country"], invariant="keys", max_length=10 ** 8,
                                      max_groups=groups)])
        query = (context.query().truncate_per_group(per_user).group_by("country").agg(
            pl.len().dp.noise().alias("count"),
            pl.col("price").fill_null(0).dp.sum((0, 100)).alias("sum"),
            pl.col("price").fill_null(0).dp.mean((0, 100)).alias("mean")).with_keys(keys))
        return query.release().collect()
    return run


def child(name: str, path: str, groups: int, repeat: int) -> dict:
    run = _run_one(name, path, groups)
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        run()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"name": name, "best_s": min(times), "median_s": statistics.median(times),
            "cpu_best_s": min(cpu), "cpu_median_s": statistics.median(cpu),
            "times_s": times, "cpu_s": cpu, "peak_rss_mb": _peak_rss_mb()}


def _merged(rounds: list) -> dict:
    """One measurement's child results over the rounds: best and median of all
    its runs, the largest peak RSS, the load averages of every round."""
    times = [t for r in rounds for t in r["times_s"]]
    cpu = [c for r in rounds for c in r["cpu_s"]]
    return {"name": rounds[0]["name"], "best_s": min(times),
            "median_s": statistics.median(times), "cpu_best_s": min(cpu),
            "cpu_median_s": statistics.median(cpu), "times_s": times, "cpu_s": cpu,
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rounds),
            "load_average": [r["load_average"] for r in rounds]}


def _line(result: dict) -> str:
    return (f"{result['name']:20s} best {result['best_s']:7.3f} s  median "
            f"{result['median_s']:7.3f} s  cpu {result['cpu_best_s']:7.3f} s (median "
            f"{result['cpu_median_s']:6.3f})  peak RSS {result['peak_rss_mb']:7.1f} MB")


def _measure(name: str, path: str, args):
    """One child process for ``name``; None when a peer is missing or fails."""
    module = {"pipelinedp_local": "pipeline_dp", "opendp_polars": "opendp"}.get(name)
    python = sys.executable
    if name == "opendp_polars" and args.opendp_python:
        python = args.opendp_python
    elif module and importlib.util.find_spec(module) is None:
        print(f"{name:20s} skipped ({module} is not installed)")
        return None
    repeat = 1 if name == "pipelinedp_local" else args.repeat     # minutes per run
    load_before = os.getloadavg()[0]
    child_run = subprocess.run([python, __file__, "--child", name, path,
                                "--groups", str(args.groups), "--repeat", str(repeat)],
                               capture_output=True, text=True)
    if child_run.returncode != 0 and module is not None:     # a peer's install
        reason = (child_run.stderr.strip().splitlines() or ["?"])[-1][:200]
        print(f"{name:20s} failed: {reason}")
        return None
    child_run.check_returncode()
    result = json.loads(child_run.stdout.strip().splitlines()[-1])
    # the machine may be shared: the 1-minute load average around each measurement
    result["load_average"] = [load_before, os.getloadavg()[0]]
    return result


def _fresh_cpu(name: str, path: str, groups: int) -> float:
    """Whole-process CPU seconds (user + sys) of a fresh interpreter that
    imports what ``name`` needs and makes one call (``--child ... --repeat 1``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, __file__, "--child", name, path, "--groups", str(groups),
                    "--repeat", "1"], capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fresh_pairs(path: str, groups: int, pairs: int) -> dict:
    """Issue 18 item 6 (fresh process): privloss_duckdb against hand_bounded,
    each run in a new process, A B A B ...; the median of the pairwise CPU
    ratios (no tracemalloc anywhere: memory is the children's VmHWM)."""
    ratios, ours, theirs = [], [], []
    load_before = os.getloadavg()[0]
    for _ in range(pairs):
        a = _fresh_cpu("privloss_duckdb", path, groups)
        b = _fresh_cpu("hand_bounded", path, groups)
        ours.append(a)
        theirs.append(b)
        ratios.append(a / b)
    return {"pairs": pairs, "privloss_cpu_median_s": statistics.median(ours),
            "hand_cpu_median_s": statistics.median(theirs),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "load_average": [load_before, os.getloadavg()[0]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--max-per-user", type=int, default=50)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the chosen measurements this many times in turn (each "
                             "round a fresh child per measurement): on a shared machine the "
                             "load then falls on all of them alike; best/median over all runs")
    parser.add_argument("--data", default=None)
    parser.add_argument("--fresh", type=int, default=0, metavar="PAIRS",
                        help="instead: PAIRS paired fresh-process runs of privloss_duckdb "
                             "against hand_bounded (whole-process CPU, median ratio)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--opendp-python", default=None,
                        help="interpreter for the OpenDP child (OpenDP 0.16 needs polars "
                             "1.36.1 exactly; the venv may carry a newer polars)")
    parser.add_argument("--only", default=None,
                        help="comma-separated subset of: " + ", ".join(MEASUREMENTS))
    parser.add_argument("--child", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.groups, args.repeat)))
        return
    with tempfile.TemporaryDirectory() as directory:
        path = args.data or os.path.join(directory, "rows.parquet")
        if args.data is None:
            generate(path, args.rows, args.max_per_user, args.groups, seed=7)
        if args.fresh:
            fresh = fresh_pairs(path, args.groups, args.fresh)
            print(f"fresh processes, {fresh['pairs']} pairs: privloss "
                  f"{fresh['privloss_cpu_median_s']:.2f} s "
                  f"CPU, hand-written {fresh['hand_cpu_median_s']:.2f} s; ratio median "
                  f"{fresh['ratio_median']:.2f} ({fresh['ratio_min']:.2f} to "
                  f"{fresh['ratio_max']:.2f}); load {fresh['load_average'][0]:.1f}-"
                  f"{fresh['load_average'][1]:.1f}")
            return
        chosen = MEASUREMENTS if args.only is None else tuple(args.only.split(","))
        per_name: dict = {}
        for round_index in range(args.rounds):
            for name in chosen:
                result = _measure(name, path, args)
                if result is None:
                    continue
                per_name.setdefault(name, []).append(result)
                before, after = result["load_average"]
                prefix = f"round {round_index + 1}  " if args.rounds > 1 else ""
                print(f"{prefix}{_line(result)}  load {before:.1f}-{after:.1f}", flush=True)
        results = [_merged(per_name[name]) for name in chosen if name in per_name]
        if args.rounds > 1:
            print(f"over {args.rounds} rounds:")
            for result in results:
                loads = [value for pair in result["load_average"] for value in pair]
                print(f"{_line(result)}  load {min(loads):.1f}-{max(loads):.1f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": args.rows, "groups": args.groups, "results": results}, handle,
                      indent=2)


if __name__ == "__main__":
    main()
