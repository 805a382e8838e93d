"""``privloss aggregate --rollup`` and ``privloss sql`` with ``GROUP BY
ROLLUP(...)``: the dry run or the release of :func:`privloss.rollup`."""

from __future__ import annotations


from privloss.cli._common import CommandError, print_json

#: how a rolled-up column and an other node print in the text table
ALL, OTHER = "(all)", "(other)"
#: library parameter names -> this command's flags, at the start of an error line
_FLAGS = {"max_groups": "--max-groups", "max_rows_per_group": "--max-rows-per-group",
          "keys": "--keys", "by": "--by", "noise": "--noise"}


def _flagged(message: str) -> str:
    """A message starting with a library parameter's name, with this command's flag."""
    for name, flag in _FLAGS.items():
        if message.startswith(name + " "):
            message = flag + message[len(name):]
    return message


def _errors():
    """The ledger's error mapping (exit 2 / 3), naming this command's flags."""
    from privloss.cli.ledger import ledger_errors

    return ledger_errors(rename=_flagged)


def run_rollup(args, data, by, aggregations, where=None) -> int:
    from privloss.api.rollup import plan_rollup, rollup
    from privloss.cli.ledger import open_ledger_from_args
    from privloss.query.errors import ComputationFailed
    from privloss.cli.aggregate import keys_of

    with _errors():
        if args.epsilon == "max":
            raise CommandError("--epsilon max is not available for a rollup: give a number")
        keys = keys_of(args, by)
        parameters = dict(privacy_unit=args.privacy_unit, by=by, aggregations=aggregations,
                          epsilon=args.epsilon, delta=args.delta, keys=keys,
                          max_groups=args.max_groups,
                          max_rows_per_group=args.max_rows_per_group, noise=args.noise,
                          where=where)
        ledger = open_ledger_from_args(args)
        if args.dry_run:
            planned = plan_rollup(ledger=ledger, dataset=args.dataset if ledger else None,
                                  **parameters)
            if args.json:
                print_json(planned)
            else:
                _print_plan(planned)
            return 0
    try:
        with _errors():
            release = rollup(data, ledger=ledger, dataset=args.dataset if ledger else None,
                             seed=args.seed, consistent=args.consistent, engine=args.engine,
                             **parameters)
    except ComputationFailed as error:
        raise CommandError(str(error)) from None
    if args.json:
        print_json(release.to_dict())
        return 0
    print("\t".join([*by, "level", *release.columns]))
    for row in release.rows:
        print("\t".join([*(ALL if v is None else str(v) for v in row["group"]),
                         str(row["level"]), *_values(row, release.columns)]))
    for row in release.others:
        labels = [ALL if v is None else str(v) for v in row["parent"]]
        labels[row["level"] - 1] = OTHER
        print("\t".join([*labels, str(row["level"]), *_values(row, release.columns)]))
    print(f"# epsilon spent {release.spent.get('epsilon'):.6g}; 95% intervals with --json")
    return 0


def _values(row, columns) -> list:
    return [f"{row['values'][c]:.6g}" for c in columns]


def _print_plan(planned: dict) -> None:
    print("dry run: rollup (nothing was read, charged or computed)")
    print(f"  GROUP BY ROLLUP({', '.join(planned['by'])}): {planned['levels']} levels "
          f"(grand total first), {planned['noise']} on every node")
    if planned.get("where"):
        print(f"  rows kept where {planned['where']} (a filter: no privacy cost)")
    selection = planned["selection"]
    if selection is not None:
        print(f"  selection of every level's groups: epsilon {selection['epsilon']:.6g}, "
              f"delta {selection['delta']:g}, noisy count >= {selection['threshold']}")
    budget = next(key for key in planned if key.endswith("_per_measure"))
    print(f"  each of {', '.join(planned['measures'])}: {budget.replace('_per_measure', '')} "
          f"{planned[budget]:.6g}")
    split = planned["level_split"]
    if isinstance(split, str):
        print(f"  across levels: {split}")
    else:
        for measure, entry in split.items():
            shares = ", ".join(f"{s:.3g}" for s in entry["budget_shares"])
            widths = ", ".join(f"{w:.4g}" for w in entry["ci95_half_width_by_level"])
            print(f"  {measure}: shares by level {shares}; 95% half-width by level {widths}")
    g = planned["guarantee"]
    print(f"  guarantee epsilon = {g['epsilon']:.10g} at delta = {g['delta']:g} "
          f"(bound: {g['bound']})")
    if planned["ledger"] is not None:
        ledger = planned["ledger"]
        print(f"  ledger {ledger['dataset']}: {'fits' if ledger['fits'] else 'does NOT fit'}"
              + (f" ({ledger['reason']})" if ledger["reason"] else ""))
