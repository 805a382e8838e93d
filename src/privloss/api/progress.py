"""One status line on stderr while a release reads, bounds and releases
(moved out of :mod:`privloss.api.protocol`, which re-exports it)."""

from __future__ import annotations

import sys

__all__ = ["Progress"]


class Progress:
    """One status line on stderr (Rich) while reading, bounding and releasing;
    silent when ``enabled`` is False, stderr is not a terminal, or Rich is
    missing.  ``None`` means: on if stderr is a terminal."""

    def __init__(self, enabled: bool | None = None):
        self._status = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if not enabled:
            return
        try:
            from rich.console import Console
        except ImportError:
            return
        self._status = Console(stderr=True).status("privloss: starting")

    def __enter__(self) -> "Progress":
        if self._status is not None:
            self._status.start()
        return self

    def step(self, text: str) -> None:
        if self._status is not None:
            self._status.update(f"privloss: {text}")

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self._status.stop()
