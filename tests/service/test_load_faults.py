"""Load and faults against a real server process (uvicorn on 127.0.0.1):

* 50 concurrent analysts (threads with httpx) against one dataset budget that
  admits exactly N releases: exactly N succeed; p50 / p99 latency printed;
* kill -9 of the server at random moments during releases: every answer a
  client received is in the ledger (same release id, same items), the ledger
  opens (hash chain verified) and the restarted server serves;
* the same load against PostgreSQL with 4 server processes (slow).
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from tests.service.conftest import ServerProcess, bearer, issue_tokens, write_config, need_service_extra

need_service_extra()

DOMAIN = ["US", "IN", "BR", "GB", "DE", "FR", "NG", "JP", "CA", "MX"]
HISTOGRAM = {"column": "country", "epsilon": 0.1, "domain": DOMAIN, "l0": 1}


def admitted_sequentially(budget) -> int:
    """How many of these releases a fresh ledger admits one after another."""
    import tempfile

    from privloss.budget import Ledger, LedgerBudgetError
    from privloss.api.request import make_request

    events = make_request("histogram", epsilon=0.1, domain=DOMAIN, l0=1).events()
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(f"{folder}/probe.sqlite")
        ledger.create_dataset("probe", epsilon=budget[0], delta=budget[1])
        count = 0
        while True:
            try:
                ledger.release("probe", {"n": count}, lambda: 0, events, analyst="a")
            except LedgerBudgetError:
                return count
            count += 1
            assert count < 1000


def hammer(url: str, tokens: list, *, per_thread: int = 1000) -> tuple[list, list, list]:
    """One thread per token, releasing (distinct labels) until refused; returns
    (successful bodies, latencies of all answered requests, unexpected statuses)."""
    import httpx

    successes, latencies, unexpected = [], [], []
    lock = threading.Lock()
    start = threading.Barrier(len(tokens))

    def analyst(number: int, token: str) -> None:
        with httpx.Client(base_url=url, headers=bearer(token), timeout=300) as client:
            start.wait()
            for step in range(per_thread):
                began = time.perf_counter()
                response = client.post("/v1/datasets/views/histogram",
                                       json={**HISTOGRAM, "label": f"{number}-{step}"})
                elapsed = time.perf_counter() - began
                with lock:
                    latencies.append(elapsed)
                    if response.status_code == 200:
                        successes.append(response.json())
                    elif response.status_code != 409:
                        unexpected.append((response.status_code, response.text[:300]))
                if response.status_code != 200:
                    return
    threads = [threading.Thread(target=analyst, args=(number, token))
               for number, token in enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return successes, latencies, unexpected


def percentile(values, share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _load_test(tmp_path, *, ledger: str, workers: int, budget=(1.0, 0.0)):
    from privloss.budget import Ledger
    from privloss.service.config import load_config

    expected = admitted_sequentially(budget)
    path = write_config(tmp_path, ledger=ledger, budget=budget, analysts=50)
    config = load_config(path)
    tokens = issue_tokens(config)
    server = ServerProcess(path, workers=workers).start()
    try:
        successes, latencies, unexpected = hammer(server.url, [tokens[f"a{n}"]
                                                               for n in range(50)])
    finally:
        server.stop()
    assert unexpected == [], server.process.stderr.read().decode()[-3000:]
    assert len(successes) == expected > 0
    history = Ledger(config.ledger).history("views")
    assert len(history) == expected and all(row["status"] == "done" for row in history)
    print(f"\n50 analysts, {workers} process(es), {ledger.split(':')[0]}: {expected} admitted; "
          f"latency p50 {percentile(latencies, 0.5) * 1e3:.0f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1e3:.0f} ms over {len(latencies)} requests")


def test_fifty_concurrent_analysts_get_exactly_n(tmp_path):
    _load_test(tmp_path, ledger="budget.sqlite", workers=1)


@pytest.mark.slow
def test_fifty_concurrent_analysts_postgres_four_processes(tmp_path):
    from tests.postgres_server import PostgresServer, skip_reason

    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with PostgresServer() as database:
        _load_test(tmp_path, ledger=database.new_database(), workers=4)


def _kill_trials(tmp_path, trials: int, seed: int) -> None:
    import httpx

    from privloss.budget import Ledger
    from privloss.service.config import load_config

    path = write_config(tmp_path, budget=(1e5, 0.0))
    config = load_config(path)
    tokens = issue_tokens(config)
    chooser = random.Random(seed)
    received: dict = {}
    for trial in range(trials):
        server = ServerProcess(path).start()
        stop = threading.Event()

        def releaser(number: int) -> None:
            with httpx.Client(base_url=server.url, headers=bearer(tokens["alice"]),
                              timeout=60) as client:
                for step in range(10_000):
                    if stop.is_set():
                        return
                    try:
                        response = client.post("/v1/datasets/views/histogram",
                                               json={**HISTOGRAM, "label": f"{trial}-{number}-"
                                                                           f"{step}"})
                    except httpx.HTTPError:
                        return                      # the server died mid-request
                    if response.status_code == 200:
                        body = response.json()
                        received[body["receipt"]["release_id"]] = body["items"]
        threads = [threading.Thread(target=releaser, args=(number,)) for number in range(3)]
        for thread in threads:
            thread.start()
        # the kill lands at a random time after the trial's first answer (a
        # loaded machine can take seconds to answer the first release)
        before, deadline = len(received), time.monotonic() + 120
        while len(received) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(chooser.uniform(0.0, 2.0))
        server.kill()
        stop.set()
        for thread in threads:
            thread.join()
        ledger = Ledger(config.ledger)          # opens: the hash chain is verified
        recorded = {row["id"]: row for row in ledger.history("views")}
        for release_id, items in received.items():
            assert recorded[release_id]["status"] == "done"
            assert recorded[release_id]["result"]["items"] == items
    server = ServerProcess(path).start()
    try:
        answer = httpx.get(server.url + "/v1/datasets", headers=bearer(tokens["alice"]))
        assert answer.status_code == 200
        assert httpx.post(server.url + "/v1/datasets/views/histogram",
                          headers=bearer(tokens["alice"]),
                          json={**HISTOGRAM, "label": "after"}).status_code == 200
    finally:
        server.stop()
    assert received                                  # some answers did arrive
    print(f"\n{trials} kill -9 trials: {len(received)} answers received, all recorded")


def test_kill_nine_during_releases(tmp_path):
    _kill_trials(tmp_path, trials=4, seed=1)


@pytest.mark.slow
def test_kill_nine_during_releases_hundred_trials(tmp_path):
    _kill_trials(tmp_path, trials=100, seed=2)
