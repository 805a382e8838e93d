"""``privloss ledger``: create, show and list the releases of a durable
privacy-budget ledger (:mod:`privloss.budget`).

    privloss ledger create  --ledger PATH --dataset NAME (--epsilon E | --odometer) [--delta D]
                            [--interaction fully-adaptive | adaptive --plan FILE
                             | setwise --plan FILE]
                            [--witness PATH] [--key-file PATH] [--no-witness]
    privloss ledger show    --ledger PATH --dataset NAME [--json]
    privloss ledger history --ledger PATH --dataset NAME [--json]
    privloss ledger verify  --ledger PATH [--witness PATH] [--key-file PATH] [--json]
    privloss ledger postgres-grants --role NAME

A new ledger file is anchored by default: its witness ``PATH.witness`` and
key ``PATH.key`` (mode 0600, created; ``$PRIVLOSS_LEDGER_KEY`` instead when
set) are recorded in it and used by every later command (docs/ledger.md,
"Anchoring").

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
import sys

from privloss.events import Interaction
from privloss.cli._common import CommandError, flag_names, print_json, warn
from privloss.cli._parse import delta_value, positive

#: exit status of a release refused by the budget
BUDGET_EXIT_CODE = 3


# --------------------------------------------------------------------------
# helpers for other commands
# --------------------------------------------------------------------------

#: the ledger's interaction models (privloss.budget.LEDGER_INTERACTIONS),
#: spelled here so that `--help` needs no ledger import
LEDGER_INTERACTIONS = (Interaction.FULLY_ADAPTIVE.value, Interaction.ADAPTIVE.value,
                       Interaction.SETWISE.value)


def _ledger_module():
    """privloss.budget, imported when a command uses it (fast --help)."""
    import privloss.budget as ledger
    return ledger


class _NeverRaised(Exception):
    """Stands for the ledger's errors while privloss.budget is not loaded."""


def budget_refused(error) -> CommandError:
    """The CLI error of a refused release: its message (which names the budget
    and what remains), exit status 3. Use as ``raise budget_refused(error) from error``."""
    return CommandError(str(error), exit_code=BUDGET_EXIT_CODE)


@contextlib.contextmanager
def ledger_errors(rename=None):
    """Turn library errors into CLI errors: a refused release -> exit 3; a
    missing / corrupt / busy ledger, an unknown or duplicate dataset, bad
    arguments or data -> exit 2 (one line, parameter names spelled as flags);
    numeric overflow or exhausted memory -> exit 2, "out of the supported
    numeric range" (e.g. --epsilon 1e-300, --linf 1e12).  ``rename``: a
    command's own message -> message (its flag names), applied to every
    :class:`CommandError` leaving the block."""
    if rename is not None:
        try:
            with ledger_errors():
                yield
        except CommandError as error:
            raise CommandError(rename(str(error)), error.exit_code) from error.__cause__
        return
    # privloss.budget only if it is loaded: no ledger error exists before it
    # is (a release without a ledger does not import it: 40-80 ms)
    ledger_error = budget_error = _NeverRaised
    try:
        yield
    except Exception as error:      # classified below; anything else re-raised as is
        module = sys.modules.get("privloss.budget")
        if module is not None and hasattr(module, "LedgerError"):
            ledger_error, budget_error = module.LedgerError, module.LedgerBudgetError
        if isinstance(error, budget_error):
            raise budget_refused(error) from error
        if isinstance(error, (ledger_error, ValueError, TypeError, FileNotFoundError)):
            raise CommandError(flag_names(str(error))) from error
        if not isinstance(error, (ArithmeticError, MemoryError)):
            raise
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


