"""WHERE + public join + GROUP BY: privloss against hand-written DuckDB SQL and Tumult Analytics.

Task (issue 20 item 7), the same on every side::

    SELECT r.Region, COUNT(*) FROM sales s JOIN regions r ON s.Country = r.Country
    WHERE s.Quantity > 0 GROUP BY r.Region

user-level (privacy unit ``CustomerID``), each unit bounded to ``--max-groups``
regions and ``--max-rows`` rows per region, the regions known (public keys, no
partition selection), Laplace noise for ``--epsilon`` (pure DP).

Data: ``--rows`` rows (default 10 million) derived from
``shared/data/online_retail.csv.gz``: its rows with a CustomerID (406,829),
replicated with fresh unit ids (``CustomerID + copy * 100000``, copy 0, 1, ...)
and cut at ``--rows``; columns CustomerID, Country, Quantity (int64, text,
int64), one Parquet file.  The public table maps 35 of its 38 countries to 9
regions (``Unspecified``, ``European Community`` and ``Hong Kong`` have no row:
the inner join drops them; Hong Kong has no CustomerID anyway).  ``--data DIR``
keeps both files there and reuses them.

Sides, each one fresh process per run (``--child``):

* ``hand``     the same bounded query written by hand in DuckDB SQL: filter,
               join, (unit, region) pairs with their row count ``c``, per unit
               the ``--max-groups`` regions of smallest ``hash(unit, region,
               seed)``, ``sum(least(c, max_rows))`` per region (privloss's
               count-only bounding in ``query/engines/_sql.py``, without its
               keyed mix or tie rules), then Laplace noise in NumPy for the
               known regions;
* ``privloss`` ``privloss.sql(QUERY, tables=..., public_tables=..., keys=regions,
               max_groups=..., max_rows_per_group=..., seed=1)``: skipped, with
               "privloss joins not available", where ``public_tables`` is not a
               parameter yet or the parser still refuses joins;
* ``tumult``   Tumult Analytics: ``Session.from_dataframe`` on the Parquet file
               read by Spark, ``AddRowsWithID("CustomerID")``,
               ``QueryBuilder("sales").filter("Quantity > 0").join_public("regions")
               .enforce(MaxGroupsPerID("Region", g)).enforce(MaxRowsPerGroupPerID(
               "Region", r)).groupby(KeySet.from_dict({"Region": regions})).count()``,
               ``PureDPBudget(epsilon)``; Spark local on every core,
               ``--spark-partitions`` shuffle partitions.  Run with another
               interpreter (``--tumult-python``, default
               ``/work/tumult-venv/bin/python``), never the project's venv.

Measured: the whole-process CPU seconds (user + sys, ``RUSAGE_CHILDREN`` of the
parent; the Tumult child stops Spark and reaps its JVM before exiting, so the
JVM's CPU is in it) of each run, the sides run in turn ``--pairs`` times (A B C A
B C ...), and the median of the pairwise ratios.  Each child also reports the
CPU of the query alone (this process and all its descendants, from
``/proc``, around the call: no imports, no Spark start-up) and its wall time.
No tracemalloc.  The 1-minute load average is recorded around every run.
The privloss child imports DuckDB and NumPy before its timer, as the hand
child does; privloss's own modules (and the libraries it imports) are compiled by one
untimed privloss run first, into a private ``PYTHONPYCACHEPREFIX`` that only
the privloss child uses (``--no-bytecode``: not, so that with
``PYTHONDONTWRITEBYTECODE`` set each run compiles them from source, about
0.4 s of CPU that an installed package does not spend).
Each side's released counts are compared with the hand side's exact bounded
counts (in noise scales), to show that the three answer the same question.

Run:  python benchmarks/joins.py --rows 1000000 --pairs 3
      python benchmarks/joins.py --rows 10000000 --pairs 3 --data /tmp/joins10m
Targets (issue 20 item 7): privloss at most 1.2x ``hand`` and at least 10x
faster than ``tumult`` (CPU, paired medians).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

SIDES = ("hand", "privloss", "tumult")
RETAIL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                      "shared", "data", "online_retail.csv.gz")
TUMULT_PYTHON = "/work/tumult-venv/bin/python"
QUERY = ("SELECT r.Region, COUNT(*) FROM sales s JOIN regions r ON s.Country = r.Country "
         "WHERE s.Quantity > 0 GROUP BY r.Region")
#: public: a geographic grouping of the data set's countries (not derived from its rows)
REGIONS = {
    "United Kingdom": "British Isles", "EIRE": "British Isles",
    "Channel Islands": "British Isles",
    "Germany": "Western Europe", "France": "Western Europe", "Netherlands": "Western Europe",
    "Belgium": "Western Europe", "Switzerland": "Western Europe", "Austria": "Western Europe",
    "Norway": "Northern Europe", "Finland": "Northern Europe", "Sweden": "Northern Europe",
    "Denmark": "Northern Europe", "Iceland": "Northern Europe", "Lithuania": "Northern Europe",
    "Spain": "Southern Europe", "Portugal": "Southern Europe", "Italy": "Southern Europe",
    "Cyprus": "Southern Europe", "Greece": "Southern Europe", "Malta": "Southern Europe",
    "Poland": "Eastern Europe", "Czech Republic": "Eastern Europe",
    "Israel": "Middle East", "United Arab Emirates": "Middle East", "Lebanon": "Middle East",
    "Bahrain": "Middle East", "Saudi Arabia": "Middle East",
    "Japan": "Asia Pacific", "Singapore": "Asia Pacific", "Australia": "Asia Pacific",
    "USA": "Americas", "Canada": "Americas", "Brazil": "Americas",
    "RSA": "Africa",
}
KEYS = sorted(set(REGIONS.values()))


# --- data -----------------------------------------------------------------------------------

def generate(directory: str, rows: int, retail: str) -> tuple[str, str]:
    """Write (or reuse) ``sales.parquet`` (``rows`` rows) and ``regions.parquet``."""
    import duckdb

    os.makedirs(directory, exist_ok=True)
    sales = os.path.join(directory, "sales.parquet")
    regions = os.path.join(directory, "regions.parquet")
    stamp = os.path.join(directory, "rows.txt")
    if os.path.exists(stamp) and open(stamp).read().strip() == str(rows):
        return sales, regions
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")
    base = connection.execute(
        "SELECT count(*) FROM read_csv(?) WHERE CustomerID IS NOT NULL", [retail]).fetchone()[0]
    copies = -(-rows // base)
    # file order kept (one reading thread), then copy by copy: the first ``rows`` rows
    connection.execute("SET threads = 1")
    connection.execute(
        "CREATE TABLE base AS SELECT row_number() OVER () AS line, CAST(CustomerID AS BIGINT) "
        "AS CustomerID, CAST(Country AS VARCHAR) AS Country, CAST(Quantity AS BIGINT) AS "
        "Quantity FROM read_csv(?) WHERE CustomerID IS NOT NULL", [retail])
    connection.execute("RESET threads")
    connection.execute(
        f"COPY (SELECT CustomerID + copy * 100000 AS CustomerID, Country, Quantity FROM base, "
        f"range({copies}) AS t(copy) ORDER BY copy, line LIMIT {rows}) TO '{sales}' "
        f"(FORMAT parquet)")
    connection.execute("CREATE TABLE regions (Country VARCHAR, Region VARCHAR)")
    connection.executemany("INSERT INTO regions VALUES (?, ?)", sorted(REGIONS.items()))
    connection.execute(f"COPY regions TO '{regions}' (FORMAT parquet)")
    connection.close()
    with open(stamp, "w") as handle:
        handle.write(str(rows))
    return sales, regions


# --- children -------------------------------------------------------------------------------

def tree_cpu() -> float:
    """CPU seconds (user + sys, reaped children included) of this process and
    every living descendant (a Spark child's JVM and its Python workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:         # it ended meanwhile
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(value) for value in fields[11:15])  # utime..cstime
    me, total = os.getpid(), 0
    for pid in cpu:
        ancestor = pid
        while ancestor not in (me, 0, 1) and ancestor in parent:
            ancestor = parent[ancestor]
        if ancestor == me:
            total += cpu[pid]
    return total / ticks


