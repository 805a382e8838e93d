"""``privloss aggregate``: DP group-by with counts, sums, means and quantiles."""

from __future__ import annotations

import argparse

from privloss.cli._common import CommandError, print_json


def _positive(text: str, name: str) -> int:
    """An integer >= 1 (an argparse type: its error is argparse's one line, exit 2;
    a CommandError raised here would escape argparse as a traceback)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--{name} must be an integer >= 1, got {text!r}") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--{name} must be an integer >= 1, got {value}")
    return value


def _max_groups(text: str):
    """An integer >= 1, or 'auto' (privloss.api.auto_l0): argparse's one line
    (exit 2) otherwise, before anything is read."""
    from privloss.cli._parse import positive_int_or_auto

    return positive_int_or_auto(text, "max-groups")


def keys_of(args, by) -> list | None:
    """The public keys of ``--keys FILE`` (None without it); an unreadable file is
    one line naming the flag (exit 2), before anything is read or charged."""
    if args.keys is None:
        return None
    from privloss.query.keys import read_keys_file
    try:
        return read_keys_file(args.keys, tuple(by))
    except OSError as error:
        raise CommandError(f"--keys: cannot read {args.keys!r}: "
                           f"{error.strerror or error}") from None


def _query_epsilon(text: str):
    """``max`` or an epsilon in (0, 100], the range privloss.query.spec checks
    (so that 0 and 101 are refused with the same range)."""
    if text.strip().lower() == "max":
        return "max"
    from privloss.cli._parse import in_range
    return in_range(text, "epsilon", 0.0, 100.0, low_open=True)


def add_query_flags(parser) -> None:
    """Flags shared by ``aggregate`` and ``sql``."""
    parser.add_argument("--privacy-unit", required=True, metavar="COL",
                        help="column identifying a privacy unit (the protected person)")
    parser.add_argument("--epsilon", default=None, type=_query_epsilon, metavar="E",
                        help="total epsilon; 'max': the largest that still fits the "
                             "ledger's budget (needs --ledger); or plan it with "
                             "--target-half-width / --min-release-users")
    parser.add_argument("--delta", type=float, default=0.0, help="total delta (default 0)")
    parser.add_argument("--keys", metavar="FILE", default=None,
                        help="CSV of public group keys (header: the by columns); released "
                             "complete. Without: groups above a noisy threshold (needs delta)")
    parser.add_argument("--max-groups", type=_max_groups, default=1,
                        help="groups per privacy unit (chosen at random), default 1; 'auto': "
                             "a DP 95th percentile of groups per unit from 10%% of epsilon")
    parser.add_argument("--max-rows-per-group", type=lambda t: _positive(t, "max-rows-per-group"),
                        default=1, help="rows per privacy unit and group, default 1")
    parser.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace")
    parser.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb",
                        help="where the bounding runs (same results for the same --seed)")
    parser.add_argument("--seed", type=int, default=None, help="INSECURE reproducible run")
    parser.add_argument("--consistent", action="store_true",
                        help="post-process counts: non-negative integers adding up to a "
                             "released total (no privacy cost)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dry-run", action="store_true",
                        help="show the cost and accuracy; read and charge nothing")
    from privloss.cli.ledger import add_ledger_flags
    add_ledger_flags(parser)
    from privloss.cli._accuracy import add_accuracy_flags
    add_accuracy_flags(parser)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "aggregate", help="private group-by: counts, sums, means, quantiles",
        description="Private group-by with per-unit contribution bounding inside DuckDB.",
        epilog="example:\n  privloss aggregate orders.csv --privacy-unit CustomerID --by Country "
               "--count --mean Price:0:100 --epsilon 1 --delta 1e-6 --max-rows-per-group 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from privloss.cli._release import add_source_flags
    add_source_flags(parser)
    parser.add_argument("--by", required=True, help="group-by column(s), comma separated")
    parser.add_argument("--count", action="store_true", help="rows per group")
    parser.add_argument("--count-distinct", action="store_true",
                        help="privacy units per group")
    auto = " (COL:auto: private bounds from 10%% of epsilon, docs/aggregate.md)"
    parser.add_argument("--sum", action="append", default=[], metavar="COL:LOW:HIGH",
                        help="sum of COL clamped to [LOW, HIGH]" + auto)
    parser.add_argument("--mean", action="append", default=[], metavar="COL:LOW:HIGH",
                        help="mean of COL clamped to [LOW, HIGH]" + auto)
    parser.add_argument("--quantile", action="append", default=[], metavar="COL:LOW:HIGH:Q[,Q]",
                        help="quantiles of COL over [LOW, HIGH] (COL:auto:Q[,Q]: private "
                             "bounds)")
    parser.add_argument("--where", metavar="CONDITION", default=None,
                        help="keep only the rows where this SQL condition holds (comparisons, "
                             "IN, BETWEEN, IS NULL, LIKE, AND/OR/NOT, CAST; docs/sql.md); "
                             "no privacy cost")
    parser.add_argument("--rollup", action="store_true",
                        help="GROUP BY ROLLUP(by...): subtotals at every level that add up "
                             "(--count / --count-distinct only; docs/releases.md)")
    add_query_flags(parser)
    parser.set_defaults(handler=run)


def _aggregations(args) -> list:
    from privloss.query.spec import Aggregation, parse_value_spec
    out = []
    if args.count:
        out.append(Aggregation("count"))
    if args.count_distinct:
        out.append(Aggregation("count_distinct"))
    from privloss.api.auto_bounds import parse_auto_spec
    for kind in ("sum", "mean", "quantile"):
        out += [parse_auto_spec(kind, text) or parse_value_spec(kind, text)
                for text in getattr(args, kind)]
    if not out:
        raise ValueError("give at least one of --count, --count-distinct, --sum, --mean, "
                         "--quantile")
    return out


def run_query(args, data, by, aggregations, where=None, joins=(), join_truncation=None,
              rollup: bool = False) -> int:
    """Dry run or release of a checked query; prints the result."""
    from privloss.api.aggregate import aggregate, plan_aggregate
    from privloss.query.errors import ComputationFailed
    from privloss.cli.ledger import ledger_errors, open_ledger_from_args
    from privloss.cli._accuracy import check_accuracy_flags, plan_of, write_plot

    targeted = check_accuracy_flags(args)
    if rollup:
        if targeted or args.plot is not None:
            raise CommandError("a rollup (--rollup, GROUP BY ROLLUP) takes --epsilon "
                               "(--target-half-width, --min-release-users and --plot plan "
                               "flat group-bys only)")
        from privloss.cli._rollup import run_rollup
        return run_rollup(args, data, by, aggregations, where)
    with ledger_errors():
        keys = keys_of(args, by)
        parameters = dict(privacy_unit=args.privacy_unit, by=by, aggregations=aggregations,
                          epsilon=args.epsilon, delta=args.delta, keys=keys,
                          max_groups=args.max_groups,
                          max_rows_per_group=args.max_rows_per_group, noise=args.noise,
                          where=where,
                          **({"joins": joins, "join_truncation": join_truncation}
                             if joins else {}))
        if args.epsilon == "max":
            from privloss.api.aggregate import max_epsilon_aggregate
            ledger = open_ledger_from_args(args)
            if ledger is None:
                raise CommandError("--epsilon max needs --ledger and --dataset (the budget "
                                   "to fit)")
            del parameters["epsilon"]
            parameters["epsilon"] = max_epsilon_aggregate(ledger=ledger, dataset=args.dataset,
                                                          **parameters)
        if targeted:
            del parameters["epsilon"]
        accuracy = plan_of(args, "aggregate", quiet=args.json, epsilon=parameters.get("epsilon"),
                           **{name: value for name, value in parameters.items()
                              if name != "epsilon"})
        if targeted:
            parameters["epsilon"] = accuracy.epsilon
            if accuracy.budget_split is not None:
                parameters["budget_split"] = accuracy.budget_split
        if args.dry_run:
            ledger = open_ledger_from_args(args)
            planned = plan_aggregate(ledger=ledger, dataset=args.dataset if ledger else None,
                                     **parameters)
            write_plot(args, accuracy)
            if accuracy is not None:
                planned["accuracy"] = accuracy.to_dict()
            if args.json:
                print_json(planned)
            else:
                _print_plan(planned)
                if accuracy is not None:
                    print(accuracy)
            return 0
        ledger = open_ledger_from_args(args)
    try:
        with ledger_errors():
            release = aggregate(data, ledger=ledger, dataset=args.dataset if ledger else None,
                                seed=args.seed, consistent=args.consistent,
                                engine=args.engine, **parameters)
    except ComputationFailed as error:
        raise CommandError(str(error)) from None
    if args.json:
        print_json(release.to_dict())
        return 0
    print("\t".join([*by, *release.columns]))
    for row in release.rows:
        print("\t".join([*map(str, row["group"]),
                         *(f"{row['values'][c]:.6g}" for c in release.columns)]))
    estimated = dict((release.parameters.get("auto_bounds") or {}).get("estimated") or {})
    if "max_groups" in estimated:
        print(f"# max-groups {estimated.pop('max_groups')} (private estimate, charged above)")
    for column, (low, high) in estimated.items():
        print(f"# bounds of {column}: [{low:g}, {high:g}] (private estimates, charged above)")
    print(f"# epsilon spent {release.spent.get('epsilon'):.6g}; 95% intervals with --json")
    return 0


def _print_plan(planned: dict) -> None:
    print("dry run: aggregate (nothing was read, charged or computed)")
    for join in planned.get("joins", ()):
        kind = "public" if join["public"] else "private"
        print(f"  {join['kind']} join with {kind} table {join['table']} on "
              f"{', '.join(join['on'])}: {join['stability']}")
    if planned.get("where"):
        print(f"  rows kept where {planned['where']} (a filter: no privacy cost)")
    for m in planned["measurements"]:
        # a quantile's accuracy is a rank error (rows), not a half-width in its units
        accuracy = (f"95% half-width {m['ci95_half_width']:.6g}" if "ci95_half_width" in m
                    else f"95% rank error {m['ci95_rank_error']:.6g} rows")
        share = "" if m.get("share") is None else f"share {100 * m['share']:.1f}%; "
        print(f"  {m['measurement']:<28} {share}epsilon alone {m['epsilon_alone']:.6g}; "
              f"{m['step']}; {accuracy}")
    if planned.get("split"):
        print(f"  split      {planned['split']['rule']}")
    auto = planned.get("auto_bounds") or {}
    if "max_groups" in auto:
        groups = auto["max_groups"]
        print(f"  max-groups auto: {100 * groups['share_of_epsilon']:g}% of epsilon, DP "
              f"quantile {groups['level']:g} of groups per unit over {groups['candidates']}, "
              f"epsilon {groups['epsilon']:.6g}; the release is charged as "
              f"{groups['events'][1]} (shares above: for max-groups 1)")
    if "columns" in auto:
        print(f"  bounds auto for {', '.join(auto['columns'])}: "
              f"{100 * auto['share_of_epsilon']:g}% of epsilon, DP quantiles "
              f"{auto['levels'][0]:g} and {auto['levels'][1]:g} over {auto['candidates']}, "
              f"epsilon {auto['epsilon_per_estimate']:.6g} each (shares above: of the rest)")
    g = planned["guarantee"]
    print(f"  guarantee epsilon = {g['epsilon']:.10g} at delta = {g['delta']:g} "
          f"(bound: {g['bound']})")
    if planned["threshold"] is not None:
        print(f"  groups released when their noisy distinct count >= {planned['threshold']}")
    if planned["ledger"] is not None:
        ledger = planned["ledger"]
        print(f"  ledger {ledger['dataset']}: {'fits' if ledger['fits'] else 'does NOT fit'}"
              + (f" ({ledger['reason']})" if ledger["reason"] else ""))


def run(args) -> int:
    from privloss.cli.ledger import ledger_errors

    with ledger_errors():
        aggregations = _aggregations(args)
    from privloss.cli._release import source_of, where_of

    by = [name.strip() for name in args.by.split(",") if name.strip()]
    return run_query(args, source_of(args), by, aggregations, where_of(args),
                     rollup=args.rollup)
