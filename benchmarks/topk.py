"""Private top-k on N synthetic (user, item) rows, every system in one run:
raw DuckDB GROUP BY, privloss on DuckDB, PipelineDP's local backend and
privloss on Spark local. Prints times, peak memory and ratios.

Run:  python benchmarks/topk.py [--rows 10000000] [--skip-pipelinedp] [--skip-spark]
      [--json out.json]
(needs ``pip install -e '.[analytics,spark,bench]'``). Results: docs/benchmarks.md.

Data: the generator of ``topk_engines.py`` (users with 1..50 rows each, uniform;
items Zipf(1.1) over 100,000 labels; rows shuffled; int64 columns in Parquet).

Work, the same for every private system: a DP count per item with at most
``--l0`` (5) items per user and ``--linf`` (1) per item, epsilon = 1,
delta = 1e-6, items not known in advance.  privloss releases the
unknown-domain Laplace top ``--top`` (1000) with 95% intervals (bounding and
aggregation in the engine, then calibration and exact noise in Python);
PipelineDP computes its DP count per partition with private partition
selection (``DPEngine.aggregate``, Laplace noise).

Each system runs in its own child process, so each peak RSS (``VmHWM``) is its
own.  Times are the best of ``--repeat`` runs inside the child (PipelineDP and
Spark: one run).  Excluded from the times and reported apart: PipelineDP's
loading of the rows into Python tuples (it needs an iterable), and the Spark
session start-up.  Spark's RSS is the Python driver's (the JVM is another
process).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topk_engines import (_timed, add_common_arguments, measure_all,  # noqa: E402
                          peak_rss_mb, write_json)

SYSTEMS = ("raw_groupby", "privloss_duckdb", "pipelinedp_local", "privloss_spark")
EPSILON, DELTA = 1.0, 1e-6


def privloss_release(args, engine: str):
    from privloss.releases.algorithms import ALGORITHMS
    from privloss.query.engines import bounded_histogram

    histogram = bounded_histogram(args.data, user_column="user_id", item_column="item",
                                  l0=args.l0, linf=args.linf, engine=engine, top=args.top)
    return ALGORITHMS["unknown-laplace"].run(histogram, epsilon=EPSILON, delta=DELTA,
                                             l0_sensitivity=args.l0, d_bar=args.top)


def pipelinedp_rows(path: str):
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return list(zip(table.column("user_id").to_pylist(), table.column("item").to_pylist()))


def pipelinedp_count(args, rows):
    import pipeline_dp

    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=DELTA)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.LAPLACE,
                                         metrics=[pipeline_dp.Metrics.COUNT],
                                         max_partitions_contributed=args.l0,
                                         max_contributions_per_partition=args.linf)
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda row: row[0],
                                            partition_extractor=lambda row: row[1],
                                            value_extractor=lambda row: 0)
    result = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    return list(result)  # the local backend is lazy: this runs it


def child(args) -> dict:
    """One system, in this (fresh) process."""
    name, out = args.child, {"name": args.child}
    if name == "raw_groupby":
        import duckdb

        connection = duckdb.connect()
        sql = (f"SELECT item, count(*) AS c FROM read_parquet('{args.data}') GROUP BY item "
               f"ORDER BY c DESC, item LIMIT {args.top + 1}")
        best, _, result = _timed(lambda: connection.execute(sql).fetchall(), args.repeat)
        out["released"] = len(result)
    elif name == "privloss_duckdb":
        best, _, result = _timed(lambda: privloss_release(args, "duckdb"), args.repeat)
        out["released"] = len(result.items)
    elif name == "privloss_spark":
        from privloss.query.engines.spark_engine import get_session

        start = time.perf_counter()
        get_session().sparkContext.setLogLevel("ERROR")
        out["excluded_s"] = time.perf_counter() - start
        best, _, result = _timed(lambda: privloss_release(args, "spark"), 1)
        out["released"] = len(result.items)
    elif name == "pipelinedp_local":
        start = time.perf_counter()
        rows = pipelinedp_rows(args.data)
        out["excluded_s"] = time.perf_counter() - start
        best, _, result = _timed(lambda: pipelinedp_count(args, rows), 1)
        out["released"] = len(result)
    else:
        raise ValueError(f"unknown system {name!r}")
    out.update(seconds=best, peak_rss_mb=peak_rss_mb())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser, l0=5, top=1000)
    parser.add_argument("--skip-pipelinedp", action="store_true")
    parser.add_argument("--skip-spark", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    skipped = {"pipelinedp_local": args.skip_pipelinedp, "privloss_spark": args.skip_spark}
    info, results = measure_all(args, [name for name in SYSTEMS if not skipped.get(name)],
                                __file__)
    times = {row["name"]: row["seconds"] for row in results}
    print(f"{args.rows:,} rows, <= {args.max_per_user} rows/user, Zipf({args.zipf}) over "
          f"{args.items:,} items; l0={args.l0}, linf={args.linf}, top={args.top}, "
          f"epsilon={EPSILON}, delta={DELTA}; {os.cpu_count()} cores, "
          f"Python {platform.python_version()}  {info}")
    print("| system | seconds | x raw GROUP BY | PipelineDP / system | peak RSS MB | "
          "excluded s |")
    print("|---|---|---|---|---|---|")
    for row in results:
        vs_pipelinedp = (f"{times['pipelinedp_local'] / row['seconds']:.1f}"
                         if "pipelinedp_local" in times else "-")
        print(f"| {row['name']} | {row['seconds']:.2f} | "
              f"{row['seconds'] / times['raw_groupby']:.1f} | {vs_pipelinedp} | "
              f"{row['peak_rss_mb']:.0f} | {row.get('excluded_s', 0):.1f} |")
    write_json(args, info, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
