"""``privloss topk/histogram --l0 auto``: the flag's value and the release
through :func:`privloss.api.auto_l0_topk.release_auto_l0` (same order of work
as :func:`privloss.cli._release.release_and_report`: every argument checked,
``--dry-run`` prints the plan and stops, the ledger charges the estimate and
the release once, then the data is read)."""

from __future__ import annotations

from privloss.cli._common import CommandError, print_json

__all__ = ["l0_value", "release_auto_l0"]


def l0_value(text: str):
    """``--l0``: an integer >= 1, or 'auto'; argparse's one line (exit 2)
    otherwise, before anything is read."""
    from privloss.cli._parse import positive_int_or_auto

    return positive_int_or_auto(text, "l0")


def release_auto_l0(args, *, command: str, k, algorithm, noise, domain, row_filter) -> int:
    from privloss.api import protocol as api
    from privloss.api.auto_l0_topk import auto_l0_plan, release_auto_l0 as release
    from privloss.cli import _release
    from privloss.cli.ledger import ledger_errors, open_ledger_from_args
    from privloss.query.errors import ComputationFailed

    if args.epsilon == "max" or args.epsilon is None:
        raise CommandError("--l0 auto needs a number for --epsilon (not 'max' nor an "
                           "accuracy target)")
    if args.engine != "duckdb":
        raise CommandError(f"--l0 auto runs on the duckdb engine only, got --engine "
                           f"{args.engine}")
    with ledger_errors():
        auto = auto_l0_plan(command, epsilon=args.epsilon, delta=args.delta, k=k,
                            linf=args.linf, domain=domain, d_bar=args.d_bar,
                            interaction=args.interaction,
                            **({"algorithm": algorithm} if command == "topk"
                               else {"noise": noise}))
    ledger = open_ledger_from_args(args)
    interaction = _release._interaction(args, ledger)
    where = dict(ledger=ledger, dataset=args.dataset if ledger is not None else None)
    with ledger_errors():
        if interaction is not None:
            auto = auto.with_interaction(interaction)
    if args.dry_run:
        plan = {"command": command, "epsilon": auto.epsilon, "delta": auto.first.delta,
                "algorithm": auto.first.algorithm, "l0": "auto", "auto_l0": auto.describe(),
                "events": [repr(event) for event in auto.events]}
        if ledger is not None:
            with ledger_errors():
                key = auto.query_key({"dry-run": "plan"}, user_column=args.user_column,
                                     item_column=args.item_column, seed=args.seed)
                verdict = ledger.would_admit(args.dataset, key, auto.events)
            plan["admitted"] = verdict["admitted"]
            plan["spent_epsilon_after"] = verdict["spent_epsilon"]
        if args.json:
            print_json(plan)
        else:
            _print_plan(plan)
        return 0
    _release._check_paths(args)
    try:
        with ledger_errors():
            result = release(auto, prepare=lambda: _release.data_source(args),
                             user=args.user_column, item=args.item_column, engine=args.engine,
                             seed=args.seed, progress=False if args.quiet else None,
                             interaction_given=args.interaction, where=row_filter, **where)
    except ComputationFailed as error:
        raise CommandError(str(error)) from None
    payload = api.payload_of(result)
    if args.json:
        print_json(payload)
        return 0
    l0 = payload["parameters"]["l0_estimated"]
    print(f"# l0 {l0} (private estimate of the 95th percentile of distinct items per unit, "
          f"charged below)")
    _release._print(payload, auto.requests[l0], cached=result.cached)
    return 0


def _print_plan(plan: dict) -> None:
    auto = plan["auto_l0"]
    print(f"plan: {plan['command']} ({plan['algorithm']}), epsilon {plan['epsilon']:g}, "
          f"delta {plan['delta']:g}")
    print(f"  l0 auto: {100 * auto['share_of_epsilon']:g}% of epsilon "
          f"({auto['epsilon']:.6g}), DP {100 * auto['level']:g}th percentile of distinct "
          f"items per unit over {', '.join(map(str, auto['candidates']))}")
    print(f"  events: {', '.join(plan['events'])}")
    if "admitted" in plan:
        print(f"  ledger: {'admitted' if plan['admitted'] else 'REFUSED'} (spent epsilon "
              f"after: {plan['spent_epsilon_after']:.6g}); nothing read or charged")
    else:
        print("  nothing read or charged")
