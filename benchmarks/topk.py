"""Private histogram / top-k on N synthetic (user, item) rows, in one run:
raw DuckDB GROUP BY, privloss on DuckDB, PipelineDP's local backend, privloss on
Spark local. Prints times, peak memory and ratios.

Run:  python benchmarks/topk.py [--rows 10000000] [--skip-pipelinedp] [--skip-spark]
(needs `pip install -e '.[analytics,spark,bench]'`). Results: docs/benchmarks.md.

Work: Zipf items (exponent 1.1, capped at 1e5 distinct), at most 50 rows per
user; a DP count per item with at most 5 items per user (l0) and 1 per item
(linf), epsilon = 1, delta = 1e-6; privloss releases the unknown-domain
Laplace histogram of the top 1000 items.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(rows: int, directory: Path) -> Path:
    import duckdb

    path = directory / "rows.parquet"
    con = duckdb.connect()
    con.execute("SELECT setseed(0.5)").fetchall()
    con.execute(f"""
        COPY (SELECT (i // 50)::BIGINT AS user_id,
                     LEAST(CAST(floor(pow(random(), -1.0 / 1.1)) AS BIGINT), 100000) AS item
              FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)""").fetchall()
    con.close()
    return path


def timed(label: str, function):
    start = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - start
    print(f"  {label}: {seconds:.2f} s (process peak RSS so far {peak_rss_mib():.0f} MiB)", flush=True)
    return result, seconds


def raw_duckdb(path: Path):
    import duckdb

    con = duckdb.connect()
    return con.execute(f"SELECT item, count(*) FROM read_parquet('{path}') GROUP BY item").fetchall()


def privloss_release(path: Path, engine: str):
    from privloss.analytics.algorithms import ALGORITHMS
    from privloss.analytics.engines import bounded_histogram

    spec = ALGORITHMS["unknown-laplace"]
    histogram = bounded_histogram(str(path), user_column="user_id", item_column="item", l0=5,
                                  linf=1, engine=engine, top=1000)
    return spec.run(histogram, epsilon=1.0, delta=1e-6, l0_sensitivity=5, d_bar=1000)


def pipelinedp_count(path: Path):
    import pipeline_dp
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    rows = list(zip(table.column("user_id").to_pylist(), table.column("item").to_pylist()))
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.LAPLACE,
                                         metrics=[pipeline_dp.Metrics.COUNT],
                                         max_partitions_contributed=5,
                                         max_contributions_per_partition=1)
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda row: row[0],
                                            partition_extractor=lambda row: row[1],
                                            value_extractor=lambda row: 0)
    result = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    return list(result)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--skip-pipelinedp", action="store_true")
    parser.add_argument("--skip-spark", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        path, _ = timed(f"build {args.rows:,} rows (Parquet)", lambda: build(args.rows, Path(directory)))
        times = {}
        _, times["raw DuckDB GROUP BY"] = timed("raw DuckDB GROUP BY", lambda: raw_duckdb(path))
        _, times["privloss DuckDB"] = timed("privloss on DuckDB (bounding + DP release)",
                                            lambda: privloss_release(path, "duckdb"))
        if not args.skip_pipelinedp:
            _, times["PipelineDP local"] = timed("PipelineDP local backend (DP count per item)",
                                                 lambda: pipelinedp_count(path))
        if not args.skip_spark:
            _, times["privloss Spark"] = timed("privloss on Spark local",
                                               lambda: privloss_release(path, "spark"))
    base = times["privloss DuckDB"]
    print("\n| system | seconds | relative to privloss on DuckDB |")
    print("|---|---|---|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.2f} | {seconds / base:.2f}x |")
    print(f"\nprocess peak RSS: {peak_rss_mib():.0f} MiB (includes every system above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
