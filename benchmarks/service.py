"""The query service (``privloss serve``) under load: requests per second and
p50 / p99 latency of ``plan`` and of a top-10 release, with 1 and 16
concurrent clients, on the SQLite and PostgreSQL ledgers; and the library's
own release time on the same data, so the service's overhead is visible.

Run:  python benchmarks/service.py [--rows 10000000] [--data rows.parquet]
      [--backends sqlite,postgresql] [--clients 1,16] [--plans 1600] [--releases 8]
      [--json out.json]
      python benchmarks/service.py --retail ../shared/data/online_retail.csv.gz
      [--releases 30]
      python benchmarks/service.py --screenshot docs/figures/dashboard.png
(needs ``pip install -e '.[analytics,service,postgres]'``; PostgreSQL via the
tests' throwaway server, Debian's ``postgresql`` binaries).  Results:
docs/benchmarks.md, "Query service".

Data: ``benchmarks/topk_engines.py``'s generator (10M rows by default; users
with 1..50 rows, items Zipf(1.1) over 100,000 labels).  Work: the top 10 items
with unknown-gumbel, epsilon 1, delta 1e-6, l0 5, d_bar 1000, every release a
new query (distinct labels), charged to a fully-adaptive budget large enough
never to refuse.  Targets (issue #14): plan p99 under 20 ms; the service adds
under 50 ms to the library's release time at p50.

``--retail CSV``: the online-retail file (0.54M rows, CustomerID x
StockCode) served as a dataset whose source is the gzipped CSV: the time to
start (the source read once into the service's snapshot), the first top-10
(``RETAIL``; it also calibrates the algorithm for these parameters), then
one client's p50 and server CPU over ``--releases`` new queries, beside the
library reading the CSV itself per release (what every release cost before
issue 19).  Target (issue 19): p50 <= 150 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

RELEASE = {"column": "item", "epsilon": 1.0, "delta": 1e-6, "k": 10, "l0": 5, "d_bar": 1000}


RETAIL = {"column": "StockCode", "epsilon": 1.0, "delta": 1e-6, "k": 10, "l0": 5,
          "d_bar": 1000}


def percentile(values, share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def write_config(folder: Path, data: str, ledger: str) -> Path:
    path = folder / "service.toml"
    path.write_text("\n".join([
        "[service]", f'ledger = "{ledger}"', "rate = 100000.0", "burst = 100000", "",
        "[[dataset]]", 'name = "bench"', f'path = "{data}"', 'user_column = "user_id"',
        'columns = ["item"]', "epsilon = 100000.0", "delta = 0.5", "",
        "[[analyst]]", 'name = "bench"', 'datasets = ["bench"]', ""]), encoding="utf-8")
    return path


def library_release(data: str, repeat: int) -> list[float]:
    """The library's release (engine aggregation and algorithm), no ledger."""
    from privloss.query.engines import bounded_histogram
    from privloss.api.request import make_request

    request = make_request("topk", epsilon=1.0, delta=1e-6, k=10, l0=5, d_bar=1000)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        histogram = bounded_histogram(data, user_column="user_id", item_column="item", l0=5,
                                      linf=1, **request.engine_request())
        request.spec.run(histogram, **request.calibration(), domain=None)
        times.append(time.perf_counter() - start)
    return times


