"""``privloss compose``: total privacy loss of a mix of mechanisms.

Ranges (checked before any work; see ``privloss.cli._parse``): every K in
[1, 10^6] and at most 10^6 mechanisms in total; per-mechanism epsilons (--dp,
--br, --rr, --approx-dp, and sensitivity / scale of --laplace) in [0, 1000];
for --gaussian, sensitivity / sigma in [1e-100, 1e5]; rho >= 0; --target-delta
in [0, 1); --target-epsilon >= 0. The accountant is imported only when the command
runs.
"""

from __future__ import annotations

import argparse
import math

from privloss.cli._common import CommandError, print_json
from privloss.cli._parse import (GAUSSIAN_RATIO, MAX_EPSILON, MAX_MECHANISMS, OrderedAppend,
                                 check_total,
                                 delta_value, epsilon_value, nonnegative, positive, split_repeat)
from privloss.events import (ApproxDP, BoundedRange, Gaussian, Interaction, Laplace, PureDP,
                             RandomizedResponse, ZCDP)

MECHANISM_FLAGS = "--dp, --br, --zcdp, --approx-dp, --laplace, --gaussian or --rr"


#: one homogeneous --dp or --approx-dp flag: Theorem 1 over O(sqrt k) terms answers
#: up to this many mechanisms (privloss.accounting.accountant.MAX_HOMOGENEOUS)
MAX_HOMOGENEOUS = 10 ** 10


def _epsilon_spec(text: str):
    base, count = split_repeat(text)
    return epsilon_value(base, f"epsilon in {text!r}"), count


def _homogeneous_spec(text: str):
    base, count = split_repeat(text, MAX_HOMOGENEOUS)
    return epsilon_value(base, f"epsilon in {text!r}"), count


def _rho_spec(text: str):
    base, count = split_repeat(text)
    return nonnegative(base, f"rho in {text!r}"), count


def _scale_spec(text: str):
    base, count = split_repeat(text)
    return positive(base, f"scale in {text!r}"), count


def _approx_spec(text: str):
    base, count = split_repeat(text, MAX_HOMOGENEOUS)
    eps_text, sep, delta_text = base.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected EPS:DELTA[xK], got {text!r}")
    return (epsilon_value(eps_text, f"epsilon in {text!r}"),
            delta_value(delta_text, f"delta in {text!r}")), count


def add_mechanism_flags(parser: argparse.ArgumentParser) -> None:
    """The mechanism flags shared by commands that compose events."""
    group = parser.add_argument_group(
        "mechanisms (repeatable, in order of use; 0.1x50 = 50 of 0.1; at most 10^6 in total, "
        "or 10^10 of one --dp / --approx-dp flag alone; each epsilon in [0, 1000]; Gaussian "
        "sensitivity / sigma in [1e-100, 1e5])")
    group.add_argument("--dp", action=OrderedAppend, kind="dp", type=_homogeneous_spec,
                       metavar="EPS[xK]", help="pure epsilon-DP mechanism(s), e.g. Laplace counts")
    group.add_argument("--br", action=OrderedAppend, kind="br", type=_epsilon_spec,
                       metavar="EPS[xK]", help="epsilon-bounded-range mechanism(s), e.g. exponential mechanism")
    group.add_argument("--zcdp", action=OrderedAppend, kind="zcdp", type=_rho_spec,
                       metavar="RHO[xK]", help="rho-zCDP mechanism(s), e.g. Gaussian noise")
    group.add_argument("--approx-dp", action=OrderedAppend, kind="approx-dp", type=_approx_spec,
                       metavar="EPS:DELTA[xK]", help="(epsilon, delta)-DP mechanism(s)")
    group.add_argument("--laplace", action=OrderedAppend, kind="laplace", type=_scale_spec,
                       metavar="SCALE[xK]", help="Laplace mechanism(s) with this noise scale")
    group.add_argument("--gaussian", action=OrderedAppend, kind="gaussian", type=_scale_spec,
                       metavar="SIGMA[xK]", help="Gaussian mechanism(s) with this noise sigma")
    group.add_argument("--rr", action=OrderedAppend, kind="rr", type=_epsilon_spec,
                       metavar="EPS[xK]", help="binary randomized response at epsilon")
    group.add_argument("--sensitivity", type=lambda t: positive(t, "sensitivity"), default=1.0,
                       metavar="S", help="sensitivity of the --laplace (l1) and --gaussian (l2) "
                       "queries (default 1)")


