"""``privloss demo``: a synthetic Zipf dataset in an embedded DuckDB, a private
top-k charged to a durable ledger, a free repeated query, and a refusal once
the budget is spent. The README's main job."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from privloss.cli._common import CommandError
from privloss.cli._parse import nonnegative_int, positive_int


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help="end-to-end demo: synthetic data, top-k, ledger")
    parser.add_argument("--rows", type=lambda t: positive_int(t, "rows"), default=1_000_000,
                        help="number of (user, item) rows to generate (default 1e6)")
    parser.add_argument("--ledger", metavar="PATH", default=None,
                        help="ledger file (default: a new temporary file)")
    parser.add_argument("--seed", type=lambda t: nonnegative_int(t, "seed"), default=None,
                        help="INSECURE: reproducible noise and sampling (for tests)")
    parser.set_defaults(handler=run)


def _step(number: int, total: int, text: str) -> float:
    print(f"[{number}/{total}] {text} ...", file=sys.stderr, flush=True)
    return time.perf_counter()


def _done(started: float) -> None:
    print(f"      done in {time.perf_counter() - started:.2f} s", file=sys.stderr, flush=True)


def run(args) -> int:
    try:
        import duckdb
    except ImportError as error:
        raise CommandError("the demo needs DuckDB: pip install 'privloss[analytics]'") from error
    from privloss.analytics.algorithms import ALGORITHMS
    from privloss.analytics.engines import bounded_histogram
    from privloss.analytics.inputs import SqlQuery
    from privloss.analytics.ledger import Ledger, LedgerBudgetError
    from privloss.cli.ledger import ledger_errors
    from privloss.samplers import InsecureSeededSource

    total = 5
    started = _step(1, total, f"building {args.rows:,} synthetic (user, item) rows, Zipf items, "
                              "at most 50 rows per user, in an embedded DuckDB")
    con = duckdb.connect()
    con.execute("SELECT setseed(0.42)").fetchall()   # synthetic public data: a fixed seed is fine
    # users own up to 50 consecutive row slots, each kept with probability 0.6 (so users
    # have different numbers of rows); enough slots are drawn for exactly --rows rows
    slots = int(args.rows / 0.6) + 10_000
    con.execute(f"""
        CREATE TABLE events AS
        SELECT (i // 50)::BIGINT AS user_id,
               'item-' || LEAST(CAST(floor(pow(random(), -1.0 / 1.1)) AS BIGINT), 100000)::VARCHAR
                   AS item
        FROM range({slots}) t(i)
        WHERE random() < 0.6
        LIMIT {args.rows}""")
    [(rows, users)] = con.execute("SELECT count(*), count(DISTINCT user_id) FROM events").fetchall()
    _done(started)
    print(f"data: {rows:,} rows from {users:,} users")

    started = _step(2, total, "creating a privacy-budget ledger (epsilon = 1, delta = 1e-6)")
    directory = None
    if args.ledger is None:
        directory = tempfile.mkdtemp(prefix="privloss-demo-")
        ledger_path = Path(directory) / "ledger.sqlite"
    else:
        ledger_path = Path(args.ledger)
    dataset = "demo-events"
    with ledger_errors():      # a directory, a non-ledger file, a missing folder: exit 2
        ledger = Ledger(str(ledger_path))
        if dataset not in ledger.datasets():
            ledger.create_dataset(dataset, epsilon=1.0, delta=1e-6, interaction="adaptive")
    _done(started)
    print(f"ledger: {ledger_path}")

    source = InsecureSeededSource(args.seed) if args.seed is not None else None
    spec = ALGORITHMS["unknown-gumbel"]
    parameters = dict(epsilon=0.5, delta=5e-7, k=10, l0_sensitivity=5, linf_sensitivity=1,
                      d_bar=200)

    def top10():
        histogram = bounded_histogram(SqlQuery("SELECT user_id, item FROM events", con),
                                      user_column="user_id", item_column="item", l0=5, linf=1,
                                      top=200, seed=args.seed, source=source)
        return spec.run(histogram, source=source, **parameters).to_dict()

    events = _events_of(spec, parameters)
    query_key = {"demo": "top-10 items", "rows": args.rows, **parameters}
    started = _step(3, total, "private top-10 (unknown domain, Gumbel selection + exact "
                              "discrete Laplace counts), bounded to 5 items per user inside DuckDB")
    receipt = ledger.release_with_receipt(dataset, query_key, top10, events)
    _done(started)
    _print_items(receipt.result)
    print(f"spent: epsilon = {receipt.spent_epsilon:.4f} of 1 (bound: {receipt.bound})")

    started = _step(4, total, "asking the identical query again")
    again = ledger.release_with_receipt(dataset, query_key, top10, events)
    _done(started)
    print(f"repeated query: stored answer returned, no extra cost: {again.cached}; "
          f"spent still {ledger.show(dataset)['spent_epsilon']:.4f}")

    started = _step(5, total, "asking new top-10 queries until the ledger refuses")
    for attempt in range(2, 20):
        other = dict(query_key, demo=f"top-10 items, look {attempt}")
        try:
            receipt = ledger.release_with_receipt(dataset, other, top10, events)
            status = "stored answer, no extra cost" if receipt.cached else "accepted"
            print(f"query {attempt}: {status}, spent {ledger.show(dataset)['spent_epsilon']:.4f}")
        except LedgerBudgetError as error:
            print(f"query {attempt}: refused: {error}")
            break
    _done(started)
    summary = ledger.show(dataset)
    print(f"ledger: {summary['releases']} release(s), spent epsilon {summary['spent_epsilon']:.4f} "
          f"of {summary['budget_epsilon']:g} at delta {summary['budget_delta']:g}")
    return 0


def _events_of(spec, parameters) -> tuple:
    """The events the release will report, fixed before touching the data: they
    depend on the parameters only (a release on an empty public histogram)."""
    from privloss.analytics.histogram import Histogram

    empty = Histogram.from_counts({}, top=parameters["d_bar"])
    return spec.run(empty, **parameters).events


def _print_items(payload: dict) -> None:
    print(f"  {'item':<12} {'count':>8}  95% interval")
    for row in payload["items"]:
        low, high = row["ci95"]
        print(f"  {str(row['item']):<12} {row['count']:>8}  [{low}, {high}]")
