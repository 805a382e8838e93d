"""The ledger's admission path with a long history, fully adaptive; and the
throughput of concurrent writers.

Run:  python benchmarks/ledger.py [--history 10000] [--repeat 20]
      python benchmarks/ledger.py --writers 16 --seconds 5 [--processes]
                                  [--ledger postgresql://...]
Results: docs/benchmarks.md ("Ledger admission", "Ledger throughput").

``--writers N``: N threads (``--processes``: processes), each with its own
``Ledger`` on one anchored ledger (a witness and a key, as the service opens
it), release distinct queries of PureDP(1e-6) on one dataset with a trivial
computation for ``--seconds``; prints charges per second (wall; every release
charges, so this is also releases per second) and the
median, p99 and maximum latency of one ``release`` call (the charge, the
computation and storing the answer) and of its charge (from the call until
the charging transaction committed); with threads, also the CPU time of the
whole process per release and its part in the kernel (fsyncs, locks, sockets;
every thread's, the database client's included: under load the wall figures
measure the machine, this measures the code). A fresh SQLite file in a
temporary folder unless ``--ledger`` names a PostgreSQL database.

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
        "INSERT INTO releases (id, dataset, query_key, events, guarantee, plan_item, "
        "owner, spent_epsilon, bound, time, chain) VALUES (?, 'd', ?, ?, ?, NULL, "
        "NULL, 0.0, 'basic', '2026-11-25', ?)", [row[:5] for row in rows])
    conn.executemany("INSERT INTO outcomes (release_id, status, result, seal) VALUES "
                     "(?, 'done', '0', ?)", [(row[0], row[5]) for row in rows])
    # the set-up writes the history directly: past the trigger that lets a dataset
    # advance by one release at a time
    conn.execute("DROP TRIGGER datasets_advance_only")
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


def _writer(location: str, witness: str, key: str, seconds: float, number: int,
            start: float) -> list:
    """One writer: releases until ``start + seconds``; the latency of each
    (whole release, and the charge: from the call until the charge committed)."""
    from privloss.budget import Ledger
    from privloss.events import PureDP

    class Timed(Ledger):
        def _stage(self, stage):
            if stage == "charged":
                self.charged_at = time.perf_counter()

    ledger = Timed(location, create=False, witness=witness, key_file=key)
    latencies = []
    while time.time() < start:
        time.sleep(0.001)
    step = 0
    while time.time() < start + seconds:
        began = time.perf_counter()
        ledger.release("d", {"writer": number, "step": step}, lambda: step, [PureDP(1e-6)])
        latencies.append((time.perf_counter() - began, ledger.charged_at - began))
        step += 1
    return latencies


def throughput(args) -> int:
    import concurrent.futures
    from privloss.budget import Ledger, create_key_file

    with tempfile.TemporaryDirectory() as directory:
        location = args.ledger or os.path.join(directory, "bench.sqlite")
        witness = os.path.join(directory, "bench.witness")
        key = create_key_file(os.path.join(directory, "bench.key"))
        Ledger(location, witness=witness, key_file=key).create_dataset("d", epsilon=1e6)
        start = time.time() + 1.0 + 0.1 * args.writers
        pool_type = (concurrent.futures.ProcessPoolExecutor if args.processes
                     else concurrent.futures.ThreadPoolExecutor)
        cpu, times = time.process_time(), os.times()
        with pool_type(args.writers) as pool:
            futures = [pool.submit(_writer, location, witness, key, args.seconds, number, start)
                       for number in range(args.writers)]
            pairs = [value for future in futures for value in future.result()]
        cpu = time.process_time() - cpu       # this process: every writer thread's CPU
        system = os.times().system - times.system
        releases = Ledger(location, create=False).show("d")["releases"]
    count = len(pairs)
    kind = "processes" if args.processes else "threads"
    backend = "PostgreSQL" if args.ledger else "SQLite"

    def summary(values):
        values = sorted(values)
        return (f"median {statistics.median(values) * 1e3:.1f} ms, p99 "
                f"{values[min(count - 1, int(0.99 * count))] * 1e3:.1f} ms, max "
                f"{values[-1] * 1e3:.1f} ms")

    # every release charges (distinct queries, each recorded before computing): the
    # charges per second are the releases per second, and the p99 is the charge's
    print(f"{backend}, {args.writers} writer {kind}, {args.seconds:g} s: {count} releases "
          f"({releases} recorded), {count / args.seconds:.1f} charges/s; release latency "
          f"{summary(whole for whole, _ in pairs)}; charge latency "
          f"{summary(charge for _, charge in pairs)}"
          + ("" if args.processes else f"; CPU {cpu / max(count, 1) * 1e3:.2f} ms per release "
             f"({system / max(count, 1) * 1e3:.2f} ms of it in the kernel)")
          + f"; load average {os.getloadavg()[0]:.1f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--writers", type=int, default=0,
                        help="measure throughput with this many concurrent writers")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--processes", action="store_true",
                        help="writers are processes (default: threads)")
    parser.add_argument("--ledger", default=None, help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args(argv)
    if args.writers:
        return throughput(args)
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
            ledger._tables.clear()
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
