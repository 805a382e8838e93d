"""The :class:`~privloss.budget.Ledger`'s anchor (:mod:`._anchor`) and its
full audit (``Ledger.verify``, ``privloss ledger verify``).

Definition
----------
:class:`AnchoredLedger` (a mixin of :class:`Ledger`) resolves a ledger's
anchor when it is opened: the witness and key given, else those recorded in
its ``meta`` table when it was anchored (the key's *location*, never the key).
An anchored ledger is checked against its witness on every open; every charge
is appended to the witness after its commit; and every charging transaction
refuses a history shorter than the largest count this process has seen or
the witness recorded (a rollback under a running process).

:meth:`AnchoredLedger.verify` audits everything from the tables themselves:
SQLite's ``PRAGMA integrity_check`` (tables against their indexes, page
structure), every dataset's hash chain re-read column by column from the
table (``NOT INDEXED``; on PostgreSQL with index scans disabled), and the
witness.

Privacy guarantee
-----------------
Charges are refused on a history that is behind what was witnessed, so a
deleted suffix or a restored copy cannot hand spent budget back to anyone who
opens the ledger with its witness. See :mod:`._anchor` for what is not detected.

Runtime
-------
Open: one read of the witness, one HMAC per dataset. ``verify``: one pass
over the file (integrity check) plus one scan of the releases per dataset.
"""

from __future__ import annotations

import json
import os
import secrets

from ._anchor import Anchor, load_key
from ._errors import LedgerError
from ._group import after_commit
from ._integrity import LedgerIntegrityError, verify

__all__ = ["AnchoredLedger", "UNANCHORED_WARNING"]

UNANCHORED_WARNING = ("this ledger has no witness: deleted newest releases, a deleted dataset "
                      "or a restored older copy cannot be detected (a shorter history is "
                      "consistent); anchor it with a witness (docs/ledger.md, 'Anchoring')")


def _read_anchor_meta(conn) -> dict | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'anchor'").fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
        if not isinstance(value, dict) or not isinstance(value.get("ledger_id"), str):
            raise ValueError(row[0])
    except ValueError:
        raise LedgerIntegrityError("the ledger's anchor record (meta 'anchor') is damaged")
    return value


def _witnessed_anything(path: str) -> bool:
    """Whether a witness file exists and records at least one head (more than
    its header line); read without the key: only its length matters here."""
    try:
        with open(path, "rb") as handle:
            return len([line for line in handle.read().split(b"\n") if line.strip()]) > 1
    except FileNotFoundError:
        return os.path.lexists(path)
    except OSError:
        return True


def _appendable(path: str) -> bool:
    return os.access(path, os.W_OK)


