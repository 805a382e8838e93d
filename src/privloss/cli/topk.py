"""``privloss topk``: the k most frequent items, privately."""

from __future__ import annotations

from privloss.cli._vocabulary import count_value
from privloss.cli._release import add_data_flags, release_and_report

#: --algorithm choices (privloss.api.request.TOPK_ALGORITHMS, kept here so that
#: ``privloss topk --help`` does not import the analytics package)
ALGORITHM_NAMES = ["known-laplace", "known-gumbel", "unknown-laplace", "unknown-gumbel",
                   "gauss-ordered", "trunc-gauss"]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "topk", help="private top-k items with counts and 95%% intervals",
        description="Private top-k with per-user contribution bounding inside the engine.")
    add_data_flags(parser)
    parser.add_argument("--k", required=True, type=lambda t: count_value(t, "k"), metavar="K",
                        help="how many items, 1 to 10,000")
    parser.add_argument("--algorithm", choices=ALGORITHM_NAMES, default=None,
                        help="default: known-gumbel with --domain, unknown-gumbel without")
    from privloss.cli._remote import add_server_flags
    add_server_flags(parser)          # --server URL --token-file F (privloss serve)
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.server is not None:       # through a query service (privloss.cli._remote)
        from privloss.cli._remote import run_remote
        return run_remote(args, "topk")
    # default: known-gumbel with --domain, unknown-gumbel without (make_request decides)
    return release_and_report(args, command="topk", k=args.k, algorithm=args.algorithm)
