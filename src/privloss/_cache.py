"""A per-user cache of small JSON values keyed by public parameters.

Where: ``$PRIVLOSS_CACHE_DIR`` when set (``off``, ``none``, ``0`` or the empty
string turn the cache off), else ``$XDG_CACHE_HOME/privloss`` (an absolute
``XDG_CACHE_HOME`` only, as the XDG base-directory specification says), else
``~/.cache/privloss``.  One file per entry, ``<namespace>/<sha256 of the key>.json``,
holding the key itself and the value; a file whose key differs from the one
asked for (a collision, an edit) is a miss.

What may be stored: only values computed from public parameters (never from
data), whose use is re-checked by the caller: the cache is a hint, a forged or
corrupted entry must cost at most the recomputation (``releases.algorithms.
_calibrate`` re-checks every cached calibration with the full accountant).

Failure: a read that fails for any file-system or parsing reason is a miss; a
write goes to a temporary file in the same folder and is moved into place with
``os.replace`` (readers see the old entry or the new one, never half of one),
and a failed write (read-only home, full disk, a file where the folder should
be) is skipped silently: the cache never fails the caller.

Keys also carry :func:`code_fingerprint`, so an entry written by other code
(another version, an edited checkout) is never read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

__all__ = ["cache_directory", "code_fingerprint", "read_entry", "write_entry",
           "ENVIRONMENT_VARIABLE"]

#: the variable naming the cache folder (or turning the cache off)
ENVIRONMENT_VARIABLE = "PRIVLOSS_CACHE_DIR"
#: values of ``PRIVLOSS_CACHE_DIR`` that turn the cache off (case-insensitive)
OFF_VALUES = frozenset({"", "off", "none", "0", "false", "no"})
#: an entry is a few hundred bytes; anything much larger is not ours
MAX_ENTRY_BYTES = 64 * 1024


def cache_directory() -> Path | None:
    """The cache folder for this process's environment, or None when turned off
    (or when no home folder can be found)."""
    configured = os.environ.get(ENVIRONMENT_VARIABLE)
    if configured is not None:
        if configured.strip().lower() in OFF_VALUES:
            return None
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "privloss"
    home = os.path.expanduser("~")
    if home == "~" or not os.path.isabs(home):     # no HOME, no passwd entry
        return None
    return Path(home) / ".cache" / "privloss"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The name, size and modification time of every source file of the
    installed ``privloss`` package, hashed: changes when the code that
    computed an entry may have changed, a new version included (its
    ``__init__.py`` is rewritten); a stat per file, no file is read."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if name != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            try:
                status = os.stat(path)
            except OSError:
                continue
            digest.update(f"{os.path.relpath(path, root)}\0{status.st_size}\0"
                          f"{status.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _canonical(key: dict) -> str | None:
    """The key as canonical JSON, or None when it holds something JSON cannot
    spell exactly (then nothing is cached)."""
    try:
        return json.dumps(key, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _located(namespace: str, key: dict) -> tuple[str, Path] | None:
    """(the key's canonical JSON, its entry's path), or None when the cache is
    off or the key cannot be spelled exactly."""
    canonical = _canonical(key)
    folder = cache_directory()
    if canonical is None or folder is None:
        return None
    name = hashlib.sha256(canonical.encode()).hexdigest()
    return canonical, folder / namespace / f"{name}.json"


def read_entry(namespace: str, key: dict):
    """The value stored under ``key``, or None (off, absent, unreadable, not
    ours, or written for another key)."""
    located = _located(namespace, key)
    if located is None:
        return None
    canonical, path = located
    from privloss._files import InputFileError, read_regular_file

    try:        # a regular file only: a FIFO put in its place cannot hang the read
        raw = read_regular_file(str(path), "cache", MAX_ENTRY_BYTES, "an entry")
    except InputFileError:      # absent, unreadable, not a regular file, too large
        return None
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):    # bad JSON, bad UTF-8, or nested too deep
        return None
    if not isinstance(entry, dict) or _canonical(entry.get("key")) != canonical:
        return None
    return entry.get("value")


def write_entry(namespace: str, key: dict, value) -> bool:
    """Store ``value`` under ``key`` atomically; False when the cache is off or
    the write failed (never raises for the file system)."""
    located = _located(namespace, key)
    if located is None:
        return False
    _, path = located
    try:
        text = json.dumps({"key": key, "value": value}, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return False
    import tempfile         # only a write needs it

    temporary = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".entry-", suffix=".tmp",
                                                 dir=path.parent)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
        temporary = None
        return True
    except OSError:
        return False
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
