"""``privloss calibrate``: the largest per-mechanism epsilon (or smallest
Gaussian sigma) meeting a total (epsilon, delta).

Ranges (checked before any work): --k in [1, 50000] (Gaussian: [1, 10^7], a closed
form; non-adaptive DP/BR: [1, ``MAX_K_NON_ADAPTIVE``], whose optimal bounds are
the slowest); each calibration evaluates the accountant a dozen to 40 times, so
these keep a call within a few seconds on a 2-core machine; --target-epsilon >= 0;
--target-delta in [0, 1) (``--delta``, the old spelling, still works for one
release); --num-dp in [0, K].
"""

from __future__ import annotations

from privloss.cli._common import CommandError, print_json
from privloss.cli._parse import delta_value, nonnegative, nonnegative_int, power_text
from privloss.cli._vocabulary import count_value
from privloss.events import Interaction

#: largest --k: each calibration evaluates the accountant about 40 times (3.6 s at
#: 10^5 on an idle 2-core machine, 14 to 20 s when it is shared)
MAX_K = 50_000
#: largest --k for --kind gaussian (one closed form per evaluation)
MAX_K_GAUSSIAN = 10 ** 7
#: largest --k with --interaction non-adaptive (Theorems 2/3 of [CR] in every evaluation)
MAX_K_NON_ADAPTIVE = 1000


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="largest per-mechanism epsilon (or smallest sigma) meeting a target",
        description="Calibrate K mechanisms to a total (epsilon, delta); the answer is re-checked.")
    parser.add_argument("--k", required=True, metavar="K",
                        type=lambda t: count_value(t, "K", MAX_K_GAUSSIAN),   # also 1e3
                        help=f"number of mechanisms, 1 to {power_text(MAX_K)} (Gaussian: "
                             f"{power_text(MAX_K_GAUSSIAN)}; non-adaptive DP/BR: "
                             f"{MAX_K_NON_ADAPTIVE})")
    parser.add_argument("--target-epsilon", required=True, type=lambda t: nonnegative(t, "target epsilon"),
                        metavar="E", help="total epsilon >= 0")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-delta", dest="delta", type=delta_value, metavar="D",
                        help="total delta in [0, 1)")
    from privloss.cli._vocabulary import add_deprecated      # old spelling, one more release
    add_deprecated(target, "--delta", dest="delta", new="--target-delta", where="calibrate",
                   type=delta_value)
    parser.add_argument("--kind", default="dp", choices=["dp", "br", "gaussian"],
                        help="mechanism class (default dp); gaussian reports sigma")
    parser.add_argument("--num-dp", type=lambda t: nonnegative_int(t, "num-dp"), default=None,
                        metavar="D", help="a mix: D of the K are pure DP, the rest BR")
    parser.add_argument("--sensitivity", type=lambda t: nonnegative(t, "sensitivity"), default=1.0,
                        help="l2 sensitivity for --kind gaussian (default 1)")
    parser.add_argument("--interaction", default=Interaction.ADAPTIVE.value,
                        choices=[member.value for member in Interaction],
                        help="adaptive (default), non-adaptive, setwise or fully-adaptive "
                             "(filter rules only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run)


def _check_k(args) -> None:
    if args.kind == "gaussian":
        return
    limit = MAX_K_NON_ADAPTIVE if args.interaction == Interaction.NON_ADAPTIVE.value else MAX_K
    if args.k > limit:
        where = " with --interaction non-adaptive" if limit == MAX_K_NON_ADAPTIVE else ""
        raise CommandError(f"--k must be at most {power_text(limit)} for --kind {args.kind}"
                           f"{where}, got {args.k}")


def run(args) -> int:
    _check_k(args)
    from privloss.accounting import calibrate_epsilon, calibrate_gaussian_sigma

    if args.kind == "gaussian":
        if args.delta == 0:
            raise CommandError("--target-delta must be in (0, 1) for --kind gaussian, got 0")
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
