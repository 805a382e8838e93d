"""CLI start-up time: whole processes, against ``python -c pass``.

Run:  python benchmarks/cli_startup.py [--rounds 10] [--json] [--extra] [--no-command-help]

Each command is started ``--rounds`` times as a fresh process (the installed
``privloss`` script beside this interpreter, else ``python -m privloss.cli.main``);
the commands are interleaved round by round (A B C A B C ...), so a burst of load
on a shared machine hits all of them alike. Reported per command: the median
wall time, the median CPU time of the child (user + system, which load on other
cores does not inflate), and the median wall time minus the baseline's. Target
(issue #12, item 8): ``privloss --help``, ``privloss COMMAND --help`` and
``privloss compose --dp 0.1 --target-delta 1e-6`` (also spelled ``--delta``, the
issue's form) under 0.3 s wall (median). ``--extra`` adds other common small
invocations (reported, no target): ``--target-epsilon``, ``--br``, ``--gaussian``,
``--zcdp``, ``--laplace``, a DP + BR mix and ``calibrate`` with small k.
``--no-command-help`` leaves out the per-command ``--help`` rows (a quicker run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 0.3
#: other common small invocations (--extra): timed and reported, not part of the target
EXTRA = (
    ("compose", "--dp", "0.1", "--target-epsilon", "1"),
    ("compose", "--dp", "0.1x50", "--target-delta", "1e-6"),
    ("compose", "--br", "0.1", "--target-delta", "1e-6"),
    ("compose", "--br", "0.1x10", "--target-delta", "1e-6"),
    ("compose", "--br", "0.1x10", "--interaction", "non-adaptive", "--target-delta", "1e-6"),
    ("compose", "--dp", "0.1x10", "--br", "0.1x10", "--target-delta", "1e-6"),
    ("compose", "--gaussian", "1x100", "--target-delta", "1e-6"),
    ("compose", "--zcdp", "0.01x5", "--target-delta", "1e-6"),
    ("compose", "--laplace", "10x100", "--target-delta", "1e-6"),
    ("calibrate", "--k", "10", "--target-epsilon", "1", "--target-delta", "1e-6"),
    ("calibrate", "--k", "10", "--target-epsilon", "1", "--target-delta", "1e-6", "--kind", "gaussian"),
)


def privloss_command() -> list[str]:
    """How a user starts privloss: the console script of this environment."""
    script = Path(sys.executable).with_name("privloss")
    if script.exists():
        return [str(script)]
    found = shutil.which("privloss")
    return [found] if found else [sys.executable, "-m", "privloss.cli.main"]


def compose_target_flag(command: list[str]) -> str:
    """--target-delta where the CLI has it (older versions: --delta)."""
    result = subprocess.run(command + ["compose", "--help"], capture_output=True, text=True)
    return "--target-delta" if "--target-delta" in result.stdout else "--delta"


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--extra", action="store_true",
                        help="also time other common small invocations (no target)")
    parser.add_argument("--no-command-help", action="store_true",
                        help="leave out the privloss COMMAND --help rows")
    options = parser.parse_args()

    privloss = privloss_command()
    target = compose_target_flag(privloss)
    cases = {"python -c pass (baseline)": [sys.executable, "-c", "pass"],
             "privloss --help": privloss + ["--help"]}
    from privloss.cli.main import COMMANDS      # light: imports no command module

    for name in () if options.no_command_help else COMMANDS:
        cases[f"privloss {name} --help"] = privloss + [name, "--help"]
    for flag in dict.fromkeys((target, "--delta")):      # the spelling too
        cases[f"privloss compose --dp 0.1 {flag} 1e-6"] = privloss + ["compose", "--dp", "0.1",
                                                                      flag, "1e-6"]
    targeted = set(cases)
    for argv in EXTRA if options.extra else ():
        cases["privloss " + " ".join(argv)] = privloss + list(argv)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for argv in cases.values():          # warm the file cache once
        run_once(argv)
    samples = {name: [] for name in cases}
    for _ in range(options.rounds):
        for name, argv in cases.items():
            samples[name].append(run_once(argv))

    baseline = statistics.median(wall for wall, _ in samples["python -c pass (baseline)"])
    rows = []
    for name, values in samples.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        rows.append({"command": name, "median_wall_s": round(wall, 4),
                     "median_cpu_s": round(cpu, 4), "minus_baseline_s": round(wall - baseline, 4),
                     "min_wall_s": round(min(w for w, _ in values), 4),
                     "target_met": None if "baseline" in name or name not in targeted
                     else wall < TARGET_SECONDS})
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    if options.json:
        print(json.dumps({"rounds": options.rounds, "load_average_1min": load[0],
                          "load_average_1_5_15min": load, "load_average_1min_before": load_before,
                          "privloss": " ".join(privloss), "rows": rows}, indent=2))
        return
    print(f"# CLI start-up, median of {options.rounds} interleaved runs (1-minute load average "
          f"{load_before:.1f} before, {load[0]:.1f} after; 5 / 15 minutes {load[1]:.1f} / "
          f"{load[2]:.1f}; {os.cpu_count()} cores)\n")
    print("| command | median wall (s) | median CPU (s) | wall - baseline (s) | min wall (s) "
          f"| under {TARGET_SECONDS} s |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        met = "-" if row["target_met"] is None else ("yes" if row["target_met"] else "NO")
        print(f"| `{row['command']}` | {row['median_wall_s']:.3f} | {row['median_cpu_s']:.3f} | "
              f"{row['minus_baseline_s']:.3f} | {row['min_wall_s']:.3f} | {met} |")


if __name__ == "__main__":
    main()
