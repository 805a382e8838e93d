"""Bounded histogram inside DuckDB (and Spark) against a raw DuckDB GROUP BY.

Data: ``--rows`` synthetic (user, item) rows (default 10 million), users with
1..``--max-per-user`` rows each (uniform, default 50), items Zipf(``--zipf``)
over ``--items`` labels (default 1.1 over 100,000), both int64, written once to
a Parquet file (or ``--data`` to reuse one).  Every measurement runs in its own
child process reading that file, so its peak RSS (``VmHWM``) is its own; times
are the best and the median of ``--repeat`` runs inside that process.  The
Spark child's RSS is the Python driver's only (the JVM is a separate process).

Measured, all returning the top ``--top`` + 1 items:

* ``raw_groupby``   SELECT item, count(*) ... GROUP BY item (no bounding);
* ``raw_distinct``  count(DISTINCT user) per item (exact, unbounded, the
  non-private counterpart of linf = 1);
* ``privloss_duckdb_linf`` bounded_histogram(l0=None, linf=--linf);
* ``privloss_duckdb_l0``   bounded_histogram(l0=--l0, linf=--linf);
* ``hand_bounded``         the same bounding written by hand in DuckDB SQL
  (pairs, a random choice of ``--l0`` items per user by ``hash``, ``least(c,
  linf)``, the head): the same semantics, no keyed choice shared with Spark,
  no memory limit, no noise (issue 18: privloss within 1.1x of it);
* ``privloss_topk_api``    ``privloss.topk(...)`` (unknown-gumbel, the whole
  public call: checks, fingerprint, engine, noise): issue 18 asks it within
  1.05x of ``privloss_duckdb_l0``, the engine call;
* ``privloss_spark_l0``    the same on Spark local (``--spark``; the session
  start-up is reported separately and excluded from the time).

With ``--csv`` the same rows are also written as a CSV file and every
measurement is repeated on it with the suffix ``_csv`` (the raw queries read it
with ``all_varchar = true``, as privloss does, so that they group text too).
``--only`` keeps the named measurements; ``--memory-limit`` sets
``PRIVLOSS_DUCKDB_MEMORY_LIMIT`` for the privloss children (default: the
library's, ``duckdb_engine.DEFAULT_MEMORY_LIMIT``).  Times are wall clock and
process CPU (all threads): on a shared machine compare CPU seconds, and compare
runs made side by side.

Run:  python benchmarks/topk_engines.py [--rows 10000000] [--csv] [--spark] [--json out.json]
      python benchmarks/topk_engines.py --rows 50000000 --csv --only privloss_duckdb_l0_csv
Targets (issues 5 and 13): privloss on DuckDB within 3x the raw GROUP BY; peak
memory under 1 GB (50 million rows included).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

MEASUREMENTS = ("raw_groupby", "raw_distinct", "privloss_duckdb_linf", "privloss_duckdb_l0",
                "hand_bounded", "privloss_topk_api")


def generate(path: str, rows: int, max_per_user: int, items: int, zipf: float, seed: int):
    """Write the synthetic rows to a Parquet file; return (users, distinct items)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_per_user + 1, size=rows // ((1 + max_per_user) // 2) + 1000)
    ends = np.cumsum(sizes)
    users = int(np.searchsorted(ends, rows)) + 1
    sizes = sizes[:users]
    sizes[-1] -= int(ends[users - 1]) - rows
    user_ids = np.repeat(np.arange(users, dtype=np.int64), sizes)
    labels = rng.zipf(zipf, size=rows)
    too_big = labels > items
    while too_big.any():  # truncated Zipf by rejection
        labels[too_big] = rng.zipf(zipf, size=int(too_big.sum()))
        too_big = labels > items
    order = rng.permutation(rows)
    table = pa.table({"user_id": user_ids[order], "item": labels.astype(np.int64)[order]})
    pq.write_table(table, path)
    return users, int(np.unique(labels).size)


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB.

    ``VmHWM`` (Linux) starts afresh at ``exec``; ``ru_maxrss`` would include the
    parent's peak before the fork, so it is only the fallback."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(function, repeat: int, cpu: list | None = None):
    """(best, median wall seconds, last result); the CPU seconds of each run
    (``time.process_time``: every thread of this process) go to ``cpu``."""
    times, result = [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = function()
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(time.process_time() - start_cpu)
    return min(times), statistics.median(times), result


def write_csv(parquet: str, path: str) -> None:
    """The Parquet rows as a CSV file with a header (what text inputs look like)."""
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")
    connection.from_parquet(parquet).write_csv(path, header=True)
    connection.close()


def child(args) -> dict:
    """One measurement, in this (fresh) process."""
    name, top = args.child, args.top
    out, cpu = {"name": name}, []
    text = name.endswith("_csv")
    path = args.csv_data if text else args.data
    base = name[:-len("_csv")] if text else name
    if base == "hand_bounded":
        import duckdb

        connection = duckdb.connect()
        connection.execute("SET enable_progress_bar = false")
        scan = (f"read_csv('{path}', header = true, all_varchar = true)" if text
                else f"read_parquet('{path}')")
        sql = (f"WITH pairs AS (SELECT user_id, item, count(*) AS c FROM {scan} "
               f"WHERE user_id IS NOT NULL AND item IS NOT NULL GROUP BY user_id, item), "
               f"kept AS (SELECT item, least(c, {args.linf}) AS c FROM pairs QUALIFY "
               f"row_number() OVER (PARTITION BY user_id ORDER BY hash(user_id, item, 42)) "
               f"<= {args.l0}) SELECT item, sum(c) AS cnt FROM kept GROUP BY item "
               f"ORDER BY cnt DESC, item LIMIT {top + 1}")
        best, median, result = _timed(lambda: connection.execute(sql).fetchall(), args.repeat,
                                      cpu)
        out["top_count"] = int(result[0][1])
    elif base == "privloss_topk_api":
        import privloss

        best, median, result = _timed(
            lambda: privloss.topk(path, privacy_unit="user_id", item="item", k=top, epsilon=1.0,
                                  delta=1e-6, l0=args.l0, linf=args.linf, d_bar=top,
                                  seed=1, progress=False),
            args.repeat, cpu)
        out["top_count"] = len(result.items)
    elif name.startswith("raw_"):
        import duckdb

        connection = duckdb.connect()
        connection.execute("SET enable_progress_bar = false")
        aggregate = "count(*)" if base == "raw_groupby" else "count(DISTINCT user_id)"
        scan = (f"read_csv('{path}', header = true, all_varchar = true)" if text
                else f"read_parquet('{path}')")
        sql = (f"SELECT item, {aggregate} AS c FROM {scan} GROUP BY item "
               f"ORDER BY c DESC, item LIMIT {top + 1}")
        best, median, result = _timed(lambda: connection.execute(sql).fetchall(), args.repeat,
                                      cpu)
        out["top_count"] = int(result[0][1])
    else:
        from privloss.query import bounded_histogram

        engine = "spark" if name.startswith("privloss_spark") else "duckdb"
        l0 = None if base.endswith("_linf") else args.l0
        if engine == "spark":
            from privloss.query.engines.spark_engine import get_session

            start = time.perf_counter()
            get_session().sparkContext.setLogLevel("ERROR")
            out["startup_s"] = time.perf_counter() - start
        best, median, result = _timed(
            lambda: bounded_histogram(path, user_column="user_id", item_column="item", l0=l0,
                                      linf=args.linf, top=top, engine=engine, seed=1),
            args.repeat, cpu)
        out["top_count"] = int(result.counts[0])
        out["total_items"] = int(result.total_items)
        out["memory_limit"] = os.environ.get("PRIVLOSS_DUCKDB_MEMORY_LIMIT", "default")
    out.update(best_s=best, median_s=median, best_cpu_s=min(cpu),
               median_cpu_s=statistics.median(cpu), peak_rss_mb=peak_rss_mb())
    return out


def run_child(args, name: str, script: str = __file__) -> dict:
    """Run ``script --child name`` in a fresh process; its last stdout line is JSON."""
    command = [sys.executable, os.path.abspath(script), "--child", name, "--data", args.data,
               "--top", str(args.top), "--l0", str(args.l0), "--linf", str(args.linf),
               "--repeat", str(args.repeat)]
    if getattr(args, "csv_data", None):
        command += ["--csv-data", args.csv_data]
    environment = dict(os.environ)
    if getattr(args, "memory_limit", None):
        environment["PRIVLOSS_DUCKDB_MEMORY_LIMIT"] = args.memory_limit
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env=environment)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def add_common_arguments(parser: argparse.ArgumentParser, *, l0: int, top: int) -> None:
    """Data, work and output options shared with ``topk.py``."""
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--max-per-user", type=int, default=50)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--l0", type=int, default=l0)
    parser.add_argument("--linf", type=int, default=1)
    parser.add_argument("--top", type=int, default=top)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", help="reuse this Parquet file (columns user_id, item)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)


