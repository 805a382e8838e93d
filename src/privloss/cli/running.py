"""``privloss running``: private running totals (customers since launch,
revenue to date) per day, week or month, with 95% intervals."""

from __future__ import annotations

import argparse
import re

from privloss.cli._common import CommandError, print_json

#: library parameter names -> the flags of this command, in error messages
_FLAGS = {"privacy_unit": "--privacy-unit", "time_column": "--time-column",
          "max_periods_per_unit": "--max-periods-per-unit",
          "max_rows_per_period": "--max-rows-per-period", "count_distinct": "--count-distinct",
          "value column": "--sum column", "start": "--start", "end": "--end",
          "period": "--period", "sum": "--sum", "noise": "--noise",
          "start..end": "--start..--end"}
_NAMES = re.compile(r"(?<![-\w.])(" + "|".join(re.escape(name) for name in _FLAGS)
                    + r")(?= must| needs| bounds| ')")


def _flagged(message: str) -> str:
    """Library parameter names in a message spelled as this command's flags."""
    if message.startswith("--"):
        return message
    return _NAMES.sub(lambda match: _FLAGS[match.group(1)], message)


def _errors():
    """The ledger's error mapping (exit 2 / 3), with this command's flag names."""
    from privloss.cli.ledger import ledger_errors

    return ledger_errors(rename=_flagged)


def _positive(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--{name} must be an integer >= 1, got {text!r}") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--{name} must be an integer >= 1, got {value}")
    return value


def _real(text: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--{name} must be a number, got {text!r}") from None


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"--seed must be an integer >= 0, got {text!r}")
    return value


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "running", help="private running totals over time with 95%% intervals",
        description="Release every running total (count, distinct units so far, or a clamped "
                    "sum) from --start to --end at once through the binary-tree mechanism: "
                    "exact integer noise, error growing like a polylog of the number of "
                    "periods, an interval per period.",
        epilog="example:\n  privloss running orders.csv --privacy-unit CustomerID "
               "--time-column InvoiceDate --period week --start 2010-12-06 --end 2011-12-09 "
               "--count-distinct --max-periods-per-unit 1 --max-rows-per-period 1 --epsilon 1",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from privloss.cli._release import add_source_flags
    add_source_flags(parser)
    parser.add_argument("--privacy-unit", required=True, metavar="U",
                        help="column identifying a privacy unit (the protected person)")
    parser.add_argument("--time-column", required=True, metavar="T",
                        help="column of timestamps or dates (rows that do not parse are dropped)")
    parser.add_argument("--period", required=True, choices=["day", "week", "month"])
    parser.add_argument("--start", required=True, metavar="YYYY-MM-DD",
                        help="first day of the first period (public; a first of the month "
                             "for --period month)")
    parser.add_argument("--end", required=True, metavar="YYYY-MM-DD",
                        help="a day of the last period (public, inclusive)")
    statistic = parser.add_mutually_exclusive_group(required=True)
    statistic.add_argument("--count", action="store_true", help="rows so far")
    statistic.add_argument("--count-distinct", action="store_true",
                           help="distinct privacy units so far (each counted in its first period)")
    statistic.add_argument("--sum", metavar="COL:LOW:HIGH",
                           help="sum so far of COL clamped to integers [LOW, HIGH]")
    parser.add_argument("--max-periods-per-unit", required=True, metavar="N",
                        type=lambda t: _positive(t, "max-periods-per-unit"),
                        help="each unit contributes to at most its N earliest periods")
    parser.add_argument("--max-rows-per-period", required=True, metavar="M",
                        type=lambda t: _positive(t, "max-rows-per-period"),
                        help="each unit counts at most M rows per period")
    parser.add_argument("--epsilon", default=None, metavar="E",
                        type=lambda t: "max" if t.strip().lower() == "max" else
                        _real(t, "epsilon"),
                        help="epsilon this release spends; 'max': the largest that still fits "
                             "the ledger's budget (needs --ledger)")
    parser.add_argument("--delta", default=0.0, metavar="D", type=lambda t: _real(t, "delta"),
                        help="delta (only with --noise gaussian; default 0)")
    parser.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace",
                        help="laplace: pure DP (default); gaussian: zCDP calibrated to "
                             "(epsilon, delta)")
    parser.add_argument("--seed", type=_seed, default=None,
                        help="INSECURE reproducible noise, for tests only")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the cost and the interval widths; read and charge nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    from privloss.cli.ledger import add_ledger_flags
    add_ledger_flags(parser)
    from privloss.cli._accuracy import add_accuracy_flags
    add_accuracy_flags(parser, thresholded=False)     # running totals have no threshold
    parser.set_defaults(handler=run)


