"""Helpers shared by the command modules: errors and argument parsing."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys

#: library parameter names in error messages -> the flags a CLI user types
_FLAG_NAMES = {"d_bar": "--d-bar", "l0_sensitivity": "--l0", "linf_sensitivity": "--linf",
               "user_column": "--privacy-unit", "item_column": "--item-column",
               "privacy_unit": "--privacy-unit", "min_release_users": "--min-release-users",
               "target_half_width": "--target-half-width", "max_groups": "--max-groups",
               "max_rows_per_group": "--max-rows-per-group"}
_IDENTIFIER = re.compile(r"\b(" + "|".join(_FLAG_NAMES) + r")\b")
#: plain words are flags only as the subject of a range check ("k must be ...")
_SUBJECT = re.compile(r"(^|; |: )(k|epsilon|delta|domain|l0|linf|seed)(?= must)")
#: a flag already named in a message
_ANY_FLAG = re.compile(r"(^|[\s(`'\"])--?[a-z]")
#: the flag a message is about when it names none (first match wins)
_TOPICS = ((re.compile(r"\bdataset\b"), "--dataset"), (re.compile(r"\bledger\b"), "--ledger"))


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


def flag_names(message: str) -> str:
    """'d_bar must be ...' -> '--d-bar must be ...' (only names used as a subject); a
    message about a dataset or a ledger file that names no flag gets the flag as a
    prefix ('no ledger file at X' -> '--ledger: no ledger file at X')."""
    message = _IDENTIFIER.sub(lambda match: _FLAG_NAMES[match.group(1)], message)
    message = _SUBJECT.sub(lambda match: match.group(1) + "--" + match.group(2), message)
    message = message.replace("a SqlQuery ... WHERE", "--sql and WHERE").replace(
        "create_dataset / `privloss ledger create`", "`privloss ledger create`")
    if not _ANY_FLAG.search(message):
        for topic, flag in _TOPICS:
            if topic.search(message):
                return f"{flag}: {message}"
    return message


def read_regular_file(path: str, flag: str, max_bytes: int, size_text: str) -> bytes:
    """:func:`privloss._files.read_regular_file`, its refusal a :class:`CommandError`."""
    from privloss._files import InputFileError, read_regular_file as read

    try:
        return read(path, flag, max_bytes, size_text)
    except InputFileError as error:
        raise CommandError(str(error)) from error
