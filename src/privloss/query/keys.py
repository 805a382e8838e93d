"""Known group keys: public labels released complete (empty groups included).

Definition
----------
``keys`` is a sequence of labels for one ``by`` column (strings or integers),
or of tuples with one label per ``by`` column.  Labels are matched with the
data by their text (``str``), as :mod:`privloss.query.histogram` does for
domains.  A keys file is a CSV file with a header row naming the ``by``
columns (one key per row).

Privacy guarantee
-----------------
The keys are public parameters: they must not come from the private data.

Citation
--------
Wilson et al., PoPETs 2020 (public partitions).

Runtime
-------
O(number of keys).
"""

from __future__ import annotations

import csv
import numbers
from pathlib import Path

__all__ = ["check_keys", "key_text", "read_keys_file"]


def key_text(key) -> tuple:
    return tuple(str(value) for value in key)


def check_keys(keys, by: tuple):
    """None, or a list of distinct key tuples of length ``len(by)``."""
    if keys is None:
        return None
    if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
        raise TypeError(f"keys must be a sequence of group labels, got {type(keys).__name__}")
    out, seen = [], set()
    for key in keys:
        key = (key,) if len(by) == 1 and not isinstance(key, tuple) else tuple(key)
        if len(key) != len(by):
            raise ValueError(f"each key must have {len(by)} value(s) (one per by column "
                             f"{list(by)}), got {key!r}")
        for value in key:
            if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
                raise TypeError(f"key values must be strings or integers, got {value!r}")
        text = key_text(key)
        if text in seen:
            raise ValueError(f"keys contain {key!r} more than once")
        seen.add(text)
        out.append(key)
    if not out:
        raise ValueError("keys must contain at least one key, got an empty sequence")
    return out


def read_keys_file(path, by: tuple) -> list:
    """Keys from a CSV file whose header names the by columns."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or [name.strip() for name in header] != list(by):
            raise ValueError(f"keys file {str(path)!r} must start with the header "
                             f"{','.join(by)!r}, got {header!r}")
        return check_keys([tuple(row) for row in reader if row], by)
