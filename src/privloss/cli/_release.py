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
import secrets
from pathlib import Path

from privloss.cli._common import CommandError, print_json, warn
from privloss.cli._parse import delta_value, nonnegative_int, positive, positive_int
from privloss.events import Interaction

#: largest --k: more released items than this is a mistake, and the accounting of
#: k mechanisms is O(k)
MAX_K = 1_000_000



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
    parser.add_argument("--seed", type=lambda t: nonnegative_int(t, "seed"), default=None,
                        help="INSECURE: reproducible noise and sampling, for tests and demos only")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    from privloss.cli.ledger import add_ledger_flags
    add_ledger_flags(parser)


def read_domain(path: str | None):
    if path is None:
        return None
    try:   # utf-8-sig: a byte-order mark is not part of the first label
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except OSError as error:
        raise CommandError(f"--domain: cannot read {path!r}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise CommandError(f"--domain: {path!r} is not UTF-8 text (bad byte at offset "
                           f"{error.start})") from error
    labels = [line.strip() for line in lines if line.strip()]
    if not labels:
        raise CommandError(f"--domain: {path!r} lists no items")
    if len(set(labels)) != len(labels):
        raise CommandError(f"--domain: {path!r} lists an item twice")
    return labels


def data_source(args):
    """The engine input and a fingerprint of the data for the query key (an
    identical repeated query is free only if the data is unchanged)."""
    if args.sql:
        from privloss.analytics.inputs import SqlQuery
        return SqlQuery(args.data), _sql_fingerprint(args)
    path = Path(args.data)
    if path.is_dir():    # a Parquet dataset: every file below it, in a fixed order
        files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
        if not files:
            raise CommandError(f"DATA: directory {args.data!r} holds no .parquet file")
    elif path.is_file():
        files = [path]
    else:
        hint = ("; to run a SQL query, add --sql"
                if args.data.lstrip().upper().startswith(("SELECT", "WITH", "FROM")) else "")
        raise CommandError(f"DATA: no such file: {args.data!r}{hint}")
    digest = hashlib.sha256()
    try:
        for file in files:
            digest.update(str(file.relative_to(path)).encode() if file != path else b"")
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    except OSError as error:
        raise CommandError(f"DATA: cannot read {str(error.filename or path)!r}: "
                           f"{error.strerror}") from error
    return str(path), {"file": os.path.abspath(path), "sha256": digest.hexdigest()}


def _sql_fingerprint(args) -> dict:
    """Row count and an order-free sum of row hashes of the query's (user, item)
    rows, computed by DuckDB: the same text over changed data is a new query.
    On Spark the rows are not fingerprinted, so every release is charged."""
    if args.engine != "duckdb":
        return {"sql": args.data, "unfingerprinted": secrets.token_hex(16)}
    from privloss.analytics.engines.duckdb_engine import import_duckdb
    try:
        duckdb = import_duckdb()
    except ImportError as error:
        raise CommandError(str(error)) from error

    user, item = (('"' + name.replace('"', '""') + '"')
                  for name in (args.user_column, args.item_column))
    connection = duckdb.connect()
    try:
        rows, total = connection.execute(
            f"SELECT count(*), sum(hash({user}, {item})::HUGEINT) FROM ({args.data})").fetchone()
    except duckdb.Error as error:
        raise CommandError(f"DATA: the SQL query failed: {str(error).splitlines()[0]}") from None
    finally:
        connection.close()
    return {"sql": args.data, "rows": int(rows), "row_hash_sum": str(total),
            "duckdb": duckdb.__version__}


def sources(args):
    """(noise source, engine seed): insecure and reproducible only with --seed."""
    if args.seed is None:
        return None, None
    from privloss.samplers import InsecureSeededSource
    return InsecureSeededSource(args.seed), args.seed


def release_and_report(args, *, algorithm: str, k: int | None, nonnegative: bool = True) -> int:
    """Validate, compute, charge, print (see the module docstring)."""
    from privloss.analytics.algorithms import ALGORITHMS, KNOWN_GAUSSIAN
    from privloss.analytics.engines import bounded_histogram
    from privloss.cli.ledger import ledger_errors, open_ledger_from_args

    spec = KNOWN_GAUSSIAN if algorithm == KNOWN_GAUSSIAN.name else ALGORITHMS[algorithm]
    domain = read_domain(args.domain)
    if spec.domain == "known" and domain is None:
        raise CommandError(f"--domain is required by the {algorithm} algorithm (known domain)")
    if spec.domain == "unknown" and domain is not None:
        raise CommandError(f"the {algorithm} algorithm is for an unknown domain; drop --domain")
    if k is not None and k > MAX_K:
        raise CommandError(f"--k must be at most {MAX_K:,}, got {k}")
    if k is not None and domain is not None and k > len(domain):
        raise CommandError(f"--k must be at most the number of items in --domain "
                           f"({len(domain)}), got {k}")
    # without --l0 nothing is dropped; over a known domain a user then touches at
    # most every listed item, so the domain size bounds the l0 sensitivity
    l0_sensitivity = args.l0 if args.l0 is not None or domain is None else len(domain)
    if spec.needs_l0 and l0_sensitivity is None:
        raise CommandError(f"--l0 is required by the {algorithm} algorithm without --domain")
    if spec.needs_delta and args.delta == 0:
        raise CommandError(f"--delta must be in (0, 1) for the {algorithm} algorithm, got 0")
    data, fingerprint = data_source(args)
    ledger = open_ledger_from_args(args)
    interaction = args.interaction
    if ledger is not None:
        with ledger_errors():
            recorded = ledger.show(args.dataset)["interaction"]
        if interaction is not None and interaction != recorded:
            raise CommandError(f"--interaction {interaction} disagrees with dataset "
                               f"{args.dataset!r}, whose releases compose as {recorded}")
        interaction = recorded
        if args.seed is not None:
            warn("privloss: warning: --seed makes the noise predictable (NOT private) but the "
                 "release is still charged to the ledger")
    interaction = interaction or Interaction.ADAPTIVE.value
    with ledger_errors():       # bad parameters (e.g. k > d_bar) -> exit 2, before any work
        spec.parameters(epsilon=args.epsilon, delta=args.delta, k=k,
                        l0_sensitivity=l0_sensitivity, linf_sensitivity=args.linf,
                        d_bar=args.d_bar, known_domain=domain is not None,
                        interaction=interaction)
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
    with ledger_errors():
        histogram = bounded_histogram(data, user_column=args.user_column,
                                      item_column=args.item_column, l0=args.l0, linf=args.linf,
                                      engine=args.engine, seed=seed, source=noise_source, **request)
        release = spec.run(histogram, epsilon=args.epsilon, delta=args.delta, k=k,
                           l0_sensitivity=l0_sensitivity, linf_sensitivity=args.linf,
                           d_bar=args.d_bar, domain=domain, nonnegative=nonnegative,
                           source=noise_source, interaction=interaction)
    payload = {"items": release.rows(), "algorithm": release.algorithm,
               "parameters": _plain(release.parameters),
               "events": [repr(event) for event in release.events]}
    if ledger is None:
        from privloss.accounting import compose
        with ledger_errors():
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
    labels = [_printable(row["item"]) for row in items]
    width = max([len(label) for label in labels] + [4])
    print(f"{payload.get('algorithm', '')}: {len(items)} item(s), counts with 95% intervals")
    print(f"  {'item':<{width}}  {'count':>12}  95% interval")
    for label, row in zip(labels, items):
        low, high = row["ci95"]
        print(f"  {label:<{width}}  {_number(row['count']):>12}  "
              f"[{_number(low)}, {_number(high)}]")
    spent = payload["spent"]
    # the ledger measures its total at the budget's delta; a lone release at its own
    line = f"spent: epsilon = {spent['epsilon']:.10g} at delta = {spent['delta']:g}"
    if "budget_epsilon" in spent:
        line += (f" of budget epsilon = {spent['budget_epsilon']:.10g} "
                 f"(dataset {spent['dataset']}, "
                 f"{spent['releases']} release(s)"
                 + (", this answer was stored: no extra cost" if cached else "") + ")")
    print(line)
    return 0


def _printable(label) -> str:
    """A label on one table line: control characters (newline, tab) escaped."""
    text = str(label)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _number(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float) and value != int(value):
        return f"{value:.2f}"
    return str(int(value)) if isinstance(value, (int, float)) else json.dumps(value)
