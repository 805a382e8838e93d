"""Entry point of the ``privloss`` command.

Every command group lives in its own module exposing ``register(subparsers)``,
which adds a parser and sets ``handler=<function(args) -> int>``. Bad input is
reported as one line on stderr with exit status 2 (argparse's own convention).

Start-up: ``privloss --help`` imports no command module; ``privloss COMMAND ...``
imports only that command's module, and the modules import their heavy
dependencies (NumPy, SciPy, the accountant, the PLD stack) inside their
handlers. The other commands appear in the parser as stubs with their one-line
help (kept equal to the modules' own by ``tests/cli/test_startup.py``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from privloss import __version__
from privloss.cli._common import CommandError

#: command name -> (module, one-line help), in the order of ``privloss --help``
COMMANDS = {
    "compose": ("privloss.cli.compose",
                "total privacy loss of a mix of mechanisms (tightest valid bound)"),
    "calibrate": ("privloss.cli.calibrate",
                  "largest per-mechanism epsilon (or smallest sigma) meeting a target"),
    "sample": ("privloss.cli.sample", "draw exact discrete Gaussian / discrete Laplace noise"),
    "tradeoff": ("privloss.cli.tradeoff",
                 "tradeoff curves (f-DP) of compositions: table, CSV or figure"),
    "ledger": ("privloss.cli.ledger", "durable privacy-budget ledger: create, show, history"),
    "histogram": ("privloss.cli.histogram",
                  "private histogram of items (counts with 95%% intervals)"),
    "topk": ("privloss.cli.topk", "private top-k items with counts and 95%% intervals"),
    "demo": ("privloss.cli.demo", "end-to-end demo: synthetic data, top-k, ledger"),
    "reproduce": ("privloss.cli.reproduce",
                  "recompute the documents' figures and tables and compare"),
    "serve": ("privloss.cli.serve", "run the privacy query service (HTTP API and dashboard)"),
    "aggregate": ("privloss.cli.aggregate", "private group-by: counts, sums, means, quantiles"),
    "sql": ("privloss.cli.sql", "private group-by written as SQL (COUNT, SUM, AVG, quantiles)"),
    "running": ("privloss.cli.running", "private running totals over time with 95%% intervals"),
}


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus a message; we print one line and exit 2."""

    def error(self, message: str):  # noqa: D102 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def _requested_command(argv: list[str]) -> str | None:
    """The command named in ``argv``: the first word that is not an option (the
    top-level parser has only value-less options, --help and --version)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``privloss`` parser with ``command`` fully declared (its module
    imported) and every other command as a stub; ``command="*"`` declares all."""
    parser = _OneLineParser(
        prog="privloss",
        description="Tight, never-optimistic differential-privacy accounting.",
    )
    parser.add_argument("--version", action="version", version=f"privloss {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=_OneLineParser)
    subparsers.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        if command in (name, "*"):
            importlib.import_module(module_name).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    from privloss.cli._vocabulary import add_examples
    add_examples(subparsers)         # every --help ends with an example
    return parser


def missing_extra(error: ImportError) -> str | None:
    """One line naming the extra to install, for a missing third-party module
    (None for anything else: a real bug keeps its traceback)."""
    from privloss._lazy import missing_extra_message

    return missing_extra_message(error)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_requested_command(argv))
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except CommandError as error:
        print(f"privloss {args.command}: error: {error}", file=sys.stderr)
        return error.exit_code
    except ModuleNotFoundError as error:
        line = missing_extra(error)
        if line is None:
            raise
        print(f"privloss {args.command}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
