"""The accuracy flags every release command shares (issue 22):
``--target-half-width W``, ``--min-release-users N`` (instead of ``--epsilon``:
the epsilon is planned, :mod:`privloss.api.accuracy_plan`) and ``--plot
FILE.png`` (with ``--dry-run``: accuracy against epsilon).  Planning reads no
data and charges nothing; the plan's words are printed with ``--dry-run``.
"""

from __future__ import annotations

import argparse

from privloss.cli._common import CommandError, warn


def _width(text: str) -> float:
    from privloss.cli._parse import positive
    return positive(text, "target half-width")


def _users(text: str) -> int:
    from privloss.cli._vocabulary import count_value
    return count_value(text, "min-release-users")


def add_accuracy_flags(parser: argparse.ArgumentParser, *, thresholded: bool = True) -> None:
    """``--target-half-width``, ``--min-release-users`` (only where groups can be
    thresholded), ``--plot``."""
    group = parser.add_argument_group("plan for an accuracy (instead of --epsilon)")
    group.add_argument("--target-half-width", type=_width, default=None, metavar="W",
                       help="use the smallest epsilon (and split) whose 95%% half-width is at "
                            "most W for every measurement (in its own units)")
    # not in the help of releases without a threshold (running totals), but still
    # parsed there so that it is refused with the reason rather than as unknown
    group.add_argument("--min-release-users", type=_users, default=None, metavar="N",
                       help=argparse.SUPPRESS if not thresholded else
                       "thresholded releases: use the epsilon at which a group of N "
                       "distinct users is released with probability 95%% (the plan also "
                       "says the 1/2 point)")
    group.add_argument("--plot", metavar="FILE.png", default=None,
                       help="with --dry-run: write accuracy (or release probability) against "
                            "epsilon, the chosen epsilon marked (needs matplotlib: the 'plot' "
                            "extra)")


def check_accuracy_flags(args) -> bool:
    """Bad combinations, before any work (exit 2); True when the epsilon is planned."""
    planned = args.target_half_width is not None or args.min_release_users is not None
    if args.target_half_width is not None and args.min_release_users is not None:
        raise CommandError("--target-half-width and --min-release-users: give one")
    if planned and args.epsilon is not None:
        flag = "--target-half-width" if args.target_half_width is not None else \
            "--min-release-users"
        raise CommandError(f"--epsilon and {flag}: give one (the target plans the epsilon)")
    if not planned and args.epsilon is None:
        raise CommandError("the following arguments are required: --epsilon (or "
                           "--target-half-width / --min-release-users)")
    if args.plot is not None:
        if not args.dry_run:
            raise CommandError("--plot goes with --dry-run (a plot of the plan)")
        if not args.plot.lower().endswith(".png"):
            raise CommandError(f"--plot must name a .png file, got {args.plot!r}")
    return planned


def plan_of(args, command: str, *, epsilon=None, quiet: bool = False, **parameters):
    """The accuracy plan of the flags (None when neither a target nor a plot is
    asked); ``parameters``: the release's, without epsilon (or ``request=``);
    ``epsilon``: the one to picture when no target is given."""
    from privloss.api.accuracy_plan import plan_accuracy

    if args.target_half_width is None and args.min_release_users is None:
        if args.plot is None:
            return None
        return plan_accuracy(command, epsilon=float(epsilon), **parameters)
    plan = plan_accuracy(command, target_half_width=args.target_half_width,
                         min_release_users=args.min_release_users,
                         curve=args.plot is not None, **parameters)
    if not quiet:
        flag = "--target-half-width" if args.target_half_width is not None else \
            "--min-release-users"
        warn(f"privloss: {flag} plans epsilon = {plan.epsilon!r}"
             + ("" if plan.budget_split is None else
                f" with budget split {plan.budget_split}"))
    return plan


def write_plot(args, plan) -> None:
    """``--plot``: the picture of ``plan``; an unwritable path is exit 2."""
    if args.plot is None or plan is None:
        return
    from privloss.api.accuracy_plan import save_accuracy_plot
    try:
        save_accuracy_plot(plan, args.plot)
    except ImportError as error:          # matplotlib missing: one line naming the extra
        raise CommandError(f"--plot: {error}") from None
    except OSError as error:
        raise CommandError(f"--plot: cannot write {args.plot!r}: {error.strerror}") from None