def measure_all(args, names, script: str = __file__) -> tuple[dict, list[dict]]:
    """Write the data (unless ``--data``), then run each measurement of ``script``
    in its own child process; returns (data info, results)."""
    with tempfile.TemporaryDirectory() as scratch:
        info = {}
        if args.data is None:
            args.data = os.path.join(scratch, "rows.parquet")
            start = time.perf_counter()
            users, distinct = generate(args.data, args.rows, args.max_per_user, args.items,
                                       args.zipf, args.seed)
            info = {"users": users, "distinct_items": distinct,
                    "generate_s": round(time.perf_counter() - start, 1)}
        if getattr(args, "csv", False) and not getattr(args, "csv_data", None):
            args.csv_data = os.path.join(scratch, "rows.csv")
            write_csv(args.data, args.csv_data)
        results = []
        for name in names:
            results.append(run_child(args, name, script))
            print(f"  done: {results[-1]}", file=sys.stderr, flush=True)
    return info, results


def write_json(args, info: dict, results: list[dict]) -> None:
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"parameters": vars(args), "data": info, "results": results}, handle,
                      indent=2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser, l0=10, top=100)
    parser.add_argument("--spark", action="store_true", help="also run privloss on Spark local")
    parser.add_argument("--csv", action="store_true",
                        help="also measure everything on the same rows as a CSV file (text)")
    parser.add_argument("--csv-data", help="reuse this CSV file (columns user_id, item)")
    parser.add_argument("--only", help="comma-separated measurement names to run")
    parser.add_argument("--memory-limit",
                        help="PRIVLOSS_DUCKDB_MEMORY_LIMIT for the privloss children")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    names = list(MEASUREMENTS) + (["privloss_spark_l0"] if args.spark else [])
    if args.csv or args.csv_data:
        args.csv = True
        names += [name + "_csv" for name in names]
    if args.only:
        names = [name for name in names if name in args.only.split(",")]
    info, results = measure_all(args, names)
    raw = {row["name"]: row["best_cpu_s"] for row in results if row["name"].startswith("raw_g")}
    print(f"{args.rows:,} rows, <= {args.max_per_user} rows/user, Zipf({args.zipf}) over "
          f"{args.items:,} items; l0={args.l0}, linf={args.linf}, top={args.top}; "
          f"{os.cpu_count()} cores, {platform.python_implementation()} "
          f"{platform.python_version()}  {info}")
    print(f"{'measurement':28s} {'best s':>7s} {'median s':>8s} {'best CPU s':>10s} "
          f"{'x raw CPU':>9s} {'peak MB':>8s}")
    for row in results:
        same_input = "raw_groupby_csv" if row["name"].endswith("_csv") else "raw_groupby"
        if same_input in raw:
            row["cpu_ratio_to_raw_groupby"] = row["best_cpu_s"] / raw[same_input]
        print(f"{row['name']:28s} {row['best_s']:7.2f} {row['median_s']:8.2f} "
              f"{row['best_cpu_s']:10.2f} {row.get('cpu_ratio_to_raw_groupby', float('nan')):9.1f}"
              f" {row['peak_rss_mb']:8.0f}"
              + (f"   (+ {row['startup_s']:.1f} s Spark start-up)" if "startup_s" in row else ""))
    write_json(args, info, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
