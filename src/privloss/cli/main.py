"""Entry point of the ``privloss`` command.

Every command group lives in its own module exposing ``register(subparsers)``,
which adds a parser and sets ``handler=<function(args) -> int>``. Bad input is
reported as one line on stderr with exit status 2 (argparse's own convention).
"""

from __future__ import annotations

import argparse
import os
import sys

from privloss import __version__
from privloss.cli import (calibrate, compose, demo, histogram, ledger, reproduce, sample, topk,
                          tradeoff)
from privloss.cli._common import CommandError

COMMAND_MODULES = (compose, calibrate, sample, tradeoff, ledger, histogram, topk, demo, reproduce)


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus a message; we print one line and exit 2."""

    def error(self, message: str):  # noqa: D102 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="privloss",
        description="Tight, never-optimistic differential-privacy accounting.",
    )
    parser.add_argument("--version", action="version", version=f"privloss {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=_OneLineParser)
    subparsers.required = True
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except CommandError as error:
        print(f"privloss {args.command}: error: {error}", file=sys.stderr)
        return error.exit_code
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
