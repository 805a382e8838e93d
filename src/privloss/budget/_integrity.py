"""Tamper evidence: a hash chain over each dataset's budget row and releases.

Definition
----------
* ``digest`` of a dataset: SHA-256 of its immutable fields (name, budget,
  interaction, policy, plan, note, creation time).
* ``chain`` of release ``j``: SHA-256 of (chain of release ``j - 1``, or the
  dataset's digest for the first, and every field the release was charged
  with: id, query key, events, guarantee, plan item, owner, spent, bound, time).
* ``seal`` of a finished release: SHA-256 of (its chain, status, result).
* the dataset row keeps ``head`` (the last chain) and ``recorded`` (the number
  of releases), updated in the charging transaction.

:func:`verify` walks a dataset's releases in order and raises
:class:`LedgerIntegrityError` naming the first record that does not match:
an edited budget, interaction or plan; an edited, inserted or deleted release
(deleting releases would silently give budget back); a result or status changed
after it was sealed. The ledger verifies every dataset when it is opened and
the new part of a history inside every charging transaction.

Privacy guarantee
-----------------
Detects accidental damage and edits made without recomputing the chain. It
cannot see records that are *missing* (a deleted suffix, dataset or file, an
older copy) nor a history rewritten by someone who recomputes SHA-256: the
anchor (:mod:`._anchor`: a witness outside the ledger, authenticated with a
key) detects those. ``verify(..., unindexed=True)`` reads every column from
the tables themselves (``ledger verify``), so an intact index cannot hide a
damaged table.

Citation
--------
Hash chains (Haber and Stornetta 1991); SHA-256 (FIPS 180-4).

Runtime
-------
One SHA-256 of about a kilobyte per release: about 10 ms for 10,000 releases.
"""

from __future__ import annotations

import hashlib
import json

from ._errors import LedgerError

__all__ = ["LedgerIntegrityError", "dataset_digest", "release_chain", "release_seal", "verify",
           "check_seal", "Verified", "releases_since", "extends", "prefix"]


class LedgerIntegrityError(LedgerError):
    """The ledger's hash chain does not match its records: damaged or edited."""


