"""``privloss sql``: a small DP SQL (one SELECT ... GROUP BY over a private
table, optionally joined with ``--public-table`` tables or, with
``--join-truncation N``, with another private ``--table`` on the privacy
unit; docs/sql.md)."""

from __future__ import annotations

import argparse

from privloss.cli._common import CommandError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sql", help="private group-by written as SQL (COUNT, SUM, AVG, quantiles)",
        description="Parse one SELECT ... FROM t GROUP BY ... (sqlglot) into a private "
                    "aggregate query; see docs/sql.md for the supported subset.",
        epilog="example:\n  privloss sql \"SELECT country, COUNT(*), AVG(price) FROM retail "
               "GROUP BY country\" --table retail=orders.csv --privacy-unit CustomerID "
               "--epsilon 1 --delta 1e-6 --bounds price=0:100\n"
               "  privloss sql \"SELECT r.Region, COUNT(*) FROM retail t JOIN regions r ON "
               "t.Country = r.Country GROUP BY r.Region\" --table retail=orders.csv "
               "--public-table regions=regions.csv --privacy-unit CustomerID --epsilon 1 "
               "--delta 1e-6",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query", metavar="SQL", help="the query (quote it)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=PATH",
                        required=True, help="declare a table (CSV / Parquet file)")
    parser.add_argument("--public-table", action="append", default=[], metavar="NAME=PATH",
                        help="declare a PUBLIC table (CSV / Parquet) the query may JOIN: "
                             "not protected, e.g. a country -> region lookup")
    parser.add_argument("--join-truncation", type=_truncation, default=None, metavar="N",
                        help="rows kept per privacy unit in each private table before a join "
                             "of two private tables (needed for one; the cost is unchanged)")
    parser.add_argument("--bounds", action="append", default=[], metavar="COL=LOW:HIGH",
                        help="clamping range of an aggregated column (required for each)")
    from privloss.cli.aggregate import add_query_flags
    add_query_flags(parser)
    parser.set_defaults(handler=run)


def _truncation(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--join-truncation must be an integer >= 1, got "
                                         f"{text!r}")
    return value


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
    from privloss.api.sql import sql_parameters
    from privloss.query.sql import UnsupportedSql
    from privloss.cli.aggregate import run_query

    tables = _pairs(args.table, "--table", "NAME=PATH")
    bounds = {}
    for name, text in _pairs(args.bounds, "--bounds", "COL=LOW:HIGH").items():
        if text.strip().lower() == "auto":      # private bounds (privloss.api.auto_bounds)
            bounds[name] = "auto"
            continue
        low, sep, high = text.partition(":")
        try:
            bounds[name] = (float(low), float(high))
        except ValueError:
            raise CommandError(f"--bounds must be COL=LOW:HIGH with numbers or COL=auto, got "
                               f"{name}={text!r}") from None
    public = _pairs(args.public_table, "--public-table", "NAME=PATH")
    try:
        prepared = sql_parameters(args.query, tables=tables, privacy_unit=args.privacy_unit,
                                  bounds=bounds, public_tables=public,
                                  join_truncation=args.join_truncation, engine=args.engine)
    except UnsupportedSql as error:
        raise CommandError(f"unsupported SQL: {error}") from None
    except (ValueError, TypeError, OSError) as error:
        raise CommandError(str(error).splitlines()[0]) from None
    data = prepared.pop("data")
    return run_query(args, data, prepared.pop("by"), prepared.pop("aggregations"),
                     prepared.pop("where"), **prepared)
