"""``privloss sql``: a small DP SQL (one SELECT ... GROUP BY over one table)."""

from __future__ import annotations

import argparse

from privloss.cli._common import CommandError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sql", help="private group-by written as SQL (COUNT, SUM, AVG, quantiles)",
        description="Parse one SELECT ... FROM t GROUP BY ... (sqlglot) into a private "
                    "aggregate query; see docs/aggregate.md for the supported subset.",
        epilog="example:\n  privloss sql \"SELECT country, COUNT(*), AVG(price) FROM retail "
               "GROUP BY country\" --table retail=orders.csv --privacy-unit CustomerID "
               "--epsilon 1 --delta 1e-6 --bounds price=0:100",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query", metavar="SQL", help="the query (quote it)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=PATH",
                        required=True, help="declare a table (CSV / Parquet file)")
    parser.add_argument("--bounds", action="append", default=[], metavar="COL=LOW:HIGH",
                        help="clamping range of an aggregated column (required for each)")
    from privloss.cli.aggregate import add_query_flags
    add_query_flags(parser)
    parser.set_defaults(handler=run)


def _pairs(values, flag: str, form: str) -> dict:
    out = {}
    for text in values:
        name, sep, rest = text.partition("=")
        if not sep or not name or not rest:
            raise CommandError(f"{flag} must be {form}, got {text!r}")
        if name in out:
            raise CommandError(f"{flag} {name!r} given twice")
        out[name] = rest
    return out


def run(args) -> int:
    from privloss.query.sql import UnsupportedSql, parse_sql
    from privloss.cli.aggregate import run_query

    tables = _pairs(args.table, "--table", "NAME=PATH")
    bounds = {}
    for name, text in _pairs(args.bounds, "--bounds", "COL=LOW:HIGH").items():
        low, sep, high = text.partition(":")
        try:
            bounds[name] = (float(low), float(high))
        except ValueError:
            raise CommandError(f"--bounds must be COL=LOW:HIGH with numbers, got "
                               f"{name}={text!r}") from None
    try:
        parsed = parse_sql(args.query, bounds=bounds, privacy_unit=args.privacy_unit)
    except UnsupportedSql as error:
        raise CommandError(f"unsupported SQL: {error}") from None
    if parsed.table not in tables:
        raise CommandError(f"table {parsed.table!r} is not declared: pass --table "
                           f"{parsed.table}=PATH")
    return run_query(args, tables[parsed.table], list(parsed.by), list(parsed.aggregations),
                     parsed.where, rollup=parsed.rollup)