def _hash(values) -> str:
    text = json.dumps(values, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dataset_digest(name, budget_epsilon, budget_delta, interaction, policy, plan, note,
                   created) -> str:
    return _hash(["privloss-ledger-dataset-v2", name, repr(float(budget_epsilon)),
                  repr(float(budget_delta)), interaction, policy, plan, note, created])


def release_chain(previous: str, release_id, dataset, query_key, events, guarantee, plan_item,
                  owner, analyst, spent_epsilon, bound, time) -> str:
    return _hash(["privloss-ledger-release-v2", previous, release_id, dataset, query_key, events,
                  guarantee, plan_item, owner, analyst, repr(float(spent_epsilon)), bound, time])


def release_seal(chain: str, status: str, result) -> str:
    return _hash(["privloss-ledger-seal-v2", chain, status, result])


class Verified:
    """How far a dataset's history has been verified in this process, and the
    verified records the accounting may use (events and guarantee texts, in order)."""

    def __init__(self):
        self.last_id = 0
        self.chain: str | None = None
        self.events: list[str] = []
        self.guarantees: list[str] = []
        self.plan_items: list = []
        self.analysts: list = []
        #: the chain value after each verified release (``chains[i]``: after ``i + 1``),
        #: so that another view of the history can be checked to be a prefix of this one
        self.chains: list[str] = []
        #: the dataset's row as last verified against its digest (immutable fields)
        self.dataset: tuple | None = None

    @property
    def count(self) -> int:
        """Releases verified so far."""
        return len(self.events)


_RELEASE_COLUMNS = ("r.id, r.dataset, r.query_key, r.events, r.guarantee, r.plan_item, "
                    "r.owner, r.analyst, r.spent_epsilon, r.bound, r.time, "
                    "coalesce(o.status, 'pending'), o.result, r.chain, o.seal")


#: a dataset's row as :func:`verify` reads it, and (last) its releases' count
DATASET_ROW = ("SELECT name, budget_epsilon, budget_delta, interaction, policy, plan, note, "
               "created, digest, head, recorded, (SELECT count(*) FROM releases WHERE "
               "dataset = ?) FROM datasets WHERE name = ?")


def releases_since(hint: str = "") -> str:
    """The query of a dataset's releases from an id on, in id order, with their
    outcomes (parameters: dataset, id), as :func:`verify` reads them."""
    return (f"SELECT {_RELEASE_COLUMNS} FROM releases AS r{hint} LEFT JOIN outcomes AS o{hint} "
            f"ON o.release_id = r.id WHERE r.dataset = ? AND r.id >= ? ORDER BY r.id")


def verify(conn, path: str, name: str, state: Verified | None = None, *,
           present: int | None = None, unindexed: bool = False, row=None,
           records=None) -> Verified:
    """Verify dataset ``name`` (from ``state``'s verified prefix, or from the
    start); return the new state or raise :class:`LedgerIntegrityError`.
    ``present``: the dataset's row count, if the caller counted it in the same
    snapshot (saves a query); ``row``: the dataset's row, if the caller read it in
    the same snapshot (:data:`DATASET_ROW` without the count); ``records``: the
    rows of :func:`releases_since` from ``state``'s last id, if the caller read them
    in the same snapshot. ``unindexed``:
    read every column from the tables
    themselves (SQLite ``NOT INDEXED``), never from an index holding a copy of
    it, so damage to a table is not hidden by an intact index (``ledger verify``)."""
    hint = " NOT INDEXED" if unindexed else ""
    if row is None:
        row = conn.execute(f"SELECT name, budget_epsilon, budget_delta, interaction, policy, "
                           f"plan, note, created, digest, head, recorded FROM datasets{hint} "
                           f"WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise LedgerIntegrityError(f"ledger {path}: dataset {name!r} vanished")
    *fields, digest, head, recorded = row
    if dataset_digest(*fields) != digest:
        raise LedgerIntegrityError(
            f"ledger {path} is damaged or was edited: the budget record of dataset {name!r} "
            f"does not match its hash (budget, interaction, policy or plan changed); "
            f"refusing to use it")
    state = Verified() if state is None or state.chain is None else state
    if state.chain is None or state.last_id == 0:
        state.chain = digest
    # the verified prefix must still end where it did: its last release is read
    # with the new ones (one query), first in id order, and checked below
    prefix_end = state.last_id if state.count else None
    previous, count, last_id = state.chain, state.count, state.last_id
    events, guarantees, plan_items, analysts, chains = [], [], [], [], []
    if records is None:
        records = conn.execute(releases_since(hint), (name, state.last_id))
    for record in records:
        release_id, *charged, status, result, chain, seal = record
        if prefix_end is not None:
            if release_id != prefix_end or chain != state.chain:
                break                               # reported below
            prefix_end = None
            continue
        if release_chain(previous, release_id, *charged) != chain:
            raise LedgerIntegrityError(
                f"ledger {path} is damaged or was edited: release #{release_id} of dataset "
                f"{name!r} does not match the hash chain (a release was edited, inserted or "
                f"deleted before it); refusing to use it")
        expected_seal = None if status == "pending" else release_seal(chain, status, result)
        if seal != expected_seal:
            raise LedgerIntegrityError(
                f"ledger {path} is damaged or was edited: the {status} result of release "
                f"#{release_id} of dataset {name!r} does not match its seal; refusing to use it")
        previous, count, last_id = chain, count + 1, release_id
        _, _, events_text, guarantee, plan_item, _, analyst = charged[:7]
        events.append(events_text)
        guarantees.append(guarantee)
        plan_items.append(plan_item)
        analysts.append(analyst)
        chains.append(chain)
    if prefix_end is not None:
        raise LedgerIntegrityError(
            f"ledger {path} is damaged or was edited: release #{state.last_id} of dataset "
            f"{name!r} changed or vanished after it was verified; refusing to use it")
    if present is None:
        present = conn.execute(f"SELECT count(*) FROM releases{hint} WHERE dataset = ?",
                               (name,)).fetchone()[0]
    if previous != head or count != recorded or present != recorded:
        raise LedgerIntegrityError(
            f"ledger {path} is damaged or was edited: dataset {name!r} records {recorded} "
            f"release(s) but {present} are present (releases deleted or added; the chain "
            f"was verified to release #{last_id}); refusing to use it")
    state.chain, state.last_id = previous, last_id
    state.dataset = tuple(fields)
    state.events.extend(events)
    state.guarantees.extend(guarantees)
    state.plan_items.extend(plan_items)
    state.analysts.extend(analysts)
    state.chains.extend(chains)
    return state


def prefix(state: Verified, count: int, row) -> Verified | None:
    """The first ``count`` releases of ``state``'s verified history as a history
    of their own, if ``row`` (the dataset's row, :data:`DATASET_ROW` without the
    count, read in a snapshot that holds ``count`` releases) records exactly that
    history: the verified dataset record, its digest, ``count`` releases and, as
    head, the chain value verified at ``count`` (which hashes every release before
    it); else None (verify that snapshot on its own). ``last_id`` is unknown (-1):
    the result is for reading, never to verify on from."""
    *fields, digest, head, recorded = row
    if tuple(fields) != state.dataset or recorded != count or count > state.count:
        return None
    if dataset_digest(*fields) != digest:
        return None
    if head != (state.chains[count - 1] if count else digest):
        return None
    part = Verified()
    part.last_id, part.chain, part.dataset = -1, head, state.dataset
    part.events, part.guarantees = state.events[:count], state.guarantees[:count]
    part.plan_items, part.analysts = state.plan_items[:count], state.analysts[:count]
    part.chains = state.chains[:count]
    return part


def extends(longer: Verified, shorter: Verified) -> bool:
    """Whether ``shorter``'s verified history is a prefix of ``longer``'s: the same
    dataset record (so the same digest, the chain's start) and, at ``shorter``'s
    length, the same chain value (which hashes every release before it)."""
    if longer.dataset != shorter.dataset or longer.count < shorter.count:
        return False
    return shorter.count == 0 or longer.chains[shorter.count - 1] == shorter.chain


def check_seal(path: str, name: str, release_id: int, chain: str, status: str, result,
               seal) -> None:
    """Refuse a stored answer whose seal does not match (an edited result)."""
    if release_seal(chain, status, result) != seal:
        raise LedgerIntegrityError(
            f"ledger {path} is damaged or was edited: the stored answer of release "
            f"#{release_id} of dataset {name!r} does not match its seal; refusing to return it")
