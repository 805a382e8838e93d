"""Read once (issue 22 item 6): ``privloss topk`` / ``histogram`` on a
compressed CSV against DuckDB reading the same file.

Run:  python benchmarks/read_once.py [--data ../shared/data/online_retail.csv.gz]
      [--pairs 5] [--commands topk,histogram] [--baselines scan,table]
      [--source SRC] [--calibration-cache warm|off] [--json out.json]

Each sample is a fresh process, and a pair is one DuckDB process and one
privloss process started back to back (which goes first alternates), so a
burst of load on the shared machine hits both alike.  Measured: the CPU time
of the child process (user + system, from ``wait4``'s resource usage; load on
other cores does not inflate it), whole processes (interpreter start,
imports, reading, the release), no ``tracemalloc``; bytecode is cached (in a
private ``PYTHONPYCACHEPREFIX``, after one untimed run of each command), as
for an installed package.  Reported per command:
the median CPU seconds of each side and the median of the per-pair ratios
(privloss / DuckDB).  Target (issue 22): ratio <= 2.

DuckDB reads the file as privloss's engine does (header row, every column
text: ``read_csv(..., all_varchar = true)``), in two forms: ``count(*)``
(a scan of the file) and ``CREATE TABLE`` (the file loaded into a table, as
the engine now does once per command).  privloss: the command with the
retail columns (``CustomerID`` x ``StockCode``; top-10 unknown-gumbel,
epsilon 1, delta 1e-6, l0 5; histogram epsilon 1, l0 5, d-bar 100), a fixed
``--seed`` (timing only) and a private ``PRIVLOSS_HOME`` (fingerprint key);
``--source`` runs the privloss of another checkout's ``src`` (before / after).
The calibration cache (``PRIVLOSS_CACHE_DIR``, docs/cli.md) is a private
folder of the run, ``warm`` (the default: the untimed first run of each
command fills it, as any earlier run with the same public parameters would)
or ``off`` (every command searches its calibration again).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "online_retail.csv.gz"

COMMANDS = {
    "topk": ["topk", "--privacy-unit", "CustomerID", "--item-column", "StockCode",
             "--epsilon", "1", "--delta", "1e-6", "--k", "10", "--l0", "5", "--seed", "1"],
    "histogram": ["histogram", "--privacy-unit", "CustomerID", "--item-column", "StockCode",
                  "--epsilon", "1", "--delta", "1e-6", "--l0", "5", "--d-bar", "100",
                  "--seed", "1"],
}

DUCKDB_SCAN = ("import sys, duckdb; print(duckdb.connect().execute(\"SELECT count(*) FROM "
               "read_csv(?, header = true, all_varchar = true)\", [sys.argv[1]]).fetchall())")
DUCKDB_TABLE = ("import sys, duckdb; c = duckdb.connect(); c.execute(\"CREATE TABLE t AS "
                "SELECT * FROM read_csv(?, header = true, all_varchar = true)\", "
                "[sys.argv[1]]); print(c.execute('SELECT count(*) FROM t').fetchall())")


def cpu_seconds(command: list[str], environment: dict) -> float:
    """CPU time (user + system) of one child process running ``command``."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=environment)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:4]}... exited {process.returncode}: {error[-400:]}")
    return usage.ru_utime + usage.ru_stime


def privloss_command() -> list[str]:
    return [sys.executable, "-m", "privloss.cli.main"]


def measure(data: str, command: str, pairs: int, environment: dict, baseline: str) -> dict:
    ours, theirs, ratios = [], [], []
    peer = [sys.executable, "-c", DUCKDB_SCAN if baseline == "scan" else DUCKDB_TABLE, data]
    mine = privloss_command() + [COMMANDS[command][0], data] + COMMANDS[command][1:]
    for number in range(pairs):
        if number % 2 == 0:
            duck = cpu_seconds(peer, environment)
            ours_s = cpu_seconds(mine, environment)
        else:
            ours_s = cpu_seconds(mine, environment)
            duck = cpu_seconds(peer, environment)
        ours.append(ours_s)
        theirs.append(duck)
        ratios.append(ours_s / duck)
        print(f"  {command} vs duckdb {baseline}: {ours_s:.2f} s / {duck:.2f} s",
              file=sys.stderr, flush=True)
    return {"command": command, "duckdb": baseline, "pairs": pairs,
            "privloss_cpu_s": round(statistics.median(ours), 3),
            "duckdb_cpu_s": round(statistics.median(theirs), 3),
            "ratio": round(statistics.median(ratios), 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--commands", default="topk,histogram")
    parser.add_argument("--baselines", default="scan,table",
                        help="DuckDB's side: scan (count(*)) and/or table (CREATE TABLE)")
    parser.add_argument("--source", default=str(HERE.parent / "src"),
                        help="the privloss source tree to run (default: this checkout's)")
    parser.add_argument("--calibration-cache", choices=("warm", "off"), default="warm",
                        help="the calibration cache of the timed commands: filled by the "
                             "untimed first run (warm) or turned off")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    results = []
    with tempfile.TemporaryDirectory(prefix="privloss-read-once-") as home:
        environment = {**os.environ, "PRIVLOSS_HOME": home,
                       "PYTHONPYCACHEPREFIX": os.path.join(home, "pycache"),
                       "PRIVLOSS_CACHE_DIR": os.path.join(home, "cache")
                       if args.calibration_cache == "warm" else "off"}
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        source = os.path.abspath(args.source)
        environment["PYTHONPATH"] = os.pathsep.join(
            [source] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p])
        for command in args.commands.split(","):
            if command not in COMMANDS:
                parser.error(f"--commands: unknown command {command!r}")
            # untimed: writes the bytecode cache (and the calibration cache when warm)
            cpu_seconds(privloss_command() + [command, data] + COMMANDS[command][1:],
                        environment)
            for baseline in args.baselines.split(","):
                results.append(measure(data, command, args.pairs, environment, baseline))
    output = {"data": data, "source": source, "load_average": os.getloadavg(),
              "calibration_cache": args.calibration_cache,
              "results": results}
    print(json.dumps(output, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(output, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
