"""``privloss histogram``: a private histogram with per-user contribution bounding."""

from __future__ import annotations

from privloss.cli._release import add_data_flags, release_and_report


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "histogram", help="private histogram of items (counts with 95%% intervals)",
        description="Count items per user-bounded contribution and release noisy counts. "
                    "With --domain every listed item gets a count (known domain); without it "
                    "only items above a noisy threshold are released (unknown domain).")
    add_data_flags(parser)
    parser.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace",
                        help="laplace: known-laplace / unknown-laplace; gaussian: known-gaussian "
                             "/ trunc-gauss (default laplace)")
    parser.set_defaults(handler=run)


def algorithm_for(noise: str, known_domain: bool) -> str:
    from privloss.api.request import histogram_algorithm
    return histogram_algorithm(noise, known_domain)


def run(args) -> int:
    return release_and_report(args, command="histogram", noise=args.noise)