def open_ledger_from_args(args, *, create: bool = False):
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
        return _ledger_module().Ledger(path, create=create)


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
    create.add_argument("--budget-epsilon", dest="epsilon", default=None, metavar="E",
                        type=lambda text: positive(text, "budget-epsilon"),
                        help="total epsilon budget, > 0 (required unless --odometer)")
    create.add_argument("--odometer", action="store_true",
                        help="no fixed budget: nothing is refused and `ledger show` reports "
                             "a privacy odometer's running epsilon at --budget-delta, valid "
                             "under fully adaptive choice")
    create.add_argument("--budget-delta", dest="delta", default=None, metavar="D",
                        type=lambda text: delta_value(text, "budget-delta"),
                        help="total delta budget in [0, 1) (default 0: then releases with a "
                             "delta, such as unknown-domain ones, are refused)")
    from privloss.cli._vocabulary import add_deprecated     # old spellings, one more release
    add_deprecated(create, "--epsilon", dest="epsilon", new="--budget-epsilon",
                   where="ledger create", type=lambda text: positive(text, "epsilon"))
    add_deprecated(create, "--delta", dest="delta", new="--budget-delta",
                   where="ledger create", type=delta_value)
    create.add_argument("--interaction", default=LEDGER_INTERACTIONS[0],
                        choices=LEDGER_INTERACTIONS,
                        help="fully-adaptive (default): choose each release's parameters as "
                        "you go (filter rules); adaptive: a preregistered --plan used in order; "
                        "setwise: a --plan used in any order (tight bounds; docs/ledger.md)")
    create.add_argument("--mix", default="mixed", choices=["mixed", "pure", "gaussian"],
                        help="the releases a fully-adaptive budget will see, which sets its "
                             "filter's delta split: mixed (default: any release), pure (no "
                             "release delta: pure DP, bounded range, Laplace), gaussian "
                             "(Gaussian noise); docs/accounting.md")
    create.add_argument("--plan", metavar="FILE", default=None,
                        help="TOML or JSON list of the planned releases (required by adaptive "
                             "and setwise); e.g. [[release]] command=\"topk\" "
                             "algorithm=\"unknown-gumbel\" k=10 epsilon=0.1 delta=1e-7 l0=5 "
                             "d_bar=50")
    create.add_argument("--witness", metavar="PATH", default=None,
                        help="append-only witness of the ledger's heads (default for a file "
                             "ledger: LEDGER.witness; required to anchor a PostgreSQL ledger)")
    create.add_argument("--key-file", metavar="PATH", default=None,
                        help="key authenticating the witness, mode 0600 (default: "
                             "$PRIVLOSS_LEDGER_KEY if set, else LEDGER.key, created if missing)")
    create.add_argument("--no-witness", action="store_true",
                        help="do not anchor the ledger (deleted releases and restored copies "
                             "then cannot be detected)")
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

    verify = commands.add_parser(
        "verify", help="check the ledger's hash chain (damaged or edited records)",
        description="Verify every dataset's budget record and release chain; exit 2 naming the "
                    "first bad record.")
    verify.add_argument("--ledger", metavar="PATH", required=True, help="SQLite ledger file")
    verify.add_argument("--witness", metavar="PATH", default=None,
                        help="witness to check against (default: the one recorded in the "
                             "ledger, e.g. a copy kept elsewhere)")
    verify.add_argument("--key-file", metavar="PATH", default=None,
                        help="the witness's key file (default: the recorded one, else "
                             "$PRIVLOSS_LEDGER_KEY)")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.set_defaults(handler=run_verify)

    grants = commands.add_parser(
        "postgres-grants", help="print the SQL that lets a PostgreSQL role use a ledger "
                                "without editing or deleting its records",
        description="Print the SQL a database owner runs once: SELECT and INSERT for the "
                    "role, UPDATE only of the columns that finish a release or advance a "
                    "dataset, no DELETE or TRUNCATE, and append-only triggers.")
    grants.add_argument("--role", metavar="NAME", required=True,
                        help="the service's PostgreSQL login role")
    grants.set_defaults(handler=run_postgres_grants)


def _format(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.10g}"


def _print_summary(summary: dict) -> None:
    print(f"dataset {summary['dataset']} ({summary['interaction']}, created {summary['created']})")
    if summary.get("note"):
        print(f"  note: {summary['note']}")
    odometer = summary.get("odometer")
    if odometer is not None:
        print(f"  budget     no fixed budget: a privacy odometer at delta = "
              f"{odometer['delta']:g}")
        print(f"  spent      epsilon = {_format(odometer['epsilon'])} (odometer, valid at "
              f"every time under fully adaptive choice; {odometer['bound']}; "
              f"{summary['releases']} release{'' if summary['releases'] == 1 else 's'})")
        return
    print(f"  budget     epsilon = {_format(summary['budget_epsilon'])}, "
          f"delta = {summary['budget_delta']:g}")
    failed = summary.get("failed", 0)
    print(f"  spent      epsilon = {_format(summary['spent_epsilon'])}, "
          f"delta = {summary['spent_delta']:g} "
          f"({summary['releases']} release{'' if summary['releases'] == 1 else 's'}"
          + (f", {failed} failed but charged" if failed else "")
          + f"; {'rule' if summary['interaction'] == 'fully-adaptive' else 'bound'}: "
          f"{summary['bound']})")
    print(f"  remaining  epsilon = {_format(summary['remaining_epsilon'])}, "
          f"delta = {summary.get('remaining_delta', 0.0):g}")
    plan = summary.get("plan")
    if plan:
        used = sum(1 for item in plan if item["used"])
        print(f"  plan       {used} of {len(plan)} planned releases used "
              f"({'in order' if summary['interaction'] == 'adaptive' else 'in any order'})")
        for item in plan:
            fields = ", ".join(f"{key}={value}" for key, value in item["match"].items()) \
                or ", ".join(item["events"])
            print(f"    [{'x' if item['used'] else ' '}] #{item['item']}  {fields}")


