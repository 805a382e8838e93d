"""Analyst tokens: created once, stored only as argon2id hashes.

Definition
----------
A token is ``plk_<id>_<secret>``: ``id`` (12 hex digits) names the entry in
the token file, ``secret`` is 32 random bytes (``secrets.token_urlsafe``).
The token file (JSON, mode 0600, written atomically) maps each analyst to
``{"id", "hash", "created"}``; the hash is argon2id (argon2-cffi's
``PasswordHasher`` defaults, salted).  :meth:`TokenStore.verify` looks the
entry up by ``id`` and checks the whole token with argon2's verification
(constant time in the token); an unknown ``id`` is checked against a dummy
hash, so a wrong id costs the same as a wrong secret.  A verified token is
remembered by its SHA-256 (never the token itself) so that a session does not
pay argon2 on every request; the memory is dropped when the file changes
(a token re-issued by ``add-analyst`` revokes the old one).

Privacy guarantee
-----------------
None (authentication).  The service never stores or logs a token.

Runtime
-------
One argon2id verification (tens of milliseconds) per new token and process,
then one SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["TokenStore", "new_token", "add_analyst", "token_id_of", "TOKEN_PREFIX"]

TOKEN_PREFIX = "plk"
_FORMAT = "privloss-tokens-1"
#: longest Authorization value looked at (longer: refused without hashing)
MAX_TOKEN_LENGTH = 200


def _hasher():
    from argon2 import PasswordHasher
    return PasswordHasher()


def new_token() -> tuple[str, str]:
    """``(id, token)``: a fresh random token and its id."""
    token_id = secrets.token_hex(6)
    return token_id, f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"


def _read(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"format": _FORMAT, "analysts": {}}
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != _FORMAT \
            or not isinstance(data.get("analysts"), dict):
        raise ValueError(f"{path}: not a privloss token file")
    return data


def add_analyst(path, name: str, *, hasher=None) -> str:
    """Create (or replace: the old token stops working) ``name``'s token, store
    its argon2id hash in the token file at ``path`` and return the token (shown
    once; it cannot be recovered from the file).  ``hasher``: an argon2
    ``PasswordHasher`` (default: argon2-cffi's defaults; tests pass cheap ones)."""
    path = Path(path)
    data = _read(path)
    token_id, token = new_token()
    hasher = _hasher() if hasher is None else hasher
    data["analysts"][name] = {"id": token_id, "hash": hasher.hash(token),
                              "created": datetime.now(timezone.utc).isoformat()}
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return token


def token_id_of(token) -> str | None:
    """The id part of a well-formed token, else None."""
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
        return None
    parts = token.split("_", 2)
    return parts[1] if len(parts) == 3 and parts[0] == TOKEN_PREFIX and parts[1] else None


class TokenStore:
    """Verifies tokens against the token file (re-read when it changes)."""

    def __init__(self, path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp = None
        self._by_id: dict = {}
        self._verified: dict = {}
        self._hasher = _hasher()
        self._dummy = None
        self._reload()

    def _reload(self) -> None:
        try:
            status = os.stat(self.path)
            stamp = (status.st_mtime_ns, status.st_size, status.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp:
            return
        data = _read(self.path) if stamp is not None else {"analysts": {}}
        self._by_id = {entry["id"]: (name, entry["hash"])
                       for name, entry in data["analysts"].items()}
        self._verified = {}
        self._stamp = stamp
        # a hash of nothing anyone holds, with the stored hashes' cost: an
        # unknown id costs the same verification as a wrong secret
        from argon2 import PasswordHasher, extract_parameters
        sample = next(iter(self._by_id.values()), (None, None))[1]
        hasher = self._hasher if sample is None else \
            PasswordHasher.from_parameters(extract_parameters(sample))
        self._dummy = hasher.hash(secrets.token_urlsafe(32))

    def analysts(self) -> set:
        with self._lock:
            self._reload()
            return {name for name, _ in self._by_id.values()}

    def known_id(self, token) -> bool:
        """Whether ``token`` names an issued token id (no hashing; ids are not
        secrets: a token is its secret)."""
        token_id = token_id_of(token)
        with self._lock:
            self._reload()
            return token_id is not None and token_id in self._by_id

    def current_id(self, name: str) -> str | None:
        """The id of ``name``'s current token (None: none issued)."""
        with self._lock:
            self._reload()
            for token_id, (holder, _) in self._by_id.items():
                if holder == name:
                    return token_id
        return None

    def remembered(self, token) -> bool:
        """Whether ``token`` was verified before (a dictionary lookup, no hashing):
        the caller may then verify it without leaving the event loop."""
        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
            return False
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            self._reload()
            return digest in self._verified

    def verify(self, token) -> str | None:
        """The analyst holding ``token``, or None (no such token)."""
        from argon2.exceptions import InvalidHashError, VerificationError

        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
            return None
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            self._reload()
            known = self._verified.get(digest)
            entries = self._by_id
        if known is not None:
            return known
        token_id = token_id_of(token) or ""
        name, hashed = entries.get(token_id, (None, self._dummy))
        try:
            self._hasher.verify(hashed, token)
        except (VerificationError, InvalidHashError):
            return None
        if name is None:
            return None
        with self._lock:
            if self._by_id is entries:          # not re-issued meanwhile
                self._verified[digest] = name
        return name
