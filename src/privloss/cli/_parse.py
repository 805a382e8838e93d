"""argparse types for the CLI: each error names the value and the allowed range
(argparse prefixes the flag name).

Documented ranges shared by the commands (checked here, before any work):

* a repeat count K (``0.1x50``) is an integer in [1, ``MAX_MECHANISMS``], and the
  mechanism flags of one command add up to at most ``MAX_MECHANISMS``;
* a per-mechanism epsilon is in [0, ``MAX_EPSILON``]: e^1000 overflows a double, and
  a mechanism with a larger epsilon protects nothing;
* a Gaussian mechanism's sensitivity / sigma is in ``GAUSSIAN_RATIO``.
"""

from __future__ import annotations

import argparse
import math

#: Most mechanisms one command accounts for, all flags together (the accountant's
#: bounds stay within a few seconds up to here on a 2-core machine).
MAX_MECHANISMS = 10 ** 6
#: Largest per-mechanism epsilon accepted (pure DP, bounded range, randomized response).
MAX_EPSILON = 1000.0
#: Allowed sensitivity / sigma of a Gaussian mechanism (beyond it the Gaussian-DP and
#: zCDP forms over- or underflow; 1e5 is already an epsilon of about 5e9).
GAUSSIAN_RATIO = (1e-100, 1e5)


def power_text(value: float) -> str:
    """1000000 -> '10^6' (limits in messages); other values as %g."""
    exponent = round(math.log10(value)) if value > 0 else 0
    return f"10^{exponent}" if value == 10 ** exponent and exponent >= 4 else f"{value:g}"


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}")
    return value


def nonnegative(text: str, what: str = "value") -> float:
    value = _number(text, what)
    if value < 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{what} must be in [0, inf), got {text!r}")
    return value


def positive(text: str, what: str = "value") -> float:
    value = _number(text, what)
    if value <= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{what} must be in (0, inf), got {text!r}")
    return value


def in_range(text: str, what: str, low: float, high: float, *, low_open: bool = False) -> float:
    """A number in [low, high] (``(low, high]`` with ``low_open``)."""
    value = _number(text, what)
    if value < low or (low_open and value == low) or value > high:
        bracket = "(" if low_open else "["
        raise argparse.ArgumentTypeError(
            f"{what} must be in {bracket}{low:g}, {power_text(high)}], got {text!r}")
    return value


def epsilon_value(text: str, what: str = "epsilon") -> float:
    """A per-mechanism epsilon in [0, MAX_EPSILON]."""
    return in_range(text, what, 0.0, MAX_EPSILON)


def delta_value(text: str, what: str = "delta") -> float:
    value = _number(text, what)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{what} must be in [0, 1), got {text!r}")
    return value


def positive_int(text: str, what: str = "K", maximum: int | None = None) -> int:
    """An integer in [1, maximum] (no maximum when None)."""
    allowed = "a positive integer" if maximum is None else \
        f"an integer in [1, {power_text(maximum)}]"
    try:
        value = int(text)
    except ValueError:   # also more than 4300 digits
        raise argparse.ArgumentTypeError(f"{what} must be {allowed}, got {text!r}") from None
    if value < 1 or (maximum is not None and value > maximum):
        raise argparse.ArgumentTypeError(f"{what} must be {allowed}, got {_short(text)!r}")
    return value


def positive_int_or_auto(text: str, flag: str):
    """``--FLAG``: an integer >= 1, or 'auto'; argparse's one line (exit 2)
    otherwise, before anything is read."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text, flag)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"--{flag} must be an integer >= 1 or 'auto', "
                                         f"got {text!r}") from None


def nonnegative_int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{what} must be an integer >= 0, got {text!r}")
    return value


def _short(text: str, limit: int = 40) -> str:
    """Long hostile inputs are cut in messages (one readable line)."""
    return text if len(text) <= limit else text[:limit] + "..."


def split_repeat(text: str, maximum: int = MAX_MECHANISMS) -> tuple[str, int]:
    """'0.1x50' -> ('0.1', 50); '0.1' -> ('0.1', 1); K in [1, maximum]."""
    base, sep, count = text.strip().lower().rpartition("x")
    if not sep:
        return text.strip(), 1
    return base, positive_int(count, f"K in {_short(text)!r}", maximum)


def check_total(mechanisms, flags: str, maximum: int = MAX_MECHANISMS) -> int:
    """The number of mechanisms of ``[(kind, (value, count)), ...]``; at most ``maximum``."""
    total = sum(count for _, (_, count) in mechanisms)
    if total > maximum:
        raise ValueError(f"{flags}: at most {power_text(maximum)} mechanisms in total, "
                         f"got {total}")
    return total


class OrderedAppend(argparse.Action):
    """Append ``(self.dest_kind, parsed value)`` to one shared list, keeping the
    order of flags across different options (the adaptive order of mechanisms)."""

    def __init__(self, option_strings, dest, kind: str, **kwargs):
        self.kind = kind
        super().__init__(option_strings, "mechanisms", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        items = list(getattr(namespace, "mechanisms", None) or [])
        items.append((self.kind, values))
        setattr(namespace, "mechanisms", items)
