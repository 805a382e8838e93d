"""What ``privloss histogram`` and ``privloss topk`` share: flags, the domain
file, the data snapshot, and printing.  The release itself is the Python API's
(:func:`privloss.api.protocol.release`), so the CLI and ``privloss.topk(...)``
give the same JSON for the same seed.

Order of work (nothing data-dependent happens before the charge):

1. validate every argument and the domain file, and fix the release's events
   from the parameters alone (:func:`privloss.api.request.make_request`);
   ``--epsilon max`` asks the ledger for the largest epsilon that fits
   (:func:`privloss.api.planning.max_epsilon_of`); ``--dry-run`` prints
   the plan (:func:`privloss.api.planning.plan_request`) and stops;
2. with a ledger: a read-only budget check, so a refusal is instant and no
   data is read;
3. snapshot the data files (read once, keyed MAC for the repeated-query key,
   the engine reads the private copies; :mod:`privloss.query.fingerprint`)
   and check the schema;
4. the ledger charges the planned events (or answers an identical stored query
   for free), then ``compute`` builds the bounded histogram inside the engine
   and runs the algorithm; any failure there ends with one fixed message (the
   engine's text goes to the ``privloss.engine`` log) and the charge stays;
5. print only what was recorded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
from pathlib import Path

from privloss.cli._common import CommandError, print_json, read_regular_file, warn
from privloss.cli._parse import delta_value, nonnegative_int, positive, positive_int

#: --domain limits: a label list larger than this is a mistake (or /dev/zero)
MAX_DOMAIN_BYTES = 64 << 20
MAX_DOMAIN_LABELS = 1_000_000
#: --interaction choices; the default is the ledger's model, else the first
INTERACTIONS = ("fully-adaptive", "adaptive", "setwise")


def _table(text: str) -> tuple[str, str]:
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(f"--table must be NAME=PATH, got {text!r}")
    return name, path


def epsilon_flag(text: str):
    """A positive epsilon, or ``max`` (the largest that fits the ledger)."""
    if text.strip().lower() == "max":
        return "max"
    return positive(text, "epsilon")


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    """DATA, ``--sql`` and ``--table``: every release command reads the same inputs."""
    parser.add_argument("data", metavar="DATA",
                        help="CSV or Parquet file (optionally .gz), a directory of Parquet "
                             "files, or a SQL query with --sql")
    parser.add_argument("--sql", action="store_true",
                        help="DATA is one SELECT run by the engine (trusted operators only); "
                             "it reads the files given with --table and nothing else")
    parser.add_argument("--table", action="append", type=_table, default=[],
                        metavar="NAME=PATH",
                        help="with --sql: register a CSV/Parquet file (or Parquet directory) "
                             "as view NAME (repeatable)")


def where_of(args):
    """The filter of ``--where`` (None without one); a bad condition is a
    :class:`CommandError` naming the flag."""
    if getattr(args, "where", None) is None:
        return None
    from privloss.query.sql import UnsupportedSql, parse_where
    try:
        return parse_where(args.where)
    except UnsupportedSql as error:
        raise CommandError(f"--where: {error}") from None


def source_of(args):
    """What the API reads for DATA / ``--sql`` / ``--table``: the path, or a
    :class:`~privloss.query.inputs.SqlQuery` over the declared tables."""
    if not args.sql:
        if args.table:
            raise CommandError("--table goes with --sql (DATA is then the query)")
        return args.data
    from privloss.query.inputs import SqlQuery

    tables = {}
    for name, path in args.table:
        if name in tables:
            raise CommandError(f"--table: the name {name!r} is given twice")
        tables[name] = path
    try:
        return SqlQuery(args.data, None, tables or None)
    except (ValueError, TypeError) as error:
        raise CommandError(f"DATA: {error}") from error


def add_data_flags(parser: argparse.ArgumentParser) -> None:
    add_source_flags(parser)
    parser.add_argument("--privacy-unit", dest="user_column", default=None, metavar="U",
                        help="column of the privacy units (user ids); required")
    from privloss.cli._vocabulary import add_deprecated
    # the old spelling: one fixed warning line (the same on neighbouring datasets)
    add_deprecated(parser, "--user-column", dest="user_column", new="--privacy-unit")
    parser.add_argument("--where", metavar="CONDITION", default=None,
                        help="keep only the rows where this SQL condition holds (comparisons, "
                             "IN, BETWEEN, IS NULL, LIKE, AND/OR/NOT, CAST; docs/sql.md); "
                             "no privacy cost")
    parser.add_argument("--item-column", required=True, metavar="I", help="column of items")
    parser.add_argument("--epsilon", default=None, type=epsilon_flag, metavar="E",
                        help="epsilon this release spends, >= 0.001; 'max': the largest "
                             "that still fits the ledger's budget (needs --ledger); or plan "
                             "it with --target-half-width / --min-release-users")
    parser.add_argument("--delta", type=delta_value, default=0.0, metavar="D",
                        help="delta this release spends, in [0, 1) (default 0)")
    from privloss.cli._auto_l0 import l0_value
    parser.add_argument("--l0", type=l0_value, default=None, metavar="N",
                        help="keep at most N distinct items per user (chosen at random); with "
                             "--domain the noise is scaled for min(N, domain size); 'auto': "
                             "a DP 95th percentile for 10%% of epsilon (duckdb)")
    parser.add_argument("--linf", type=lambda t: positive_int(t, "linf"), default=1, metavar="N",
                        help="cap each user's count per item at N (default 1)")
    parser.add_argument("--domain", metavar="FILE", default=None,
                        help="file with the public list of items, one per line (known domain)")
    parser.add_argument("--d-bar", type=lambda t: positive_int(t, "d-bar"), default=None,
                        metavar="N", help="unknown domain: how many top items the algorithm reads")
    parser.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb")
    parser.add_argument("--interaction", choices=INTERACTIONS, default=None,
                        help="composition model of the budget (default: the ledger's, else "
                             "fully-adaptive)")
    parser.add_argument("--seed", type=lambda t: nonnegative_int(t, "seed"), default=None,
                        help="INSECURE: reproducible noise and sampling, for tests and demos only")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what the release would spend and release (noise, 95%% "
                             "half-width, threshold, the ledger afterwards) without reading "
                             "data or charging")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress line on stderr (it is shown only on a terminal)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    from privloss.cli.ledger import add_ledger_flags
    add_ledger_flags(parser)
    from privloss.cli._accuracy import add_accuracy_flags
    add_accuracy_flags(parser)


def read_domain(path: str | None):
    """The labels of a --domain file: a regular file (opened non-blocking and
    checked with fstat, so a FIFO or a device is refused at once), at most
    MAX_DOMAIN_BYTES and MAX_DOMAIN_LABELS labels, UTF-8, no duplicates."""
    if path is None:
        return None
    raw = read_regular_file(path, "--domain", MAX_DOMAIN_BYTES, f"{MAX_DOMAIN_BYTES >> 20} MiB")
    try:   # utf-8-sig: a byte-order mark is not part of the first label
        lines = raw.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise CommandError(f"--domain: {path!r} is not UTF-8 text (bad byte at offset "
                           f"{error.start})") from error
    labels = [line.strip() for line in lines if line.strip()]
    if not labels:
        raise CommandError(f"--domain: {path!r} lists no items")
    if len(labels) > MAX_DOMAIN_LABELS:
        raise CommandError(f"--domain: {path!r} lists more than {MAX_DOMAIN_LABELS:,} items")
    if len(set(labels)) != len(labels):
        raise CommandError(f"--domain: {path!r} lists an item twice")
    return labels


def _snapshot(text: str, flag: str, snapshots: list):
    """A FileInput over private copies of the file(s) at ``text`` (read once,
    MAC'ed), and the MAC; the snapshot is appended to ``snapshots``."""
    from privloss.api.protocol import snapshot_path

    try:
        return snapshot_path(text, snapshots)
    except FileNotFoundError:
        hint = ("; to run a SQL query, add --sql"
                if text.lstrip().upper().startswith(("SELECT", "WITH", "FROM")) else "")
        raise CommandError(f"{flag}: no such file: {text!r}{hint}") from None
    except OSError as error:
        raise CommandError(f"{flag}: cannot read {str(error.filename or text)!r}: "
                           f"{error.strerror}") from error
    except (ValueError, TypeError) as error:
        raise CommandError(f"{flag}: {error}") from error


def data_source(args):
    """The engine input and the data's keyed fingerprint for the query key (an
    identical repeated query is free only if the data is unchanged), as a
    :class:`~privloss.api.protocol.DataSource` whose snapshots the API deletes."""
    from privloss.api.protocol import DataSource
    from privloss.query.fingerprint import keyed_mac

    source = DataSource(None, None)
    try:
        if not args.sql:
            if args.table:
                raise CommandError("--table goes with --sql (DATA is then the query)")
            source.input, mac = _snapshot(args.data, "DATA", source.snapshots)
            source.fingerprint = {"file": os.path.abspath(args.data), "mac": mac}
            return source
        from privloss.query.inputs import SqlQuery

        tables, macs = {}, []
        for name, path in args.table:
            if name in tables:
                raise CommandError(f"--table: the name {name!r} is given twice")
            tables[name], mac = _snapshot(path, f"--table {name}", source.snapshots)
            macs += [name, mac]
        if getattr(args, "engine", "duckdb") == "spark":
            # Spark cannot confine a query to the tables: the result may depend on
            # anything the session reads, so a fresh nonce makes every release new
            source.fingerprint = {"sql": args.data, "tables": sorted(tables),
                                  "unfingerprinted": secrets.token_hex(16)}
        else:
            source.fingerprint = {"sql": args.data, "tables": sorted(tables),
                                  "mac": keyed_mac("sql", args.data, *macs)}
        try:
            source.input = SqlQuery(args.data, None, tables or None)
        except (ValueError, TypeError) as error:
            raise CommandError(f"DATA: {error}") from error
        return source
    except BaseException:
        source.close()
        raise


def _check_paths(args) -> None:
    """DATA (or every --table file) exists and is a data file we can read; only
    the file system is asked, no byte of data is read."""
    from privloss.query.inputs import resolve_input

    if not args.sql and args.table:
        raise CommandError("--table goes with --sql (DATA is then the query)")
    paths = [("DATA", args.data)] if not args.sql else \
        [(f"--table {name}", path) for name, path in args.table]
    for flag, text in paths:
        try:
            resolve_input(Path(text))
        except FileNotFoundError:
            hint = ("; to run a SQL query, add --sql"
                    if text.lstrip().upper().startswith(("SELECT", "WITH", "FROM")) else "")
            raise CommandError(f"{flag}: no such file: {text!r}{hint}") from None
        except (ValueError, TypeError, OSError) as error:
            raise CommandError(f"{flag}: {error}") from error


def _interaction(args, ledger) -> str | None:
    """--interaction, checked against the ledger's model (exit 2 naming the flag)."""
    if ledger is None:
        return args.interaction
    from privloss.cli.ledger import ledger_errors
    with ledger_errors():
        recorded = ledger.show(args.dataset)["interaction"]
    if args.interaction is not None and args.interaction != recorded:
        raise CommandError(f"--interaction {args.interaction} disagrees with dataset "
                           f"{args.dataset!r}, whose releases compose as {recorded}")
    if args.seed is not None and not getattr(args, "dry_run", False):
        warn("privloss: warning: --seed makes the noise predictable (NOT private) but the "
             "release is still charged to the ledger")
    return recorded


def release_and_report(args, *, command: str, k: int | None = None, algorithm=None,
                       noise: str = "laplace") -> int:
    """Validate, plan (``--dry-run`` stops here), charge, compute, print."""
    from privloss.api import protocol as api
    from privloss.query.errors import ComputationFailed
    from privloss.api.planning import max_epsilon_of, plan_request
    from privloss.api.request import make_request
    from privloss.cli.ledger import ledger_errors, open_ledger_from_args

    from privloss.cli._accuracy import check_accuracy_flags, plan_of, write_plot

    if args.user_column is None:
        raise CommandError("the following arguments are required: --privacy-unit")
    targeted = check_accuracy_flags(args)
    domain = read_domain(args.domain)
    maximum = args.epsilon == "max"
    row_filter = where_of(args)
    if args.l0 == "auto":     # the estimate inside the release: privloss.cli._auto_l0
        from privloss.cli._auto_l0 import release_auto_l0
        return release_auto_l0(args, command=command, k=k, algorithm=algorithm, noise=noise,
                               domain=domain, row_filter=row_filter)
    with ledger_errors():      # bad parameters (e.g. k > d_bar) -> exit 2, before any work
        request = make_request(command, epsilon=1.0 if maximum or targeted else args.epsilon,
                               delta=args.delta, k=k, l0=args.l0, linf=args.linf,
                               domain=domain, d_bar=args.d_bar, algorithm=algorithm,
                               noise=noise, interaction=args.interaction)
        request.events()
    ledger = open_ledger_from_args(args)
    interaction = _interaction(args, ledger)
    where = dict(ledger=ledger, dataset=args.dataset if ledger is not None else None)
    keys = dict(user=args.user_column, item=args.item_column, seed=args.seed)
    with ledger_errors():
        if interaction is not None:
            request = request.with_interaction(interaction)
        if maximum:
            if ledger is None:
                raise CommandError("--epsilon max needs --ledger and --dataset (the budget "
                                   "to fit)")
            request = request.with_epsilon(max_epsilon_of(request, **where, **keys))
            if not args.json:
                warn(f"privloss: --epsilon max = {request.epsilon!r}")
        accuracy = plan_of(args, command, quiet=args.json, epsilon=request.epsilon,
                           request=request)
        if targeted:
            request = request.with_epsilon(accuracy.epsilon)
        if args.dry_run:
            planned = plan_request(request, **where, **keys)
            write_plot(args, accuracy)
            if args.json:
                print_json({**planned.to_dict(), **({} if accuracy is None else
                                                    {"accuracy": accuracy.to_dict()})})
            else:
                print(planned)
                if accuracy is not None:
                    print(accuracy)
            return 0
    _check_paths(args)        # exist and are usable (nothing read yet): exit 2, not 3
    try:
        with ledger_errors():
            release = api.release(request, prepare=lambda: data_source(args),
                                  user=args.user_column, item=args.item_column,
                                  engine=args.engine, seed=args.seed,
                                  progress=False if args.quiet else None,
                                  nonnegative=True, where=row_filter, **where)
    except ComputationFailed as error:
        raise CommandError(str(error)) from None
    payload = api.payload_of(release)
    if maximum:
        payload["epsilon_max"] = request.epsilon
    if targeted:
        payload["epsilon_planned"] = request.epsilon
    if args.json:
        print_json(payload)
        return 0
    _print(payload, request, cached=release.cached)
    return 0


def _suppressed(request, released: int) -> str | None:
    """How many requested items were not released, said only when it is a
    function of the released output and public parameters (k, d_bar)."""
    if request.spec.domain == "known" or request.domain is not None:
        return None
    if request.k is not None and released < request.k:
        return (f"{request.k - released} of the k = {request.k} requested item(s) were below "
                f"the threshold and not released (k minus the number released: computed "
                f"from the private output and public k only)")
    if request.k is None and request.d_bar is not None:
        return (f"at most {request.d_bar - released} of the top d_bar = {request.d_bar} "
                f"item(s) were below the threshold and suppressed (d_bar minus the number "
                f"released; fewer if the data has fewer items)")
    if request.k is None:
        return "items below the threshold were suppressed (how many depends on the data: " \
               "not reported)"
    return None


def _print(payload: dict, request, *, cached: bool) -> None:
    from privloss.api.planning import bounding_note

    items = payload["items"]
    labels = [_printable(row["item"]) for row in items]
    width = max([len(label) for label in labels] + [4])
    print(f"{payload.get('algorithm', '')}: {len(items)} item(s), bounded counts with 95% "
          f"intervals")
    print(f"  {'item':<{width}}  {'count':>12}  95% interval")
    for label, row in zip(labels, items):
        low, high = row["ci95"]
        print(f"  {label:<{width}}  {_number(row['count']):>12}  "
              f"[{_number(low)}, {_number(high)}]")
    suppressed = _suppressed(request, len(items))
    if suppressed:
        print(f"note: {suppressed}")
    print(f"note: {bounding_note(request)}")
    if request.l0_capped:
        print(f"note: the noise is scaled for l0 = {request.l0_sensitivity}, the number of "
              f"--domain items (a user touches at most every listed item)")
    spent = payload["spent"]
    # the ledger measures its total at the budget's delta; a lone release at its own
    line = f"spent: epsilon = {spent['epsilon']:.10g} at delta = {spent['delta']:g}"
    if "budget_epsilon" in spent:
        line += (f" of budget epsilon = {spent['budget_epsilon']:.10g} "
                 f"(dataset {spent['dataset']}, "
                 f"{spent['releases']} release(s)"
                 + (", this answer was stored: no extra cost" if cached else "") + ")")
    print(line)


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
