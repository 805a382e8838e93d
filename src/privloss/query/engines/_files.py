"""The file names an engine may read: :func:`exact_files`.

Definition
----------
:func:`exact_files` gives the file names an engine may read without
expanding glob characters.

Privacy guarantee
-----------------
None (exact aggregates).

Citation
--------
Not applicable.

Runtime
-------
``O(columns)``.
"""

from __future__ import annotations

__all__ = ["exact_files"]


def exact_files(inp):
    """(names, snapshot or None) for a ``FileInput``: its exact file names, or, if
    a name holds glob characters (which DuckDB and Spark would expand), private
    copies under plain names (close the snapshot when done)."""
    from privloss.query.fingerprint import has_glob_characters, snapshot_files

    names = inp.names
    if not any(has_glob_characters(name) for name in names):
        return names, None
    snapshot = snapshot_files(names, keyed=False)
    return snapshot.files, snapshot
