"""Reading small input files (plans, domains, key lists) safely.

A path named by a user may be a FIFO or a device that blocks a read forever,
or a file too large to hold: :func:`read_regular_file` refuses both before
reading, with one line naming the flag or field.
"""

from __future__ import annotations

import os
import stat

__all__ = ["InputFileError", "read_regular_file"]


class InputFileError(ValueError):
    """A small input file cannot be used (one line naming the flag and the path)."""


def read_regular_file(path: str, flag: str, max_bytes: int, size_text: str) -> bytes:
    """The bytes of a small input file named by ``flag``: a regular file (opened
    non-blocking and checked with fstat, so a FIFO or a device is refused at once,
    before any read can hang), at most ``max_bytes`` (``size_text`` says how much
    in messages), else :class:`InputFileError`."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise InputFileError(f"{flag}: cannot read {path!r}: {error.strerror}") from error
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise InputFileError(f"{flag}: {path!r} is not a regular file")
        if status.st_size > max_bytes:
            raise InputFileError(f"{flag}: {path!r} is larger than {size_text}")
        os.set_blocking(handle.fileno(), True)
        try:
            raw = handle.read(max_bytes + 1)
        except OSError as error:
            raise InputFileError(f"{flag}: cannot read {path!r}: {error.strerror}") from error
    if len(raw) > max_bytes:              # grew while we read it
        raise InputFileError(f"{flag}: {path!r} is larger than {size_text}")
    return raw
