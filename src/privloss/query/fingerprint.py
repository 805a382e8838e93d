"""Keyed fingerprints of the data behind a query, and private snapshots of data files.

Definition
----------
A ledger returns the stored answer of an identical earlier query at no cost,
so its query key must change when the data changes.  The key may be stored and
printed (``ledger history``), so it must not be a statistic of the data (a row
count, a sum of row hashes).  Here the data fingerprint is a keyed MAC:
HMAC-SHA256 under a secret key that is kept outside the ledger and every
output:

* ``PRIVLOSS_FINGERPRINT_KEY`` (hex, at least 16 bytes) if set; else
* the file ``$PRIVLOSS_HOME/fingerprint.key`` (default
  ``~/.config/privloss/fingerprint.key``), 32 bytes from :func:`secrets.token_bytes`
  written as hex with mode 0600 on first use (created atomically: written to a
  private temporary name, then linked into place, so two processes never see a
  half-written key).

:func:`snapshot_files` reads every data file *once*: each block read is both
fed to the MAC and written to a private copy (a fresh ``0700`` temporary
directory), and the engine then reads only the copies, by their exact names
(no glob expansion).  So what is fingerprinted is exactly what is counted; a
file changed afterwards cannot slip in (no time-of-check/time-of-use window).
The engine reads the copies once however many plans use them (the check of
every row before a charge, then the release): ``FileSnapshot.tables``.

Privacy guarantee
-----------------
Without the key a fingerprint is a pseudo-random string (HMAC is a PRF): it
reveals only whether two queries saw identical bytes, which is what the
repeated-query rule needs and what the stored answer already implies.

Citation
--------
RFC 2104 (HMAC); FIPS 180-4 (SHA-256).

Runtime
-------
One sequential read and write of the data files (about 0.1 s per 100 MB on a
local disk).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["KEY_ENVIRONMENT", "fingerprint_key", "key_path", "keyed_mac", "FileSnapshot",
           "snapshot_files", "has_glob_characters"]

#: environment variable holding the key (hex)
KEY_ENVIRONMENT = "PRIVLOSS_FINGERPRINT_KEY"
_KEY_BYTES = 32
_MINIMUM_KEY_BYTES = 16
_BLOCK = 1 << 20
_TAG = b"privloss-fingerprint-v1"
#: characters DuckDB or Spark expand in a path
_GLOB_CHARACTERS = frozenset("*?[]{}")


def key_path() -> Path:
    """Where the key file lives: ``$PRIVLOSS_HOME/fingerprint.key``, default
    ``~/.config/privloss/fingerprint.key``."""
    home = os.environ.get("PRIVLOSS_HOME")
    base = Path(home) if home else Path.home() / ".config" / "privloss"
    return base / "fingerprint.key"


def _parse_key(text: str, where: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise ValueError(f"the fingerprint key in {where} must be hex text") from None
    if len(key) < _MINIMUM_KEY_BYTES:
        raise ValueError(f"the fingerprint key in {where} must have at least "
                         f"{_MINIMUM_KEY_BYTES} bytes, got {len(key)}")
    return key


def _read_key_file(path: Path) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError(f"the fingerprint key {str(path)!r} is not a regular file")
        return _parse_key(handle.read(4096).decode("ascii", "replace"), repr(str(path)))


def fingerprint_key() -> bytes:
    """The secret MAC key (see the module docstring); created on first use."""
    text = os.environ.get(KEY_ENVIRONMENT)
    if text:
        return _parse_key(text, KEY_ENVIRONMENT)
    path = key_path()
    try:
        return _read_key_file(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.parent / f".fingerprint.key.{secrets.token_hex(8)}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES).hex() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)       # atomic: fails if another process won the race
        except FileExistsError:
            pass
    finally:
        temporary.unlink(missing_ok=True)
    return _read_key_file(path)


def _frame(part: bytes) -> bytes:
    return len(part).to_bytes(8, "big") + part


def keyed_mac(*parts: str | bytes) -> str:
    """HMAC-SHA256 (hex) of the length-prefixed ``parts`` under :func:`fingerprint_key`."""
    mac = hmac.new(fingerprint_key(), _TAG, hashlib.sha256)
    for part in parts:
        mac.update(_frame(part.encode("utf-8") if isinstance(part, str) else part))
    return mac.hexdigest()


def has_glob_characters(path) -> bool:
    return any(char in _GLOB_CHARACTERS for char in str(path))


def _loaded_tables():
    from privloss.query.inputs import LoadedTables
    return LoadedTables()


@dataclass
class FileSnapshot:
    """Private copies of data files (``files``, exact names, in a fixed order) and
    the MAC of their bytes (``mac``); ``tables``: what engines load from the
    copies (:class:`~privloss.query.inputs.LoadedTables`: the copies never
    change, so they are read into an engine once however many plans read
    them); :meth:`close` deletes the copies and the loaded tables."""

    files: tuple[str, ...]
    mac: str
    directory: str
    closed: bool = field(default=False)
    tables: object = field(default_factory=_loaded_tables, repr=False, compare=False)

    def close(self) -> None:
        if not self.closed:
            self.tables.close()
            shutil.rmtree(self.directory, ignore_errors=True)
            self.closed = True

    def __enter__(self) -> "FileSnapshot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _copy_and_mac(source: Path, target: Path, mac) -> None:
    """Open ``source`` once (non-blocking, so a FIFO cannot hang), refuse a
    non-regular file, and feed every block read to ``mac`` and to ``target``."""
    descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError(f"data file {str(source)!r} is not a regular file")
        os.set_blocking(handle.fileno(), True)
        size = 0
        with open(target, "xb") as copy:
            for block in iter(lambda: handle.read(_BLOCK), b""):
                mac.update(block)
                copy.write(block)
                size += len(block)
        mac.update(b"\x00end" + size.to_bytes(8, "big"))


def _suffix(path: Path) -> str:
    """The file's format suffixes (``.csv.gz``), so engines detect compression."""
    suffixes = "".join(path.suffixes[-2:]) if path.suffix.lower() == ".gz" else path.suffix
    return "".join(char for char in suffixes if char.isalnum() or char == ".")


def snapshot_files(files, *, root=None, keyed: bool = True) -> FileSnapshot:
    """Copy ``files`` (paths, in the order given) into a private directory while
    computing their keyed MAC; names inside ``root`` (a directory input) enter
    the MAC relative to it.  ``keyed=False``: copies only (``mac`` is empty; no
    key is read or created), for engines that must not expand glob characters
    in a file name.  Raises ``OSError`` for an unreadable file and
    ``ValueError`` for a non-regular one (nothing is left behind)."""
    if keyed:
        mac = hmac.new(fingerprint_key(), _TAG + b"\x00files", hashlib.sha256)
    else:
        mac = hashlib.sha256()
    directory = tempfile.mkdtemp(prefix="privloss-data-")
    copies = []
    try:
        for number, file in enumerate(files):
            file = Path(file)
            name = str(file.relative_to(root)) if root is not None else ""
            mac.update(_frame(name.encode("utf-8", "surrogateescape")))
            target = Path(directory) / f"part-{number:06d}{_suffix(file)}"
            _copy_and_mac(file, target, mac)
            copies.append(str(target))
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return FileSnapshot(tuple(copies), mac.hexdigest() if keyed else "", directory)