def run(args) -> int:
    from privloss.query.errors import ComputationFailed
    from privloss.cli._common import warn
    from privloss.cli._release import _check_paths, data_source
    from privloss.cli.ledger import open_ledger_from_args
    from privloss.api.running import make_running_request, release_running

    def request_at(epsilon):
        return make_running_request(
            privacy_unit=args.privacy_unit, time_column=args.time_column, period=args.period,
            start=args.start, end=args.end, count=args.count,
            count_distinct=args.count_distinct, sum=args.sum,
            max_periods_per_unit=args.max_periods_per_unit,
            max_rows_per_period=args.max_rows_per_period, epsilon=epsilon,
            delta=args.delta, noise=args.noise)

    from privloss.cli._accuracy import check_accuracy_flags, plan_of, write_plot

    targeted = check_accuracy_flags(args)
    with _errors():
        request = request_at(1.0 if args.epsilon == "max" or targeted else args.epsilon)
    ledger = open_ledger_from_args(args)
    if args.epsilon == "max":
        if ledger is None:
            raise CommandError("--epsilon max needs --ledger and --dataset (the budget to fit)")
        with _errors():
            request = request_at(_largest_epsilon(ledger, args.dataset, request_at))
        if not args.json:
            warn(f"privloss: --epsilon max = {request.epsilon!r}")
    with _errors():
        parameters = dict(
            privacy_unit=args.privacy_unit, time_column=args.time_column, period=args.period,
            start=args.start, end=args.end, count=args.count,
            count_distinct=args.count_distinct, sum=args.sum,
            max_periods_per_unit=args.max_periods_per_unit,
            max_rows_per_period=args.max_rows_per_period, delta=args.delta, noise=args.noise)
        accuracy = plan_of(args, "running", quiet=args.json, epsilon=request.epsilon,
                           **parameters)
        if targeted:
            request = request_at(accuracy.epsilon)
    if args.dry_run:
        summary = request.plan_summary()
        write_plot(args, accuracy)
        if accuracy is not None:
            summary["accuracy"] = accuracy.to_dict()
        if ledger is not None:
            with _errors():
                verdict = ledger.would_admit(args.dataset, {"dry-run": True}, request.events,
                                             fresh=True)
            summary["ledger"] = {"dataset": args.dataset, "fits": verdict["admitted"],
                                 "reason": verdict["reason"]}
        if args.json:
            print_json(summary)
        else:
            _print_plan(summary)
            if accuracy is not None:
                print(accuracy)
        return 0
    if args.seed is not None and ledger is not None:
        warn("privloss: warning: --seed makes the noise predictable (NOT private) but the "
             "release is still charged to the ledger")
    _check_paths(args)
    try:
        with _errors():
            result = release_running(request, None, ledger=ledger,
                                     dataset=args.dataset if ledger is not None else None,
                                     seed=args.seed, prepare=lambda: data_source(args))
    except ComputationFailed as error:
        raise CommandError(str(error)) from None
    if args.json:
        print_json(result.payload)
        return 0
    _print(result.payload, cached=result.cached)
    return 0


def _largest_epsilon(ledger, dataset: str, request_at) -> float:
    """The largest epsilon whose running release the fully adaptive dataset
    still admits (the one search of :func:`privloss.api.planning.largest_admitted`)."""
    import math
    import secrets

    from privloss.api.planning import largest_admitted

    summary = ledger.show(dataset)
    if summary["interaction"] != "fully-adaptive":
        raise ValueError(f"--epsilon max for running totals needs a fully-adaptive dataset; "
                         f"{dataset!r} composes as {summary['interaction']}")
    nonce = secrets.token_hex(8)

    def admitted(epsilon: float) -> dict:
        try:
            events = request_at(epsilon).events
        except (ValueError, ArithmeticError):
            return {"admitted": False, "reason": "the parameters cannot be calibrated",
                    "spent_epsilon": math.inf}
        return ledger.would_admit(dataset, {"dry-run": nonce}, events)

    return largest_admitted(ledger, dataset, admitted, summary)


def _print_plan(summary: dict) -> None:
    print(f"dry run: running {summary['statistic']} per {summary['period']} "
          f"({summary['periods']} periods, {summary['first_period']} .. "
          f"{summary['last_period']}); nothing was read, charged or computed")
    print(f"  mechanism: binary tree, {summary['levels']} levels, {summary['noise']}")
    print(f"  spends: {', '.join(summary['events'])}")
    print(f"  95% half-width: first period {summary['ci95_half_width_first']:.4g}, "
          f"last {summary['ci95_half_width_last']:.4g}, largest "
          f"{summary['ci95_half_width_max']:.4g}")
    if "ledger" in summary:
        ledger = summary["ledger"]
        print(f"  ledger {ledger['dataset']}: {'fits' if ledger['fits'] else 'does NOT fit'}"
              + (f" ({ledger['reason']})" if ledger["reason"] else ""))


def _print(payload: dict, *, cached: bool) -> None:
    periods = payload["periods"]
    monotone = periods and "monotone" in periods[0]
    print("period\ttotal" + ("\tmonotone" if monotone else "") + "\tci95_low\tci95_high")
    for row in periods:
        low, high = row["ci95"]
        print(f"{row['period']}\t{row['total']:.1f}"
              + (f"\t{row['monotone']:.1f}" if monotone else "")
              + f"\t{low:.1f}\t{high:.1f}")
    spent = payload["spent"]
    line = f"# spent: epsilon = {spent['epsilon']:.10g} at delta = {spent['delta']:g}"
    if "budget_epsilon" in spent:
        line += (f" of budget epsilon = {spent['budget_epsilon']:.10g} (dataset "
                 f"{spent['dataset']}"
                 + (", this answer was stored: no extra cost" if cached else "") + ")")
    print(line)
