"""``privloss demo``: a synthetic Zipf dataset built in an embedded DuckDB, a
dry run, a private top-k charged to a durable ledger, a free repeated query,
and a refusal once the budget is spent -- all through the public Python API
(``privloss.plan``, ``privloss.topk``).  The README's main job."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from privloss.cli._common import CommandError
from privloss.cli._parse import nonnegative_int


def register(subparsers) -> None:
    from privloss.cli._vocabulary import add_deprecated, count_value

    parser = subparsers.add_parser("demo", help="end-to-end demo: synthetic data, top-k, ledger")
    parser.add_argument("-n", "--count", dest="rows", type=lambda t: count_value(t, "count"),
                        default=1_000_000, metavar="N",
                        help="number of (user, item) rows to generate (default 1e6; 1e5 and "
                             "100000 are both accepted)")
    add_deprecated(parser, "--rows", dest="rows", new="-n/--count", where="demo",
                   type=lambda t: count_value(t, "rows"))
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
        import duckdb  # noqa: F401
    except ImportError as error:
        raise CommandError("the demo needs DuckDB: pip install '.[analytics]' (from a "
                           "checkout) or the 'analytics' extra") from error
    import privloss
    from privloss.budget import Ledger, LedgerBudgetError
    from privloss.cli.ledger import ledger_errors

    data_folder = tempfile.mkdtemp(prefix="privloss-demo-data-")
    try:
        return _run(args, data_folder, privloss, Ledger, LedgerBudgetError, ledger_errors)
    finally:
        shutil.rmtree(data_folder, ignore_errors=True)


def _run(args, data_folder, privloss, Ledger, LedgerBudgetError, ledger_errors) -> int:
    from privloss.query.corpora import synthetic_events

    total = 5
    started = _step(1, total, f"building {args.rows:,} synthetic (user, item) rows, Zipf items, "
                              "at most 50 rows per user, in an embedded DuckDB")
    data, rows, users = synthetic_events(args.rows, data_folder)
    _done(started)
    print(f"data: {rows:,} rows from {users:,} users")

    started = _step(2, total, "creating a privacy-budget ledger (epsilon = 1, delta = 1e-6)")
    if args.ledger is None:
        ledger_path = Path(tempfile.mkdtemp(prefix="privloss-demo-")) / "ledger.sqlite"
    else:
        ledger_path = Path(args.ledger)
    dataset = "demo-events"
    with ledger_errors():      # a directory, a non-ledger file, a missing folder: exit 2
        ledger = Ledger(str(ledger_path))
        if dataset not in ledger.datasets():
            ledger.create_dataset(dataset, epsilon=1.0, delta=1e-6,
                                  interaction="fully-adaptive")
    _done(started)
    print(f"ledger: {ledger_path}")

    # the release's public parameters: its events are fixed by these alone
    parameters = dict(k=10, epsilon=0.5, delta=5e-7, l0=5, linf=1, d_bar=200)
    print(privloss.plan("topk", **parameters, ledger=ledger, dataset=dataset))

    query = dict(privacy_unit="user_id", item="item", **parameters, ledger=ledger, dataset=dataset,
                 seed=args.seed, progress=False)
    started = _step(3, total, "private top-10 (unknown domain, Gumbel selection + exact "
                              "discrete Laplace counts), bounded to 5 items per user inside DuckDB")
    release = privloss.topk(data, **query)
    _done(started)
    _print_items(release)
    print(f"spent: epsilon = {release.spent['epsilon']:.4f} of "
          f"{release.spent['budget_epsilon']:g}")

    started = _step(4, total, "asking the identical query again")
    again = privloss.topk(data, **query)
    _done(started)
    print(f"repeated query: stored answer returned, no extra cost: {again.cached}; "
          f"spent still {again.spent['epsilon']:.4f}")

    started = _step(5, total, "asking new top-10 queries until the ledger refuses")
    for attempt in range(2, 20):
        try:
            other = privloss.topk(data, **query, label=f"look {attempt}")
            status = "stored answer, no extra cost" if other.cached else "accepted"
            print(f"query {attempt}: {status}, spent {other.spent['epsilon']:.4f}")
        except LedgerBudgetError as error:
            print(f"query {attempt}: refused: {error}")
            break
    _done(started)
    summary = ledger.show(dataset)
    print(f"ledger: {summary['releases']} release(s), spent epsilon {summary['spent_epsilon']:.4f} "
          f"of {summary['budget_epsilon']:g} at delta {summary['budget_delta']:g}")
    return 0


def _print_items(release) -> None:
    print(f"  {'item':<12} {'count':>8}  95% interval (of counts bounded to 5 items per user)")
    for row in release.rows():
        low, high = row["ci95"]
        print(f"  {str(row['item']):<12} {row['count']:>8}  [{low}, {high}]")
    missing = release.parameters["k"] - len(release.items)
    if missing > 0:     # k minus the number released: a function of the private output
        print(f"  ({missing} of the {release.parameters['k']} requested items were below the "
              f"threshold and not released)")