class AnchoredLedger:
    """Mixin of :class:`Ledger` (uses ``_file``, ``_verified``, ``_lock``, ``path``)."""

    _anchor: Anchor | None = None
    _ledger_id: str | None = None

    # ---- opening ------------------------------------------------------------------
    def _conventional(self, suffix: str) -> str | None:
        """``LEDGER.witness`` / ``LEDGER.key`` of a file ledger if that file exists
        (where the CLI puts them), so that a ledger whose anchor record was
        removed is still checked against its witness."""
        if hasattr(self._file, "_url"):          # PostgreSQL: no file to stand beside
            return None
        path = self.path + suffix
        return path if os.path.lexists(path) else None

    def _refuse_recreation(self, witness) -> None:
        """Before a new (empty) ledger is created: a witness that exists belongs
        to a ledger that was deleted; recreating it would restore its budgets."""
        witness = self._conventional(".witness") if witness is None else witness
        if witness is not None and _witnessed_anything(os.fspath(witness)):
            raise LedgerIntegrityError(
                f"ledger {self.path} is missing or empty but its witness "
                f"{os.path.abspath(os.fspath(witness))} exists: the ledger was deleted; "
                f"refusing to create a new one (it would give every witnessed budget back)")

    def _resolve_anchor(self, conn, witness, key_file) -> None:
        """Before the opening snapshot: find the anchor (the witness and key
        given, else those the ledger recorded) and read the witness, so that the
        snapshot verified next is at least as new as what the witness records."""
        self._ahead: dict[str, int] = {}
        self._opening = None
        self._opening_arguments = (witness, key_file)
        recorded = _read_anchor_meta(conn)
        if witness is None and recorded is not None:
            witness = recorded.get("witness")
        if witness is None and recorded is None:
            witness = self._conventional(".witness")
            if witness is not None and key_file is None:
                key_file = self._conventional(".key")
        if witness is None:
            if recorded is not None:
                raise LedgerIntegrityError(f"ledger {self.path} is anchored but its anchor "
                                           f"record names no witness")
            return
        if key_file is None and recorded is not None and \
                str(recorded.get("key", "")).startswith("file:"):
            key_file = recorded["key"][len("file:"):]
        anchor = Anchor(witness, load_key(key_file))
        state = anchor.read() if recorded is not None else None
        self._opening = (anchor, recorded, state)

    def _open_anchor(self, conn) -> None:
        """Inside the opening read snapshot, after every dataset was verified:
        check the anchor resolved by :meth:`_resolve_anchor`, or note that an
        unanchored ledger given a witness is to be anchored."""
        opening, self._opening = self._opening, None
        if opening is None and _read_anchor_meta(conn) is not None:
            # anchored by another process between the two reads (rare): resolve
            # again; its witness is then read inside this snapshot, as it was written
            self._resolve_anchor(conn, *self._opening_arguments)
            opening, self._opening = self._opening, None
        if opening is None:
            return
        anchor, recorded, state = opening
        now = _read_anchor_meta(conn)
        if now != recorded:
            if recorded is not None:
                raise LedgerIntegrityError(f"ledger {self.path}: its anchor record changed "
                                           f"while it was opened")
            # anchored by another process between the two reads: its witness lines
            # follow its commit, so read them now (a lag here only looks ahead or
            # behind by that process's own first heads: a spurious refusal, never a hidden deletion)
            recorded, state = now, anchor.read()
        heads = dict(self._opened)      # as verified in this snapshot
        if recorded is None:
            self._pending_anchor = anchor
            return
        self._ledger_id = recorded["ledger_id"]
        witnessed = anchor.check(conn, self.path, self._ledger_id, heads, state)
        for name, releases in witnessed.items():
            self._floor[name] = max(self._floor.get(name, 0), releases)
        self._anchor = anchor
        self._ahead = {name: heads[name][0] - witnessed.get(name, 0) for name in heads
                       if heads[name][0] > witnessed.get(name, 0)}

    def _finish_anchor(self) -> None:
        """After the opening snapshot: anchor a new ledger, or re-anchor datasets
        that were ahead of the witness."""
        pending = getattr(self, "_pending_anchor", None)
        if pending is not None:
            self._pending_anchor = None
            self._anchor_now(pending)
        try:
            for name in sorted(self._ahead):
                self._witness(name, *self._opened[name])
        except LedgerError:
            pass        # a reader that cannot append: the ledger stays ahead, which is safe

    def _anchor_now(self, anchor: Anchor) -> None:
        if anchor.exists():
            state = anchor.read()
            if state.newest:
                raise LedgerIntegrityError(
                    f"the witness {anchor.path} records datasets but ledger {self.path} has "
                    f"no anchor record: the record was removed, or the witness belongs to "
                    f"another (perhaps deleted) ledger; refusing to use it")
            # a header alone: a crash while anchoring, before the ledger recorded it
            ledger_id = state.ledger_id
        else:
            ledger_id = secrets.token_hex(16)
            anchor.create(ledger_id)
        record = json.dumps({"ledger_id": ledger_id, "witness": anchor.path,
                             "key": anchor.key_source, "key_id": anchor.key_id})
        with self._write() as conn:
            with self._file.transaction(conn, write=True):
                if _read_anchor_meta(conn) is not None:
                    raise LedgerError(f"ledger {self.path} was anchored by another process "
                                      f"meanwhile; open it again")
                conn.execute("INSERT INTO meta (key, value) VALUES ('anchor', ?)", (record,))
                heads = {}
                for name in [row[0] for row in conn.execute("SELECT name FROM datasets")]:
                    state = self._verify(conn, name)
                    heads[name] = (state.count, state.chain)
        self._anchor, self._ledger_id = anchor, ledger_id
        for name, (count, chain) in sorted(heads.items()):
            self._witness(name, count, chain)

    # ---- while running --------------------------------------------------------------
    @property
    def anchored(self) -> bool:
        """Whether this ledger is checked against a witness."""
        return self._anchor is not None

    def _witness(self, name: str, count: int, head: str) -> None:
        """Record a committed head (no-op without an anchor)."""
        self._witnessed(name, count)
        if self._anchor is not None:
            self._anchor.record(self._ledger_id, name, count, head)

    def _witnessed(self, name: str, count: int) -> None:
        with self._lock:
            self._floor[name] = max(self._floor.get(name, 0), count)

    def _witness_after_commit(self, name: str, count: int, head: str) -> None:
        """Inside a charge (a piece of group commit): once its transaction has
        committed, record the head; of the charges of one dataset in one
        transaction, only the newest head is written (it follows the others in
        the chain, and the witness keeps the newest count: the same check)."""
        anchor, ledger_id = self._anchor, self._ledger_id
        if anchor is not None:
            after_commit((anchor.path, name), count,
                         lambda: anchor.record(ledger_id, name, count, head))

    def _check_witness_writable(self) -> None:
        """Before a charge: a witness this process cannot append to would leave
        the charge unwitnessed (and the release failed, still charged); refuse
        first, charging nothing."""
        if self._anchor is not None and not _appendable(self._anchor.path):
            raise LedgerError(f"cannot append to the ledger's witness {self._anchor.path} "
                              f"(permission denied); nothing was charged")

    def _check_not_behind(self, name: str, count: int) -> None:
        """Inside a charging transaction (the newest state): refuse a history
        shorter than one seen before or witnessed (a rollback or deletion)."""
        with self._lock:
            floor = self._floor.get(name, 0)
            self._floor[name] = max(floor, count)
        if count < floor:
            raise LedgerIntegrityError(
                f"ledger {self.path}: dataset {name!r} has {count} release(s) but "
                f"{floor} were recorded before (witnessed or seen by this process): "
                f"releases were deleted or an older copy restored; refusing to charge")

    def _check_not_witnessed(self, name: str) -> None:
        """A dataset being created must not be one the witness knows (it was deleted)."""
        with self._lock:
            known = name in self._floor
            releases = self._floor.get(name, 0)
        if known and self._anchor is not None:
            raise LedgerIntegrityError(
                f"dataset {name!r} is missing from ledger {self.path} but its witness "
                f"records it ({releases} release(s)): it was deleted; refusing to create it "
                f"again with its full budget")

    # ---- the audit ------------------------------------------------------------------
    def verify(self) -> dict:
        """Audit the whole ledger from its tables and against its witness; raise
        :class:`LedgerIntegrityError` naming what does not match.

        Returns ``ledger``, ``datasets``, ``releases``, ``integrity_check``
        (SQLite's verdict, or None on PostgreSQL), ``anchored``, ``witness``,
        ``keyed``, ``ahead`` (dataset -> releases not yet witnessed, re-anchored
        now) and ``warning`` (None, or why rollback cannot be detected)."""
        sqlite = not hasattr(self._file, "_url")
        checked = None
        # the witness first: see Anchor.check (a charge committed after it is read
        # is then in the snapshot, never "missing")
        witness_state = None if self._anchor is None else self._anchor.read()
        with self._read() as conn:
            if sqlite:
                rows = [row[0] for row in conn.execute("PRAGMA integrity_check")]
                if rows != ["ok"]:
                    raise LedgerIntegrityError(
                        f"ledger {self.path} is damaged: SQLite's integrity check reports "
                        f"{'; '.join(rows[:3])}")
                checked = "ok"
            with self._file.transaction(conn, write=False):
                if not sqlite:
                    for setting in ("enable_indexscan", "enable_indexonlyscan",
                                    "enable_bitmapscan"):
                        conn.execute(f"SET LOCAL {setting} = off")
                hint = " NOT INDEXED" if sqlite else ""
                names = sorted(row[0] for row in
                               conn.execute(f"SELECT name FROM datasets{hint}"))
                states = {name: verify(conn, self.path, name, None, unindexed=sqlite)
                          for name in names}
                total = conn.execute(f"SELECT count(*) FROM releases{hint}").fetchone()[0]
                counted = sum(state.count for state in states.values())
                if total != counted:
                    raise LedgerIntegrityError(
                        f"ledger {self.path} is damaged or was edited: {total} release "
                        f"record(s) but its datasets' chains hold {counted}")
                orphans = conn.execute(f"SELECT count(*) FROM outcomes{hint} WHERE release_id "
                                       f"NOT IN (SELECT id FROM releases)").fetchone()[0]
                if orphans:
                    raise LedgerIntegrityError(
                        f"ledger {self.path} is damaged or was edited: {orphans} outcome(s) "
                        f"of releases that are not recorded")
                heads = {name: (state.count, state.chain) for name, state in states.items()}
                ahead = {}
                if self._anchor is not None:
                    witnessed = self._anchor.check(conn, self.path, self._ledger_id, heads,
                                                   witness_state)
                    ahead = {name: heads[name][0] - witnessed.get(name, 0) for name in heads
                             if heads[name][0] > witnessed.get(name, 0)}
                    with self._lock:
                        for name, releases in witnessed.items():
                            self._floor[name] = max(self._floor.get(name, 0), releases)
        for name in sorted(ahead):
            self._witness(name, *heads[name])
        return {"ledger": self.path, "verified": True, "datasets": len(names),
                "releases": counted, "integrity_check": checked,
                "anchored": self._anchor is not None,
                "witness": None if self._anchor is None else self._anchor.path,
                "keyed": self._anchor is not None and self._anchor.key_id is not None,
                "ahead": ahead,
                "warning": None if self._anchor is not None else UNANCHORED_WARNING}
