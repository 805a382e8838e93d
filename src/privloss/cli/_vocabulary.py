"""One vocabulary for every command (issue 13, item 6).

* ``--epsilon`` / ``--delta`` are always what *this command* spends; budgets are
  ``--budget-epsilon`` / ``--budget-delta`` (``ledger create``), targets
  ``--target-epsilon`` / ``--target-delta`` (``compose``, ``calibrate``);
* sigma and sigma^2 are named: ``--sigma``, ``--sigma-squared`` (``sample``);
  Python ``discrete_gaussian(sigma_squared=...)``;
* counts are ``-n/--count``, outputs ``-o/--output``; counts accept ``1e6``;
* ``--json`` on every command; every ``--help`` ends with an example.

Old spellings keep working for one release: :class:`DeprecatedFlag` stores the
value under the new name and prints one warning line on stderr.

Table (old -> new): ``ledger create --epsilon/--delta`` -> ``--budget-epsilon/
--budget-delta``; ``compose --epsilon/--delta`` -> ``--target-epsilon/--target-delta``;
``calibrate --delta`` -> ``--target-delta``;
``sample discrete-gaussian --scale`` -> ``--sigma``; ``sample -n`` -> ``-n/--count``;
``tradeoff --points`` -> ``-n/--count``; ``demo --rows`` -> ``-n/--count``;
``topk`` / ``histogram --user-column`` -> ``--privacy-unit``.
"""

from __future__ import annotations

import argparse
import re
import sys
from fractions import Fraction

__all__ = ["count_value", "DeprecatedFlag", "add_deprecated", "EXAMPLES", "add_examples",
           "deprecation_warning"]

_COUNT = re.compile(r"\s*\+?(\d[\d_]*(\.\d*)?|\.\d+)([eE]\+?\d{1,3})?\s*")


def count_value(text: str, what: str = "count", maximum: int | None = None) -> int:
    """A count: a positive integer written as ``1000000``, ``1_000_000`` or
    ``1e6`` (an exact integer value); at most ``maximum``."""
    from privloss.cli._parse import power_text

    allowed = "a positive integer (such as 1000 or 1e6)" if maximum is None else \
        f"an integer in [1, {power_text(maximum)}] (such as 1000 or 1e6)"
    shown = text if len(text) <= 40 else text[:40] + "..."
    if not _COUNT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{what} must be {allowed}, got {shown!r}")
    value = Fraction(text.strip().replace("_", ""))
    if value.denominator != 1 or value < 1 or (maximum is not None and value > maximum):
        raise argparse.ArgumentTypeError(f"{what} must be {allowed}, got {shown!r}")
    return value.numerator


def deprecation_warning(old: str, new: str, where: str = "") -> None:
    """One line on stderr: the old spelling still works for one release."""
    place = f" in `privloss {where}`" if where else ""
    print(f"privloss: warning: {old} is deprecated{place}; use {new} (the old spelling will "
          f"be removed in the next release)", file=sys.stderr)


class DeprecatedFlag(argparse.Action):
    """An old spelling: stores its (converted) value under the new flag's
    ``dest`` and warns once on stderr."""

    def __init__(self, option_strings, dest, new: str = "", where: str = "", **kwargs):
        self.new, self.where = new, where
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        deprecation_warning(option_string, self.new, self.where)
        setattr(namespace, self.dest, values)


def add_deprecated(parser, *old: str, dest: str, new: str, where: str = "", **kwargs) -> None:
    """Add ``old`` spellings (hidden from ``--help``) of the flag ``new``."""
    parser.add_argument(*old, dest=dest, action=DeprecatedFlag, new=new, where=where,
                        help=argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)


#: one example per command (shown at the end of ``--help``)
EXAMPLES = {
    "compose": "privloss compose --dp 0.1x50 --br 0.1x50 --target-delta 1e-6\n"
               "  privloss compose --gaussian 2x100 --target-epsilon 1 --json",
    "calibrate": "privloss calibrate --k 100 --target-epsilon 1 --target-delta 1e-6 --kind br",
    "sample": "privloss sample discrete-gaussian --sigma 3 -n 1e6 -o noise.npy\n"
              "  privloss sample discrete-laplace --scale 10/3 --count 1000 --json",
    "tradeoff": "privloss tradeoff --rr 0.2x25 --gaussian 1 --plot curves.png --json",
    "ledger": "privloss ledger create --ledger budget.sqlite --dataset retail "
              "--budget-epsilon 1 --budget-delta 1e-6\n"
              "  privloss ledger show --ledger budget.sqlite --dataset retail",
    "ledger create": "privloss ledger create --ledger budget.sqlite --dataset retail "
                     "--budget-epsilon 1 --budget-delta 1e-6",
    "ledger show": "privloss ledger show --ledger budget.sqlite --dataset retail --json",
    "ledger history": "privloss ledger history --ledger budget.sqlite --dataset retail",
    "ledger verify": "privloss ledger verify --ledger budget.sqlite",
    "histogram": "privloss histogram orders.csv --privacy-unit customer --item-column product "
                 "--epsilon 0.5 --l0 10 --domain products.txt --dry-run",
    "topk": "privloss topk orders.csv --privacy-unit customer --item-column product --k 10 "
            "--epsilon 0.5 --delta 1e-7 --l0 50 --d-bar 100 --ledger budget.sqlite "
            "--dataset retail --dry-run\n"
            "  (then the same with --epsilon max to spend the rest of the budget)",
    "demo": "privloss demo -n 1e5 --seed 1",
    "reproduce": "privloss reproduce --list\n  privloss reproduce cr-fig6 --quick --json",
}


def add_examples(subparsers) -> None:
    """Give every declared command parser (and ``ledger``'s actions) an
    ``Example:`` epilog from :data:`EXAMPLES`, unless it has one."""
    for name, parser in list(subparsers.choices.items()):
        _set_example(parser, name)
        for action in parser._actions:            # ledger create / show / ...
            if isinstance(action, argparse._SubParsersAction):
                for inner, child in action.choices.items():
                    _set_example(child, f"{name} {inner}")


def _set_example(parser, key: str) -> None:
    if key in EXAMPLES and not parser.epilog and parser.add_help:
        parser.epilog = "example:\n  " + EXAMPLES[key]
        parser.formatter_class = _ExampleFormatter


class _ExampleFormatter(argparse.HelpFormatter):
    """Keeps the example's line breaks (the rest is wrapped as usual)."""

    def _fill_text(self, text, width, indent):
        if text.startswith("example:"):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)