def _hand(args, sales: str, regions: str) -> dict:
    import duckdb
    import numpy as np

    def run():
        connection = duckdb.connect()
        connection.execute("SET enable_progress_bar = false")
        exact = dict(connection.execute(
            f"""WITH s AS (SELECT CustomerID AS u, Country FROM read_parquet(?)
                           WHERE Quantity > 0),
            j AS (SELECT s.u, r.Region AS g FROM s JOIN read_parquet(?) AS r
                  ON s.Country = r.Country),
            pairs AS (SELECT u, g, count(*) AS c FROM j WHERE u IS NOT NULL AND g IS NOT NULL
                      GROUP BY u, g),
            kept AS (SELECT g, least(c, {args.max_rows}) AS c FROM pairs QUALIFY row_number()
                     OVER (PARTITION BY u ORDER BY hash(u, g, {args.seed})) <= {args.max_groups})
            SELECT g, sum(c) FROM kept GROUP BY g""", [sales, regions]).fetchall())
        connection.close()
        generator = np.random.default_rng(args.seed)
        scale = args.max_groups * args.max_rows / args.epsilon
        noisy = {key: float(exact.get(key, 0) + generator.laplace(0.0, scale)) for key in KEYS}
        return noisy, {key: int(exact.get(key, 0)) for key in KEYS}

    start, start_cpu = time.perf_counter(), tree_cpu()
    noisy, exact = run()
    return {"query_cpu_s": tree_cpu() - start_cpu, "wall_s": time.perf_counter() - start,
            "counts": noisy, "exact": exact}