def _client(url: str, token: str, path: str, body: dict, label: str | None, number: int,
            per_client: int, results, barrier) -> None:
    """One client process: a keep-alive connection, ``per_client`` requests."""
    import http.client

    host, port = url.split("//", 1)[1].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def send(payload: dict) -> int:
        connection.request("POST", path, body=json.dumps(payload), headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    connection.request("GET", "/v1/datasets", headers=headers)     # warm connection and token
    connection.getresponse().read()
    barrier.wait()
    latencies, failures = [], []
    for step in range(per_client):
        payload = body if label is None else {**body, "label": f"{label}-{number}-{step}"}
        start = time.perf_counter()
        status = send(payload)
        elapsed = time.perf_counter() - start
        (latencies if status == 200 else failures).append(elapsed if status == 200 else status)
    results.put((latencies, failures))


def drive(url: str, token: str, clients: int, per_client: int, path: str, body: dict,
          label: str | None = None) -> dict:
    """``clients`` concurrent client processes, each sending ``per_client``
    requests back to back (a new ``label`` per request when given: every
    release a new query). Processes, not threads, and the standard library's
    HTTP client: on a 2-core machine the load generator competes with the
    server for CPU, and httpx in 16 threads of one process costs about 4x the
    CPU per request and serialises on the GIL, so the latencies would be the
    client's."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results, barrier = context.Queue(), context.Barrier(clients + 1)
    processes = [context.Process(target=_client, args=(url, token, path, body, label, number,
                                                       per_client, results, barrier))
                 for number in range(clients)]
    for process in processes:
        process.start()
    barrier.wait()
    start = time.perf_counter()
    outcomes = [results.get() for _ in processes]
    wall = time.perf_counter() - start
    for process in processes:
        process.join()
    latencies = [value for done, _ in outcomes for value in done]
    failures = [value for _, failed in outcomes for value in failed]
    return {"requests": len(latencies), "failed": len(failures),
            "requests_per_s": round(len(latencies) / wall, 2),
            "p50_ms": round(percentile(latencies, 0.5) * 1e3, 1),
            "p99_ms": round(percentile(latencies, 0.99) * 1e3, 1)}


def measure_overhead(args, folder: Path, ledger: str, label: str) -> dict:
    """What the service adds to a release, measured where the engine's own time
    is negligible: the same top-10 on a small file (``--overhead-rows``), the
    library in this process against one client of the service."""
    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config
    from tests.service.conftest import ServerProcess
    from topk_engines import generate

    small = folder / f"small-{label}.parquet"
    generate(str(small), args.overhead_rows, 50, 1000, 1.1, 2)
    library = library_release(str(small), args.overhead_requests)
    sub = folder / f"overhead-{label}"
    sub.mkdir()
    config_path = write_config(sub, str(small), ledger)
    token = add_analyst(load_config(config_path).tokens, "bench")
    server = ServerProcess(config_path).start()
    try:
        service = drive(server.url, token, 1, args.overhead_requests, "/v1/datasets/bench/topk",
                        RELEASE, label="small")
    finally:
        server.stop()
    library_ms = statistics.median(library) * 1e3
    return {"backend": label, "clients": 1, "endpoint": f"topk on {args.overhead_rows} rows",
            **service, "library_p50_ms": round(library_ms, 1),
            "overhead_p50_ms": round(service["p50_ms"] - library_ms, 1)}


def measure_backend(args, folder: Path, ledger: str, label: str) -> list[dict]:
    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config
    from tests.service.conftest import ServerProcess

    config_path = write_config(folder, args.data, ledger)
    token = add_analyst(load_config(config_path).tokens, "bench")
    server = ServerProcess(config_path, workers=args.workers).start()
    rows = []
    try:
        for clients in args.clients:
            plan = drive(server.url, token, clients, max(1, args.plans // clients),
                         "/v1/datasets/bench/plan", {"command": "topk", **RELEASE})
            rows.append({"backend": label, "clients": clients, "endpoint": "plan", **plan})
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
            if args.releases == 0:          # plan only
                continue
            release = drive(server.url, token, clients, max(1, args.releases // clients),
                            "/v1/datasets/bench/topk", RELEASE, label=str(clients))
            rows.append({"backend": label, "clients": clients, "endpoint": "topk", **release})
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    finally:
        server.stop()
    return rows


def measure_retail(args, folder: Path) -> dict:
    """Start-up and one client's top-10 releases on the retail CSV (module docstring)."""
    from privloss.query.engines import bounded_histogram
    from privloss.api.request import make_request
    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config
    from tests.service.conftest import ServerProcess

    source = os.path.abspath(args.retail)
    path = folder / "retail.toml"
    path.write_text("\n".join([
        "[service]", f'ledger = "{folder / "retail.sqlite"}"', "rate = 100000.0",
        "burst = 100000", "",
        "[[dataset]]", 'name = "retail"', f'path = "{source}"', 'user_column = "CustomerID"',
        'columns = ["StockCode", "Country"]', "epsilon = 100000.0", "delta = 0.5", "",
        "[[analyst]]", 'name = "bench"', 'datasets = ["retail"]', ""]), encoding="utf-8")
    token = add_analyst(load_config(path).tokens, "bench")
    started = time.perf_counter()
    server = ServerProcess(path).start()
    start_s = time.perf_counter() - started
    try:
        # the first release also calibrates the algorithm for these parameters (cached
        # afterwards) and imports what it needs: timed apart from the steady state
        before = _cpu_seconds(server.process.pid)
        first = drive(server.url, token, 1, 1, "/v1/datasets/retail/topk", RETAIL,
                      label="retail-first")
        first_cpu = _cpu_seconds(server.process.pid) - before
        before = _cpu_seconds(server.process.pid)
        service = drive(server.url, token, 1, args.releases, "/v1/datasets/retail/topk",
                        RETAIL, label="retail")
        server_cpu = (_cpu_seconds(server.process.pid) - before) / args.releases
    finally:
        server.stop()
    request = make_request("topk", **{k: v for k, v in RETAIL.items() if k != "column"})
    library, library_cpu = [], []
    for _ in range(args.library_repeat):
        begin, begin_cpu = time.perf_counter(), time.process_time()
        histogram = bounded_histogram(source, user_column="CustomerID", item_column="StockCode",
                                      l0=5, linf=1, **request.engine_request())
        request.spec.run(histogram, **request.calibration(), domain=None)
        library.append(time.perf_counter() - begin)
        library_cpu.append(time.process_time() - begin_cpu)
    return {"endpoint": "retail topk", "clients": 1, "start_s": round(start_s, 2),
            "first_release_ms": first["p50_ms"],
            "first_release_server_cpu_ms": round(first_cpu * 1e3, 1), **service,
            "server_cpu_ms_per_release": round(server_cpu * 1e3, 1),
            "library_on_the_csv_p50_ms": round(statistics.median(library) * 1e3, 1),
            "library_on_the_csv_cpu_ms": round(statistics.median(library_cpu) * 1e3, 1),
            "load_average": os.getloadavg()}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def screenshot(path: str) -> None:
    """The dashboard of ``privloss serve --demo``-like data after three releases."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from privloss.client import Client
    from privloss.service.config import load_config
    from privloss.service.demo import make_demo
    from tests.service.conftest import ServerProcess

    folder = Path(tempfile.mkdtemp(prefix="privloss-shot-"))
    config_path, token = make_demo(folder)
    load_config(config_path)
    server = ServerProcess(config_path).start()
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--window-size=1280,1150", "--hide-scrollbars"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options,
                              service=Service(executable_path=shutil.which("chromedriver")))
    driver.implicitly_wait(30)
    try:
        with Client(server.url, token) as client:
            client.topk("engagements", column="article", epsilon=0.2, delta=1e-7, k=5, l0=3,
                        d_bar=20)
            client.histogram("engagements", column="country", epsilon=0.1, l0=1,
                             domain=["US", "IN", "BR", "GB", "DE"])
        driver.get(server.url + "/")
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.ID, "signin").click()
        driver.find_element(By.ID, "open-engagements").click()
        driver.find_element(By.ID, "epsilon").clear()
        driver.find_element(By.ID, "epsilon").send_keys("0.3")
        driver.find_element(By.ID, "preview").click()
        driver.find_element(By.ID, "release").click()
        driver.find_element(By.ID, "result")
        driver.save_screenshot(path)
    finally:
        driver.quit()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"wrote {path}")


def main(argv=None) -> int:
    from topk_engines import generate

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--data", help="reuse this Parquet file (columns user_id, item)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--clients", default="1,16")
    parser.add_argument("--plans", type=int, default=1600, help="plan requests per run")
    parser.add_argument("--releases", type=int, default=8,
                        help="releases per run, split over the clients (at least one each)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="server processes (default: one per core, as `privloss serve "
                             "--workers` is meant to be run)")
    parser.add_argument("--library-repeat", type=int, default=5)
    parser.add_argument("--overhead-rows", type=int, default=10_000,
                        help="rows of the small file the service's overhead is measured on")
    parser.add_argument("--overhead-requests", type=int, default=30)
    parser.add_argument("--only-overhead", action="store_true",
                        help="skip the large-data runs")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--screenshot", help="only write the dashboard screenshot here")
    parser.add_argument("--retail", help="only the retail run on this CSV (docstring)")
    args = parser.parse_args(argv)
    if args.screenshot:
        screenshot(args.screenshot)
        return 0
    if args.retail:
        with tempfile.TemporaryDirectory() as scratch:
            result = measure_retail(args, Path(scratch))
        print(json.dumps(result, indent=1))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
        return 0
    args.clients = [int(text) for text in args.clients.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        info = {}
        if args.data is None and not args.only_overhead:
            args.data = str(folder / "rows.parquet")
            users, distinct = generate(args.data, args.rows, 50, 100_000, 1.1, 1)
            info = {"rows": args.rows, "users": users, "distinct_items": distinct}
        if not args.only_overhead:
            library = library_release(args.data, args.library_repeat)
            info["library_release_p50_ms"] = round(statistics.median(library) * 1e3, 1)
            print(f"library release p50 {info['library_release_p50_ms']} ms", file=sys.stderr)
        rows = []
        for backend in args.backends.split(","):
            if backend == "sqlite":
                if not args.only_overhead:
                    rows += measure_backend(args, folder, str(folder / "budget.sqlite"),
                                            "sqlite")
                rows.append(measure_overhead(args, folder, str(folder / "small.sqlite"),
                                             "sqlite"))
                print(f"  {rows[-1]}", file=sys.stderr, flush=True)
            elif backend == "postgresql":
                from tests.postgres_server import PostgresServer, skip_reason
                reason = skip_reason()
                if reason:
                    print(f"skipping PostgreSQL: {reason}", file=sys.stderr)
                    continue
                with PostgresServer() as database:
                    if not args.only_overhead:
                        rows += measure_backend(args, folder, database.new_database(),
                                                "postgresql")
                    rows.append(measure_overhead(args, folder, database.new_database(),
                                                 "postgresql"))
                    print(f"  {rows[-1]}", file=sys.stderr, flush=True)
            else:
                parser.error(f"--backends: unknown backend {backend!r}")
    for row in rows:
        if row["endpoint"] == "topk" and "library_release_p50_ms" in info:
            row["overhead_p50_ms"] = round(row["p50_ms"] - info["library_release_p50_ms"], 1)
    print(json.dumps({"info": info, "results": rows}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "results": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
