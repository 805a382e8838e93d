"""The ledger's admission path with a long history, fully adaptive.

Run:  python benchmarks/ledger.py [--history 10000] [--repeat 20]
Results: docs/benchmarks.md ("Ledger admission").

Builds a ledger file whose dataset has ``--history`` recorded releases (a
top-10 each: 10 BR + 10 Laplace events; rows written directly with the
guarantee the ledger would store, so set-up takes seconds), then times, in a
fresh process-level cache and a warm one:

* the admission *decision*: verifying the hash chain of the records not yet
  verified, reading their stored guarantees and the filter's ``check`` over all
  of them plus the new release (what runs under the lock); "cold" is a process
  that has verified nothing yet (every record is hashed), "warm" one that has;
* a whole ``release`` (two short write transactions with an fsync each,
  the decision, and a trivial computation).

CPU time (``time.process_time``) and wall time, medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sqlite3
import sys
import tempfile
import time


def build(path: str, history: int):
    from privloss.accounting.fully_adaptive import release_guarantee
    from privloss.serialize import events_to_text
    from privloss.budget import Ledger
    from privloss.events import BoundedRange, Laplace

    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=1e9, delta=1e-6)
    events = (BoundedRange(1e-4, count=10), Laplace(2e4, count=10))
    guarantee = json.dumps(release_guarantee(events).to_dict())
    text = events_to_text(events)
    from privloss.budget._integrity import release_chain, release_seal
    conn = sqlite3.connect(ledger.path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    head = conn.execute("SELECT head FROM datasets WHERE name = 'd'").fetchone()[0]
    rows = []
    for index in range(history):        # what Ledger.release records, chained
        key = json.dumps(index)
        chain = release_chain(head, index + 1, "d", key, text, guarantee, None, None, None,
                              0.0, "basic", "2026-11-25")
        rows.append((index + 1, key, text, guarantee, chain, release_seal(chain, "done", "0")))
        head = chain
    conn.executemany(
        "INSERT INTO releases (id, dataset, query_key, events, guarantee, plan_item, status, "
        "owner, result, spent_epsilon, bound, time, chain, seal) VALUES (?, 'd', ?, ?, ?, NULL, "
        "'done', NULL, '0', 0.0, 'basic', '2026-11-25', ?, ?)", rows)
    conn.execute("UPDATE datasets SET head = ?, recorded = ? WHERE name = 'd'", (head, history))
    conn.execute("COMMIT")
    conn.close()
    return events


def median_times(function, repeat: int) -> tuple[float, float]:
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        function()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    from privloss.budget import Ledger

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "bench.sqlite")
        events = build(path, args.history)
        ledger = Ledger(path, create=False)
        guarantee = json.dumps(__import__(
            "privloss.accounting.fully_adaptive", fromlist=["release_guarantee"])
            .release_guarantee(events).to_dict())

        def decide():
            with ledger._write() as conn:
                dataset = ledger._dataset(conn, "d")
                status = ledger._spending(conn, dataset, events, guarantee)
                assert status.admitted

        def cold():
            ledger._verified.clear()
            ledger._parsed.clear()
            decide()

        cold_cpu, cold_wall = median_times(cold, 3)
        decide()
        warm_cpu, warm_wall = median_times(decide, args.repeat)
        counter = iter(range(10**9))
        release_cpu, release_wall = median_times(
            lambda: ledger.release("d", f"new-{next(counter)}", lambda: 1, events), args.repeat)
    print(f"history of {args.history} releases (10 BR + 10 Laplace each), fully adaptive")
    print(f"  admission decision, cold cache:  cpu {cold_cpu * 1e3:8.2f} ms   "
          f"wall {cold_wall * 1e3:8.2f} ms")
    print(f"  admission decision, warm cache:  cpu {warm_cpu * 1e3:8.2f} ms   "
          f"wall {warm_wall * 1e3:8.2f} ms")
    print(f"  whole release (2 fsyncs):        cpu {release_cpu * 1e3:8.2f} ms   "
          f"wall {release_wall * 1e3:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
