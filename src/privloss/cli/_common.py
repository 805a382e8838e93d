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
               "user_column": "--user-column", "item_column": "--item-column"}
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
    """The bytes of a small input file named by ``flag``: a regular file (opened
    non-blocking and checked with fstat, so a FIFO or a device is refused at once,
    before any read can hang), at most ``max_bytes`` (``size_text`` says how much
    in messages), else :class:`CommandError`."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise CommandError(f"{flag}: cannot read {path!r}: {error.strerror}") from error
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise CommandError(f"{flag}: {path!r} is not a regular file")
        if status.st_size > max_bytes:
            raise CommandError(f"{flag}: {path!r} is larger than {size_text}")
        os.set_blocking(handle.fileno(), True)
        try:
            raw = handle.read(max_bytes + 1)
        except OSError as error:
            raise CommandError(f"{flag}: cannot read {path!r}: {error.strerror}") from error
    if len(raw) > max_bytes:              # grew while we read it
        raise CommandError(f"{flag}: {path!r} is larger than {size_text}")
    return raw
