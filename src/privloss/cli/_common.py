"""Helpers shared by the command modules: errors and argument parsing."""

from __future__ import annotations

import json
import math
import sys


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status ``exit_code``."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


def print_json(payload) -> None:
    """Print one JSON object; non-finite floats become null (valid JSON)."""
    print(json.dumps(_finite(payload), indent=2, sort_keys=False))


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def warn(message: str) -> None:
    print(message, file=sys.stderr)
