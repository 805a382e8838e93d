"""``privloss ledger``: create, show and list the releases of a durable
privacy-budget ledger (:mod:`privloss.analytics.ledger`).

    privloss ledger create  --ledger PATH --dataset NAME --epsilon E [--delta D]
                            [--interaction adaptive|setwise]
    privloss ledger show    --ledger PATH --dataset NAME [--json]
    privloss ledger history --ledger PATH --dataset NAME [--json]

Bad input: one line on stderr, exit status 2. For the commands that release
through a ledger (``privloss histogram`` / ``topk``), :func:`add_ledger_flags`,
:func:`open_ledger_from_args` and :func:`ledger_errors` give the same flags and
the same errors, with a refused release exiting with status 3
(:data:`BUDGET_EXIT_CODE`, message containing "budget").
"""

from __future__ import annotations

import argparse
import contextlib
import math

from privloss.analytics.ledger import (LEDGER_INTERACTIONS, Ledger, LedgerBudgetError,
                                       LedgerError, check_dataset_name)
from privloss.cli._common import CommandError, flag_names, print_json
from privloss.cli._parse import delta_value, positive

#: exit status of a release refused by the budget
BUDGET_EXIT_CODE = 3


# --------------------------------------------------------------------------
# helpers for other commands
# --------------------------------------------------------------------------

def budget_refused(error: LedgerBudgetError) -> CommandError:
    """The CLI error of a refused release: its message (which names the budget
    and what remains), exit status 3. Use as ``raise budget_refused(error) from error``."""
    return CommandError(str(error), exit_code=BUDGET_EXIT_CODE)


@contextlib.contextmanager
def ledger_errors():
    """Turn library errors into CLI errors: a refused release -> exit 3; a
    missing / corrupt / busy ledger, an unknown or duplicate dataset, bad
    arguments or data -> exit 2 (one line, parameter names spelled as flags);
    numeric overflow or exhausted memory -> exit 2, "out of the supported
    numeric range" (e.g. --epsilon 1e-300, --linf 1e12)."""
    try:
        yield
    except LedgerBudgetError as error:
        raise budget_refused(error) from error
    except (LedgerError, ValueError, TypeError, FileNotFoundError) as error:
        raise CommandError(flag_names(str(error))) from error
    except (ArithmeticError, MemoryError) as error:
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        raise CommandError(f"the parameters are out of the supported numeric range "
                           f"({detail})") from error


def add_ledger_flags(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--ledger PATH --dataset NAME`` (both or neither unless ``required``)."""
    group = parser.add_argument_group("privacy-budget ledger")
    group.add_argument("--ledger", metavar="PATH", required=required,
                       help="SQLite ledger file (created by `privloss ledger create`)")
    group.add_argument("--dataset", metavar="NAME", required=required,
                       help="dataset whose budget is charged")


def open_ledger_from_args(args, *, create: bool = False) -> Ledger | None:
    """The ledger named by ``--ledger`` (None if neither flag was given).

    Raises :class:`CommandError` (exit 2) if only one of ``--ledger`` and
    ``--dataset`` is given or the file cannot be used as a ledger. With
    ``create=False`` (the default) a missing file is an error, never created."""
    path, dataset = getattr(args, "ledger", None), getattr(args, "dataset", None)
    if path is None and dataset is None:
        return None
    if path is None or dataset is None:
        raise CommandError("--ledger and --dataset go together: give both or neither")
    with ledger_errors():
        return Ledger(path, create=create)


# --------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------

def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ledger", help="durable privacy-budget ledger: create, show, history",
        description="A durable privacy budget per dataset in one SQLite file; releases "
                    "(privloss histogram / topk --ledger) are charged against it.")
    commands = parser.add_subparsers(dest="ledger_command", metavar="ACTION")
    commands.required = True

    create = commands.add_parser("create", help="add a dataset with a total budget",
                                 description="Add a dataset with a total (epsilon, delta) "
                                 "budget; creates the ledger file if needed.")
    add_ledger_flags(create, required=True)
    create.add_argument("--epsilon", required=True, metavar="E",
                        type=lambda text: positive(text, "epsilon"),
                        help="total epsilon budget, > 0")
    create.add_argument("--delta", default=0.0, metavar="D", type=delta_value,
                        help="total delta budget in [0, 1) (default 0)")
    create.add_argument("--interaction", default=LEDGER_INTERACTIONS[0],
                        choices=LEDGER_INTERACTIONS,
                        help="adaptive: privacy parameters fixed in advance, in order; setwise: "
                        "preregistered as a set (default adaptive; see docs/ledger.md)")
    create.add_argument("--json", action="store_true", help="print one JSON object")
    create.set_defaults(handler=run_create)

    show = commands.add_parser("show", help="budget, spent and remaining of a dataset")
    add_ledger_flags(show, required=True)
    show.add_argument("--json", action="store_true", help="print one JSON object")
    show.set_defaults(handler=run_show)

    history = commands.add_parser("history", help="the recorded releases of a dataset")
    add_ledger_flags(history, required=True)
    history.add_argument("--json", action="store_true", help="print one JSON array")
    history.set_defaults(handler=run_history)


def _format(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.10g}"


def _print_summary(summary: dict) -> None:
    print(f"dataset {summary['dataset']} ({summary['interaction']}, created {summary['created']})")
    print(f"  budget     epsilon = {_format(summary['budget_epsilon'])}, "
          f"delta = {summary['budget_delta']:g}")
    print(f"  spent      epsilon = {_format(summary['spent_epsilon'])}, "
          f"delta = {summary['spent_delta']:g} "
          f"({summary['releases']} release{'' if summary['releases'] == 1 else 's'}; "
          f"bound: {summary['bound']})")
    print(f"  remaining  epsilon = {_format(summary['remaining_epsilon'])}")


def run_create(args) -> int:
    with ledger_errors():
        # argparse checked the numbers; check the name too before the file is created
        check_dataset_name(args.dataset)
        ledger = Ledger(args.ledger, create=True)
        summary = ledger.create_dataset(args.dataset, epsilon=args.epsilon, delta=args.delta,
                                        interaction=args.interaction)
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary)
    return 0


def run_show(args) -> int:
    with ledger_errors():
        summary = Ledger(args.ledger, create=False).show(args.dataset)
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary)
    return 0


def run_history(args) -> int:
    with ledger_errors():
        rows = Ledger(args.ledger, create=False).history(args.dataset)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"dataset {args.dataset}: no releases")
        return 0
    for row in rows:
        kinds = ", ".join(_describe(event) for event in row["events"])
        print(f"#{row['id']}  {row['time']}  spent after: epsilon = "
              f"{_format(row['spent_epsilon'])} ({row['bound']})")
        print(f"    query:  {row['query_key']}")
        print(f"    events: {kinds}")
    return 0


def _describe(event: dict) -> str:
    if event["type"] == "Composed":
        return "Composed(" + ", ".join(_describe(child) for child in event["events"]) + ")"
    fields = ", ".join(f"{key}={value!r}" for key, value in event.items() if key != "type")
    return f"{event['type']}({fields})"