def check_mechanisms(args) -> None:
    """The ranges that involve several flags (the total count, --sensitivity with
    --laplace / --gaussian): a CommandError naming the flags, before any work."""
    mechanisms = args.mechanisms or ()
    used = ", ".join(dict.fromkeys(f"--{kind}" for kind, _ in mechanisms))
    # one homogeneous pure/approximate DP flag: the windowed Theorem 1 (fixed parameters)
    alone = len(mechanisms) == 1 and mechanisms[0][0] in ("dp", "approx-dp") \
        and getattr(args, "interaction", None) != "fully-adaptive"
    try:
        check_total(mechanisms, used, MAX_HOMOGENEOUS if alone else MAX_MECHANISMS)
    except ValueError as error:
        raise CommandError(str(error)) from None
    for kind, (value, _) in args.mechanisms or ():
        if kind == "laplace" and args.sensitivity / value > MAX_EPSILON:
            raise CommandError(f"--laplace {value:g} with --sensitivity {args.sensitivity:g}: "
                               f"epsilon = sensitivity / scale = {args.sensitivity / value:g} "
                               f"must be at most {MAX_EPSILON:g}")
        if kind == "gaussian" and not (GAUSSIAN_RATIO[0] <= args.sensitivity / value
                                       <= GAUSSIAN_RATIO[1]):
            raise CommandError(f"--gaussian {value:g} with --sensitivity {args.sensitivity:g}: "
                               f"sensitivity / sigma = {args.sensitivity / value:g} must be in "
                               f"[{GAUSSIAN_RATIO[0]:g}, {GAUSSIAN_RATIO[1]:g}]")


def events_from_args(args) -> list:
    check_mechanisms(args)
    events = []
    for kind, (value, count) in args.mechanisms or ():
        if kind == "dp":
            events.append(PureDP(value, count=count))
        elif kind == "br":
            events.append(BoundedRange(value, count=count))
        elif kind == "zcdp":
            events.append(ZCDP(value, count=count))
        elif kind == "laplace":
            events.append(Laplace(value, sensitivity=args.sensitivity, count=count))
        elif kind == "gaussian":
            events.append(Gaussian(value, sensitivity=args.sensitivity, count=count))
        elif kind == "rr":
            events.append(RandomizedResponse(value, count=count))
        else:
            events.append(ApproxDP(value[0], value[1], count=count))
    return events


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "compose", help="total privacy loss of a mix of mechanisms (tightest valid bound)",
        description="Evaluate every composition bound that applies and report the tightest.")
    add_mechanism_flags(parser)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--target-delta", dest="delta", type=delta_value, metavar="D",
                        help="target delta in [0, 1): report the epsilon")
    target.add_argument("--target-epsilon", dest="epsilon",
                        type=lambda t: nonnegative(t, "target-epsilon"), metavar="E",
                        help="target epsilon >= 0: report the delta")
    from privloss.cli._vocabulary import add_deprecated      # old spellings, one more release
    add_deprecated(target, "--delta", dest="delta", new="--target-delta", where="compose",
                   type=delta_value)
    add_deprecated(target, "--epsilon", dest="epsilon", new="--target-epsilon", where="compose",
                   type=lambda t: nonnegative(t, "epsilon"))
    parser.add_argument("--interaction", default=Interaction.ADAPTIVE.value,
                        choices=[member.value for member in Interaction],
                        help="how mechanisms are chosen (default: adaptive, parameters fixed in "
                             "advance; fully-adaptive: parameters chosen from earlier outputs, "
                             "filter rules only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run, mechanisms=[])


def _format(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.10g}"


def print_table(result) -> None:
    measured = "epsilon" if result.target == "delta" else "delta"
    print(f"target {result.target} = {result.target_value:g}; "
          f"{measured} = {_format(result.value)} (bound: {result.bound})")
    if not result.bounds:
        return
    width = max(len(row.name) for row in result.bounds)
    print(f"  {'bound':<{width}}  {measured:>16}  note")
    for row in result.bounds:
        mark = "*" if row.name == result.bound else " "
        note = row.theorem if row.applies else f"n/a: {row.reason}"
        print(f"{mark} {row.name:<{width}}  {_format(row.value):>16}  {note}")


def run(args) -> int:
    if not args.mechanisms:
        raise CommandError(f"give at least one mechanism: {MECHANISM_FLAGS}")
    events = events_from_args(args)
    if sum(event.count for event in events) > MAX_MECHANISMS:
        # one homogeneous flag beyond the arrays' limit (check_mechanisms): compose()
        # answers with the windowed Theorem 1, the exact optimum
        from privloss.accounting import compose
        result = compose(events, target_delta=args.delta, target_epsilon=args.epsilon,
                         interaction=args.interaction)
    else:
        from privloss.accounting import PrivacyAccountant

        accountant = PrivacyAccountant(events, interaction=args.interaction)
        result = accountant.epsilon(args.delta) if args.delta is not None \
            else accountant.delta(args.epsilon)
    if args.json:
        print_json(result.to_dict())
    else:
        print_table(result)
    return 0
