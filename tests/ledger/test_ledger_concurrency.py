"""Processes racing on one ledger never overspend; kill -9 at any moment of a
release leaves a consistent ledger in which every answer a process printed is
recorded."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from privloss.budget import Ledger, LedgerBudgetError
from privloss.events import PureDP

TOLERANCE = 1 + 1e-9          # the accountant's relative budget tolerance


# --------------------------------------------------------------------------
# processes racing (spawn context: a fresh interpreter per process)
# --------------------------------------------------------------------------
#: ten stored PureDP(0.1) sum to just over 1 (0.1 is 0.1000000000000000055... in
#: binary64) and budgets compare exactly: this is the smallest budget they fit
TEN_TENTHS = 1.0000000000000002


def _race_worker(path: str, worker: int, attempts: int, barrier, queue) -> None:
    ledger = Ledger(path, create=False)
    rng = random.Random(worker)
    barrier.wait()
    for attempt in range(attempts):
        key = f"worker-{worker}-attempt-{attempt}"

        def compute():
            time.sleep(rng.uniform(0.0, 0.01))    # interleave the computations
            return [worker, attempt, rng.random()]

        try:
            queue.put(("ok", key, ledger.release("d", key, compute, PureDP(0.1))))
        except LedgerBudgetError as error:
            queue.put(("refused", key, str(error)))


def _race(tmp_path, processes: int, attempts: int) -> None:
    path = str(tmp_path / "race.sqlite")
    Ledger(path).create_dataset("d", epsilon=TEN_TENTHS)   # exactly 10 of PureDP(0.1) at delta 0
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    queue = context.Queue()
    workers = [context.Process(target=_race_worker, args=(path, index, attempts, barrier, queue))
               for index in range(processes)]
    for worker in workers:
        worker.start()
    outcomes = [queue.get(timeout=120) for _ in range(processes * attempts)]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    succeeded = {key: value for kind, key, value in outcomes if kind == "ok"}
    refused = [message for kind, _, message in outcomes if kind == "refused"]
    assert len(succeeded) == 10
    assert len(refused) == processes * attempts - 10
    assert all("budget" in message and "remaining" in message for message in refused)
    ledger = Ledger(path, create=False)
    recorded = {row["query"]: row["result"] for row in ledger.history("d")}
    assert recorded == succeeded
    summary = ledger.show("d")
    assert summary["releases"] == 10
    assert summary["spent_epsilon"] <= summary["budget_epsilon"] * TOLERANCE
    _assert_integrity(path)


def test_processes_racing_never_overspend(tmp_path):
    """2 processes x 8 attempts = 16 releases racing for a budget of 10."""
    _race(tmp_path, processes=2, attempts=8)


@pytest.mark.slow
def test_sixteen_processes_racing_exactly_ten_succeed(tmp_path):
    _race(tmp_path, processes=16, attempts=1)


@pytest.mark.slow
def test_sixteen_processes_racing_several_releases_each(tmp_path):
    _race(tmp_path, processes=16, attempts=3)


# --------------------------------------------------------------------------
# kill -9
# --------------------------------------------------------------------------

#: The child releases in a loop and prints every answer it got. Its ledger's
#: test seam prints each stage of the protocol; in "stage" mode it stops at the
#: named stage (so the parent kills it exactly there), in "random" mode it
#: sleeps a little at every stage (so random kills land in every phase).
CHILD = textwrap.dedent("""
    import json, os, random, sys, time
    from privloss.budget import Ledger, LedgerBudgetError
    from privloss.events import PureDP

    path, mode, stop_at = sys.argv[1:4]
    rng = random.Random(os.getpid())

    class Hooked(Ledger):
        def _stage(self, stage):
            print("STAGE", stage, flush=True)
            if mode == "stage" and stage == stop_at:
                time.sleep(600)
            if mode == "random":
                time.sleep(rng.uniform(0.0, 0.004))

    ledger = Hooked(path, create=False)
    print("READY", flush=True)
    index = 0
    while True:
        key = f"{os.getpid()}-{index}"
        try:
            value = ledger.release("d", key, lambda: rng.random(), PureDP(0.01))
        except LedgerBudgetError:
            print("REFUSED", flush=True)
            break
        print("ANSWER " + json.dumps([key, value]), flush=True)
        index += 1
        if mode == "stage" and stop_at == "returned":
            time.sleep(600)