def run_create(args) -> int:
    if args.odometer and args.epsilon is not None:
        raise CommandError("--odometer keeps no fixed budget: give it without --budget-epsilon")
    if args.epsilon is None and not args.odometer:
        raise CommandError("--budget-epsilon is required: the dataset's total epsilon budget "
                           "(or --odometer: no fixed budget, a running odometer reading)")
    plan = None
    if args.interaction == "fully-adaptive" and args.plan is not None:
        raise CommandError("--plan goes with --interaction adaptive or setwise; a "
                           "fully-adaptive budget needs no plan")
    if args.interaction != "fully-adaptive" and args.mix != "mixed":
        raise CommandError(f"--mix {args.mix} sets a fully-adaptive budget's filter split; "
                           f"--interaction {args.interaction} follows its --plan")
    if args.interaction != "fully-adaptive":
        if args.plan is None:
            raise CommandError(f"--interaction {args.interaction} needs --plan FILE: its "
                               f"composition theorems assume the releases' privacy parameters "
                               f"were fixed in advance (or use --interaction fully-adaptive)")
        from privloss.api.plan_file import read_plan_file
        try:
            plan = read_plan_file(args.plan, args.interaction)
        except ValueError as error:        # PlanFileError, or an unreadable file
            raise CommandError(str(error)) from error
    delta = 0.0 if args.delta is None else args.delta
    with ledger_errors():
        # argparse checked the numbers; check the name too before the file is created
        module = _ledger_module()
        module.check_dataset_name(args.dataset)
        witness, key_file, created = _anchor_of(args)
        try:
            ledger = module.Ledger(args.ledger, create=True, witness=witness,
                                   key_file=key_file)
        except BaseException:
            if created:                    # bad input leaves no file behind
                import os
                os.unlink(key_file)
            raise
        summary = ledger.create_dataset(args.dataset, epsilon=args.epsilon, delta=delta,
                                        interaction=args.interaction, plan=plan,
                                        mix=args.mix)
    if args.delta is None and not args.odometer:
        warn("privloss: warning: no --delta budget (--budget-delta): the budget's delta is 0, "
             "so releases with a "
             "delta (unknown-domain top-k and histograms, Gaussian noise) will be refused")
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary)
    return 0


def _anchor_of(args) -> tuple:
    """(witness, key file, whether the key file was created now) for ``ledger
    create``: the flags, else :func:`privloss.budget.default_anchor`."""
    if args.no_witness:
        if args.witness is not None or args.key_file is not None:
            raise CommandError("--no-witness goes without --witness and --key-file")
        return None, None, False
    if args.witness is not None:
        return args.witness, args.key_file, False
    if args.ledger.startswith(("postgresql://", "postgres://")):
        warn("privloss: warning: a PostgreSQL ledger is anchored only with --witness PATH; "
             "without one, deleted releases and restored copies cannot be detected")
        return None, args.key_file, False
    if args.key_file is not None:
        return args.ledger + ".witness", args.key_file, False
    anchor = _ledger_module().default_anchor(args.ledger)
    return anchor["witness"], anchor["key_file"], anchor["created_key"]


def run_show(args) -> int:
    with ledger_errors():
        summary = _ledger_module().Ledger(args.ledger, create=False).show(args.dataset)
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary)
    return 0


def run_verify(args) -> int:
    with ledger_errors():
        # opening verifies the chains and the witness; verify() re-reads the tables
        report = _ledger_module().Ledger(args.ledger, create=False, witness=args.witness,
                                         key_file=args.key_file).verify()
    if args.json:
        print_json(report)
        return 0
    anchor = (f"; matches its witness {report['witness']}"
              f"{' (authenticated)' if report['keyed'] else ' (no key: not authenticated)'}"
              if report["anchored"] else "")
    print(f"ledger {report['ledger']}: verified, {report['datasets']} dataset(s), "
          f"{report['releases']} release(s); every record matches its hash chain{anchor}")
    for name, count in sorted(report["ahead"].items()):
        print(f"  dataset {name}: ahead of the witness by {count} release(s) (a charge "
              f"committed before its witness line, e.g. a crash); re-anchored")
    if report["warning"]:
        warn(f"privloss: warning: {report['warning']}")
    return 0


def run_postgres_grants(args) -> int:
    from privloss.budget._postgres import service_role_sql
    try:
        print(service_role_sql(args.role), end="")
    except ValueError as error:
        raise CommandError(f"--role: {error}") from error
    return 0


def run_history(args) -> int:
    with ledger_errors():
        rows = _ledger_module().Ledger(args.ledger, create=False).history(args.dataset)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"dataset {args.dataset}: no releases")
        return 0
    for row in rows:
        kinds = ", ".join(_describe(event) for event in row["events"])
        status = "" if row.get("status", "done") == "done" else \
            f"  [{row['status']}: charged, no answer]"
        plan = f"  plan item #{row['plan_item']}" if row.get("plan_item") else ""
        print(f"#{row['id']}  {row['time']}  spent after: epsilon = "
              f"{_format(row['spent_epsilon'])} ({row['bound']}){plan}{status}")
        print(f"    query:  {row['query_key']}")
        print(f"    events: {kinds}")
    return 0


def _describe(event: dict) -> str:
    if event["type"] == "Composed":
        return "Composed(" + ", ".join(_describe(child) for child in event["events"]) + ")"
    fields = ", ".join(f"{key}={value!r}" for key, value in event.items() if key != "type")
    return f"{event['type']}({fields})"
