"""The verified histories one process holds for one ledger, shared by all its
:class:`~privloss.budget.Ledger` objects on that ledger.

Definition
----------
A ledger verifies the part of each dataset's hash chain that *this process*
has not verified yet (the rest was verified before, by this process) and keeps
the verified records, their parsed guarantees and their running tables
(:mod:`._running`). The service opens one ``Ledger`` per request thread; with a
cache per object, every charge re-verified (hashed, parsed, added up) every
release the other threads had charged since its own last one, so each charge
cost O(writers) instead of O(1). Here the objects of one process on one ledger
(same store kind and location) share those caches and the lock that guards them.

Each object still holds its own view: the (count, chain value, dataset record)
at which it last used each dataset's history. Whenever it uses the shared
history, that must extend its own view (:func:`._integrity.extends`: same
dataset record, same chain value at its count), else
:class:`LedgerIntegrityError`, exactly as an object's own cache failed before
when its last verified release changed or vanished. Opening verifies every
dataset from the start, as before, on the open's own snapshot; a shared history
that the opening one does not extend (the ledger was replaced, rolled back, or
rewritten by someone who can recompute the chain) is replaced by the opening
one, so an object whose view it no longer extends refuses its next charge, as
its own cache made it refuse before.

Privacy guarantee
-----------------
Unchanged: every charge verifies under the write lock the releases no object of
this process has verified yet and checks the budget against the verified
history, exactly; an object never accepts a history that is not a continuation
of the one it used last.

Runtime
-------
O(new releases since any object of the process verified) per charge instead of
O(new releases since this object did); one chain value (64 characters) more per
verified release in memory.
"""

from __future__ import annotations

import os
import threading
import weakref

from ._integrity import LedgerIntegrityError, Verified, extends, verify

__all__ = ["Shared", "shared_for", "check_view", "opened", "replace", "forget_dataset"]


class Shared:
    """One process's verified histories of one ledger (guarded by ``lock``)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.verified: dict[str, Verified] = {}
        self.parsed: dict[str, list] = {}
        self.tables: dict = {}


#: held weakly: the caches live as long as some Ledger object of the process
#: uses them (each holds its Shared), as each object's own caches did
_SHARED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def shared_for(kind: str, location: str) -> Shared:
    """This process's shared state for the ledger of that kind at ``location``
    (a forked child gets its own: the parent's lock may be held at the fork)."""
    key = (os.getpid(), kind, location)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = Shared()
        return shared


def _forget_after_fork() -> None:
    global _SHARED_LOCK
    _SHARED_LOCK = threading.Lock()
    _SHARED.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def check_view(path: str, name: str, views: dict, state: Verified) -> None:
    """With the shared lock held: refuse ``state`` unless it extends the object's
    last view of dataset ``name`` (``views[name]``: count, chain, dataset record);
    then make it the object's view."""
    seen = views.get(name)
    if seen is not None and state.count < seen.count:
        # shorter than what this object used: releases were deleted; a charge refuses
        # it by the count (AnchoredLedger._check_not_behind: the floor is at least
        # every view's count), a reader reads it as its snapshot shows it
        return
    if seen is not None and not extends(state, seen):
        raise LedgerIntegrityError(
            f"ledger {path} is damaged or was edited: the history of dataset {name!r} "
            f"this process verified up to release {seen.count} changed or vanished "
            f"after it was verified; refusing to use it")
    views[name] = _View(state)


class _View:
    """An object's last view of a dataset's history (what :func:`extends` reads)."""

    __slots__ = ("count", "chain", "dataset")

    def __init__(self, state: Verified):
        self.count, self.chain, self.dataset = state.count, state.chain, state.dataset


def opened(ledger, conn, name: str) -> tuple[int, str]:
    """On opening ``ledger``: the dataset's whole history verified in the opening
    snapshot, never from the shared one; it becomes the object's view, and the
    shared history is kept if it extends that (the same history, read later),
    else replaced by it (a history longer than the one just opened was rolled
    back since, or was read after the opening snapshot: then the objects whose
    views are longer verify the rest again, under their own checks). Returns
    the opened (count, head)."""
    state = verify(conn, ledger.path, name, None)
    with ledger._lock:
        shared = ledger._verified.get(name)
        if shared is None or not extends(state, shared):
            replace(ledger, name, state)
        ledger._views[name] = _View(state)
        ledger._floor[name] = max(ledger._floor.get(name, 0), state.count)
    return state.count, state.chain


def replace(ledger, name: str, state: Verified) -> None:
    """With the shared lock held: ``state`` becomes the shared history of dataset
    ``name`` (its parsed guarantees and tables are rebuilt from it when used)."""
    ledger._verified[name] = state
    ledger._parsed.pop(name, None)
    ledger._tables.pop(name, None)


def forget_dataset(ledger, name: str) -> None:
    """A dataset just created (it did not exist in the creating transaction): no
    shared history of an earlier dataset of that name is used for it (an object
    that used one keeps its view, and so refuses the new dataset's history, as
    its own cache did before)."""
    with ledger._lock:
        ledger._verified.pop(name, None)
        ledger._parsed.pop(name, None)
        ledger._tables.pop(name, None)