""")


def _start_child(path: str, mode: str, stop_at: str = "-") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, path, mode, stop_at],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(child: subprocess.Popen, prefix: str) -> list[str]:
    lines = []
    while True:
        line = child.stdout.readline()
        if not line:
            raise AssertionError(f"child ended before printing {prefix!r}: {child.stderr.read()}")
        lines.append(line)
        if line.startswith(prefix):
            return lines


def _kill(child: subprocess.Popen, seen: list[str]) -> list[tuple[str, float]]:
    """SIGKILL the child; the answers it printed (complete lines only)."""
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    rest, errors = child.communicate(timeout=30)
    if child.returncode == 0:                  # it ended by itself, on a refusal
        assert rest.rstrip().endswith("REFUSED")
    else:
        assert child.returncode == -signal.SIGKILL, errors
    answers = []
    for line in seen + rest.splitlines(keepends=True):
        if line.startswith("ANSWER ") and line.endswith("\n"):
            key, value = json.loads(line[len("ANSWER "):])
            answers.append((key, value))
    return answers


def _assert_integrity(path: str) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def _assert_consistent(path: str, answers: list[tuple[str, float]]) -> dict:
    _assert_integrity(path)
    ledger = Ledger(path, create=False, timeout=10)
    recorded = {row["query"]: row["result"] for row in ledger.history("d")}
    for key, value in answers:                    # every printed answer is recorded, as printed
        assert recorded.get(key) == value
    summary = ledger.show("d")
    assert summary["releases"] == len(recorded)
    assert summary["spent_epsilon"] <= summary["budget_epsilon"] * TOLERANCE
    return recorded


#: stage -> whether the release killed there is recorded
#: (the charge is recorded, pending, before computing: from "charged" on, a killed
#: release stays charged, with or without its answer)
STAGES = {"begun": False, "checked": False, "charged": True, "computed": True,
          "finishing": True, "committed": True, "returned": True}


def _kill_at_stages(tmp_path, stages) -> None:
    """One child per stage (run together), each killed exactly there."""
    children = {}
    for stage in stages:
        path = str(tmp_path / f"{stage}.sqlite")
        Ledger(path).create_dataset("d", epsilon=1.0)
        children[stage] = (path, _start_child(path, "stage", stage))
    for stage, (path, child) in children.items():
        seen = _wait_for(child, "ANSWER" if stage == "returned" else f"STAGE {stage}")
        answers = _kill(child, seen)
        assert len(answers) == (1 if stage == "returned" else 0)
        recorded = _assert_consistent(path, answers)
        assert len(recorded) == (1 if STAGES[stage] else 0), stage
        # the dead process's lock is gone: the ledger takes new releases at once
        ledger = Ledger(path, create=False, timeout=5)
        assert ledger.release("d", "after", lambda: 1.5, PureDP(0.1)) == 1.5
        assert ledger.show("d")["releases"] == len(recorded) + 1


def test_kill_at_every_stage_of_a_release(tmp_path):
    """Killed right after BEGIN IMMEDIATE and after the budget check (inside the
    charging transaction, before COMMIT); after the charge (before computing);
    after computing; inside the transaction that stores the result; after
    it; after the answer was printed. The children run at once, each on its
    own ledger."""
    _kill_at_stages(tmp_path, tuple(STAGES))


@pytest.mark.slow
def test_kill_at_random_moments_in_a_loop_of_releases(tmp_path):
    """Repeatedly start a releasing child and SIGKILL it after a random delay,
    until the budget (100 releases of 0.01) is used up; check after every kill.
    (The child sleeps up to 4 ms at each stage, so kills land before, inside and
    after the transaction: measured over 15 kills, 4 / 7 / 4.)"""
    path = str(tmp_path / "random.sqlite")
    # admission is exact: 100 stored 0.01s sum to just above 1 (0.01 is not a binary
    # fraction), so the budget is the next double above 1, which holds exactly 100
    Ledger(path).create_dataset("d", epsilon=1.0000000000000002)
    rng = random.Random(20240611)
    printed: list[tuple[str, float]] = []
    for _ in range(60):
        child = _start_child(path, "random")
        seen = _wait_for(child, "READY")
        time.sleep(rng.uniform(0.0, 0.25))
        printed += _kill(child, seen)          # the child may have stopped by itself: fine
        _assert_consistent(path, printed)
        if child.returncode == 0:              # it stopped on a refusal: the budget is used up
            break
    else:
        raise AssertionError("the budget was never used up")
    recorded = _assert_consistent(path, printed)
    assert len(recorded) == 100
