"""Anchoring a ledger outside itself: a witness file of authenticated chain heads.

Definition
----------
A hash chain (:mod:`._integrity`) shows that the records present agree with
each other; it cannot show that records are *missing*: delete the newest
releases and point the head back, delete a whole dataset, or restore an older
copy, and what remains is a consistent, shorter chain. An *anchor* adds what
the ledger cannot hold itself:

* the **witness**: an append-only file of JSON lines outside the database.
  The first line names the ledger (a random ``ledger_id`` kept in its ``meta``
  table) and the key's id; every later line records one dataset's head and
  release count ``{"dataset", "releases", "head", "mac"}``, appended after the
  charging transaction commits (and when a dataset is created);
* the **key** (optional, recommended): HMAC-SHA256 over each line, with a key
  of at least 32 bytes held outside the database, from a file readable by its
  owner only (mode 0600; a group- or world-readable file is refused) or the
  environment variable ``PRIVLOSS_LEDGER_KEY``. Without the key nobody can
  write a line the ledger will accept.

:meth:`Anchor.check` compares the ledger with the witness, per dataset, using
the newest (largest) count the witness holds: a dataset the witness knows
must exist, hold at least that many releases, and its chain at that count
must equal the recorded head. Fewer releases ("behind"), a missing dataset or
a different head raise :class:`LedgerIntegrityError` naming what was found.
More releases ("ahead": a crash between the commit and the witness line, or a
process that charged without the witness) are re-anchored: a line is appended.

Privacy guarantee
-----------------
Soundness rests on ordering: a witness line is written only after its
charging transaction is durable, so a crash leaves the ledger ahead of the
witness, never behind. Rollback, suffix deletion and dataset or file deletion
are detected by whoever reads the ledger with an intact witness; a forged or
rewritten line is detected by whoever holds the key. Not detected: the ledger
and the witness rolled back together (keep the witness where the ledger's
writer cannot truncate it: ``chattr +a``, another user, another host), and
changes to releases made after the last witnessed line by someone who can
recompute the chain (they are ahead of the anchor). docs/ledger.md,
"Anchoring", says who must hold what.

Citation
--------
HMAC (RFC 2104, FIPS 198-1) with SHA-256; hash chains with a published head
(Haber and Stornetta 1991; the "signed tree head" of Certificate Transparency,
RFC 6962, plays the witness's part).

Runtime
-------
One ``write`` of about 200 bytes per charging transaction and dataset (the
newest head of the transaction's charges; no fsync: a lost line only leaves
the ledger ahead). Opening reads the whole witness once (JSON lines)
and checks one HMAC per dataset.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat

from ._errors import LedgerError
from ._integrity import LedgerIntegrityError

__all__ = ["Anchor", "load_key", "create_key_file", "default_anchor", "KEY_ENVIRONMENT",
           "MIN_KEY_BYTES", "WitnessState"]

#: environment variable holding the key (hex or text; at least MIN_KEY_BYTES bytes)
KEY_ENVIRONMENT = "PRIVLOSS_LEDGER_KEY"
MIN_KEY_BYTES = 32
_FORMAT = "privloss-ledger-witness-v1"


def _key_bytes(text: bytes, where: str) -> bytes:
    key = text.strip()
    if len(key) < MIN_KEY_BYTES:
        raise LedgerError(f"the ledger key from {where} is {len(key)} bytes; at least "
                          f"{MIN_KEY_BYTES} are required (e.g. 64 hex digits)")
    return key


def load_key(key_file=None, *, environ=None) -> tuple[bytes, str] | None:
    """The key and where it came from: ``key_file`` (refused unless a regular
    file readable by its owner only), else ``$PRIVLOSS_LEDGER_KEY``, else None."""
    environ = os.environ if environ is None else environ
    if key_file is not None:
        path = os.path.abspath(os.fspath(key_file))
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as error:
            raise LedgerError(f"cannot read the ledger key file {path}: "
                              f"{error.strerror}") from None
        with os.fdopen(descriptor, "rb") as handle:
            status = os.fstat(handle.fileno())
            if not stat.S_ISREG(status.st_mode):
                raise LedgerError(f"the ledger key file {path} is not a regular file")
            if status.st_mode & 0o077:
                raise LedgerError(f"refusing the ledger key file {path}: mode "
                                  f"{stat.S_IMODE(status.st_mode):04o} lets others read it; "
                                  f"chmod 600 {path}")
            return _key_bytes(handle.read(4096), path), f"file:{path}"
    text = environ.get(KEY_ENVIRONMENT)
    if text:
        return _key_bytes(text.encode("utf-8"), f"${KEY_ENVIRONMENT}"), "environment"
    return None


def create_key_file(path) -> str:
    """Write a new random key (64 hex digits) to ``path`` with mode 0600; the
    file must not exist. Returns the absolute path."""
    path = os.path.abspath(os.fspath(path))
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise LedgerError(f"ledger key file {path} already exists") from None
    except OSError as error:
        raise LedgerError(f"cannot create the ledger key file {path}: "
                          f"{error.strerror}") from None
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secrets.token_hex(32) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return path


def default_anchor(location: str, *, beside=None) -> dict:
    """The default anchor of the CLI and the service: ``{"witness", "key_file",
    "created_key"}``. A file ledger's witness is ``LEDGER.witness``; a PostgreSQL
    ledger's is ``BESIDE.witness`` (None without ``beside``: not anchored). The
    key is ``$PRIVLOSS_LEDGER_KEY`` when set (``key_file`` None), else the file
    ``LEDGER.key`` / ``BESIDE.key``, created (mode 0600) for a ledger whose
    witness does not exist yet; otherwise the key recorded in the ledger is used."""
    is_url = location.startswith(("postgresql://", "postgres://"))
    base = os.fspath(beside) if is_url and beside is not None else None if is_url else location
    if base is None:
        return {"witness": None, "key_file": None, "created_key": False}
    witness = base + ".witness"
    if os.environ.get(KEY_ENVIRONMENT):
        return {"witness": witness, "key_file": None, "created_key": False}
    key_file = base + ".key"
    if os.path.exists(key_file):
        return {"witness": witness, "key_file": key_file, "created_key": False}
    if os.path.lexists(witness):
        return {"witness": witness, "key_file": None, "created_key": False}
    create_key_file(key_file)
    return {"witness": witness, "key_file": key_file, "created_key": True}


def key_id(key: bytes | None) -> str | None:
    if key is None:
        return None
    return hmac.new(key, b"privloss-ledger-key-id", hashlib.sha256).hexdigest()[:16]


class WitnessState:
    """What a witness file holds: its header and, per dataset, the newest
    (largest count) entry, with the number of lines read."""

    def __init__(self, ledger_id: str, key_id_: str | None, newest: dict, lines: int):
        self.ledger_id = ledger_id
        self.key_id = key_id_
        self.newest = newest          # dataset -> (releases, head, mac)
        self.lines = lines


class Anchor:
    """A witness file (and optional key) for one ledger (see the module docstring)."""

    def __init__(self, witness, key: tuple[bytes, str] | None):
        self.path = os.path.abspath(os.fspath(witness))
        self._key, self.key_source = (None, None) if key is None else key
        self.key_id = key_id(self._key)

    # ---- lines -----------------------------------------------------------------------
    def _mac(self, values) -> str | None:
        if self._key is None:
            return None
        text = json.dumps([_FORMAT, *values], separators=(",", ":"), ensure_ascii=False)
        return hmac.new(self._key, text.encode("utf-8"), hashlib.sha256).hexdigest()

    def _append(self, record: dict) -> None:
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line.encode("utf-8"))
            finally:
                os.close(descriptor)
        except OSError as error:
            raise LedgerError(f"cannot write the ledger's witness {self.path}: "
                              f"{error.strerror}") from None

    def create(self, ledger_id: str) -> None:
        """Start a new witness file for ``ledger_id`` (it must not exist)."""
        header = {"witness": _FORMAT, "ledger": ledger_id, "key_id": self.key_id,
                  "mac": self._mac(["header", ledger_id, self.key_id])}
        line = json.dumps(header, separators=(",", ":")) + "\n"
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise LedgerError(f"the witness {self.path} already exists; it belongs to "
                              f"another ledger or to this one") from None
        except OSError as error:
            raise LedgerError(f"cannot create the ledger's witness {self.path}: "
                              f"{error.strerror}") from None
        try:
            os.write(descriptor, line.encode("utf-8"))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def record(self, ledger_id: str, dataset: str, releases: int, head: str) -> None:
        """Append one dataset's head and release count (after its commit)."""
        self._append({"dataset": dataset, "releases": releases, "head": head,
                      "mac": self._mac(["head", ledger_id, dataset, releases, head])})

    def exists(self) -> bool:
        return os.path.lexists(self.path)

    def read(self) -> WitnessState:
        """Parse the witness; raise :class:`LedgerIntegrityError` if it is not
        one, or was written with another key, or a newest entry's MAC fails."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            raise LedgerIntegrityError(
                f"the ledger's witness {self.path} is missing; the ledger was anchored to it, "
                f"so deleted or rolled-back records could not be detected without it; "
                f"refusing to use the ledger") from None
        except OSError as error:
            raise LedgerError(f"cannot read the ledger's witness {self.path}: "
                              f"{error.strerror}") from None
        lines = data.split(b"\n")
        # a line cut short by a crash can only be the last one (appends are single writes)
        if lines and lines[-1]:
            lines = lines[:-1]
        lines = [line for line in lines if line]
        if not lines:
            raise LedgerIntegrityError(f"the ledger's witness {self.path} is empty")
        records = []
        for number, line in enumerate(lines, 1):
            try:
                records.append(json.loads(line))
            except ValueError:
                raise LedgerIntegrityError(f"the ledger's witness {self.path} is damaged: "
                                           f"line {number} is not JSON") from None
        header = records[0]
        if not isinstance(header, dict) or header.get("witness") != _FORMAT:
            raise LedgerIntegrityError(f"{self.path} is not a privloss ledger witness")
        ledger_id, recorded_key = header.get("ledger"), header.get("key_id")
        if recorded_key != self.key_id:
            if recorded_key is None:
                raise LedgerIntegrityError(
                    f"the witness {self.path} was written without a key but a key was "
                    f"given; refusing (an unauthenticated witness could be forged)")
            if self.key_id is None:
                raise LedgerError(
                    f"the witness {self.path} is authenticated with a key (id {recorded_key}) "
                    f"and no key was given: pass the key file, or set ${KEY_ENVIRONMENT}")
            raise LedgerIntegrityError(
                f"the witness {self.path} was written with key id {recorded_key}, not with "
                f"the given key (id {self.key_id})")
        if header.get("mac") != self._mac(["header", ledger_id, recorded_key]):
            raise LedgerIntegrityError(f"the witness {self.path}: its header does not match "
                                       f"its MAC (forged or damaged)")
        newest: dict = {}
        for number, record in enumerate(records[1:], 2):
            try:
                name, releases, head = record["dataset"], record["releases"], record["head"]
                mac = record.get("mac")
            except (TypeError, KeyError):
                raise LedgerIntegrityError(f"the ledger's witness {self.path} is damaged: "
                                           f"line {number} is not a head record") from None
            if not isinstance(name, str) or type(releases) is not int or releases < 0 \
                    or not isinstance(head, str):
                raise LedgerIntegrityError(f"the ledger's witness {self.path} is damaged: "
                                           f"line {number} is not a head record")
            known = newest.get(name)
            if known is None or releases > known[0]:
                newest[name] = (releases, head, mac, number)
            elif releases == known[0] and head != known[1]:
                raise LedgerIntegrityError(
                    f"the witness {self.path} records two different heads for dataset "
                    f"{name!r} at {releases} release(s) (lines {known[3]} and {number}): "
                    f"the ledger's history was forked")
        for name, (releases, head, mac, number) in newest.items():
            if mac != self._mac(["head", ledger_id, name, releases, head]):
                raise LedgerIntegrityError(
                    f"the witness {self.path}: line {number} (dataset {name!r}, {releases} "
                    f"release(s)) does not match its MAC (forged or damaged)")
        return WitnessState(ledger_id, recorded_key, newest, len(records))

    def check(self, conn, path: str, ledger_id: str, heads: dict,
              state: WitnessState | None = None) -> dict:
        """Compare the ledger (``heads``: dataset -> (releases, head) as verified in
        the snapshot ``conn`` reads) with the witness. Returns, per dataset, the
        witnessed count (0 for datasets the witness does not know), and raises
        :class:`LedgerIntegrityError` when the ledger is behind, a witnessed dataset
        is missing, or a witnessed head is not in the ledger's chain.

        ``state`` is the witness as read (:meth:`read`) *before* the snapshot
        began. Writers append to the witness after their commit, so a witness read
        first never records more than any later snapshot holds; read inside the
        snapshot instead, a charge committed meanwhile would look like a deletion."""
        if state is None:
            state = self.read()
        if state.ledger_id != ledger_id:
            raise LedgerIntegrityError(
                f"ledger {path} is not the ledger its witness {self.path} records (ledger id "
                f"{ledger_id}, witness for {state.ledger_id}): the ledger was replaced or "
                f"re-created; refusing to use it")
        witnessed = {}
        problems = []
        for name, (releases, head, _, _) in sorted(state.newest.items()):
            witnessed[name] = releases
            if name not in heads:
                problems.append(f"dataset {name!r} is missing (the witness records {releases} "
                                f"release(s))")
                continue
            present = heads[name][0]
            if present < releases:
                problems.append(f"dataset {name!r} has {present} release(s) but its witness "
                                f"records {releases}: behind by {releases - present} "
                                f"(releases deleted or an older copy restored)")
                continue
            if _chain_at(conn, name, releases) != head:
                problems.append(f"dataset {name!r}: the history up to release {releases} is "
                                f"not the one its witness recorded (rewritten)")
        if problems:
            raise LedgerIntegrityError(
                f"ledger {path} does not match its witness {self.path}: "
                + "; ".join(problems) + "; refusing to use it")
        return {name: witnessed.get(name, 0) for name in heads} | witnessed


def _chain_at(conn, name: str, releases: int) -> str | None:
    """The dataset's chain value after ``releases`` releases (its digest at 0),
    read in the snapshot the caller verified."""
    if releases == 0:
        row = conn.execute("SELECT digest FROM datasets WHERE name = ?", (name,)).fetchone()
    else:
        row = conn.execute("SELECT chain FROM releases WHERE dataset = ? ORDER BY id "
                           "LIMIT 1 OFFSET ?", (name, releases - 1)).fetchone()
    return None if row is None else row[0]
