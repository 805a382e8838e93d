"""What ``privloss histogram`` and ``privloss topk`` share: reading the data
through an engine, running a calibrated algorithm, charging the ledger, and
printing counts with their 95% intervals.

Order of work (so a failure never leaves a ledger changed): validate every
argument; if a ledger is given, return the stored answer of an identical
earlier query at no cost; compute the bounded histogram inside the engine and
the release; charge the ledger in one transaction (it re-checks the budget);
print only what was recorded.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
from pathlib import Path

from privloss.cli._common import CommandError, print_json
from privloss.cli._parse import delta_value, positive, positive_int
from privloss.events import Interaction


def add_data_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", metavar="DATA",
                        help="CSV or Parquet file (optionally .gz), or a SQL query with --sql")
    parser.add_argument("--sql", action="store_true",
                        help="DATA is a SQL query run by the embedded DuckDB")
    parser.add_argument("--user-column", required=True, metavar="U", help="column of user ids")
    parser.add_argument("--item-column", required=True, metavar="I", help="column of items")
    parser.add_argument("--epsilon", required=True, type=lambda t: positive(t, "epsilon"),
                        metavar="E", help="total epsilon of this release, > 0")
    parser.add_argument("--delta", type=delta_value, default=0.0, metavar="D",
                        help="total delta of this release, in [0, 1) (default 0)")
    parser.add_argument("--l0", type=lambda t: positive_int(t, "l0"), default=None, metavar="N",
                        help="keep at most N distinct items per user (chosen at random)")
    parser.add_argument("--linf", type=lambda t: positive_int(t, "linf"), default=1, metavar="N",
                        help="cap each user's count per item at N (default 1)")
    parser.add_argument("--domain", metavar="FILE", default=None,
                        help="file with the public list of items, one per line (known domain)")
    parser.add_argument("--d-bar", type=lambda t: positive_int(t, "d-bar"), default=None,
                        metavar="N", help="unknown domain: how many top items the algorithm reads")
    parser.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb")
    parser.add_argument("--interaction", choices=[Interaction.ADAPTIVE.value, Interaction.SETWISE.value],
                        default=None, help="composition model (default: the ledger's, else adaptive)")
    parser.add_argument("--seed", type=int, default=None,
                        help="INSECURE: reproducible noise and sampling, for tests and demos only")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    from privloss.cli.ledger import add_ledger_flags
    add_ledger_flags(parser)


def read_domain(path: str | None):
    if path is None:
        return None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise CommandError(f"--domain: cannot read {path!r}: {error.strerror}") from error
    labels = [line.strip() for line in lines if line.strip()]
    if not labels:
        raise CommandError(f"--domain: {path!r} lists no items")
    if len(set(labels)) != len(labels):
        raise CommandError(f"--domain: {path!r} lists an item twice")
    return labels


def data_source(args):
    """The engine input and a fingerprint of the data for the query key."""
    if args.sql or args.data.lstrip().upper().startswith(("SELECT", "WITH", "FROM")):
        from privloss.analytics.inputs import SqlQuery
        return SqlQuery(args.data), {"sql": args.data}
    path = Path(args.data)
    if not path.is_file():
        raise CommandError(f"DATA: no such file: {args.data!r}")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return str(path), {"file": os.path.abspath(path), "sha256": digest.hexdigest()}


def sources(args):
    """(noise source, engine seed): insecure and reproducible only with --seed."""
    if args.seed is None:
        return None, None
    from privloss.samplers import InsecureSeededSource
    return InsecureSeededSource(args.seed), args.seed


def release_and_report(args, *, algorithm: str, k: int | None, nonnegative: bool = True) -> int:
    """Validate, compute, charge, print (see the module docstring)."""
    from privloss.analytics.algorithms import ALGORITHMS
    from privloss.analytics.engines import bounded_histogram
    from privloss.cli.ledger import ledger_errors, open_ledger_from_args

    spec = ALGORITHMS[algorithm]
    domain = read_domain(args.domain)
    if spec.domain == "known" and domain is None:
        raise CommandError(f"--domain is required by the {algorithm} algorithm (known domain)")
    if spec.domain == "unknown" and domain is not None:
        raise CommandError(f"the {algorithm} algorithm is for an unknown domain; drop --domain")
    if spec.needs_l0 and args.l0 is None:
        raise CommandError(f"--l0 is required by the {algorithm} algorithm")
    if spec.needs_delta and args.delta == 0:
        raise CommandError(f"--delta must be in (0, 1) for the {algorithm} algorithm, got 0")
    data, fingerprint = data_source(args)
    ledger = open_ledger_from_args(args)
    interaction = args.interaction
    if ledger is not None and interaction is None:
        with ledger_errors():
            interaction = ledger.show(args.dataset)["interaction"]
    interaction = interaction or Interaction.ADAPTIVE.value
    with ledger_errors():      # bad parameters (e.g. k > domain) -> exit 2, before any work
        spec.parameters(epsilon=args.epsilon, delta=args.delta, k=k, l0_sensitivity=args.l0,
                        linf_sensitivity=args.linf, d_bar=args.d_bar,
                        known_domain=domain is not None, interaction=interaction)
    query_key = {"command": args.command, "algorithm": algorithm, "data": fingerprint,
                 "user_column": args.user_column, "item_column": args.item_column,
                 "epsilon": args.epsilon, "delta": args.delta, "k": k, "l0": args.l0,
                 "linf": args.linf, "d_bar": args.d_bar, "domain": domain,
                 "interaction": interaction, "seed": args.seed}
    if ledger is not None:
        with ledger_errors():
            stored = ledger.lookup(args.dataset, query_key)
        if stored is not None:
            return _print(args, stored.result, ledger=ledger, cached=True)
    noise_source, seed = sources(args)
    request = spec.engine_request(d_bar=args.d_bar, domain=domain)
    try:
        histogram = bounded_histogram(data, user_column=args.user_column,
                                      item_column=args.item_column, l0=args.l0, linf=args.linf,
                                      engine=args.engine, seed=seed, source=noise_source, **request)
        release = spec.run(histogram, epsilon=args.epsilon, delta=args.delta, k=k,
                           l0_sensitivity=args.l0, linf_sensitivity=args.linf, d_bar=args.d_bar,
                           domain=domain, nonnegative=nonnegative, source=noise_source,
                           interaction=interaction)
    except (ValueError, TypeError, FileNotFoundError) as error:
        raise CommandError(str(error)) from error
    payload = {"items": release.rows(), "algorithm": release.algorithm,
               "parameters": _plain(release.parameters),
               "events": [repr(event) for event in release.events]}
    if ledger is None:
        from privloss.accounting import compose
        spent = compose(release.events, target_delta=max(args.delta, 0.0) or 0.0,
                        interaction=interaction)
        payload["spent"] = {"epsilon": spent.epsilon, "delta": args.delta, "bound": spent.bound}
        return _print(args, payload, ledger=None, cached=False)
    with ledger_errors():
        receipt = ledger.release_with_receipt(args.dataset, query_key, lambda: payload,
                                              release.events)
    return _print(args, receipt.result, ledger=ledger, cached=receipt.cached)


def _plain(value):
    """JSON-safe copy of algorithm parameters (Fractions -> str)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def _print(args, payload: dict, *, ledger, cached: bool) -> int:
    payload = dict(payload)
    if ledger is not None:
        summary = ledger.show(args.dataset)
        payload["spent"] = {"dataset": args.dataset, "epsilon": summary["spent_epsilon"],
                            "delta": summary["spent_delta"],
                            "budget_epsilon": summary["budget_epsilon"],
                            "budget_delta": summary["budget_delta"],
                            "releases": summary["releases"], "repeated_query_free": cached}
    if args.json:
        print_json(payload)
        return 0
    items = payload["items"]
    width = max([len(str(row["item"])) for row in items] + [4])
    print(f"{payload.get('algorithm', '')}: {len(items)} item(s), counts with 95% intervals")
    print(f"  {'item':<{width}}  {'count':>12}  95% interval")
    for row in items:
        low, high = row["ci95"]
        print(f"  {str(row['item']):<{width}}  {_number(row['count']):>12}  "
              f"[{_number(low)}, {_number(high)}]")
    spent = payload["spent"]
    line = f"spent: epsilon = {spent['epsilon']:.6g}"
    if "budget_epsilon" in spent:
        line += (f" of {spent['budget_epsilon']:g} (dataset {spent['dataset']}, "
                 f"{spent['releases']} release(s)"
                 + (", this answer was stored: no extra cost" if cached else "") + ")")
    print(line)
    return 0


def _number(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float) and value != int(value):
        return f"{value:.2f}"
    return str(int(value)) if isinstance(value, (int, float)) else json.dumps(value)
