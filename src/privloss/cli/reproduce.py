"""``privloss reproduce``: recompute, draw and check the seed documents' results.

``privloss reproduce --list`` lists the reproductions; ``privloss reproduce NAME
[--out DIR] [--quick] [--seed N]`` writes ``NAME.csv``, ``NAME.png`` and
``NAME.md`` into DIR; ``privloss reproduce all`` runs every available one with
a progress line per step on stderr, goes on past a failing one and reports the
failures at the end (exit status 1). matplotlib (the ``plot`` extra) is checked
before anything is computed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from privloss.cli._common import CommandError, print_json
from privloss.cli._parse import nonnegative_int

DEFAULT_OUT = "reproductions"
#: What a failing reproduction may raise (data missing, numeric failure, ...): reported,
#: and ``reproduce all`` goes on; programming errors (TypeError, ...) still propagate.
REPRODUCTION_ERRORS = (ArithmeticError, ImportError, LookupError, OSError, RuntimeError, ValueError)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="recompute the documents' figures and tables and compare",
        description="Recompute a seed document's figure or table: writes NAME.csv, NAME.png "
                    "and NAME.md (the document's claim next to our number). Parameters the "
                    "document lost are flagged as ours in every output.")
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="a reproduction (see --list) or 'all'")
    parser.add_argument("--list", action="store_true", help="list the reproductions and exit")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--quick", action="store_true",
                        help="reduced version (CI): still computes the key numbers")
    parser.add_argument("--seed", type=lambda t: nonnegative_int(t, "seed"), default=None,
                        metavar="N", help="seed for the (insecure, reproducible) randomness of "
                        "simulations; default: the secure source")
    parser.add_argument("--json", action="store_true", help="print one JSON object per run")
    parser.set_defaults(handler=run)


def _list() -> int:
    from privloss.experiments import entries

    for entry in entries():
        if entry.available:
            print(f"{entry.name:18s} {entry.module.TITLE}  [{entry.module.SOURCE}]")
        else:
            print(f"{entry.name:18s} (unavailable: {entry.reason})")
    return 0


def _summary(name: str, outcome: dict, seconds: float) -> dict:
    claims = outcome.get("claims", [])
    return {
        "name": name,
        "seconds": round(seconds, 3),
        "csv": str(outcome["csv"]), "png": str(outcome["png"]), "md": str(outcome["md"]),
        "key_numbers": outcome.get("key_numbers", {}),
        "claims_agree": sum(1 for row in claims if row.get("agree") is True),
        "claims_disagree": sum(1 for row in claims if row.get("agree") is False),
        "claims_inconclusive": sum(1 for row in claims if row.get("verdict") == "inconclusive"),
    }


def _print_summary(summary: dict) -> None:
    print(f"{summary['name']}: {summary['seconds']:.1f} s, claims agree "
          f"{summary['claims_agree']}, disagree {summary['claims_disagree']}, "
          f"inconclusive {summary['claims_inconclusive']}")
    for key in ("csv", "png", "md"):
        print(f"  {key}: {summary[key]}")
    for key, value in summary["key_numbers"].items():
        text = f"{value:.10g}" if isinstance(value, float) else str(value)
        print(f"  {key} = {text}")


def _run_one(module, out: Path, args, label: str) -> dict:
    from privloss.experiments._common import progress_printer

    started = time.perf_counter()
    outcome = module.run(out, quick=args.quick, seed=args.seed,
                         progress=progress_printer(label, sys.stderr))
    return _summary(module.NAME, outcome, time.perf_counter() - started)


def run(args: argparse.Namespace) -> int:
    from privloss.experiments import available, get

    if args.list:
        return _list()
    if not args.name:
        raise CommandError("give a reproduction NAME, 'all', or --list")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out must be a directory, got the file {str(out)!r}")
    if args.name == "all":
        modules = list(available().values())
        if not modules:
            raise CommandError("no reproduction is available")
    else:
        try:
            modules = [get(args.name)]
        except LookupError as error:
            raise CommandError(f"NAME: {error}") from None
    from privloss.experiments._common import require_matplotlib

    try:
        require_matplotlib()   # before minutes of computation, not after
    except ImportError as error:
        raise CommandError(str(error)) from None
    summaries, failures = [], []
    for index, module in enumerate(modules, start=1):
        label = f"{index}/{len(modules)} {module.NAME}" if len(modules) > 1 else module.NAME
        try:
            summary = _run_one(module, out, args, label)
        except REPRODUCTION_ERRORS as error:
            failures.append({"name": module.NAME, "error": f"{type(error).__name__}: {error}"})
            print(f"privloss reproduce: {module.NAME} failed: {failures[-1]['error']}",
                  file=sys.stderr)
            continue
        summaries.append(summary)
        if not args.json:
            _print_summary(summary)
    if args.json:
        payload = summaries + [dict(failure, failed=True) for failure in failures]
        print_json(payload[0] if len(payload) == 1 else payload)
    if failures:
        names = ", ".join(failure["name"] for failure in failures)
        print(f"privloss reproduce: {len(failures)} of {len(modules)} failed: {names}", file=sys.stderr)
        return 1
    return 0
