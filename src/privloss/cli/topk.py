"""``privloss topk``: the k most frequent items, privately."""

from __future__ import annotations

from privloss.cli._parse import positive_int
from privloss.cli._release import add_data_flags, release_and_report

ALGORITHM_NAMES = ["known-laplace", "known-gumbel", "unknown-laplace", "unknown-gumbel",
                   "gauss-ordered", "trunc-gauss"]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "topk", help="private top-k items with counts and 95%% intervals",
        description="Private top-k with per-user contribution bounding inside the engine.")
    add_data_flags(parser)
    parser.add_argument("--k", required=True, type=lambda t: positive_int(t, "k"), metavar="K",
                        help="how many items, a positive integer")
    parser.add_argument("--algorithm", choices=ALGORITHM_NAMES, default=None,
                        help="default: known-gumbel with --domain, unknown-gumbel without")
    parser.set_defaults(handler=run)


def run(args) -> int:
    algorithm = args.algorithm or ("known-gumbel" if args.domain else "unknown-gumbel")
    return release_and_report(args, algorithm=algorithm, k=args.k)
