"""The append-only audit log: one JSON line per request.

Definition
----------
Each line: ``time`` (UTC), ``analyst`` (or null), ``client`` (address),
``method``, ``path``, ``dataset``, ``parameters`` (the public parameters the
analyst sent, as checked), ``status`` (HTTP), ``outcome`` (``released``,
``stored-answer``, ``planned``, ``refused-budget``, ``unauthorized``, ...),
``release_id`` and ``spent`` (the analyst's and the dataset's epsilon after
it).  Released items and counts are never written (they are in the ledger);
neither are tokens.  The file is opened with ``O_APPEND`` and each record is
one ``write`` of one line, flushed, so concurrent processes do not
interleave records.

Privacy guarantee
-----------------
The log holds only public parameters and budget figures, never data values.

Runtime
-------
One ``write`` per request.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime, timezone

__all__ = ["AuditLog"]

#: longest string value kept in a record (a hostile parameter is cut, not stored whole)
MAX_TEXT = 200


def _bounded(value, depth: int = 0):
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "..."
    if depth > 4:
        return "..."
    if isinstance(value, dict):
        return {str(key)[:MAX_TEXT]: _bounded(item, depth + 1)
                for key, item in list(value.items())[:50]}
    if isinstance(value, (list, tuple)):
        items = [_bounded(item, depth + 1) for item in list(value)[:50]]
        return items + (["..."] if len(value) > 50 else [])
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return str(value)[:MAX_TEXT]


class AuditLog:
    def __init__(self, path):
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, **record) -> None:
        record = {"time": datetime.now(timezone.utc).isoformat(), **_bounded(record)}
        line = (json.dumps(record, sort_keys=True, default=str, allow_nan=True) + "\n")
        with self._lock:
            os.write(self._descriptor, line.encode("utf-8", "backslashreplace"))

    def close(self) -> None:
        with self._lock:
            if self._descriptor >= 0:
                os.close(self._descriptor)
                self._descriptor = -1
