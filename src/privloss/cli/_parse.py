"""argparse types for the CLI: each error names the value and the allowed range
(argparse prefixes the flag name)."""

from __future__ import annotations

import argparse
import math


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


def delta_value(text: str, what: str = "delta") -> float:
    value = _number(text, what)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{what} must be in [0, 1), got {text!r}")
    return value


def positive_int(text: str, what: str = "K") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{what} must be a positive integer, got {text!r}")
    return value


def nonnegative_int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{what} must be an integer >= 0, got {text!r}")
    return value


def split_repeat(text: str) -> tuple[str, int]:
    """'0.1x50' -> ('0.1', 50); '0.1' -> ('0.1', 1)."""
    base, sep, count = text.strip().lower().rpartition("x")
    if not sep:
        return text.strip(), 1
    return base, positive_int(count, f"K in {text!r}")


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
