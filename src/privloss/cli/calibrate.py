"""``privloss calibrate``: the largest per-mechanism epsilon (or smallest
Gaussian sigma) meeting a total (epsilon, delta)."""

from __future__ import annotations

from privloss.accounting import calibrate_epsilon, calibrate_gaussian_sigma
from privloss.cli._common import CommandError, print_json
from privloss.cli._parse import delta_value, nonnegative, nonnegative_int, positive_int
from privloss.events import Interaction


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="largest per-mechanism epsilon (or smallest sigma) meeting a target",
        description="Calibrate K mechanisms to a total (epsilon, delta); the answer is re-checked.")
    parser.add_argument("--k", required=True, type=lambda t: positive_int(t, "K"), metavar="K",
                        help="number of mechanisms (a positive integer)")
    parser.add_argument("--target-epsilon", required=True, type=lambda t: nonnegative(t, "target epsilon"),
                        metavar="E", help="total epsilon >= 0")
    parser.add_argument("--delta", required=True, type=delta_value, metavar="D",
                        help="total delta in [0, 1)")
    parser.add_argument("--kind", default="dp", choices=["dp", "br", "gaussian"],
                        help="mechanism class (default dp); gaussian reports sigma")
    parser.add_argument("--num-dp", type=lambda t: nonnegative_int(t, "num-dp"), default=None,
                        metavar="D", help="a mix: D of the K are pure DP, the rest BR")
    parser.add_argument("--sensitivity", type=lambda t: nonnegative(t, "sensitivity"), default=1.0,
                        help="l2 sensitivity for --kind gaussian (default 1)")
    parser.add_argument("--interaction", default=Interaction.ADAPTIVE.value,
                        choices=[member.value for member in Interaction])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.kind == "gaussian":
        if args.delta == 0:
            raise CommandError("--delta must be in (0, 1) for --kind gaussian, got 0")
        if args.sensitivity <= 0:
            raise CommandError(f"--sensitivity must be in (0, inf), got {args.sensitivity!r}")
        sigma = calibrate_gaussian_sigma(args.target_epsilon, args.delta,
                                         sensitivity=args.sensitivity, count=args.k)
        payload = {"k": args.k, "kind": "gaussian", "target_epsilon": args.target_epsilon,
                   "delta": args.delta, "sensitivity": args.sensitivity, "sigma": sigma}
        if args.json:
            print_json(payload)
        else:
            print(f"sigma = {sigma:.10g} for {args.k} Gaussian mechanism(s) with l2 sensitivity "
                  f"{args.sensitivity:g} at total ({args.target_epsilon:g}, {args.delta:g})-DP")
        return 0
    if args.num_dp is not None:
        if args.num_dp > args.k:
            raise CommandError(f"--num-dp must be in [0, K={args.k}], got {args.num_dp}")
        num_dp, num_br, kind = args.num_dp, args.k - args.num_dp, "mixed"
    else:
        kind = args.kind
        num_dp, num_br = (args.k, 0) if kind == "dp" else (0, args.k)
    result = calibrate_epsilon(num_dp, num_br, args.target_epsilon, args.delta,
                               interaction=args.interaction)
    payload = {"k": args.k, "kind": kind, "num_dp": num_dp, "num_br": num_br,
               "target_epsilon": args.target_epsilon, "delta": args.delta,
               "interaction": args.interaction,
               "per_mechanism_epsilon": result.per_mechanism_epsilon,
               "check": {"epsilon": result.check.value, "bound": result.check.bound}}
    if args.json:
        print_json(payload)
    else:
        print(f"per-mechanism epsilon = {result.per_mechanism_epsilon:.10g} "
              f"({num_dp} DP + {num_br} BR, {args.interaction}); re-check: total epsilon = "
              f"{result.check.value:.10g} <= {args.target_epsilon:g} at delta = {args.delta:g} "
              f"(bound {result.check.bound})")
    return 0