def _privloss(args, sales: str, regions: str) -> dict:
    # the two libraries the hand side imports before its timer, likewise here, so
    # that query CPU compares the calls (process CPU has every import anyway)
    import duckdb  # noqa: F401
    import numpy  # noqa: F401

    import privloss

    start, start_cpu = time.perf_counter(), tree_cpu()
    try:
        release = privloss.sql(QUERY, tables={"sales": sales}, public_tables={"regions": regions},
                               privacy_unit="CustomerID", epsilon=args.epsilon, keys=KEYS,
                               max_groups=args.max_groups, max_rows_per_group=args.max_rows,
                               seed=args.seed)
    except (TypeError, ValueError) as error:
        # before the joins: an unknown keyword (TypeError) or, since ``sql`` passes
        # unknown keywords on, the parser's refusal (UnsupportedSql, a ValueError)
        if "public_tables" not in str(error) and "joins are not supported" not in str(error):
            raise
        return {"unavailable": "privloss joins not available"}
    cpu, wall = tree_cpu() - start_cpu, time.perf_counter() - start
    counts = {str(row["group"][0]): float(next(iter(row["values"].values())))
              for row in release.rows}
    return {"query_cpu_s": cpu, "wall_s": wall, "counts": counts}


def _tumult(args, sales: str, regions: str) -> dict:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from tmlt.analytics import (AddRowsWithID, KeySet, MaxGroupsPerID, MaxRowsPerGroupPerID,
                                PureDPBudget, QueryBuilder, Session)

    os.environ["PYSPARK_PYTHON"] = sys.executable     # Spark's Python workers import tmlt
    start = time.perf_counter()
    spark = (SparkSession.builder.master("local[*]").appName("joins-benchmark")
             .config("spark.driver.memory", args.spark_memory)
             .config("spark.sql.shuffle.partitions", str(args.spark_partitions))
             .config("spark.ui.enabled", "false")
             .config("spark.sql.warehouse.dir", os.path.join(args.scratch, "spark-warehouse"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.perf_counter() - start
    start, start_cpu = time.perf_counter(), tree_cpu()
    session = Session.from_dataframe(privacy_budget=PureDPBudget(args.epsilon), source_id="sales",
                                     dataframe=spark.read.parquet(sales),
                                     protected_change=AddRowsWithID("CustomerID"))
    session.add_public_dataframe("regions", spark.read.parquet(regions))
    query = (QueryBuilder("sales").filter("Quantity > 0").join_public("regions")
             .enforce(MaxGroupsPerID("Region", args.max_groups))
             .enforce(MaxRowsPerGroupPerID("Region", args.max_rows))
             .groupby(KeySet.from_dict({"Region": KEYS})).count())
    rows = session.evaluate(query, PureDPBudget(args.epsilon)).collect()
    cpu, wall = tree_cpu() - start_cpu, time.perf_counter() - start
    counts = {row["Region"]: float(row["count"]) for row in rows}
    # stop the JVM and reap it, so that its CPU time reaches this process's parent
    gateway = SparkContext._gateway
    spark.stop()
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    if process is not None:
        process.stdin.close()
        process.wait()
    return {"query_cpu_s": cpu, "wall_s": wall, "startup_s": startup, "counts": counts}


def child(args) -> dict:
    sales, regions = args.sales, args.regions
    result = {"hand": _hand, "privloss": _privloss, "tumult": _tumult}[args.child](
        args, sales, regions)
    return {"side": args.child, **result}


# --- parent ---------------------------------------------------------------------------------

def run_side(args, side: str, sales: str, regions: str) -> dict:
    """One fresh child for ``side``: its whole-process CPU (``RUSAGE_CHILDREN``),
    its own report, the load average around it."""
    python = args.tumult_python if side == "tumult" else sys.executable
    environment = dict(os.environ)
    if args.bytecode and side == "privloss":    # its modules read from bytecode, as installed
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        environment["PYTHONPYCACHEPREFIX"] = os.path.join(args.scratch, "pycache")
    command = [python, os.path.abspath(__file__), "--child", side, "--sales", sales,
               "--regions", regions, "--scratch", args.scratch, "--epsilon", str(args.epsilon),
               "--max-groups", str(args.max_groups), "--max-rows", str(args.max_rows),
               "--seed", str(args.seed), "--spark-partitions", str(args.spark_partitions),
               "--spark-memory", args.spark_memory]
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env=environment)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{side} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(process_cpu_s=(after.ru_utime - before.ru_utime)
                  + (after.ru_stime - before.ru_stime),
                  process_wall_s=wall, load_average=[load_before, os.getloadavg()[0]])
    return result


def _median(runs: list, field: str) -> float:
    return statistics.median(run[field] for run in runs)


def summarize(args, per_side: dict) -> dict:
    """Medians per side and the median of the pairwise whole-process CPU ratios."""
    scale = args.max_groups * args.max_rows / args.epsilon
    exact = per_side["hand"][0]["exact"] if per_side.get("hand") else None
    summary = {}
    for side, runs in per_side.items():
        entry = {name: _median(runs, name) for name in
                 ("process_cpu_s", "process_wall_s", "query_cpu_s", "wall_s")}
        if exact is not None:     # |released - exact bounded| in noise scales, worst region
            entry["max_error_scales"] = max(
                abs(run["counts"].get(key, 0.0) - exact[key]) / scale
                for run in runs for key in KEYS)
        summary[side] = entry
    ratios = {}
    for a, b in (("privloss", "hand"), ("tumult", "privloss"), ("tumult", "hand")):
        if per_side.get(a) and per_side.get(b):
            pairs = [x["process_cpu_s"] / y["process_cpu_s"]
                     for x, y in zip(per_side[a], per_side[b])]
            query = [x["query_cpu_s"] / y["query_cpu_s"] for x, y in zip(per_side[a], per_side[b])]
            ratios[f"{a}/{b}"] = {"process_cpu_median": statistics.median(pairs),
                                  "process_cpu_range": [min(pairs), max(pairs)],
                                  "query_cpu_median": statistics.median(query)}
    return {"sides": summary, "ratios": ratios}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--pairs", type=int, default=3,
                        help="rounds of the sides in turn, each run a fresh process")
    parser.add_argument("--only", default=",".join(SIDES),
                        help="comma-separated subset of: " + ", ".join(SIDES))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--max-groups", type=int, default=1)
    parser.add_argument("--max-rows", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=None,
                        help="folder for (or with) sales.parquet and regions.parquet")
    parser.add_argument("--retail", default=RETAIL)
    parser.add_argument("--tumult-python", default=TUMULT_PYTHON,
                        help="interpreter with tmlt.analytics (not the project's venv)")
    parser.add_argument("--spark-partitions", type=int, default=8)
    parser.add_argument("--spark-memory", default="4g")
    parser.add_argument("--json", default=None)
    parser.add_argument("--bytecode", action=argparse.BooleanOptionalAction, default=True,
                        help="privloss's modules compiled by one untimed privloss run "
                             "first (a private PYTHONPYCACHEPREFIX), as an installed package "
                             "ships them; --no-bytecode keeps the environment (with "
                             "PYTHONDONTWRITEBYTECODE set, every run compiles them from source)")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--sales", help=argparse.SUPPRESS)
    parser.add_argument("--regions", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        args.scratch = scratch
        start = time.perf_counter()
        sales, regions = generate(args.data or os.path.join(scratch, "data"), args.rows,
                                  args.retail)
        print(f"{args.rows:,} rows ({time.perf_counter() - start:.1f} s to prepare); "
              f"max_groups={args.max_groups}, max_rows={args.max_rows}, "
              f"epsilon={args.epsilon}; {os.cpu_count()} cores", flush=True)
        if args.bytecode and "privloss" in args.only.split(","):
            # one untimed privloss run writes the bytecode of every module it imports
            # (privloss's and its libraries') under the private PYTHONPYCACHEPREFIX
            run_side(args, "privloss", sales, regions)
        sides = [side for side in SIDES if side in args.only.split(",")]
        per_side: dict = {side: [] for side in sides}
        for round_index in range(args.pairs):
            for side in list(sides):
                result = run_side(args, side, sales, regions)
                if "unavailable" in result:
                    print(result["unavailable"], flush=True)
                    sides.remove(side)
                    del per_side[side]
                    continue
                per_side[side].append(result)
                before, after = result["load_average"]
                print(f"round {round_index + 1} {side:9s} process CPU "
                      f"{result['process_cpu_s']:7.2f} s  wall {result['process_wall_s']:7.2f} s"
                      f"  query CPU {result['query_cpu_s']:7.2f} s  wall {result['wall_s']:7.2f}"
                      f" s  load {before:.1f}-{after:.1f}", flush=True)
    summary = summarize(args, per_side)
    print(f"medians over {args.pairs} rounds:")
    for side, entry in summary["sides"].items():
        error = entry.get("max_error_scales")
        print(f"  {side:9s} process CPU {entry['process_cpu_s']:7.2f} s  query CPU "
              f"{entry['query_cpu_s']:7.2f} s  query wall {entry['wall_s']:7.2f} s"
              + ("" if error is None else f"  max |released - exact| {error:.1f} scales"))
    for name, ratio in summary["ratios"].items():
        low, high = ratio["process_cpu_range"]
        print(f"  {name:16s} process CPU ratio median {ratio['process_cpu_median']:6.2f} "
              f"({low:.2f} to {high:.2f}); query CPU ratio median "
              f"{ratio['query_cpu_median']:6.2f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": args.rows, "parameters": {k: v for k, v in vars(args).items()
                                                         if k not in ("child", "sales",
                                                                      "regions", "scratch")},
                       "runs": per_side, **summary}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
