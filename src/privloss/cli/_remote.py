"""``privloss topk|histogram --server URL --token-file F DATASET ...``: the same
release through a running ``privloss serve`` (:class:`privloss.client.Client`).

With ``--server``, DATA is the server's dataset name, ``--item-column`` the
column to count (one the operator declared) and ``--privacy-unit`` must be the
dataset's privacy unit (checked against the server; the server decides it).
``--ledger``, ``--dataset``, ``--sql``, ``--table``, ``--engine``, ``--seed``
and ``--epsilon max`` belong to local releases and are refused.  Exit status:
0; 2 for bad input or a server error (one line on stderr); 3 when the budget
refuses.
"""

from __future__ import annotations

__all__ = ["add_server_flags", "run_remote"]


def add_server_flags(parser) -> None:
    parser.add_argument("--server", metavar="URL", default=None,
                        help="release through a privloss query service (DATA is then its "
                             "dataset name)")
    parser.add_argument("--token-file", metavar="FILE", default=None,
                        help="with --server: file holding your analyst token")


def _token(path: str | None) -> str:
    from privloss.cli._common import CommandError

    if path is None:
        raise CommandError("--server needs --token-file FILE (your analyst token)")
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read(4096).strip()
    except OSError as error:
        raise CommandError(f"--token-file: cannot read {path!r}: {error.strerror}") from None
    if not token:
        raise CommandError(f"--token-file: {path!r} is empty")
    return token


def _refuse_local_flags(args) -> None:
    from privloss.cli._common import CommandError

    local = [flag for flag, given in (
        ("--ledger", getattr(args, "ledger", None) is not None),
        ("--dataset", getattr(args, "dataset", None) is not None),
        ("--sql", getattr(args, "sql", False)), ("--table", bool(getattr(args, "table", []))),
        ("--engine", getattr(args, "engine", "duckdb") != "duckdb"),
        ("--seed", getattr(args, "seed", None) is not None),
        ("--where", getattr(args, "where", None) is not None),
        ("--epsilon max", getattr(args, "epsilon", None) == "max")) if given]
    if local:
        raise CommandError(f"{', '.join(local)}: not with --server (the server holds the data "
                           f"and the budget)")


def run_remote(args, command: str) -> int:
    """The ``--server`` branch of ``privloss topk`` / ``privloss histogram``."""
    from privloss.cli._common import CommandError, print_json
    from privloss.cli._release import read_domain

    _refuse_local_flags(args)
    token = _token(args.token_file)
    parameters = {"column": args.item_column, "epsilon": args.epsilon, "delta": args.delta,
                  "l0": args.l0, "linf": args.linf, "d_bar": args.d_bar,
                  # instead of --epsilon: the server plans it (docs/service.md)
                  "target_half_width": getattr(args, "target_half_width", None),
                  "min_release_users": getattr(args, "min_release_users", None)}
    if getattr(args, "k", None) is not None:
        parameters["k"] = args.k
    domain = read_domain(args.domain)
    if domain is not None:
        parameters["domain"] = list(domain)
    if command == "topk" and getattr(args, "algorithm", None):
        parameters["algorithm"] = args.algorithm
    if command == "histogram" and getattr(args, "noise", None):
        parameters["noise"] = args.noise
    parameters = {key: value for key, value in parameters.items() if value is not None}
    try:
        from privloss.client import BudgetRefused, Client, ServiceRequestError
        import httpx
    except ImportError as error:
        raise CommandError(f"--server needs the 'service' extra: pip install "
                           f"'.[service]' from a privloss checkout (the 'service' extra) ({error})") from None
    try:
        with Client(args.server, token) as client:
            granted = {entry["name"]: entry for entry in client.datasets()}
            if args.data not in granted:
                raise CommandError(f"DATA: dataset {args.data!r} is not granted on "
                                   f"{args.server} (granted: {', '.join(granted) or 'none'})")
            unit = granted[args.data]["privacy_unit"]
            if args.user_column != unit:
                raise CommandError(f"--privacy-unit: the privacy unit of {args.data!r} is "
                                   f"{unit!r}, got {args.user_column!r}")
            if args.dry_run:
                result = client.plan(args.data, command, **parameters)
                if args.json:
                    print_json(result)
                else:
                    verdict = result["verdict"]
                    print(f"dry run on {args.server}: {command} with {result['algorithm']}, "
                          f"epsilon {result['guarantee']['epsilon']:.6g} at delta "
                          f"{result['guarantee']['delta']:g}; "
                          + ("fits" if verdict["fits"] else f"does NOT fit: {verdict['reason']}"))
                return 0
            release = getattr(client, command)(args.data, **parameters)
    except BudgetRefused as error:
        raise CommandError(error.message, exit_code=3) from None
    except ServiceRequestError as error:
        raise CommandError(f"server: {error}") from None
    except httpx.HTTPError as error:
        raise CommandError(f"--server: cannot reach {args.server}: {error}") from None
    except ValueError as error:
        raise CommandError(str(error)) from None
    receipt = release.parameters.get("receipt", {})
    if args.json:
        print_json({"items": release.rows(), "algorithm": release.algorithm,
                    "events": [repr(event) for event in release.events],
                    "receipt": receipt, "spent": release.spent})
        return 0
    print(f"{release.algorithm}: {len(release.items)} item(s) from {args.server}, bounded "
          f"counts with 95% intervals")
    for row in release.rows():
        print(f"  {row['item']!s:<24}  {row['count']!s:>10}  [{row['ci95'][0]}, "
              f"{row['ci95'][1]}]")
    mine = release.spent.get("mine") or {}
    print(f"receipt: release #{receipt.get('release_id')}"
          + (" (stored answer, no extra cost)" if receipt.get("cached") else "")
          + f"; my epsilon spent {mine.get('spent_epsilon', float('nan')):.6g} of "
            f"{mine.get('budget_epsilon', float('nan')):g}")
    return 0
